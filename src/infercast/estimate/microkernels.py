"""The calibration set: small generated models of one kernel each.

Each :class:`Spec` is one kernel (a conv with its activation, a depthwise
conv, an FC layer, an elementwise op, a pool, a data-movement op) at one
shape. The set spans the roofline: large-channel 3x3 convs (compute-bound),
1x1 convs on wide maps, depthwise convs and elementwise ops (memory-bound),
and tiny ops whose time is the per-op and per-call overhead. Odd channel
counts expose channel padding to the vector width.

ONNX models are written with ``onnx.helper`` (opset 17, batch 1, NCHW);
TFLite models with the TensorFlow converter from one-layer Keras models
(NHWC). Weights are seeded random numbers. Generated files are cached under
``~/.cache/infercast/microkernels/`` keyed by the spec, the format and the
generator's version, so a second calibration does not regenerate them.

None of these models is an architecture the validation uses: calibration
never sees the models it is checked on.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import io
import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from infercast.errors import InfercastError

GENERATOR_VERSION = 1
ONNX_OPSET = 17


@dataclass(frozen=True)
class Spec:
    """One micro-kernel. ``kind`` is conv | dwconv | fc | add | mul | relu | sigmoid |
    maxpool | avgpool | gap | softmax | concat | pad | transpose."""

    kind: str
    c: int = 0
    """Input channels (features for ``fc``)."""
    hw: int = 0
    """Input height = width (0 for ``fc`` / ``softmax``)."""
    cout: int = 0
    k: int = 1
    stride: int = 1
    act: str = ""
    """``relu`` / ``relu6`` / ``""``: activation fused after a conv / FC."""
    tags: tuple[str, ...] = field(default=(), compare=False)

    @property
    def name(self) -> str:
        parts = [self.kind, f"c{self.c}"]
        if self.hw:
            parts.append(f"hw{self.hw}")
        if self.cout:
            parts.append(f"o{self.cout}")
        if self.kind in ("conv", "dwconv", "maxpool", "avgpool"):
            parts.append(f"k{self.k}s{self.stride}")
        if self.act:
            parts.append(self.act)
        return "_".join(parts)

    def key(self) -> str:
        d = asdict(self)
        d.pop("tags")
        return json.dumps(d, sort_keys=True)


def default_specs() -> list[Spec]:
    """The full set (73 kernels): what ``infercast calibrate`` measures by default."""
    s: list[Spec] = []
    conv = [
        # (cin, cout, hw, k, stride): first layers, 3x3 bodies, 1x1 expansions / projections
        (3, 32, 224, 3, 2), (3, 64, 224, 7, 2), (16, 16, 112, 3, 1), (32, 64, 112, 1, 1),
        (64, 64, 56, 3, 1), (64, 128, 56, 3, 2), (128, 128, 28, 3, 1), (256, 256, 14, 3, 1),
        (512, 512, 7, 3, 1), (64, 256, 56, 1, 1), (256, 64, 56, 1, 1), (512, 1024, 14, 1, 1),
        (1024, 256, 14, 1, 1), (24, 144, 56, 1, 1), (144, 24, 56, 1, 1), (96, 576, 14, 1, 1),
        (320, 1280, 7, 1, 1), (30, 50, 28, 3, 1), (40, 120, 28, 1, 1), (120, 40, 28, 1, 1),
        (8, 8, 56, 3, 1), (17, 33, 56, 1, 1), (64, 64, 28, 5, 1), (2048, 512, 7, 1, 1),
    ]  # fmt: skip
    for cin, cout, hw, k, st in conv:
        s.append(Spec("conv", cin, hw, cout, k, st, "relu"))
    dw = [
        (32, 112, 3, 1), (64, 112, 3, 2), (128, 56, 3, 1), (256, 28, 3, 1), (512, 14, 3, 1),
        (1024, 7, 3, 1), (144, 56, 3, 1), (96, 28, 5, 1), (72, 56, 5, 2), (960, 7, 3, 1),
        (40, 28, 3, 1), (22, 56, 7, 1), (88, 28, 7, 2), (32, 112, 7, 2), (176, 14, 7, 1),
    ]  # fmt: skip
    for c, hw, k, st in dw:
        s.append(Spec("dwconv", c, hw, c, k, st, "relu"))
    for cin, cout in ((1024, 1000), (2048, 1000), (512, 512), (1280, 1000), (128, 10), (4096, 256)):
        s.append(Spec("fc", cin, 0, cout))
    for kind, c, hw in (
        ("add", 64, 56), ("add", 256, 28), ("add", 16, 112), ("add", 24, 56), ("add", 512, 7),
        ("mul", 96, 56), ("mul", 32, 28), ("relu", 64, 112), ("relu", 128, 14),
        ("sigmoid", 32, 112), ("sigmoid", 256, 7),
    ):  # fmt: skip
        s.append(Spec(kind, c, hw))
    for kind, c, hw, k, st in (
        ("maxpool", 64, 112, 3, 2), ("maxpool", 128, 28, 2, 2), ("avgpool", 128, 56, 2, 2),
        ("avgpool", 64, 28, 3, 1),
    ):  # fmt: skip
        s.append(Spec(kind, c, hw, 0, k, st))
    for c, hw in ((1024, 7), (2048, 7), (64, 56), (1280, 7)):
        s.append(Spec("gap", c, hw))
    for c in (1000, 10):
        s.append(Spec("softmax", c))
    for c, hw in ((64, 28), (128, 14), (32, 56)):
        s.append(Spec("concat", c, hw))
    for c, hw in ((3, 224), (64, 56)):
        s.append(Spec("pad", c, hw))
    for c, hw in ((3, 224), (32, 56)):
        s.append(Spec("transpose", c, hw))
    return s


def quick_specs() -> list[Spec]:
    """A reduced set (24 kernels) for tests and ``--budget`` under 90 s."""
    keep = {
        "conv_c3_hw224_o32_k3s2_relu", "conv_c64_hw56_o64_k3s1_relu",
        "conv_c256_hw14_o256_k3s1_relu", "conv_c64_hw56_o256_k1s1_relu",
        "conv_c256_hw56_o64_k1s1_relu", "conv_c24_hw56_o144_k1s1_relu",
        "conv_c30_hw28_o50_k3s1_relu", "conv_c17_hw56_o33_k1s1_relu",
        "conv_c512_hw7_o512_k3s1_relu", "dwconv_c32_hw112_o32_k3s1_relu",
        "dwconv_c256_hw28_o256_k3s1_relu", "dwconv_c1024_hw7_o1024_k3s1_relu",
        "dwconv_c72_hw56_o72_k5s2_relu", "dwconv_c22_hw56_o22_k7s1_relu", "fc_c1024_o1000",
        "fc_c128_o10", "add_c64_hw56", "add_c512_hw7", "relu_c64_hw112",
        "maxpool_c64_hw112_k3s2", "gap_c1024_hw7", "softmax_c1000", "concat_c64_hw28",
        "pad_c3_hw224",
    }  # fmt: skip
    return [s for s in default_specs() if s.name in keep]


# --------------------------------------------------------------------------- #
# Files
# --------------------------------------------------------------------------- #


def cache_dir() -> Path:
    root = os.environ.get("INFERCAST_CACHE") or str(Path.home() / ".cache" / "infercast")
    d = Path(root) / "microkernels" / f"v{GENERATOR_VERSION}"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _path(spec: Spec, fmt: str, directory: Path) -> Path:
    h = hashlib.sha1(f"{spec.key()}|{fmt}".encode()).hexdigest()[:10]
    return directory / f"{spec.name}_{h}.{fmt}"


def build(specs: Sequence[Spec], fmt: str, directory: Path | None = None) -> list[Path]:
    """Write (or reuse) one model file per spec; ``fmt`` is ``onnx`` or ``tflite``."""
    d = directory or cache_dir()
    d.mkdir(parents=True, exist_ok=True)
    paths = [_path(s, fmt, d) for s in specs]
    todo = [(s, p) for s, p in zip(specs, paths, strict=True) if not p.is_file()]
    if fmt == "onnx":
        for s, p in todo:
            _write_atomic(p, _onnx_bytes(s))
    elif fmt == "tflite":
        for s, p in todo:
            _write_atomic(p, _tflite_bytes(s))
    else:
        raise InfercastError(f"unknown micro-kernel format '{fmt}'", "use onnx or tflite")
    return paths


def _write_atomic(p: Path, data: bytes) -> None:
    tmp = p.with_suffix(p.suffix + f".{os.getpid()}.tmp")
    tmp.write_bytes(data)
    tmp.replace(p)


def _rng(spec: Spec) -> Any:
    import numpy as np

    seed = int(hashlib.sha1(spec.key().encode()).hexdigest()[:8], 16)
    return np.random.default_rng(seed)


class _OnnxParts:
    """The nodes, initialisers and inputs of one micro-kernel model, built up in order."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.rng = _rng(spec)
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.x_shape = [1, spec.c, spec.hw, spec.hw]
        self.inputs: list[tuple[str, list[int]]] = [("x", self.x_shape)]

    def const(self, name: str, arr: Any, dtype: Any = None) -> str:
        import numpy as np
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.asarray(arr, dtype=dtype or np.float32), name))
        return name

    def node(self, op: str, inputs: list[str], output: str = "y", **attrs: Any) -> None:
        from onnx import helper

        self.nodes.append(helper.make_node(op, inputs, [output], **attrs))

    def act(self, x: str) -> None:
        """The spec's activation on ``x``, writing the model output ``y``."""
        if self.spec.act == "relu":
            self.node("Relu", [x])
        elif self.spec.act == "relu6":
            self.node("Clip", [x, self.const("lo", 0.0), self.const("hi", 6.0)])
        else:
            self.node("Identity", [x])


