"""Vela's linear (NHWC) feature maps and the burst cost of reading / writing them.

Arm Vela (ethos-u-vela 5.2.0, regor) stores a feature map in 16-channel bricks unless it
must be linear (``scheduler.cpp`` ``UpdateSchedulerTensor``): a concatenation at a depth
offset that is not a multiple of 16, a PAD run as a memory copy, a slice read in place.
``ethos_u55_performance.cpp`` ``EstimateMemoryTransfer`` then charges each burst of one
block depth the memory's whole burst length. These tests check the mechanics against the
formulas; tests/test_ethos_access.py checks the block search against Vela itself.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from ai_edge_litert import schema_py_generated as S

from infercast import estimate
from infercast.estimate.ethos_blocks import Block, elementwise_block, memory_transfer_factor
from infercast.estimate.fusion import kernels
from infercast.estimate.work import vela_linear_maps
from infercast.frontends import load

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_placement_craft import Craft

TARGET = "ethos-u65-256"


@pytest.mark.parametrize(
    ("is_read", "linear", "depth", "width", "block", "burst", "factor"),
    [
        (True, True, 264, 28, ((16, 16, 32), (16, 16, 32)), 128, 4.0),  # 32-byte bursts
        (True, True, 32, 28, ((16, 16, 32), (16, 16, 32)), 128, 1.0),  # whole block rows
        (False, True, 264, 28, ((16, 16, 32), (16, 16, 32)), 128, 8.0),  # 16-byte writes
        (False, True, 16, 28, ((16, 16, 16), (16, 16, 16)), 128, 1.0),
        (True, True, 264, 28, ((16, 16, 16), (16, 16, 16)), 32, 2.0),  # SRAM: 32-byte bursts
        (True, False, 264, 28, ((8, 4, 32), (8, 4, 32)), 128, 2.0),  # bricks: 16 x width
        (True, False, 264, 28, ((8, 8, 32), (8, 8, 32)), 128, 1.0),
    ],
)
def test_memory_transfer_factor(
    is_read: bool,
    linear: bool,
    depth: int,
    width: int,
    block: tuple[tuple[int, int, int], tuple[int, int, int]],
    burst: int,
    factor: float,
) -> None:
    b = Block(ofm=block[1], ifm=block[0])
    assert memory_transfer_factor(is_read, linear, depth, width, b, burst) == factor


def test_elementwise_block_fills_the_shram() -> None:
    """A binary elementwise op on the U65 (48 banks, 2 for the LUT, 2 reserved, IFM and
    IFM2 rounded to 8-bank granules): each IFM buffer gets 16 banks, 8 KB, so the largest
    block is 8192 elements; the first found at that volume is 16 x 16 x 32."""
    b = elementwise_block(TARGET, (28, 28, 264))
    assert b is not None
    assert b.ofm == b.ifm == (16, 16, 32)
    small = elementwise_block(TARGET, (4, 4, 16))
    assert small is not None and small.ofm == (4, 4, 16)


def concat_model(c1: int, c2: int) -> bytes:
    c = Craft()
    x = c.tensor("input", (1, 16, 16, 8))
    a = c.tensor("a", (1, 16, 16, c1))
    c.conv(x, a, 1, c1, 8, 1, "SAME")
    b = c.tensor("b", (1, 16, 16, c2))
    c.conv(x, b, 1, c2, 8, 1, "SAME")
    cat = c.tensor("cat", (1, 16, 16, c1 + c2))
    c.op(
        "CONCATENATION",
        [a, b],
        [cat],
        S.BuiltinOptions.ConcatenationOptions,
        S.ConcatenationOptionsT(axis=3),
    )
    y = c.tensor("y", (1, 16, 16, c1 + c2))
    c.unary("RELU", cat, y)
    z = c.tensor("z", (1, 16, 16, 16))
    c.conv(y, z, 1, 16, c1 + c2, 1, "SAME")
    return c.build([x], [z], "concat")


@pytest.mark.parametrize(("c1", "c2", "linear"), [(44, 44, True), (32, 48, False)])
def test_unaligned_concat_is_linear(tmp_path: Path, c1: int, c2: int, linear: bool) -> None:
    model = tmp_path / f"cat_{c1}_{c2}.tflite"
    model.write_bytes(concat_model(c1, c2))
    g = load(model)
    groups = kernels(g)
    maps = vela_linear_maps(g, groups)
    assert ("cat" in maps) == linear
    fc = estimate(model, TARGET)
    (cat,) = [w for _, w in fc.works if w.op_class == "movement"]
    assert cat.act_memory == "sram"  # one reader, cascaded through the SRAM cache
    # written linear in 16-byte bursts, each charged the SRAM's 32-byte burst: twice
    assert cat.refetch_bytes == (16 * 16 * (c1 + c2) if linear else 0)


def test_linear_writes_match_vela(tmp_path: Path) -> None:
    """Vela's own charge for the 44-channel convolution that writes into the unaligned
    concatenation (per-layer ``SRAM AC``, 16 bytes per cycle at vela.ini's 16 GB/s, 1 GHz):
    twice its 16 x 16 x 44 output, as :func:`memory_transfer_factor` says (16-byte linear
    write bursts, 32-byte SRAM bursts); the 32-channel one of the aligned model: once."""
    import csv
    import shutil
    import subprocess

    vela = shutil.which("vela")
    assert vela, "ethos-u-vela is a test dependency (pip install ethos-u-vela)"
    charged = {}
    for c1, c2 in ((44, 44), (32, 48)):
        model = tmp_path / f"cat_{c1}_{c2}.tflite"
        model.write_bytes(concat_model(c1, c2))
        out = tmp_path / model.stem
        cmd = [vela, str(model), "--output-dir", str(out), "--accelerator-config", TARGET,
               "--system-config", "Ethos_U65_High_End", "--memory-mode",
               "Dedicated_Sram_384KB", "--verbose-performance"]  # fmt: skip
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        rows = list(csv.DictReader(next(out.glob("*per-layer.csv")).open()))
        charged[c1] = int(rows[0]["SRAM AC"]) * 16
    assert charged[44] == 2 * 16 * 16 * 44
    assert charged[32] == 16 * 16 * 32
