"""infercast's model of Arm Vela's feature-map reads against Vela's own figures.

Vela (``ethos-u-vela``, the Ethos-U65-256 target's system config and Dedicated_Sram memory
mode, ``[toolchain]`` of ``ethos-u65-256.toml``) compiles one-convolution int8 models
crafted here (tests/test_placement_craft.py) and writes ``dram_feature_map_read_bytes`` in
its summary CSV. The model input and output live in the DRAM arena in that memory mode, so
that figure is the convolution's IFM traffic as Vela charges it: the IFM read once per
OFM block of output channels, each NHWC burst narrower than the IFM block charged a whole
DRAM burst (regor ``ethos_u55_performance.cpp`` ``MeasureElementAccess`` and
``EstimateMemoryTransfer``). :func:`infercast.estimate.work.ifm_refetch_bytes` computes
the same from the model's shapes, the target's DRAM ``burst_bytes`` (vela.ini
``Dram_burst_length=128``) and the OFM block depth Vela picks for these 1x1 convolutions,
64 (ethos_u55.cpp block search; the target file states 32, fitted on whole models where
Vela's blocks also overlap spatially).
"""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from infercast import estimate
from infercast.estimate.work import ifm_refetch_bytes
from infercast.frontends import load
from infercast.targets import load_target

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_placement_craft import Craft

TARGET = "ethos-u65-256"
VELA_OFM_BLOCK_DEPTH = 64


def one_conv(size: int, cin: int, cout: int) -> bytes:
    c = Craft()
    x = c.tensor("input", (1, size, size, cin))
    y = c.tensor("conv", (1, size, size, cout))
    c.conv(x, y, 1, cout, cin, 1, "SAME")
    return c.build([x], [y], "one_conv")


def vela_summary(model: Path, out_dir: Path) -> dict[str, str]:
    vela = shutil.which("vela")
    assert vela, "ethos-u-vela is a test dependency (pip install ethos-u-vela)"
    tc = load_target(TARGET).raw["toolchain"]
    cmd = [vela, str(model), "--output-dir", str(out_dir),
           "--accelerator-config", tc["vela_accelerator_config"],
           "--system-config", tc["vela_system_config"],
           "--memory-mode", tc["vela_memory_mode"]]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    path = out_dir / f"{model.stem}_summary_{tc['vela_system_config']}.csv"
    return next(csv.DictReader(path.open()))


@pytest.mark.parametrize(
    ("size", "cin", "cout"),
    [
        (16, 3, 64),  # an RGB-like input: 8-byte bursts charged 128 bytes, 16x
        (16, 48, 64),  # 48 channels: 32-deep IFM blocks, 4x
        (16, 32, 256),  # bursts whole; the IFM read once per 64 output channels, 4x
        (8, 128, 512),  # both: 4x bursts, 8 OFM blocks
    ],
)
def test_ifm_reads_match_vela(tmp_path: Path, size: int, cin: int, cout: int) -> None:
    model = tmp_path / f"conv_{size}_{cin}_{cout}.tflite"
    model.write_bytes(one_conv(size, cin, cout))
    vela = int(vela_summary(model, tmp_path)["dram_feature_map_read_bytes"])
    graph = load(model)
    (conv,) = [n for n in graph.nodes if n.op == "conv"]
    burst = load_target(TARGET).memories["dram"].burst_bytes
    assert burst == 128  # vela.ini [System_Config.Ethos_U65_High_End] Dram_burst_length
    ifm = size * size * cin
    ours = ifm + ifm_refetch_bytes(graph, conv, VELA_OFM_BLOCK_DEPTH, burst)
    assert ours == vela


def test_forecast_charges_refetch_to_dram(tmp_path: Path) -> None:
    """The shipped target charges the extra reads to the DRAM arena the model input sits in
    (Dedicated_Sram: model inputs are not in the SRAM cache), at its own block depth."""
    model = tmp_path / "conv.tflite"
    model.write_bytes(one_conv(16, 32, 256))
    fc = estimate(model, TARGET)
    (work,) = [w for _, w in fc.works if not w.on_fallback]
    depth = load_target(TARGET).units["npu"].ifm_refetch_depth
    assert work.act_memory == "dram"
    assert work.refetch_bytes == 16 * 16 * 32 * (-(-256 // depth) - 1)
    assert work.weight_memory == "dram"
    assert not work.separate_ports  # one AXI port: the transfers add up


def chain() -> bytes:
    """RGB input -> 3x3 conv (model input: DRAM, narrow bursts) -> two 1x1 convs whose
    inputs have one reader each (cascaded through the SRAM cache, weights from DRAM)."""
    c = Craft()
    x = c.tensor("input", (1, 16, 16, 3))
    a = c.tensor("a", (1, 16, 16, 32))
    c.conv(x, a, 3, 32, 3, 1, "SAME")
    b = c.tensor("b", (1, 16, 16, 96))
    c.conv(a, b, 1, 96, 32, 1, "SAME")
    y = c.tensor("y", (1, 16, 16, 64))
    c.conv(b, y, 1, 64, 96, 1, "SAME")
    return c.build([x], [y], "chain")


def test_fit_evaluates_vela_traffic_as_kernel_time(tmp_path: Path) -> None:
    """The fit's vectorised evaluation (fit.Batch) charges the re-read bytes and overlaps
    the two AXI ports exactly as the per-kernel reference (kernel_time) does."""
    from infercast.estimate.fit import Batch, Sample, predict
    from infercast.estimate.forecast import Params

    model = tmp_path / "chain.tflite"
    model.write_bytes(chain())
    target = load_target(TARGET)
    works = tuple(w for _, w in estimate(model, target).works)
    npu = [w for w in works if not w.on_fallback]
    assert [w.act_memory for w in npu] == ["dram", "sram", "sram"]
    assert [w.separate_ports for w in npu] == [False, True, True]
    # 3 channels: 8-byte bursts charged 128 bytes (16x), one 32-deep OFM block
    assert npu[0].refetch_bytes == 16 * 16 * 3 * (128 // 8 - 1)
    assert npu[1].refetch_bytes == 16 * 16 * 32 * (-(-96 // 32) - 1)  # from SRAM: bursts whole
    sample = Sample("chain", works, 1.0, whole_model=False)
    p = Params.of(target)
    batch = Batch([sample], p, [])
    assert batch.latencies(batch.full())[0] == pytest.approx(predict(sample, p), rel=1e-12)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '[memories.sram]\ncaches = ["weights"]\n',
            "memories.sram.caches has 'weights'; allowed: activations",
        ),
        ("[memories.dram]\nburst_bytes = -128\n", "memories.dram.burst_bytes must be"),
        ('[memories.dram]\nport = "axi1"\n', "memories.dram.port must be"),
        ("[units.npu]\nifm_refetch_depth = 0.5\n", "units.npu.ifm_refetch_depth must be"),
    ],
)
def test_bad_vela_keys_are_named(tmp_path: Path, text: str, expected: str) -> None:
    from infercast.targets import TargetError

    f = tmp_path / "bad.toml"
    f.write_text(f'extends = "{TARGET}"\n' + text)
    with pytest.raises(TargetError, match=expected):
        load_target(str(f))
