"""Exported variants load and run in the real runtimes, and every tensor they compute
has the shape infercast derived for it.

LiteRT: ``experimental_preserve_all_tensors`` keeps every intermediate tensor after
``invoke()``; ONNX Runtime: every node output is made a graph output. Weights are
random, so only shapes (and that the runtime accepts the file) are compared.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from infercast.frontends import load
from infercast.ir.graph import Graph
from infercast.whatif import VariantSpec, transform
from infercast.whatif.export import ExportError, export_variant
from infercast.whatif.spec import parse_replacements


def _inputs(shapes: list[tuple[list[int], Any]]) -> list[np.ndarray[Any, Any]]:
    rng = np.random.default_rng(0)
    out = []
    for shape, dtype in shapes:
        if np.issubdtype(dtype, np.integer):
            out.append(rng.integers(-100, 100, size=shape).astype(dtype))
        else:
            out.append(rng.uniform(-1, 1, size=shape).astype(dtype))
    return out


def litert_shapes(path: Path) -> dict[int, tuple[int, ...]]:
    """Tensor index -> shape after one inference in LiteRT."""
    from ai_edge_litert.interpreter import Interpreter

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # preserve_all_tensors is "for debugging"
        it = Interpreter(model_path=str(path), experimental_preserve_all_tensors=True)
    it.allocate_tensors()
    details = it.get_input_details()
    for d, x in zip(details, _inputs([(d["shape"], d["dtype"]) for d in details]), strict=True):
        it.set_tensor(d["index"], x)
    it.invoke()
    return {int(d["index"]): tuple(int(v) for v in d["shape"]) for d in it.get_tensor_details()}


def ort_shapes(path: Path) -> dict[str, tuple[int, ...]]:
    """Output name -> shape of every node output, after one inference in ONNX Runtime."""
    import onnx
    import onnxruntime as ort

    model = onnx.load(str(path))
    have = {o.name for o in model.graph.output}
    inits = {t.name for t in model.graph.initializer}
    for node in model.graph.node:
        for o in node.output:
            if o and o not in have and o not in inits and node.op_type != "Constant":
                model.graph.output.append(onnx.ValueInfoProto(name=o))
                have.add(o)
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    np_type = {"tensor(float)": np.float32, "tensor(int8)": np.int8, "tensor(uint8)": np.uint8}
    feeds = {
        i.name: x
        for i, x in zip(
            sess.get_inputs(),
            _inputs([(list(i.shape), np_type[i.type]) for i in sess.get_inputs()]),
            strict=True,
        )
    }
    names = [o.name for o in sess.get_outputs()]
    return {n: tuple(r.shape) for n, r in zip(names, sess.run(None, feeds), strict=True)}


def _check(base: Graph, spec: VariantSpec, tmp: Path) -> int:
    """Export, run, compare every tensor; returns how many were compared."""
    variant = transform(base, spec)
    path = export_variant(base, spec, tmp)
    assert load(path).format == base.format  # infercast reads its own export back
    if base.format == "tflite":
        measured = litert_shapes(path)
        names = list(variant.tensors)
        compared = 0
        for index, shape in measured.items():
            if index >= len(names):
                continue
            ours = variant.tensors[names[index]].shape
            assert shape == tuple(ours or ()), names[index]
            compared += 1
        return compared
    measured_onnx = ort_shapes(path)
    for name, shape in measured_onnx.items():
        assert shape == tuple(variant.tensors[name].shape or ()), name
    return len(measured_onnx)


CASES = [
    ("keras", "mobilenet_v2_fp32.tflite", VariantSpec(resolution=(160, 160), width=0.5)),
    ("keras", "mobilenet_v2_fp32.onnx", VariantSpec(resolution=(160, 160), width=0.5)),
    ("keras", "mobilenet_v1_int8.tflite", VariantSpec(resolution=(128, 128), width=0.75)),
    ("keras", "mobilenet_v1_fp32.onnx", VariantSpec(resolution=(96, 128), width=0.25)),
    ("keras", "mobilenet_v2_fp16.tflite", VariantSpec(width=0.75, keep=("Conv_1",))),
    ("whatif", "efficientnet_b0_int8.tflite", VariantSpec(width=0.5, resolution=(192, 192))),
]


@pytest.mark.parametrize(
    ("group", "name", "spec"), CASES, ids=[f"{c[1]}-{c[2].label()}" for c in CASES]
)
def test_exported_variant_runs_with_our_shapes(
    keras_dir: Path, whatif_dir: Path, tmp_path: Path, group: str, name: str, spec: VariantSpec
) -> None:
    base = load((keras_dir if group == "keras" else whatif_dir) / name)
    n = _check(base, spec, tmp_path)
    assert n > len(base.nodes) // 2


def test_exported_replacements_run(whatif_dir: Path, keras_dir: Path, tmp_path: Path) -> None:
    eff = load(whatif_dir / "efficientnet_b0_int8.tflite")
    _check(
        eff, VariantSpec(replace=tuple(parse_replacements(["DEPTHWISE_CONV_2D:5x5=3x3"]))), tmp_path
    )
    v3 = load(whatif_dir / "mobilenet_v3_small_int8.tflite")
    _check(v3, VariantSpec(replace=tuple(parse_replacements(["HARD_SWISH=RELU6"]))), tmp_path)
    onnx_model = load(keras_dir / "mobilenet_v2_fp32.onnx")
    _check(onnx_model, VariantSpec(replace=tuple(parse_replacements(["RELU6=RELU"]))), tmp_path)


def test_retyped_variants_are_not_exported(keras_dir: Path, tmp_path: Path) -> None:
    base = load(keras_dir / "mobilenet_v2_fp32.tflite")
    with pytest.raises(ExportError, match="re-types"):
        export_variant(base, VariantSpec(dtype="int8"), tmp_path)
    # An op that does not exist at the model's opset is refused, not written broken.
    onnx_model = load(keras_dir / "mobilenet_v2_fp32.onnx")
    spec = VariantSpec(replace=tuple(parse_replacements(["RELU6=HARD_SWISH"])))
    with pytest.raises(ExportError, match="opset"):
        export_variant(onnx_model, spec, tmp_path)


LIGHT = [
    "light_bvlc_alexnet", "light_densenet121", "light_inception_v1", "light_inception_v2",
    "light_resnet50", "light_shufflenet", "light_squeezenet", "light_vgg19", "light_zfnet512",
]  # fmt: skip


@pytest.mark.parametrize("name", LIGHT)
def test_onnx_model_zoo_variants_run_with_our_shapes(
    onnx_light_dir: Path, tmp_path: Path, name: str
) -> None:
    """ONNX's own model-zoo copies (not built here): Caffe-style global pools written as
    7x7 windows, ShuffleNet's channel shuffle and grouped convs, DenseNet's concats,
    weights made at load time by ConstantOfShape / Unsqueeze."""
    base = load(onnx_light_dir / f"{name}.onnx")
    n = _check(base, VariantSpec(resolution=(192, 192), width=0.75), tmp_path)
    assert n >= len([x for x in base.nodes if not x.folded]) // 2


MEDIAPIPE = [
    ("palm_detection_lite.tflite", VariantSpec(resolution=(96, 96))),
    ("palm_detection_lite.tflite", VariantSpec(width=0.5)),
    ("hand_landmark_lite.tflite", VariantSpec(resolution=(160, 160), width=0.75)),
    ("iris_landmark.tflite", VariantSpec(resolution=(32, 32))),
    ("face_detection_short_range.tflite", VariantSpec(width=0.5, divisor=2)),
    ("pose_landmark_full.tflite", VariantSpec(resolution=(128, 128))),
]


@pytest.mark.parametrize(
    ("name", "spec"), MEDIAPIPE, ids=[f"{n}-{s.label()}" for n, s in MEDIAPIPE]
)
def test_mediapipe_variants_run_with_our_shapes(
    mediapipe_dir: Path, tmp_path: Path, name: str, spec: VariantSpec
) -> None:
    """Google's shipped TFLite models: BlazeFace channel padding, detection-head reshapes,
    landmark heads whose last conv covers the whole map."""
    base = load(mediapipe_dir / name)
    assert _check(base, spec, tmp_path) > len(base.nodes)
