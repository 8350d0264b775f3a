"""Latency forecast: the roofline terms from first principles, fusion, crossings, streaming,
one-time costs, output formats, and runtime behaviour checked against ONNX Runtime itself."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import run_keras_script
from infercast import estimate
from infercast.cli import main
from infercast.estimate.forecast import Params, kernel_time
from infercast.estimate.fusion import elided_transposes, kernels
from infercast.frontends import load
from infercast.ir.graph import Graph
from infercast.targets import load_target

F32 = TensorProto.FLOAT

# A target whose numbers make hand arithmetic easy: 100 GFLOP/s fp32, conv at half of it,
# 10 GB/s memory, 10 us per op.
SIMPLE = """
description = "hand-made test target"
[calibration]
calibrated = true
source = "test"
invoke_overhead_s = 2e-5
[placement]
fallback = "cpu"
[units.cpu]
kind = "cpu"
peak_fp32_ops_per_s = 1e11
op_overhead_s = 1e-5
channel_multiple = {cm}
efficient_width_px = {width}
[units.cpu.efficiency]
default = 0.25
conv = 0.5
[memories.ram]
size_bytes = 1073741824
bandwidth_bytes_per_s = 1e10
holds = ["weights", "activations"]
"""

# An accelerator that runs convs only; the rest falls back to the CPU.
ACCEL = """
description = "hand-made accelerator target"
[placement]
accelerator = "npu"
fallback = "cpu"
[units.npu]
kind = "npu"
peak_fp32_ops_per_s = 1e12
op_overhead_s = 1e-5
[units.npu.efficiency]
default = 1.0
[units.cpu]
kind = "cpu"
peak_fp32_ops_per_s = 1e10
op_overhead_s = 1e-5
[units.cpu.efficiency]
default = 1.0
[memories.cache]
size_bytes = {cache}
bandwidth_bytes_per_s = 1e11
holds = ["accelerator_weights"]
on_overflow = "stream"
[memories.ram]
size_bytes = 1073741824
bandwidth_bytes_per_s = 1e10
holds = ["weights", "activations"]
[crossing]
fixed_s = 1e-4
bytes_per_s = 1e8
[one_time]
graph_compile_s = 3.5
[support]
ops = ["conv"]
"""


def _target(tmp: Path, text: str, name: str = "t.toml") -> Path:
    p = tmp / name
    p.write_text(text)
    return p


def _model(tmp: Path, nodes: list, inits: list, x_shape: list[int], name: str) -> Path:
    g = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info("x", F32, x_shape)],
        [helper.make_tensor_value_info("y", F32, None)],
        initializer=inits,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    m = onnx.shape_inference.infer_shapes(m)
    path = tmp / f"{name}.onnx"
    onnx.save(m, path)
    return path


def _w(name: str, shape: tuple[int, ...]) -> onnx.TensorProto:
    rng = np.random.default_rng(0)
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) * 0.1, name)


def _conv_model(
    tmp: Path, cin: int, cout: int, hw: int, k: int = 3, act: bool = True, name: str = "conv"
) -> Path:
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c" if act else "y"], pads=[k // 2] * 4)]
    if act:
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
    inits = [_w("w", (cout, cin, k, k)), _w("b", (cout,))]
    return _model(tmp, nodes, inits, [1, cin, hw, hw], name)


# --------------------------------------------------------------------------- #
# The roofline terms, by hand
# --------------------------------------------------------------------------- #


def test_conv_relu_is_one_kernel_costed_from_first_principles(tmp_path: Path) -> None:
    t = load_target(str(_target(tmp_path, SIMPLE.format(cm=1, width=0))))
    cin, cout, hw = 16, 32, 28
    fc = estimate(_conv_model(tmp_path, cin, cout, hw), t)
    conv, relu = fc.layers
    macs = hw * hw * cout * cin * 9
    # ops: 2 x MACs for the conv, + 1 per output element for the fused ReLU
    ops = 2 * macs + hw * hw * cout
    assert conv.ops == ops
    assert conv.compute_s == pytest.approx(ops / (1e11 * 0.5))
    # bytes: input + output feature maps once (the ReLU's input never reaches memory),
    # weights + bias
    nbytes = 4 * (cin * hw * hw + cout * hw * hw + cout * cin * 9 + cout)
    assert conv.bytes == nbytes
    assert conv.memory_s == pytest.approx(nbytes / 1e10)
    assert conv.latency_s == pytest.approx(max(conv.compute_s, conv.memory_s) + 1e-5)
    assert conv.bound == "compute"
    assert relu.bound == "fused" and relu.latency_s == 0 and relu.fused_into == conv.index
    # per-call cost once; one-time cost none on this target
    assert fc.latency_s == pytest.approx(conv.latency_s + 2e-5)
    assert fc.one_time_s == 0


def test_unfused_costs_more_and_memory_bound_ops_say_so(tmp_path: Path) -> None:
    t = load_target(str(_target(tmp_path, SIMPLE.format(cm=1, width=0))))
    path = _conv_model(tmp_path, 8, 8, 64, k=1)
    fused = estimate(path, t)
    alone = estimate(path, t, fuse=False)
    relu = alone.layers[1]
    # ReLU alone reads and writes 8x64x64 floats: memory-bound
    assert relu.bound == "memory"
    assert relu.memory_s == pytest.approx(2 * 4 * 8 * 64 * 64 / 1e10)
    assert alone.latency_s > fused.latency_s
    # 1x1 conv with 8 channels: 2 FLOP per 8 bytes of input, far below the ridge point
    assert fused.layers[0].bound == "memory"


def test_channel_padding_and_narrow_maps(tmp_path: Path) -> None:
    base = load_target(str(_target(tmp_path, SIMPLE.format(cm=1, width=0), "a.toml")))
    padded = load_target(str(_target(tmp_path, SIMPLE.format(cm=16, width=0), "b.toml")))
    narrow = load_target(str(_target(tmp_path, SIMPLE.format(cm=1, width=64), "c.toml")))
    path = _conv_model(tmp_path, 64, 17, 16, act=False)
    a, b, c = (estimate(path, t).layers[0] for t in (base, padded, narrow))
    assert a.ops == b.ops == c.ops
    assert b.ops_eff == pytest.approx(a.ops * 32 / 17)  # 17 output channels run as 32
    # 64-px lines (nncase's KPU layout): 16-px rows share a line 4 channels at a time, so
    # 17 channels take ceil(17 / 4) = 5 lines of 64 slots per row, for 17 x 16 pixels.
    assert c.ops_eff == pytest.approx(a.ops * 5 * 64 / (17 * 16))
    assert b.compute_s == pytest.approx(a.compute_s * 32 / 17)
    wide = estimate(_conv_model(tmp_path, 8, 8, 100, act=False, name="wide"), narrow).layers[0]
    assert wide.ops_eff == pytest.approx(wide.ops * 128 / 100)  # two 64-px lines per row
    exact = estimate(_conv_model(tmp_path, 8, 8, 128, act=False, name="exact"), narrow).layers[0]
    assert exact.ops_eff == pytest.approx(exact.ops)


def test_large_depthwise_kernels_are_their_own_class(tmp_path: Path) -> None:
    """7x7 depthwise convs (49 taps) run outside XNNPACK's 25-tap single-pass kernels; a
    target that states no ``depthwise_conv_large`` efficiency uses ``depthwise_conv``'s."""
    from infercast.estimate.forecast import op_class

    def dw(k: int, name: str) -> Path:
        node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[k // 2] * 4, group=8)
        return _model(tmp_path, [node], [_w("w", (8, 1, k, k))], [1, 8, 20, 20], name)

    g5, g7 = load(dw(5, "dw5")), load(dw(7, "dw7"))
    assert op_class(g5.nodes[0], g5) == "depthwise_conv"
    assert op_class(g7.nodes[0], g7) == "depthwise_conv_large"
    text = SIMPLE.format(cm=1, width=0).replace("conv = 0.5", "conv = 0.5\ndepthwise_conv = 0.2")
    t = load_target(str(_target(tmp_path, text, "dw.toml")))
    ly = estimate(g7, t).layers[0]
    assert ly.compute_s == pytest.approx(ly.ops / (1e11 * 0.2))
    text2 = text.replace(
        "depthwise_conv = 0.2", "depthwise_conv = 0.2\ndepthwise_conv_large = 0.02"
    )
    t2 = load_target(str(_target(tmp_path, text2, "dw2.toml")))
    assert estimate(g7, t2).layers[0].compute_s == pytest.approx(ly.ops / (1e11 * 0.02))
    assert estimate(g5, t2).layers[0].compute_s == pytest.approx(
        estimate(g5, t).layers[0].compute_s
    )


def _conv_sigmoid_conv(tmp_path: Path, name: str) -> Path:
    """conv (npu) -> sigmoid (cpu) -> conv (npu) on an ACCEL target; 4-byte floats, 8x16x16
    maps: three crossings and the model output."""
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),
        helper.make_node("Sigmoid", ["a"], ["s"]),
        helper.make_node("Conv", ["s", "w2"], ["y"], pads=[1, 1, 1, 1]),
    ]
    weights = [_w("w1", (8, 8, 3, 3)), _w("w2", (8, 8, 3, 3))]
    return _model(tmp_path, nodes, weights, [1, 8, 16, 16], name)