def _onnx_weighted(parts: _OnnxParts) -> None:
    """Conv, depthwise conv and FC (Gemm) micro-kernels, with their activation."""
    spec, rng = parts.spec, parts.rng
    if spec.kind == "fc":
        parts.inputs = [("x", [1, spec.c])]
        w = parts.const("w", rng.standard_normal((spec.c, spec.cout)) * 0.05)
        b = parts.const("b", rng.standard_normal(spec.cout) * 0.01)
        parts.node("Gemm", ["x", w, b], "c")
    else:
        depthwise = spec.kind == "dwconv"
        cin_g = 1 if depthwise else spec.c
        w = parts.const("w", rng.standard_normal((spec.cout, cin_g, spec.k, spec.k)) * 0.05)
        b = parts.const("b", rng.standard_normal(spec.cout) * 0.01)
        parts.node("Conv", ["x", w, b], "c", kernel_shape=[spec.k, spec.k],
                   strides=[spec.stride, spec.stride], pads=[spec.k // 2] * 4,
                   group=spec.c if depthwise else 1)  # fmt: skip
    parts.act("c")


def _onnx_simple(parts: _OnnxParts) -> None:
    """Element-wise, pooling and data-movement micro-kernels (one node, output ``y``)."""
    spec = parts.spec
    k = spec.kind
    if k in ("add", "mul", "concat"):
        parts.inputs = [("x", parts.x_shape), ("x2", parts.x_shape)]
        if k == "concat":
            parts.node("Concat", ["x", "x2"], axis=1)
        else:
            parts.node(k.capitalize(), ["x", "x2"])
    elif k in ("relu", "sigmoid"):
        parts.node(k.capitalize(), ["x"])
    elif k in ("maxpool", "avgpool"):
        op = "MaxPool" if k == "maxpool" else "AveragePool"
        parts.node(op, ["x"], kernel_shape=[spec.k, spec.k], strides=[spec.stride] * 2)
    elif k == "gap":
        parts.node("GlobalAveragePool", ["x"])
    elif k == "softmax":
        parts.inputs = [("x", [1, spec.c])]
        parts.node("Softmax", ["x"], axis=-1)
    elif k == "pad":
        import numpy as np

        parts.node("Pad", ["x", parts.const("p", [0, 0, 1, 1, 0, 0, 1, 1], np.int64)])
    elif k == "transpose":
        parts.inputs = [("x", [1, spec.hw, spec.hw, spec.c])]
        parts.node("Transpose", ["x"], perm=[0, 3, 1, 2])
    else:
        raise InfercastError(f"unknown micro-kernel kind '{k}'")


def _onnx_bytes(spec: Spec) -> bytes:
    import onnx
    from onnx import TensorProto, helper

    parts = _OnnxParts(spec)
    if spec.kind in ("conv", "dwconv", "fc"):
        _onnx_weighted(parts)
    else:
        _onnx_simple(parts)
    f32 = TensorProto.FLOAT
    graph = helper.make_graph(
        parts.nodes,
        spec.name,
        [helper.make_tensor_value_info(n, f32, s) for n, s in parts.inputs],
        [helper.make_tensor_value_info("y", f32, None)],
        initializer=parts.inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET)], producer_name="infercast"
    )
    model.ir_version = 8
    model = onnx.shape_inference.infer_shapes(model)
    onnx.checker.check_model(model)
    return bytes(model.SerializeToString())


