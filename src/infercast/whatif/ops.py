"""What the what-if transforms know about ops: which ones carry channel counts, which
pass them through, which activations can stand in for each other, how a layer is named
on the command line, and the MobileNets' channel rounding."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import TypeVar

import numpy as np

from infercast.ir.graph import Graph, Node, Tensor
from infercast.whatif.spec import VariantError

_T = TypeVar("_T")

KERNEL_OPS = frozenset({"conv", "depthwise_conv", "conv_transpose"})


DENSE_OPS = frozenset({"fully_connected", "gemm", "matmul"})


# Ops a channel count passes through unchanged (for finding expansions and outputs).
TRANSPARENT = frozenset(
    {
        "relu", "relu6", "relu_n1_to_1", "clip", "sigmoid", "tanh", "hard_swish", "hard_sigmoid",
        "leaky_relu", "elu", "gelu", "prelu", "quantize", "dequantize", "identity", "pad",
        "batch_normalization", "mul", "add", "sub", "div", "cast", "swish",
    }
)  # fmt: skip


DERIVED_OK = frozenset({"dequantize", "densify", "cast", "identity", "quantize"})


# Ops whose output may keep its input's channels by coincidence of sizes only.
NO_TIE = frozenset(
    {
        "transpose",
        "concat",
        "split",
        "split_v",
        "slice",
        "strided_slice",
        "gather",
        "unpack",
        "pack",
    }
)


BINARY = frozenset(
    {
        "add", "sub", "mul", "div", "maximum", "minimum", "squared_difference", "where", "pow",
        "sum", "max", "min", "mean",
    }
)  # fmt: skip
RESHAPING = frozenset({"reshape", "unsqueeze", "squeeze", "flatten", "expand_dims"})
POOLS = frozenset({"avg_pool", "max_pool", "l2_pool", "lp_pool"})


def cycle(values: Sequence[_T], n: int) -> tuple[_T, ...]:
    """``values`` repeated to ``n`` items (per-channel quantisation parameters of a layer
    whose channel count changed; the values themselves are placeholders)."""
    if not values:
        return ()
    reps = -(-n // len(values))
    return tuple((list(values) * reps)[:n])


def make_divisible(value: float, divisor: int = 8, min_value: int | None = None) -> int:
    """``value`` rounded to the nearest multiple of ``divisor``, never more than 10%
    below it and never below ``min_value`` (default ``divisor``).

    The rule of TF-slim's MobileNet ``_make_divisible`` as keras.applications
    copies it (``keras/src/applications/mobilenet_v2.py``, ``mobilenet_v3.py``)."""
    floor = divisor if min_value is None else min_value
    new = max(floor, int(value + divisor / 2) // divisor * divisor)
    if new < 0.9 * value:
        new += divisor
    return new


def scaled_channels(c: int, width: float, divisor: int) -> int:
    """A layer's output channels under ``width``: :func:`make_divisible` of ``c x width``
    for counts that are multiples of ``divisor``; counts that are not (a 1000-class
    head, a 3-channel output) round to the nearest whole number, at least 1."""
    if width == 1.0:
        return c
    if c % divisor == 0:
        return make_divisible(c * width, divisor)
    return max(1, round(c * width))


def norm_op(name: str) -> str:
    s = re.sub(r"[^a-z0-9]", "", name.lower())
    s = re.sub(r"2d$", "", s)
    return _OP_ALIASES.get(s, s)


_OP_ALIASES = {
    "depthwise": "depthwiseconv",
    "dw": "depthwiseconv",
    "dwconv": "depthwiseconv",
    "logistic": "sigmoid",
    "hswish": "hardswish",
    "conv2d": "conv",
    "dense": "fullyconnected",
    "fc": "fullyconnected",
}


# Activations a replacement can produce: canonical name -> (TFLite builtin, ONNX op,
# (min, max) of an ONNX Clip that expresses it).
ACTIVATIONS: dict[str, tuple[str | None, str | None, tuple[float, float] | None]] = {
    "relu": ("RELU", "Relu", None),
    "relu6": ("RELU6", None, (0.0, 6.0)),
    "relu_n1_to_1": ("RELU_N1_TO_1", None, (-1.0, 1.0)),
    "hard_swish": ("HARD_SWISH", "HardSwish", None),
    "hard_sigmoid": (None, "HardSigmoid", None),
    "sigmoid": ("LOGISTIC", "Sigmoid", None),
    "tanh": ("TANH", "Tanh", None),
    "leaky_relu": ("LEAKY_RELU", "LeakyRelu", None),
    "elu": ("ELU", "Elu", None),
    "gelu": ("GELU", "Gelu", None),
}


ACT_BY_NORM = {norm_op(k): k for k in ACTIVATIONS}


def _clip_bounds(
    graph: Graph, tensors: Mapping[str, Tensor], node: Node
) -> tuple[float, float] | None:
    if node.op != "clip":
        return None
    vals = []
    for i in (1, 2):
        name = node.inputs[i] if i < len(node.inputs) else ""
        t = tensors.get(name) if name else None
        if t is None or t.value is None or np.size(t.value) != 1:
            if "min" in node.attrs and "max" in node.attrs:
                return float(str(node.attrs["min"])), float(str(node.attrs["max"]))
            return None
        vals.append(float(np.asarray(t.value).reshape(-1)[0]))
    return vals[0], vals[1]


def activation_of(graph: Graph, node: Node) -> str | None:
    """The canonical activation a node computes (an ONNX ``Clip(0, 6)`` is ``relu6``)."""
    if node.op in ACTIVATIONS:
        return node.op
    bounds = _clip_bounds(graph, graph.tensors, node)
    for name, (_, _, clip) in ACTIVATIONS.items():
        if clip is not None and bounds == clip:
            return name
    return None


def op_matches(node: Node, name: str, graph: Graph) -> bool:
    """Does the user's op name (TFLite builtin, ONNX op or canonical, any case) name ``node``?"""
    want = norm_op(name)
    if want in (norm_op(node.op), norm_op(node.native_op)):
        return True
    act = activation_of(graph, node)
    return act is not None and norm_op(act) == want