def test_crossings_streaming_and_one_time(tmp_path: Path) -> None:
    path = _conv_sigmoid_conv(tmp_path, "x3")
    w_bytes = 8 * 8 * 9 * 4
    t = load_target(str(_target(tmp_path, ACCEL.format(cache=w_bytes + 100))))
    fc = estimate(path, t)
    c1, sig, c2 = fc.layers
    assert [ly.placement for ly in fc.layers] == ["accelerator", "cpu", "accelerator"]
    fmap = 8 * 16 * 16 * 4
    # model input -> npu (charged to conv 1), npu -> cpu (to the sigmoid), cpu -> npu (conv 2),
    # model output npu -> cpu (to conv 2)
    assert c1.transfer_s == pytest.approx(1e-4 + fmap / 1e8)
    assert sig.transfer_s == pytest.approx(1e-4 + fmap / 1e8)
    assert c2.transfer_s == pytest.approx(2 * (1e-4 + fmap / 1e8))
    assert sig.bound == "transfer"  # 1.3 ms of transfer against a few us of CPU work
    # the second conv's weights overflow the 2404-byte cache by w_bytes - 100: streamed
    # over the link (1e8 B/s) every inference
    streamed = w_bytes - 100
    assert c2.memory_s == pytest.approx((2 * fmap) / 1e10 + 100 / 1e11 + streamed / 1e8, rel=1e-9)
    assert any("streamed" in n for n in fc.notes)
    # first-run compilation reported apart, never in the latency
    assert fc.one_time_s == 3.5
    assert fc.latency_s == pytest.approx(sum(ly.latency_s for ly in fc.layers))
    # a CPU-placed layer on an accelerator target is "fallback" unless transfer dominates
    big = _model(
        tmp_path,
        [helper.make_node("Conv", ["x", "w1"], ["a"]), helper.make_node("Softmax", ["a"], ["y"])],
        [_w("w1", (64, 3, 1, 1))],
        [1, 3, 512, 512],
        "sm",
    )
    sm = estimate(big, t).layers[1]
    assert sm.placement == "cpu" and sm.bound in ("fallback", "transfer")


