"""TFLite's SSD post-processing custom op (``TFLite_Detection_PostProcess``) on a real SSD.

The model is SSD MobileNet v1 300 as TF1's Object Detection API exports it, rebuilt by the
``ssd_mobilenet_v1_300_pp`` recipe and converted by the real TFLite converter (fixture group
``detection``); LiteRT runs it. The op's cost rule reads the options the exporter wrote
(a FlexBuffer) and follows the kernel, ``tensorflow/lite/kernels/detection_postprocess.cc``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from infercast import analyze, estimate
from infercast.frontends import load
from infercast.ir.graph import Graph, Node

MODEL = "ssd_mobilenet_v1_300_pp_int8pt.tflite"
ANCHORS = 1917
"""Boxes of SSD 300 on MobileNet v1: 19x19x3 + (10x10 + 5x5 + 3x3 + 2x2 + 1x1) x 6."""


def _post(g: Graph) -> Node:
    (node,) = [n for n in g.nodes if n.native_op == "custom:TFLite_Detection_PostProcess"]
    return node


def _with_options(src: Path, dst: Path, options: bytes) -> Path:
    """A copy of ``src`` whose post-processing op carries ``options`` as its custom options."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema

    m = schema.ModelT.InitFromPackedBuf(src.read_bytes(), 0)
    for op in m.subgraphs[0].operators:
        if m.operatorCodes[op.opcodeIndex].customCode:
            op.customOptions = list(options)
    b = flatbuffers.Builder(0)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    dst.write_bytes(bytes(b.Output()))
    return dst


@pytest.fixture(scope="module")
def ssd(detection_dir: Path) -> Path:
    return detection_dir / MODEL


def test_the_rebuilt_ssd_has_the_mobilenet_papers_size(ssd: Path) -> None:
    """MobileNet paper (Howard et al. 2017), Table 13: SSD 300 with MobileNet, 1.2 billion
    mult-adds and 6.8 M parameters; the post-processing is costed, not left out."""
    a = analyze(ssd)
    assert abs(a.totals.macs / 1.2e9 - 1) < 0.05
    assert abs(a.totals.params / 6.8e6 - 1) < 0.01
    assert a.totals.complete
    (layer,) = [x for x in a.layers if x.op == "detection_postprocess"]
    assert layer.macs == 0 and layer.flops and layer.flops > 0


def test_the_options_are_the_exporters_and_the_runtime_agrees(ssd: Path) -> None:
    from ai_edge_litert.interpreter import Interpreter

    node = _post(load(ssd))
    assert node.op == "detection_postprocess"
    for key, value in {"max_detections": 10, "max_classes_per_detection": 1,
                       "num_classes": 90, "use_regular_nms": False}.items():  # fmt: skip
        assert node.attrs[key] == value
    it = Interpreter(str(ssd))
    it.allocate_tensors()
    d = it.get_input_details()[0]
    it.set_tensor(d["index"], np.zeros(d["shape"], dtype=d["dtype"]))
    it.invoke()
    shapes = sorted(tuple(int(x) for x in o["shape"]) for o in it.get_output_details())
    assert shapes == [(1,), (1, 10), (1, 10), (1, 10, 4)]  # max_detections = 10


def test_the_fast_nms_cost_follows_the_kernel(ssd: Path) -> None:
    """Float box codes and scores (the converter dequantises them before the op), N = 1917
    anchors, C = 90 classes, D = 10 detections, one class per anchor:
    decode 20 N + per-anchor arg-max C N + threshold N + sort N ceil(log2 N) + D N IoUs of 15."""
    g = load(ssd)
    node = _post(g)
    box = g.tensors[node.inputs[0]]
    assert box.shape is not None and box.shape[-2] == ANCHORS
    n, c, d = ANCHORS, 90, 10
    want = 20 * n + c * n + n + n * 11 + d * n * 15
    (layer,) = [x for x in analyze(ssd).layers if x.op == "detection_postprocess"]
    assert layer.flops == want