def _tflite_bytes(spec: Spec) -> bytes:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        tf = importlib.import_module("tensorflow")
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise InfercastError(
            "generating TFLite micro-kernels needs TensorFlow",
            "pip install tensorflow-cpu, or calibrate with --runtime ort",
        ) from exc
    tf.keras.utils.set_random_seed(int(_rng(spec).integers(1 << 30)))
    k = tf.keras.layers
    c, hw = spec.c, spec.hw
    act = spec.act or None
    if act == "relu6":
        act = tf.nn.relu6
    if spec.kind in ("fc", "softmax"):
        x = k.Input((c,), batch_size=1)
    elif spec.kind == "transpose":
        x = k.Input((c, hw, hw), batch_size=1)
    else:
        x = k.Input((hw, hw, c), batch_size=1)
    ins = [x]
    if spec.kind == "conv":
        y = k.Conv2D(spec.cout, spec.k, spec.stride, padding="same", activation=act)(x)
    elif spec.kind == "dwconv":
        y = k.DepthwiseConv2D(spec.k, spec.stride, padding="same", activation=act)(x)
    elif spec.kind == "fc":
        y = k.Dense(spec.cout, activation=act)(x)
    elif spec.kind in ("add", "mul", "concat"):
        x2 = k.Input((hw, hw, c), batch_size=1)
        ins.append(x2)
        layer = {"add": k.Add(), "mul": k.Multiply(), "concat": k.Concatenate()}[spec.kind]
        y = layer([x, x2])
    elif spec.kind == "relu":
        y = k.ReLU()(x)
    elif spec.kind == "sigmoid":
        y = k.Activation("sigmoid")(x)
    elif spec.kind == "maxpool":
        y = k.MaxPooling2D(spec.k, spec.stride)(x)
    elif spec.kind == "avgpool":
        y = k.AveragePooling2D(spec.k, spec.stride)(x)
    elif spec.kind == "gap":
        y = k.GlobalAveragePooling2D()(x)
    elif spec.kind == "softmax":
        y = k.Softmax()(x)
    elif spec.kind == "pad":
        y = k.ZeroPadding2D(1)(x)
    elif spec.kind == "transpose":
        y = k.Permute((2, 3, 1))(x)
    else:
        raise InfercastError(f"unknown micro-kernel kind '{spec.kind}'")
    model = tf.keras.Model(ins, y)
    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    # The converter prints the traced signature on stdout; keep the CLI's output clean.
    with contextlib.redirect_stdout(io.StringIO()):
        return bytes(conv.convert())
