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
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from infercast import estimate
from infercast.estimate.work import ifm_refetch_bytes, vela_view
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
    (Dedicated_Sram: model inputs are not in the SRAM cache), on the block Vela's own search
    picks: 64 output channels deep here, so the IFM is read 256 / 64 = 4 times, as Vela's
    DRAM reads show (test_ifm_reads_match_vela, same layer). The target takes NXP's Vela
    schedule (``vela_fork``), which also keeps the model output linear (NHWC): written in
    16-byte bursts, each charged the DRAM's 32-byte device burst, it counts twice (Arm's
    Vela view, :func:`vela_view`, keeps it in bricks)."""
    model = tmp_path / "conv.tflite"
    model.write_bytes(one_conv(16, 32, 256))
    fc = estimate(model, TARGET)
    (work,) = [w for _, w in fc.works if not w.on_fallback]
    assert work.act_memory == "dram"
    rereads = 16 * 16 * 32 * (256 // VELA_OFM_BLOCK_DEPTH - 1)
    assert work.refetch_bytes == rereads + 16 * 16 * 256
    (arm,) = [w for _, w in estimate(model, vela_view(load_target(TARGET))).works]
    assert arm.refetch_bytes == rereads
    assert work.weight_memory == "dram"
    assert not work.separate_ports  # one AXI port: the transfers add up


def chain() -> bytes:
    """RGB input -> 3x3 conv (model input: DRAM, narrow bursts) -> two 1x1 convs whose
    inputs have one reader each (cascaded through the SRAM cache, weights from DRAM; the
    last one writes the model output to the DRAM arena)."""
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
    target = vela_view(load_target(TARGET))  # Vela's 128-byte DRAM bursts
    works = tuple(w for _, w in estimate(model, target).works)
    npu = [w for w in works if not w.on_fallback]
    # the model output is written to the DRAM arena, so the last conv's maps go through DRAM
    assert [w.act_memory for w in npu] == ["dram", "sram", "dram"]
    assert [w.separate_ports for w in npu] == [False, True, False]
    # 3 channels: 8-byte bursts charged 128 bytes (16x); Vela's block is 16 channels deep,
    # so the IFM is read twice for 32 output channels
    assert npu[0].refetch_bytes == 16 * 16 * 3 * (2 * 128 // 8 - 1)
    assert npu[1].refetch_bytes == 16 * 16 * 32 * (96 // 48 - 1)  # 48-deep blocks, from SRAM
    assert npu[2].refetch_bytes == 0  # one 64-deep block: the IFM is read once
    # the shipped target forecasts the i.MX 93, whose DRAM serves the narrow reads in its
    # own 32-byte bursts (device_burst_bytes): 4x, not 16x
    shipped = [w for _, w in estimate(model, TARGET).works if not w.on_fallback]
    assert shipped[0].refetch_bytes == 16 * 16 * 3 * (2 * 32 // 8 - 1)
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


def one_conv_k(size: int, cin: int, cout: int, k: int, stride: int) -> bytes:
    c = Craft()
    x = c.tensor("input", (1, size, size, cin))
    o = -(-size // stride)
    y = c.tensor("conv", (1, o, o, cout))
    c.conv(x, y, k, cout, cin, stride, "SAME")
    return c.build([x], [y], "one_conv")


@pytest.mark.parametrize(
    ("size", "cin", "cout", "k", "stride"),
    [
        (16, 48, 64, 1, 1),
        (16, 32, 256, 1, 1),
        (8, 128, 512, 1, 1),
        (40, 32, 64, 1, 1),  # OFM larger than one block: several blocks in H and W
        (32, 32, 64, 3, 1),  # 3x3: each block's IFM area carries a halo
        (28, 16, 32, 5, 1),  # part-kernel traversal (16-deep IFM blocks)
    ],
)
def test_block_search_reads_match_vela(
    tmp_path: Path, size: int, cin: int, cout: int, k: int, stride: int
) -> None:
    """The OFM block infercast's re-implementation of Vela's block search picks
    (:func:`infercast.estimate.ethos_blocks.find_block`) gives the IFM bytes Vela charges,
    halo and OFM-depth blocks included, on layers whose blocks tile the OFM in H, W and C.
    (A strided 3x3 conv, 56x56x64 -> 28x28x128, gets the same block, 4x16x32, but Vela
    first copies its IFM into the SRAM staging area (a MemoryCopy, ``--verbose-schedule``),
    so the conv's re-reads come from SRAM: 2.64 MB of DRAM reads, not 4.87 MB.)"""
    model = tmp_path / f"conv_{size}_{cin}_{cout}_{k}_{stride}.tflite"
    model.write_bytes(one_conv_k(size, cin, cout, k, stride))
    vela = int(vela_summary(model, tmp_path)["dram_feature_map_read_bytes"])
    graph = load(model)
    (conv,) = [n for n in graph.nodes if n.op == "conv"]
    burst = load_target(TARGET).memories["dram"].burst_bytes
    ifm = size * size * cin
    ours = ifm + ifm_refetch_bytes(graph, conv, VELA_OFM_BLOCK_DEPTH, burst, TARGET)
    assert ours == vela


SYSTEMS = {
    "ethos-u55-128": ("Ethos_U55_High_End_Embedded", "Shared_Sram"),
    "ethos-u65-256": ("Ethos_U65_High_End", "Dedicated_Sram_384KB"),
}


@pytest.mark.parametrize(
    ("accel", "size", "cin", "cout", "k", "stride"),
    [
        ("ethos-u55-128", 16, 32, 256, 1, 1),
        ("ethos-u55-128", 8, 128, 512, 1, 1),
        ("ethos-u55-128", 40, 32, 64, 1, 1),
        ("ethos-u55-128", 32, 32, 64, 3, 1),
        ("ethos-u55-128", 56, 64, 128, 3, 2),
        ("ethos-u55-128", 56, 128, 32, 3, 1),
        ("ethos-u65-256", 56, 64, 128, 3, 2),
        ("ethos-u65-256", 56, 128, 32, 3, 1),
    ],
)
def test_mac_cycles_match_vela(
    tmp_path: Path, accel: str, size: int, cin: int, cout: int, k: int, stride: int
) -> None:
    """Vela's NPU cycles for a convolution (``--verbose-performance`` per-layer CSV, column
    ``NPU``) against :func:`infercast.estimate.ethos_blocks.mac_op_cycles` on the block the
    re-implemented search picks. Vela adds the first and last blocks' memory latency and a
    command-issue bound, which the function leaves out: ours is at most Vela's, and within
    6% of it on layers of many blocks (on single-op models with few blocks those terms are
    up to 3x the block cycles)."""
    from infercast.estimate.ethos_blocks import mac_op_cycles
    from infercast.estimate.work import vela_block

    model = tmp_path / "c.tflite"
    model.write_bytes(one_conv_k(size, cin, cout, k, stride))
    system, mode = SYSTEMS[accel]
    vela = shutil.which("vela")
    assert vela, "ethos-u-vela is a test dependency (pip install ethos-u-vela)"
    cmd = [vela, str(model), "--output-dir", str(tmp_path), "--accelerator-config", accel,
           "--system-config", system, "--memory-mode", mode, "--verbose-performance"]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    rows = csv.DictReader((tmp_path / "c_per-layer.csv").open())
    (npu,) = [int(r["NPU"]) for r in rows if r["NNG Operator"] == "Conv2D"]
    graph = load(model)
    (conv,) = [n for n in graph.nodes if n.op == "conv"]
    found = vela_block(graph, conv, accel)
    assert found is not None
    kind, block, ifm, ofm, kernel = found
    o = -(-size // stride)
    assert (kind, ifm, ofm, kernel) == ("conv", (size, size, cin), (o, o, cout), (k, k))
    ours = mac_op_cycles(accel, kind, block, ifm, ofm, kernel)
    assert 0.94 * npu <= ours <= npu


def one_op(kind: str, size: int, cin: int, cout: int, k: int, stride: int) -> bytes:
    c = Craft()
    x = c.tensor("input", (1, size, size, cin))
    o = -(-size // stride)
    y = c.tensor("out", (1, o, o, cout))
    if kind == "conv":
        c.conv(x, y, k, cout, cin, stride, "SAME")
    elif kind == "depthwise":
        c.depthwise(x, y, k, cin, stride, "SAME")
    else:
        c.pool("MAX_POOL_2D", x, y, k, stride, "SAME")
    return c.build([x], [y], "one_op")


_VELA_OP = {"conv": "Conv2D", "depthwise": "DepthwiseConv2D", "pool": "MaxPool"}
_CONFIG = re.compile(r"OFM Block=\[1, (\d+), (\d+), (\d+)\], IFM Block=\[1, (\d+), (\d+), (\d+)\]")


@pytest.mark.parametrize("accel", ["ethos-u55-128", "ethos-u65-256"])
@pytest.mark.parametrize(
    ("kind", "size", "cin", "cout", "k", "stride"),
    [
        ("conv", 16, 3, 64, 1, 1),  # part-kernel traversal: IFM of 3 channels
        ("conv", 40, 32, 64, 1, 1),
        ("conv", 8, 128, 512, 1, 1),
        ("conv", 32, 32, 64, 3, 1),
        ("conv", 56, 64, 128, 3, 2),
        ("conv", 28, 16, 32, 5, 1),
        ("conv", 112, 3, 32, 3, 2),  # a first layer
        ("conv", 7, 1024, 1024, 1, 1),
        ("depthwise", 56, 128, 128, 3, 1),
        ("depthwise", 112, 64, 64, 3, 2),
        ("pool", 28, 96, 96, 3, 2),
    ],
)
def test_block_choice_matches_vela(
    tmp_path: Path, accel: str, kind: str, size: int, cin: int, cout: int, k: int, stride: int
) -> None:
    """The OFM and IFM blocks :func:`infercast.estimate.ethos_blocks.find_block` picks are
    the ones Vela prints for the op (``--verbose-schedule``: ``Operator Config = OFM
    Block=[...], IFM Block=[...]``)."""
    from infercast.estimate.work import vela_block

    model = tmp_path / "one_op.tflite"
    model.write_bytes(one_op(kind, size, cin, cout, k, stride))
    system, mode = SYSTEMS[accel]
    vela = shutil.which("vela")
    assert vela, "ethos-u-vela is a test dependency (pip install ethos-u-vela)"
    cmd = [vela, str(model), "--output-dir", str(tmp_path), "--accelerator-config", accel,
           "--system-config", system, "--memory-mode", mode, "--verbose-schedule"]  # fmt: skip
    text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    op = text[text.index(f"Operation {_VELA_OP[kind]} ") :]
    m = _CONFIG.search(op)
    assert m is not None
    v = [int(g) for g in m.groups()]
    graph = load(model)
    (node,) = [n for n in graph.nodes if n.op in ("conv", "depthwise_conv", "max_pool")]
    found = vela_block(graph, node, accel)
    assert found is not None
    block = found[1]
    assert (block.ofm, block.ifm) == (tuple(v[:3]), tuple(v[3:]))