def test_readback_crossings_at_their_own_rate(tmp_path: Path) -> None:
    """An accelerator -> CPU crossing (a model output included) is copied out at
    ``crossing.readback_bytes_per_s`` where stated (NXP's i.MX 93 Ethos-U kernel memcpy's
    every output out of the driver's buffer); CPU -> accelerator ones keep ``bytes_per_s``;
    the vectorised evaluation and the fit read the same rate."""
    from infercast.estimate.fit import Batch, Sample, fit_values, predict

    path = _conv_sigmoid_conv(tmp_path, "rb")
    text = ACCEL.format(cache=10**6).replace(
        "bytes_per_s = 1e8\n", "bytes_per_s = 1e8\nreadback_bytes_per_s = 2e7\n"
    )
    t = load_target(str(_target(tmp_path, text)))
    assert t.crossing.readback_bytes_per_s == 2e7
    fc = estimate(path, t)
    c1, sig, c2 = fc.layers
    fmap = 8 * 16 * 16 * 4
    assert c1.transfer_s == pytest.approx(1e-4 + fmap / 1e8)  # model input -> npu
    assert sig.transfer_s == pytest.approx(1e-4 + fmap / 2e7)  # npu -> cpu: read back
    # cpu -> npu at the link's rate, the model output npu -> cpu read back
    assert c2.transfer_s == pytest.approx(1e-4 + fmap / 1e8 + 1e-4 + fmap / 2e7)
    # unstated: every crossing at bytes_per_s, as before
    t0 = load_target(str(_target(tmp_path, ACCEL.format(cache=10**6), "t0.toml")))
    p0 = Params.of(t0)
    assert p0.readback_rate == p0.crossing_bytes_per_s == 1e8
    assert estimate(path, t0).layers[1].transfer_s == pytest.approx(1e-4 + fmap / 1e8)
    sample = Sample("rb", tuple(w for _, w in fc.works), 1.0)
    p = Params.of(t)
    assert p.get("crossing.readback_bytes_per_s") == 2e7
    for keys in ([], ["crossing.readback_bytes_per_s"], ["crossing.bytes_per_s"]):
        b = Batch([sample], p, keys)
        assert list(b.latencies(b.full())) == pytest.approx([predict(sample, p)], rel=1e-9)
    truth = p.with_values({"crossing.readback_bytes_per_s": 5e7})
    measured = Sample("rb", sample.works, predict(sample, truth))
    f = fit_values([measured], p, ["crossing.readback_bytes_per_s"], prior_weight=0.0)
    assert f.values["crossing.readback_bytes_per_s"] == pytest.approx(5e7, rel=1e-3)