def channel_axis(graph: Graph, rank: int) -> int:
    """Channels of an activation: last in TFLite (NHWC), second in ONNX (NCHW)."""
    if rank < 2:
        return rank - 1
    return rank - 1 if graph.layout.endswith("C") else 1


def channels_of(graph: Graph, t: Tensor) -> int:
    s = t.shape
    if s is None or any(d is None for d in s) or not s:
        raise VariantError(f"tensor '{t.name}' has an unknown shape; variants need static shapes")
    return int(s[channel_axis(graph, len(s))] or 0)


def static(t: Tensor) -> tuple[int, ...]:
    if t.shape is None or any(d is None for d in t.shape):
        raise VariantError(f"tensor '{t.name}' has an unknown shape; variants need static shapes")
    return tuple(int(d) for d in t.shape if d is not None)


def layout_for_rank(layout: str, rank: int) -> str:
    if len(layout) == rank:
        return layout
    letters = "".join(c for c in layout if c in "OI1")
    n = rank - len(letters)
    if layout.startswith(letters):
        return letters + "S" * n
    if layout.endswith(letters):
        return "S" * n + letters
    return letters[0] + "S" * n + letters[1:]


def weight_shape(
    layout: str, rank: int, out_c: int, in_c: int, spatial: Sequence[int]
) -> tuple[int, ...]:
    """A kernel's shape in ``layout`` from its named dimensions."""
    lay = layout_for_rank(layout, rank)
    out = []
    k = iter(spatial)
    for c in lay:
        if c == "O":
            out.append(out_c)
        elif c == "I":
            out.append(in_c)
        elif c == "1":
            out.append(1)
        else:
            out.append(next(k))
    return tuple(out)


def image_axes(graph: Graph, t: Tensor) -> tuple[int, int]:
    """The (height, width) axes of a 4-D image input: a small channel count (1-4) at
    axis 1 means NCHW, at axis 3 NHWC; otherwise the format's layout."""
    s = static(t)
    if len(s) != 4:
        raise VariantError(
            f"input '{t.name}' has shape {t.shape_str()}: --resolution needs a 4-D image input"
        )
    if s[1] <= 4 < s[3] and s[2] > 4:
        return 2, 3
    if s[3] <= 4 < s[1] and s[2] > 4:
        return 1, 2
    return (1, 2) if graph.layout.endswith("C") else (2, 3)


def ints(v: object) -> tuple[int, ...]:
    if isinstance(v, int):
        return (v,)
    if isinstance(v, tuple | list):
        return tuple(int(x) for x in v)
    return ()


def spatial_axes(graph: Graph, rank: int) -> list[int]:
    if graph.layout.endswith("C"):
        return list(range(1, rank - 1))
    return list(range(2, rank))


def short(name: str, width: int = 60) -> str:
    return name if len(name) <= width else "…" + name[-(width - 1) :]


_SPLIT = re.compile(r"[/;:]")


def name_matches(node: Node, pattern: str, graph: Graph) -> bool:
    """A layer is named by its full name, its index (``#12``), or a component of its
    name or of its weights' names (``Conv_1`` matches ``…/Conv_1_1/convolution``:
    keras 3 appends ``_<n>`` to layer scopes)."""
    if pattern == node.name or pattern == f"#{node.index}":
        return True
    names = [node.name, *(n for n in node.inputs[1:] if n)]
    suffixed = re.compile(re.escape(pattern) + r"(_\d+)?")
    for name in names:
        for part in _SPLIT.split(name):
            if suffixed.fullmatch(part):
                return True
    return False


def onnx_canonical(op_type: str) -> str:
    from infercast.frontends.onnx import canonical_name

    return canonical_name(op_type, "")


def input_resolution(graph: Graph) -> tuple[int, int] | None:
    for name in graph.inputs:
        t = graph.tensors[name]
        if t.rank == 4 and t.is_static:
            try:
                h, w = image_axes(graph, t)
            except VariantError:
                return None
            assert t.shape is not None
            return int(t.shape[h] or 0), int(t.shape[w] or 0)
    return None


def total_stride(graph: Graph) -> int:
    """The input size over the smallest spatial size of a 4-D activation (32 for the
    MobileNets at 224: their last feature map is 7x7)."""
    res = input_resolution(graph)
    if res is None:
        return 1
    h = res[0]
    smallest = h
    for t in graph.tensors.values():
        if t.is_constant or t.rank != 4 or not t.is_static or t.layout is None:
            continue
        assert t.shape is not None
        axis = 1 if graph.layout.endswith("C") else 2
        d = int(t.shape[axis] or 0)
        if 1 < d < smallest:
            smallest = d
    stride = max(1, round(h / smallest))
    # A power of two when the model's strides are (round 7 -> 8 for odd maps).
    p = 2 ** round(math.log2(stride)) if stride > 1 else 1
    return p if abs(p - h / smallest) <= 1 else stride