@pytest.mark.parametrize(
    ("target", "clock_hz"), [("imx8mp-npu-vx", 1.8e9), ("edgetpu-pcie", 1.5e9)]
)
def test_an_a53_runs_the_post_processing_as_its_instructions(
    ssd: Path, target: str, clock_hz: float
) -> None:
    """On a Cortex-A53 host (the i.MX 8M Plus at 1.8 GHz; the Coral Dev Board's i.MX 8M at
    1.5 GHz, both ``isa = "armv8.0"``) the op costs the AArch64 instructions the table gives
    its shape (``detection:fast``: counted under QEMU by ``bench/bench_aarch64_insns.py``) at
    the A53's instruction rate, on one core; a CPU without an ``isa`` (the Raspberry Pi 4
    host of ``edgetpu-usb-rpi4``) keeps the counted FLOPs at its scalar rate."""
    from infercast.estimate.aarch64 import op_shape, table
    from infercast.estimate.forecast import Params
    from infercast.targets import load_target

    g = load(ssd)
    node = _post(g)
    insns = table().predict("armv8.0", op_shape(g, node))
    assert insns is not None and insns > 1e6  # ~1.9 M: 3.7 instructions a counted FLOP
    ipc = Params.of(load_target(target)).ipc["cpu"]
    (layer,) = [x for x in estimate(ssd, target).layers if x.op == "detection_postprocess"]
    assert layer.compute_s == pytest.approx(insns / (clock_hz * ipc), rel=1e-6)
    (counted,) = [x for x in analyze(ssd).layers if x.op == "detection_postprocess"]
    (rpi,) = [x for x in estimate(ssd, "edgetpu-usb-rpi4").layers if x.op == counted.op]
    assert counted.flops is not None
    assert rpi.compute_s == pytest.approx(counted.flops / 1.5e9, rel=0.01)  # 1 FLOP a cycle


def test_the_instruction_terms_follow_the_kernel(ssd: Path) -> None:
    """The ``detection:*`` terms (``infercast.estimate.aarch64``) read N, C and D as the cost
    rule does: fast NMS scans N x C scores, decodes N boxes, compares at most D x N pairs and
    sorts N; uint8 inputs add their dequantisation (N x (C + 1) scores, N box codes); regular
    NMS repeats the NMS per class."""
    import dataclasses

    from infercast.estimate.aarch64 import features, op_shape

    shape = op_shape(load(ssd), _post(load(ssd)))
    n, c, d, log2n = ANCHORS, 90, 10, 11
    assert features(shape) == ("detection:fast", [n * c, 0, 0, n, d * n, n * log2n, 1])
    u8 = dataclasses.replace(shape, in_dtypes=["uint8", "uint8", "float32"])
    assert features(u8) == ("detection:fast", [n * c, n * (c + 1), n, n, d * n, n * log2n, 1])
    regular = {**shape.attrs, "use_regular_nms": True, "detections_per_class": 100}
    kind, terms = features(dataclasses.replace(shape, attrs=regular)) or ("", [])
    assert kind == "detection:regular"
    assert terms == [c * n, c * n * log2n, c * 100 * n, 0, 0, n, 1]


def test_regular_nms_pays_one_nms_per_class(ssd: Path, tmp_path: Path) -> None:
    from flatbuffers import flexbuffers

    opts = {"max_detections": 10, "max_classes_per_detection": 1, "detections_per_class": 100,
            "num_classes": 90, "use_regular_nms": True, "nms_score_threshold": 1e-8,
            "nms_iou_threshold": 0.6, "y_scale": 10.0, "x_scale": 10.0, "h_scale": 5.0,
            "w_scale": 5.0}  # fmt: skip
    path = _with_options(ssd, tmp_path / "regular.tflite", bytes(flexbuffers.Dumps(opts)))
    n, c = ANCHORS, 90
    want = 20 * n + c * (2 * n + n * 11 + 100 * n * 15)
    (layer,) = [x for x in analyze(path).layers if x.op == "detection_postprocess"]
    assert layer.flops == want
    fast = estimate(ssd, "imx8mp-cpu")
    regular = estimate(path, "imx8mp-cpu")
    assert regular.latency_s > fast.latency_s + 0.1  # ~260 M FLOPs of NMS on one A53


