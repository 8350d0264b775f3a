"""NXP's Vela 3.7 schedule on the i.MX 93's Ethos-U65 (``[toolchain] vela_fork = "nxp-3.7"``).

The i.MX 93 boards run command streams from NXP's Vela fork (nxp-imx/ethos-u-vela 3.7-3.10),
not Arm's Vela 5.2 that ethos-u55-128 reproduces. Two of its differences are modelled:

- ``tflite_graph_optimiser.py`` ``convert_resizebilinear_to_depthwise_convolutions``: a 2x
  half-pixel RESIZE_BILINEAR runs as a 1x1 average pool and four 2x2 depthwise convolutions,
  each writing one quarter of the OFM;
- ``graph_optimiser_util.py`` ``check_format_restrictions`` and ``scheduler.py``
  ``use_fast_storage_for_feature_maps``: a map an NPU op exchanges with a CPU op stays linear
  (NHWC) in the arena (DRAM), while the kernel's other maps stay in the SRAM cache.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from ai_edge_litert import schema_py_generated as S

from infercast import estimate
from infercast.estimate.work import nxp_resize_cycles, vela_view
from infercast.frontends import load
from infercast.targets import load_target

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_placement_craft import Craft

U65, U55 = "ethos-u65-256", "ethos-u55-128"


def _on_u65(path: Path, data: bytes) -> tuple[Any, Any, dict[str, Any]]:
    """Write ``data`` to ``path`` and forecast it on the U65: (graph, forecast, each
    kernel's work by the name of its first op's output)."""
    path.write_bytes(data)
    g = load(path)
    fc = estimate(path, U65)
    return g, fc, {g.nodes[k.anchor].outputs[0]: w for k, w in fc.works}


def resize_model() -> bytes:
    c = Craft()
    x = c.tensor("input", (1, 16, 16, 8))
    a = c.tensor("a", (1, 16, 16, 128))
    c.conv(x, a, 1, 128, 8, 1, "SAME")
    r = c.tensor("r", (1, 32, 32, 128))
    size = c.const("size", [32, 32])
    o = S.ResizeBilinearOptionsT()
    o.alignCorners, o.halfPixelCenters = False, True
    c.op("RESIZE_BILINEAR", [a, size], [r], S.BuiltinOptions.ResizeBilinearOptions, o)
    z = c.tensor("z", (1, 32, 32, 16))
    c.conv(r, z, 1, 16, 128, 1, "SAME")
    return c.build([x], [z], "resize")


def test_half_pixel_resize_is_a_pool_and_four_depthwise_convs(tmp_path: Path) -> None:
    """16 x 16 x 128 -> 32 x 32 x 128: the 1x1 average pool over the IFM takes 16384
    cycles (4 x 4 x 128 blocks, 16 cycles per 2 x 2 x 8 micro-block), each 2x2 depthwise
    convolution over the IFM's shape 8576 (12 x 16 x 16 blocks at the output stage's 0.25
    cycles per element): 16384 + 4 x 8576."""
    model = tmp_path / "resize.tflite"
    model.write_bytes(resize_model())
    g = load(model)
    (node,) = [n for n in g.nodes if n.op == "resize"]
    assert nxp_resize_cycles(g, node, U65) == 16384 + 4 * 8576
    fc = estimate(model, U65)
    (w,) = [w for k, w in fc.works if g.nodes[k.anchor].op == "resize"]
    assert w.op_class == "depthwise_conv"  # costed at the depthwise efficiency
    assert round(w.ops_eff) == (16384 + 4 * 8576) * 2 * 256
    # Arm's Vela 5.2 (ethos-u55-128, and the U65 as bench_vela.py views it) keeps the resize
    for target in (load_target(U55), vela_view(load_target(U65))):
        fc_arm = estimate(model, target)
        (w_arm,) = [w for k, w in fc_arm.works if g.nodes[k.anchor].op == "resize"]
        assert w_arm.op_class == "resample"


def _pooled_head(c: Craft) -> tuple[int, int, int]:
    """(input, "h", "p"): conv "h" -> conv "a" -> a global AVERAGE_POOL_2D "p" (stride 16:
    on the A55 under NXP's stride rule)."""
    x = c.tensor("input", (1, 16, 16, 8))
    h = c.tensor("h", (1, 16, 16, 16))
    c.conv(x, h, 1, 16, 8, 1, "SAME")
    a = c.tensor("a", (1, 16, 16, 16))
    c.conv(h, a, 1, 16, 16, 1, "SAME")
    p = c.tensor("p", (1, 1, 1, 16))
    c.pool("AVERAGE_POOL_2D", a, p, 16, 16, "VALID")
    return x, h, p


def cpu_split_model() -> bytes:
    """conv -> conv "a" -> a global AVERAGE_POOL_2D (on the A55) -> conv "b" -> conv: "a"
    writes a map for the CPU, "b" reads one."""
    c = Craft()
    x, _, p = _pooled_head(c)
    b = c.tensor("b", (1, 1, 1, 32))
    c.conv(p, b, 1, 32, 16, 1, "SAME")
    z = c.tensor("z", (1, 1, 1, 32))
    c.conv(b, z, 1, 32, 32, 1, "SAME")
    return c.build([x], [z], "split")


def test_partition_maps_go_through_the_arena(tmp_path: Path) -> None:
    model = tmp_path / "split.tflite"
    _, _, by_op = _on_u65(model, cpu_split_model())
    assert by_op["p"].unit == "cpu"
    # the 16 x 16 x 16 map for the CPU pool goes to the DRAM arena, its input stays in the
    # SRAM cache; 3.7 writes a linear map in 16-byte bursts whatever its depth
    # (npu_performance.py _estimate_memory_transfer_efficiency tests the element stride,
    # not the pixel depth), each charged the DRAM's 32-byte burst: twice the map
    a, b = by_op["a"], by_op["b"]
    assert a.act_memory == "sram" and a.arena_bytes == 2 * 16 * 16 * 16
    assert a.act_bytes == 16 * 16 * 16
    # the pool's 16-byte output comes back from the arena, read linear in bursts of one
    # IFM block depth (16 bytes), each charged the DRAM's 32-byte burst
    assert b.act_memory == "sram" and b.arena_bytes == 32
    fc55 = estimate(model, U55)
    assert all(w.arena_bytes == 0 for _, w in fc55.works)


def elementwise_model() -> bytes:
    """conv -> ADD (two maps) -> MUL (two maps) -> LOGISTIC -> conv, 8 x 8 x 24 maps."""
    c = Craft()
    x = c.tensor("input", (1, 8, 8, 8))
    a = c.tensor("a", (1, 8, 8, 24))
    c.conv(x, a, 1, 24, 8, 1, "SAME")
    s = c.tensor("s", (1, 8, 8, 24))
    c.add(a, a, s)
    m = c.tensor("m", (1, 8, 8, 24))
    c.op("MUL", [s, a], [m], S.BuiltinOptions.MulOptions, S.MulOptionsT())
    g = c.tensor("g", (1, 8, 8, 24))
    c.unary("LOGISTIC", m, g)
    z = c.tensor("z", (1, 8, 8, 16))
    c.conv(g, z, 1, 16, 24, 1, "SAME")
    return c.build([x], [z], "ew")


def test_elementwise_ops_take_nxp_vela_output_cycles(tmp_path: Path) -> None:
    """NXP's Vela 3.7 output-stage cycles per element on the U65-256
    (architecture_features.py _generate_output_perf_tables): ADD 0.75, MUL 0.375, a table
    activation 1.0, over the OFM with its depth rounded up to 16 (24 -> 32 channels):
    8 x 8 x 32 = 2048 elements -> 1536, 768 and 2048 cycles, at efficiency.elementwise_cycles;
    the U55 (Arm's Vela) keeps its element-wise rate."""
    from infercast.estimate.work import nxp_elementwise_cycles

    model = tmp_path / "ew.tflite"
    model.write_bytes(elementwise_model())
    g = load(model)
    want = {"add": 1536, "mul": 768, "sigmoid": 2048}
    for n in g.nodes:
        if n.op in want:
            assert nxp_elementwise_cycles(g, [n], U65) == want[n.op]
            assert nxp_elementwise_cycles(g, [n], U55) is None
    fc = estimate(model, U65)
    ews = {g.nodes[k.anchor].op: w for k, w in fc.works if g.nodes[k.anchor].op in want}
    assert set(ews) == set(want)
    for op, w in ews.items():
        assert w.efficiency_class == "elementwise_cycles"
        assert round(w.ops_eff) == want[op] * 2 * 256
    u55 = estimate(model, U55)
    assert all(
        w.efficiency_class == "elementwise" for _, w in u55.works if w.op_class == "elementwise"
    )


def test_vela_view_takes_arms_operator_support() -> None:
    """Arm's view of the U65 (bench_vela's comparison with Arm's Vela 5.2) drops the support
    rule NXP's Vela adds (pool strides 1..3): its AVERAGE_POOL_2D rule is the U55's, Arm's."""
    u65, u55 = load_target(U65), load_target(U55)
    nxp = u65.support.rules["AVERAGE_POOL_2D"]
    arm = vela_view(u65).support.rules["AVERAGE_POOL_2D"]
    assert nxp != arm and arm == u55.support.rules["AVERAGE_POOL_2D"]
    assert vela_view(u55).support == u55.support


def skip_model() -> bytes:
    """conv "h" -> conv "a" -> a global AVERAGE_POOL_2D (on the A55) -> conv "b" -> MUL(h, b):
    "h" is written by the first NPU partition and read by the second as well."""
    c = Craft()
    x, h, p = _pooled_head(c)
    b = c.tensor("b", (1, 1, 1, 16))
    c.conv(p, b, 1, 16, 16, 1, "SAME")
    m = c.tensor("m", (1, 16, 16, 16))
    c.op("MUL", [h, b], [m], S.BuiltinOptions.MulOptions, S.MulOptionsT())
    return c.build([x], [m], "skip")


def test_maps_between_npu_partitions_are_copied_out_and_in(tmp_path: Path) -> None:
    """NXP's Vela 3.7 cuts the NPU graph at the CPU pool into two ``ethos-u`` calls; the
    i.MX 93 delegate copies each call's outputs out of the driver's arena and its inputs in
    (ethosu_delegate.cc Eval): the 16 x 16 x 16 map "h" the second call reads is copied out
    after the first (a readback) and in before the second; Arm's view has no partitions."""
    from infercast.estimate.work import nxp_partitions

    model = tmp_path / "skip.tflite"
    g, fc, by_op = _on_u65(model, skip_model())
    assert by_op["p"].unit == "cpu"
    cpu = frozenset(k.anchor for k, w in fc.works if w.unit == "cpu")
    part = nxp_partitions(g, cpu)
    index = {n.outputs[0]: n.index for n in g.nodes}
    assert [part[index[t]] for t in ("h", "a", "b", "m")] == [0, 0, 1, 1]
    h_bytes = 16 * 16 * 16
    assert by_op["h"].readbacks == (h_bytes,) and by_op["m"].transfers == (h_bytes,)
    # the second call ("b" first) opens its own inference (ioctl, RPMsg to the M33)
    assert by_op["b"].invokes == 1 and by_op["m"].invokes == by_op["h"].invokes == 0
    # the fit's vectorised evaluation charges that second call as the forecast does
    from infercast.estimate.fit import Batch, Sample, predict
    from infercast.estimate.forecast import Params

    p = Params.of(load_target(U65))
    s = Sample("skip", tuple(w for _, w in fc.works), 1.0)
    assert p.invoke_s > 0
    b = Batch([s], p, [])
    assert b.latencies(b.full())[0] == pytest.approx(predict(s, p), rel=1e-9)
    fc_arm = estimate(model, vela_view(load_target(U65)))
    arm = {g.nodes[k.anchor].outputs[0]: w for k, w in fc_arm.works}
    assert arm["h"].readbacks == ()


def order_model(reads_d_first: bool) -> bytes:
    """conv "h" -> a global AVERAGE_POOL_2D (on the A55) -> conv "b"; and "h" -> conv "c" ->
    conv "d": two outputs, "d" listed first or last."""
    c = Craft()
    x = c.tensor("input", (1, 16, 16, 8))
    h = c.tensor("h", (1, 16, 16, 16))
    c.conv(x, h, 1, 16, 8, 1, "SAME")
    p = c.tensor("p", (1, 1, 1, 16))
    c.pool("AVERAGE_POOL_2D", h, p, 16, 16, "VALID")
    b = c.tensor("b", (1, 1, 1, 16))
    c.conv(p, b, 1, 16, 16, 1, "SAME")
    m = c.tensor("c", (1, 16, 16, 16))
    c.conv(h, m, 1, 16, 16, 1, "SAME")
    d = c.tensor("d", (1, 16, 16, 16))
    c.conv(m, d, 1, 16, 16, 1, "SAME")
    return c.build([x], [d, b] if reads_d_first else [b, d], "order")


def test_npu_partitions_follow_nxp_vela_pass_order(tmp_path: Path) -> None:
    """NXP's Vela 3.7 orders its passes by a depth-first search from the model outputs
    (pass_packing.py pack_into_passes) and cuts an NPU subgraph at each CPU pass in that
    order (extract_npu_subgraphs.py): with the outputs [b, d] the branch "c" -> "d" comes
    before the CPU pool and joins the first call; with [d, b] it comes after and joins the
    second, which then reads "h" again (3.7.0 on these two files: order_split_1 = h, c, d /
    order_split_2 = b; order_split_1 = h / order_split_2 = b, c, d)."""
    from infercast.estimate.work import nxp_partitions

    for first, want in ((False, [0, 1, 0, 0]), (True, [0, 1, 1, 1])):
        g, fc, by_op = _on_u65(tmp_path / f"order{first:d}.tflite", order_model(first))
        cpu = frozenset(k.anchor for k, w in fc.works if w.unit == "cpu")
        index = {n.outputs[0]: n.index for n in g.nodes}
        part = nxp_partitions(g, cpu)
        assert [part[index[t]] for t in ("h", "b", "c", "d")] == want
        assert (16 * 16 * 16 in by_op["c"].transfers) is first


def test_softmax_takes_nxp_vela_passes(tmp_path: Path) -> None:
    """NXP's Vela 3.7 lowers an int8 SOFTMAX to 31 element-wise passes (softmax.py
    get_graph_8bit): 25 on the per-row sums (one channel, rounded up to 16) and five on the
    whole map at 0.625 cycles per element (int32), and the exp-table subtract at 1.0. A
    1 x 10 x 24 softmax: 25 x 10 x 16 x 0.625 + 10 x 32 x (5 x 0.625 + 1) = 2500 + 1320;
    Arm's Vela (the U55) keeps its own rate."""
    from infercast.estimate.work import nxp_softmax_cycles

    c = Craft()
    x = c.tensor("input", (1, 10, 24))
    y = c.tensor("y", (1, 10, 24), scale=1.0 / 256, zero_point=-128)
    c.softmax(x, y)
    model = tmp_path / "softmax.tflite"
    model.write_bytes(c.build([x], [y], "softmax"))
    g = load(model)
    (node,) = [n for n in g.nodes if n.op == "softmax"]
    assert nxp_softmax_cycles(g, node, U65) == 2500 + 1320
    assert nxp_softmax_cycles(g, node, U55) is None
    fc = estimate(model, U65)
    (w,) = [w for k, w in fc.works if g.nodes[k.anchor].op == "softmax"]
    assert w.efficiency_class == "elementwise_cycles"
    assert round(w.ops_eff) == 3820 * 2 * 256