def test_json_csv_and_cli(
    tmp_path: Path, keras_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = keras_dir / "mobilenet_v2_fp32.tflite"
    assert main(["estimate", str(model), "--target", "host", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "infercast.estimate/1"
    assert doc["target"] == "host"
    assert set(doc["totals"]) >= {"latency_s", "one_time_s"}
    g = load(model)
    inference = [n for n in g.nodes if not n.folded]
    assert len(doc["layers"]) == len(inference)
    for ly in doc["layers"]:
        assert set(ly) >= {"index", "name", "op", "placement", "latency_s", "bound"}
        assert ly["latency_s"] >= 0
    total = sum(ly["latency_s"] for ly in doc["layers"]) + doc["totals"]["invoke_s"]
    assert doc["totals"]["latency_s"] == pytest.approx(total)
    assert main(["estimate", str(model), "-t", "imx8mp-npu-vx", "-f", "csv"]) == 0
    rows = capsys.readouterr().out.strip().splitlines()
    assert rows[0].startswith("index,name,op") and len(rows) == len(inference) + 1
    # analyze --target adds the forecast to the analysis document
    assert main(["analyze", str(model), "--target", "host", "-f", "json"]) == 0
    adoc = json.loads(capsys.readouterr().out)
    assert adoc["forecast"]["totals"]["latency_s"] == pytest.approx(doc["totals"]["latency_s"])
    # bad input: one line, exit 2
    assert main(["estimate", str(model), "--target", "no-such-device"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown target 'no-such-device'" in err[0]


def test_one_time_compile_on_the_npu_target(keras_dir: Path) -> None:
    fc = estimate(keras_dir / "mobilenet_v1_int8.tflite", "imx8mp-npu-vx")
    # compile time per byte of weights on the NPU; the weights are nearly the whole file
    t = load_target("imx8mp-npu-vx")
    size = (keras_dir / "mobilenet_v1_int8.tflite").stat().st_size
    assert fc.one_time_s == pytest.approx(t.graph_compile_s_per_weight_byte * size, rel=0.1)
    assert fc.totals()["one_time_s"] == fc.one_time_s
    assert fc.latency_s < fc.one_time_s  # the seconds of compile are not per inference
    # the fixture's weights are per-channel quantised: the NPU's fitted per-channel cost is
    # an extra pass over each conv's output (the driver's split), no compute slowdown
    assert fc.params.per_channel_slowdown["npu"] == 1.0
    per_el = fc.params.per_channel_pass_s["npu"]
    assert per_el > 0
    g = fc.placement.graph
    for k, w in fc.works:
        node = g.nodes[k.anchor]
        out = g.tensors[node.outputs[0]].elements if node.op in ("conv", "depthwise_conv") else 0
        assert w.per_channel_out_elements == (out if w.per_channel else 0)
        assert kernel_time(w, fc.params).pass_s == pytest.approx(per_el * (out or 0))


# --------------------------------------------------------------------------- #
# Runtime behaviour, checked against ONNX Runtime's own profile
# --------------------------------------------------------------------------- #


def _ort_profile_ops(path: Path, tmp: Path) -> list[str]:
    ort = pytest.importorskip("onnxruntime")
    so = ort.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp / "prof")
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).random(sess.get_inputs()[0].shape).astype(np.float32)
    sess.run(None, {sess.get_inputs()[0].name: x})
    events = json.loads(Path(sess.end_profiling()).read_text())
    # ReorderInput / ReorderOutput are layout copies ORT's NCHWc transformer inserts
    return [
        e["args"]["op_name"]
        for e in events
        if e.get("cat") == "Node"
        and e["name"].endswith("_kernel_time")
        and not e["args"]["op_name"].startswith("Reorder")
    ]


def test_transpose_pairs_elided_as_onnx_runtime_does(tmp_path: Path) -> None:
    # NHWC -> NCHW transposes around an elementwise chain cancel; ORT removes them
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Transpose", ["c"], ["t1"], perm=[0, 2, 3, 1]),
        helper.make_node("Mul", ["t1", "s"], ["m"]),
        helper.make_node("Relu", ["m"], ["r"]),
        helper.make_node("Transpose", ["r"], ["t2"], perm=[0, 3, 1, 2]),
        helper.make_node("Conv", ["t2", "w"], ["y"], pads=[1, 1, 1, 1]),
    ]
    inits = [_w("w", (16, 16, 3, 3)), _w("s", (16,))]
    path = _model(tmp_path, nodes, inits, [1, 16, 20, 20], "tp")
    g = load(path)
    elided = elided_transposes(g)
    assert elided == {1, 4}
    ort_ops = _ort_profile_ops(path, tmp_path)
    assert "Transpose" not in ort_ops
    fc = estimate(path, "host")
    assert {ly.index for ly in fc.layers if ly.latency_s == 0} >= {1, 4}
    # A transpose that feeds a conv with no inverse is kept, by ORT and by us
    nodes2 = [
        helper.make_node("Transpose", ["x"], ["t"], perm=[0, 1, 3, 2]),
        helper.make_node("Conv", ["t", "w"], ["y"], pads=[1, 1, 1, 1]),
    ]
    path2 = _model(tmp_path, nodes2, [_w("w", (16, 16, 3, 3))], [1, 16, 20, 24], "tp2")
    assert elided_transposes(load(path2)) == set()
    assert "Transpose" in _ort_profile_ops(path2, tmp_path)


def test_fused_groups_match_onnx_runtime_kernels(tmp_path: Path) -> None:
    # conv + relu -> one ORT kernel; conv then x * sigmoid(x): the conv's output has two
    # readers, so it stays alone, and the gate is one kernel (ORT's QuickGelu)
    path = _conv_model(tmp_path, 8, 16, 32, name="cr")
    assert len(kernels(load(path))) == 1 == len(_ort_profile_ops(path, tmp_path))
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Sigmoid", ["c"], ["s"]),
        helper.make_node("Mul", ["c", "s"], ["y"]),
    ]
    path2 = _model(tmp_path, nodes, [_w("w", (16, 8, 3, 3))], [1, 8, 32, 32], "swish")
    ours = kernels(load(path2))
    assert [k.members for k in ours] == [(0,), (1, 2)]
    assert _ort_profile_ops(path2, tmp_path) == ["Conv", "QuickGelu"]


_SWISH_BUILD = """
import sys
import keras
from infercast.estimate.published.recipes import convert
keras.utils.set_random_seed(0)
inp = keras.Input((16, 16, 8), batch_size=1)
x = keras.layers.Conv2D(16, 3, padding="same")(inp)
out = keras.layers.Activation("swish")(x)
open(sys.argv[1], "wb").write(convert(keras.Model(inp, out), "fp32"))
"""


def test_tflite_swish_stays_two_kernels_as_the_interpreter_runs_it(tmp_path: Path) -> None:
    """Keras's swish (x * sigmoid(x), EfficientNet's and YOLOv8's activation) has no TFLite
    operator: the real converter writes LOGISTIC and MUL, and the interpreter lists and runs
    both. The forecast costs them as two kernels (the intermediate tensor crossing memory),
    where the same gate in an ONNX model is one (ORT's QuickGelu, test above)."""
    from ai_edge_litert.interpreter import Interpreter

    path = tmp_path / "swish.tflite"
    run_keras_script(_SWISH_BUILD, str(path))
    ops = [d["op_name"] for d in Interpreter(model_path=str(path))._get_ops_details()]
    assert ops == ["CONV_2D", "LOGISTIC", "MUL"]
    g = load(path)
    members = [[g.nodes[i].op for i in k.members] for k in kernels(g)]
    assert members == [["conv"], ["sigmoid"], ["mul"]]
    fc = estimate(path, "host")
    assert sum(1 for ly in fc.layers if ly.latency_s > 0) == 3


def test_keras_fixtures_forecast_on_every_target(keras_dir: Path) -> None:
    """Every built-in target forecasts the fixtures with finite, positive per-layer times
    and labels every layer with one of the documented bounds."""
    from infercast.ir.labels import BOUNDS
    from infercast.targets import builtin_names

    for name in builtin_names():
        for f in ("mobilenet_v2_int8.tflite", "mobilenet_v1_fp32.onnx"):
            fc = estimate(keras_dir / f, name)
            assert math.isfinite(fc.latency_s) and fc.latency_s > 0, (name, f)
            assert all(ly.bound in BOUNDS for ly in fc.layers)
            assert fc.complete


def test_litert_runs_residual_adds_on_their_own_ort_fuses_them(keras_dir: Path) -> None:
    """ResNet50 has 16 residual additions (3 + 4 + 6 + 3 bottleneck blocks, He et al. 2015).
    From the TFLite file on a CPU each is its own kernel (LiteRT's ADD operator); from the
    ONNX file each joins its conv's group (ONNX Runtime's Conv+Add+Relu fusion)."""

    def residual_adds(graph: Graph) -> list[int]:
        return [
            n.index
            for n in graph.nodes
            if n.op == "add"
            and sum(1 for t in n.inputs if t and not graph.tensors[t].is_constant) == 2
        ]

    tfl = load(keras_dir / "resnet50_fp32.tflite")
    adds = residual_adds(tfl)
    assert len(adds) == 16
    alone = {k.anchor for k in kernels(tfl) if len(k.members) == 1}
    assert set(adds) <= alone
    # Placed on an accelerator, the add stays with its conv (the delegate's own fusion).
    on_npu = kernels(tfl, {n.index: "accelerator" for n in tfl.nodes})
    assert not set(adds) & {k.anchor for k in on_npu}
    onx = load(keras_dir / "resnet50_fp32.onnx")
    o_adds = residual_adds(onx)
    assert len(o_adds) == 16
    fused = {i for k in kernels(onx) for i in k.members[1:]}
    assert set(o_adds) <= fused


def test_estimate_says_when_the_model_does_not_fit(keras_dir: Path) -> None:
    """ResNet50 int8 holds 25.6 M parameters (He et al. 2015), one byte each: more than the
    K210's 6 MiB of main memory, which cannot stream the excess. The forecast still gives a
    latency, with a note naming the memory and both sizes as the placement's own fit
    reports them; MobileNet v1 (4.2 M parameters) fits (5.2 MiB of 6 MiB with its
    activations) and gets no such note."""
    big = estimate(keras_dir / "resnet50_int8.tflite", "k210-kpu")
    fit = big.placement.fit["main_ram"]
    assert fit.blocking and fit.required_bytes > 25_600_000
    notes = [n for n in big.notes if n.startswith("does not fit")]
    assert len(notes) == 1
    assert "main_ram" in notes[0] and f"({fit.required_bytes} bytes)" in notes[0]
    assert "6.0 MiB" in notes[0]
    small = estimate(keras_dir / "mobilenet_v1_int8.tflite", "k210-kpu")
    assert small.placement.fits
    assert not any(n.startswith("does not fit") for n in small.notes)
    assert all(not n.startswith("does not fit") for n in estimate(big.model, "imx8mp-cpu").notes)


def test_ethos_u_runs_residual_adds_as_their_own_operations(keras_dir: Path) -> None:
    """Arm Vela runs each residual ADD of an int8 ResNet50 (16: 3 + 4 + 6 + 3 bottleneck
    blocks, He et al. 2015) as its own elementwise Ethos-U operation, with its own cycles in
    its per-layer report; the VX NPU target keeps the delegate's fusion into the conv."""
    path = keras_dir / "resnet50_int8.tflite"

    def residual_adds(fc: estimate.Forecast) -> dict[int, int]:
        """Residual ADD layer -> the kernel it is costed in."""
        g = fc.placement.graph
        return {
            ly.index: ly.kernel
            for ly in fc.layers
            if ly.op == "add"
            and sum(1 for t in g.nodes[ly.index].inputs if t and not g.tensors[t].is_constant) == 2
        }

    u55 = estimate(path, "ethos-u55-128")
    adds = residual_adds(u55)
    assert len(adds) == 16
    assert all(k == i for i, k in adds.items())  # each its own kernel
    assert all(
        ly.placement == "accelerator" and ly.op_class == "elementwise" and ly.latency_s > 0
        for ly in u55.layers
        if ly.index in adds
    )
    vx = residual_adds(estimate(path, "imx8mp-npu-vx"))
    assert len(vx) == 16 and all(k != i for i, k in vx.items())  # folded into a conv


_VX_ENGINES_BUILD = """
import sys
import keras
from infercast.estimate.published.recipes import convert
keras.utils.set_random_seed(0)
inp = keras.Input((32, 32, 8), batch_size=1)
x = keras.layers.Conv2D(16, 3, padding="same")(inp)
x = keras.layers.Activation("swish")(x)
a = keras.layers.MaxPooling2D(5, 2)(x)
b = keras.layers.MaxPooling2D(3, 2)(x)
out = keras.layers.Concatenate()([a, keras.layers.Cropping2D(((0, 1), (0, 1)))(b)])
open(sys.argv[1], "wb").write(convert(keras.Model(inp, out), "int8"))
"""


def test_vx_engines_mul_and_generic_max_pool_on_the_shader_copies_at_the_tp_rate(
    tmp_path: Path,
) -> None:
    """On the i.MX 8M Plus NPU (driver 6.4.3.p0): the same-shape MUL of x * sigmoid(x) is a
    shader (EVIS) job, costed at its kernel's instruction count (TensorMulSatRTE.vx: 8 elements
    per ~15 instructions, one instruction a cycle at 1 GHz: 1.875 ns an element); a 5x5 / 2 max
    pool, which the TP refuses (window below 4 only), takes the generic shader kernel (~27
    instructions per output for 25 taps: 25 taps at 0.926 a ns), a 3x3 / 2 one stays on the
    TP; a TP copy costs max(1/3 cores, 2 bytes / 3.8 bytes a cycle) = 0.526 ns an element
    (VeriSilicon's architecture model). The kernels never span two units: the conv does not
    absorb the MUL."""
    from infercast.estimate.forecast import compute_time

    path = tmp_path / "engines.tflite"
    run_keras_script(_VX_ENGINES_BUILD, str(path))
    g = load(path)
    fc = estimate(path, "imx8mp-npu-vx")
    works = [(g.nodes[k.anchor].native_op, k, w) for k, w in fc.works]
    units = {op: w.unit for op, _, w in works}
    assert units["MUL"] == "sh" and units["LOGISTIC"] == "npu" and units["CONV_2D"] == "npu"
    pools = [w for op, _, w in works if op == "MAX_POOL_2D"]
    assert sorted(w.unit for w in pools) == ["npu", "sh"]
    mul_k, mul = next((k, w) for op, k, w in works if op == "MUL")
    assert mul_k.members == (mul_k.anchor,)
    assert compute_time(mul, fc.params) == pytest.approx(32 * 32 * 16 * 15 / 8 * 1e-9, rel=1e-3)
    pool = next(w for w in pools if w.unit == "sh")
    assert compute_time(pool, fc.params) == pytest.approx(14 * 14 * 16 * 25 / 0.926e9, rel=1e-3)
    cat = next(w for op, _, w in works if op == "CONCATENATION")
    assert compute_time(cat, fc.params) / cat.ops == pytest.approx(0.526e-9, rel=2e-3)


_VX_WIDE_KERNEL_BUILD = """
import sys
import keras
from infercast.estimate.published.recipes import convert
keras.utils.set_random_seed(0)
inp = keras.Input((1, 80, 16), batch_size=1)
x = keras.layers.Conv2D(32, (1, 32))(inp)
out = keras.layers.Conv2D(32, (1, 3))(x)
open(sys.argv[1], "wb").write(convert(keras.Model(inp, out), "int8"))
"""


def test_vx_conv_wider_than_the_nn_core_runs_at_the_measured_programmable_core_rate(
    tmp_path: Path,
) -> None:
    """The NN core's job holds a kernel side in 4 bits (at most 15, Mesa etnaviv_ml_nn.c): a
    1x32 int8 conv runs on the programmable core, at the one measured rate of convolutions
    there, 2 x 569 M MACs (MobileNet v1 1.0 224, the MobileNet paper's count) in 398.4 ms on
    the A311D with the NN and TP units and EVIS disabled (blog.tomeuvizoso.net 2023/05); the
    1x3 conv after it stays on the NN core."""
    from infercast.estimate.forecast import compute_time

    path = tmp_path / "wide.tflite"
    run_keras_script(_VX_WIDE_KERNEL_BUILD, str(path))
    g = load(path)
    fc = estimate(path, "imx8mp-npu-vx")
    convs = [w for k, w in fc.works if g.nodes[k.anchor].native_op == "CONV_2D"]
    assert [w.unit for w in convs] == ["ppu", "npu"]
    wide = convs[0]
    macs = 1 * 49 * 32 * (1 * 32 * 16)  # output 1x49x32, a 1x32x16 window each
    assert wide.ops == 2 * macs
    assert compute_time(wide, fc.params) == pytest.approx(2 * macs / (2 * 569e6 / 0.3984), rel=2e-3)


def test_a_fused_group_never_spans_two_units(tmp_path: Path) -> None:
    """A conv absorbs a following constant Mul (a batch-norm scale) when both run on one
    unit; when placement puts the Mul on another unit of the same accelerator (the
    VeriSilicon NPU's shader), they are two kernels: each engine runs its own job."""
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Mul", ["c", "s"], ["y"]),
    ]
    path = _model(
        tmp_path, nodes, [_w("w", (16, 8, 3, 3)), _w("s", (1, 16, 1, 1))], [1, 8, 8, 8], "cm"
    )
    g = load(path)
    proc = {n.index: "accelerator" for n in g.nodes}
    assert [k.members for k in kernels(g, proc)] == [(0, 1)]
    assert [k.members for k in kernels(g, proc, unit={0: "npu", 1: "npu"})] == [(0, 1)]
    assert [k.members for k in kernels(g, proc, unit={0: "npu", 1: "sh"})] == [(0,), (1,)]


def test_resize_has_its_own_class_falling_back_to_movement() -> None:
    """A resize interpolates rather than copies: class ``resample``, which reads
    ``efficiency.movement`` where a target states no ``resample`` (so every other target's
    forecast is unchanged), while the i.MX 8M Plus NPU keeps resizes (TIM-VX shader kernels)
    off its tensor processor's copy rate."""
    from infercast.estimate.work import PARENT_CLASS

    assert PARENT_CLASS["resample"] == "movement"
    npu = Params.of(load_target("imx8mp-npu-vx"))
    assert npu.eff("npu", "resample") == 0.1
    assert npu.eff("npu", "movement") == pytest.approx(8.26e-4)
    cpu = Params.of(load_target("imx8mp-cpu"))
    assert cpu.eff("cpu", "resample") == cpu.eff("cpu", "movement")