def test_options_are_read_key_by_key_past_values_it_does_not_need(
    ssd: Path, tmp_path: Path
) -> None:
    """Only the wanted scalars are read: a large nested value beside them is never decoded,
    a wanted key of the wrong type is left to the default, and a root that is not a map
    gives no options (the kernel's defaults, said in the note)."""
    from flatbuffers import flexbuffers

    junk = [[i] * 64 for i in range(64)]
    opts = {"max_detections": 7, "num_classes": 90, "use_regular_nms": "no", "junk": junk}
    path = _with_options(ssd, tmp_path / "junk.tflite", bytes(flexbuffers.Dumps(opts)))
    node = _post(load(path))
    assert node.attrs["max_detections"] == 7 and node.attrs["num_classes"] == 90
    assert "use_regular_nms" not in node.attrs and "junk" not in node.attrs
    vec = _with_options(ssd, tmp_path / "vec.tflite", bytes(flexbuffers.Dumps([1, 2, 3])))
    assert "max_detections" not in _post(load(vec)).attrs


@pytest.mark.parametrize("options", [b"", b"\xff\x00\x13garbage\x01", bytes(range(40))])
def test_unreadable_options_take_the_kernels_defaults_and_say_so(
    ssd: Path, tmp_path: Path, options: bytes
) -> None:
    path = _with_options(ssd, tmp_path / "odd.tflite", options)
    a = analyze(path)
    (layer,) = [x for x in a.layers if x.op == "detection_postprocess"]
    assert layer.flops and layer.flops > 0
    assert "kernel defaults assumed" in layer.note


@pytest.mark.parametrize("target", ["edgetpu-usb", "imx8mp-npu-vx", "ethos-u65-256"])
def test_accelerators_leave_the_post_processing_to_the_cpu(ssd: Path, target: str) -> None:
    f = estimate(ssd, target)
    assert f.complete
    (layer,) = [x for x in f.layers if x.op == "detection_postprocess"]
    assert layer.placement == "cpu"
    assert layer.latency_s > 0
    on_cpu = [x for x in f.layers if x.placement == "cpu"]
    # the network itself runs on the accelerator: only the op and the conversions it
    # needs (DEQUANTIZE, the float sigmoid) fall back
    assert {x.op for x in on_cpu} <= {"detection_postprocess", "dequantize", "sigmoid"}


def test_a_model_filling_a_per_model_cache_says_the_excess_may_stream(
    ssd: Path, tmp_path: Path, published_dir: Path, keras_dir: Path
) -> None:
    """The Edge TPU's parameter cache is sized by its compiler per model (``size_varies``).
    SSD MobileNet v1's 6.8 M int8 parameters and its largest layer's activations (conv_pw_1
    at 300 px: 150x150x32 in, 150x150x64 out, LiteRT's shapes) are more than the 7.96 MiB
    SRAM: the forecast streams the excess and says the size is the compiler's. Keras
    MobileNet v1 (4.2 MB of parameters, 1.2 MB of activations) fills more than half, so the
    forecast says the excess may stream. A target file stating the size a compiler reported
    (``size_varies = false``: the room for parameters, activations apart) and a small model
    get neither note."""
    from ai_edge_litert.interpreter import Interpreter

    near = "parameter_cache: this model's"
    streams = "weight bytes beyond its"
    said = [n for n in estimate(ssd, "edgetpu-usb").notes if streams in n]
    assert len(said) == 1 and "size_varies = false" in said[0]
    shapes = {tuple(t["shape"]) for t in Interpreter(model_path=str(ssd)).get_tensor_details()}
    assert {(1, 150, 150, 32), (1, 150, 150, 64)} <= shapes
    assert f"beyond its {8346664 - 150 * 150 * (32 + 64)} bytes" in said[0]
    mnv1 = estimate(keras_dir / "mobilenet_v1_int8.tflite", "edgetpu-usb").notes
    assert any(n.startswith(near) for n in mnv1)
    own = tmp_path / "my-edgetpu.toml"
    own.write_text(
        'extends = "edgetpu-usb"\ndescription = "compiler log: 7.5 MiB cached"\n'
        "[memories.parameter_cache]\nsize_bytes = 7864320\nsize_varies = false\n"
    )
    mine = estimate(ssd, str(own)).notes
    assert not any(n.startswith(near) or streams in n for n in mine)
    small = published_dir / "mobilenet_v1_a025_128_int8pt.tflite"
    notes = estimate(small, "edgetpu-usb").notes
    assert not any(n.startswith(near) or streams in n for n in notes)
