"""Output-shape rules per canonical op, and the pass that applies them.

The ONNX frontend takes shapes from ONNX's own shape inference
(``onnx.shape_inference.infer_shapes(..., data_prop=True)``). That leaves outputs
unknown where ONNX has no rule or does not propagate values far enough (a
``Range`` whose bounds come from ``Shape``, ops defined as functions, newer ops,
training and ``ai.onnx.ml`` ops), and it is wrong in a few known places.
:func:`infer_missing_shapes` walks the nodes in execution order and fills those
gaps from the rules below, which follow the ONNX operator specification
(https://onnx.ai/onnx/operators/). It never replaces a dimension ONNX
knows, except for the ops in :data:`ONNX_INFERENCE_WRONG`.

Alongside shapes the pass propagates small *values* (at most 4096 elements) that
are known statically: constants, the output of ``Shape``/``Size`` on a static
tensor, and integer arithmetic, gathers, slices and concatenations on them. Rules
read them with :meth:`OpContext.value`; that is how ``Reshape(x, Concat(Shape(x)[0:1],
[-1]))`` or ``Range(0, Size(Shape(x)), 1)`` get static output shapes.

Data-dependent outputs (``NonZero``, ``Unique``, ``Compress``, ``NonMaxSuppression``,
``StringSplit``, stop-word removal, image decoding, loop trip counts) keep ``None``
for the dimensions that depend on values, unless those values are constants.

Rules are written for ONNX semantics (attribute names, NCHW); graphs of other
formats are returned unchanged.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from infercast.ir.graph import Dim, Graph, Shape, Tensor
from infercast.ops.registry import OpContext

Shapes = list[Shape | None]
InferFn = Callable[[OpContext], Shapes]
"""Output shapes by position in ``node.outputs`` (None: not known); shorter lists leave
the remaining outputs unknown."""

MAX_VALUE_ELEMENTS = 4096
"""Largest value (in elements) the pass propagates."""

ONNX_INFERENCE_WRONG: dict[str, str] = {
    # onnx 1.23.2 defs/math/defs.cc reads STFT's ``onesided`` with a default of 0
    # although the schema default is 1 (onnx.defs.get_schema("STFT")); the backend
    # test test_stft expects 9 = 16 // 2 + 1 bins, ONNX's inference gives 16.
    "stft": "ONNX's STFT shape inference defaults onesided to 0; the spec says 1",
}
"""Ops whose ONNX-inferred output shapes are replaced by these rules (with why)."""


class _Unknown(Exception):
    """A rule cannot decide (a needed shape or value is not known)."""


# ---------------------------------------------------------------------------
# Small helpers


def _shape(ctx: OpContext, i: int) -> Shape:
    """Input ``i``'s shape (rank must be known; dimensions may be None)."""
    if not ctx.has_input(i):
        raise _Unknown
    s = ctx.input(i).shape
    if s is None:
        raise _Unknown
    return s


def _static(ctx: OpContext, i: int) -> tuple[int, ...]:
    s = _shape(ctx, i)
    if any(d is None for d in s):
        raise _Unknown
    return tuple(int(d) for d in s if d is not None)


def _ints_value(ctx: OpContext, i: int) -> list[int] | None:
    """Input ``i`` as a list of ints; None when omitted or an empty tensor."""
    if not ctx.has_input(i):
        return None
    v = ctx.value(i)
    if v is None:
        raise _Unknown
    flat = np.asarray(v).reshape(-1)
    if flat.size == 0:
        return None
    return [int(x) for x in flat]


def _floats_value(ctx: OpContext, i: int) -> list[float] | None:
    if not ctx.has_input(i):
        return None
    v = ctx.value(i)
    if v is None:
        raise _Unknown
    flat = np.asarray(v, dtype=np.float64).reshape(-1)
    if flat.size == 0:
        return None
    return [float(x) for x in flat]


def _scalar_int(ctx: OpContext, i: int) -> int:
    vals = _ints_value(ctx, i)
    if not vals:
        raise _Unknown
    return vals[0]


def _ints_attr(ctx: OpContext, key: str) -> list[int] | None:
    v = ctx.attr(key)
    if v is None:
        return None
    if isinstance(v, int | float):
        return [int(v)]
    if isinstance(v, tuple | list):
        return [int(x) for x in v]
    return None


def _axis(a: int, rank: int) -> int:
    if not -rank <= a < max(rank, 1):
        raise ValueError(f"axis {a} out of range for rank {rank}")
    return a + rank if a < 0 else a


def _prod(dims: Iterable[Dim]) -> Dim:
    n = 1
    for d in dims:
        if d is None:
            return None
        n *= d
    return n


def broadcast(*shapes: Shape) -> Shape:
    """Numpy / ONNX multidirectional broadcasting, with None for unknown dimensions."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[Dim] = []
    for i in range(rank):
        dims = [s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0]
        known = {d for d in dims if d is not None and d != 1}
        if len(known) > 1:
            raise ValueError(f"shapes {shapes} do not broadcast")
        if known:
            out.append(known.pop())
        elif any(d is None for d in dims):
            out.append(None)
        else:
            out.append(1)
    return tuple(out)


def _merge(a: Shape | None, b: Shape | None) -> Shape | None:
    """What two possible shapes have in common (If branches, loop iterations)."""
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(x if x == y else None for x, y in zip(a, b, strict=True))


# ---------------------------------------------------------------------------
# Rules

RULES: dict[str, InferFn] = {}


def rule(*ops: str) -> Callable[[InferFn], InferFn]:
    def deco(fn: InferFn) -> InferFn:
        for op in ops:
            if op in RULES:
                raise ValueError(f"shape rule for '{op}' defined twice")
            RULES[op] = fn
        return fn

    return deco


def same_as_input(ctx: OpContext) -> Shapes:
    """Every output has the shape of input 0."""
    s = _shape(ctx, 0)
    return [s] * len(ctx.node.outputs)


def broadcast_inputs(ctx: OpContext) -> Shapes:
    """The broadcast of all given inputs."""
    shapes = [_shape(ctx, i) for i in range(len(ctx.inputs)) if ctx.has_input(i)]
    return [broadcast(*shapes)]


_SAME_SHAPE = (
    # elementwise unary and their parameterised variants
    "relu", "leaky_relu", "thresholded_relu", "elu", "selu", "celu", "sigmoid",
    "hard_sigmoid", "hard_swish", "swish", "gelu", "mish", "softplus", "softsign", "shrink",
    "tanh", "exp", "log", "sqrt", "reciprocal", "abs", "neg", "sign", "floor", "ceil", "round",
    "erf", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh",
    "atanh", "logical_not", "bitwise_not", "is_nan", "is_inf", "clip", "dequantize",
    "cast", "bitcast", "identity", "dropout", "trilu", "reverse_sequence", "eye_like", "cum_sum",
    "cum_prod", "softmax", "log_softmax", "hardmax", "instance_normalization",
    "group_normalization", "rms_normalization", "mean_variance_normalization", "lrn",
    "lp_normalization", "scatter", "scatter_elements", "scatter_nd", "tensor_scatter",
    "rotary_embedding", "regex_full_match", "ai.onnx.ml:label_encoder",
    "ai.onnx.ml:binarizer", "random_uniform_like", "random_normal_like", "bernoulli",
)  # fmt: skip

_BROADCAST = (
    "add", "sub", "mul", "div", "pow", "mod", "bit_shift", "equal", "less", "less_equal",
    "greater", "greater_equal", "logical_and", "logical_or", "logical_xor", "bitwise_and",
    "bitwise_or", "bitwise_xor", "where", "prelu", "sum", "max", "min", "mean",
    "string_concat",
)  # fmt: skip


@rule("quantize")
def _quantize(ctx: OpContext) -> Shapes:
    # QuantizeLinear: y like x. DynamicQuantizeLinear: y like x, scale and zero point scalars.
    s = _shape(ctx, 0)
    if ctx.node.native_op == "DynamicQuantizeLinear":
        return [s, (), ()]
    return [s]


@rule("layer_normalization")
def _layer_norm(ctx: OpContext) -> Shapes:
    s = _shape(ctx, 0)
    axis = _axis(ctx.int_attr("axis", -1), len(s))
    stats: Shape = (*s[:axis], *([1] * (len(s) - axis)))
    return [s, stats, stats]


@rule("batch_normalization")
def _batch_norm(ctx: OpContext) -> Shapes:
    s = _shape(ctx, 0)
    c: Shape = (s[1],) if len(s) > 1 else (None,)
    return [s, *([c] * (len(ctx.node.outputs) - 1))]


def _reduce_axes(ctx: OpContext, rank: int) -> list[int] | None:
    axes = _ints_attr(ctx, "axes")
    if axes is None and len(ctx.inputs) > 1:
        axes = _ints_value(ctx, 1)
    if axes is None:
        return None
    return sorted({_axis(a, rank) for a in axes})


@rule(
    "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_l1",
    "reduce_l2", "reduce_sum_square", "reduce_log_sum", "reduce_log_sum_exp",
)  # fmt: skip
def _reduce(ctx: OpContext) -> Shapes:
    s = _shape(ctx, 0)
    axes = _reduce_axes(ctx, len(s))
    keep = ctx.int_attr("keepdims", 1)
    if axes is None:
        if ctx.int_attr("noop_with_empty_axes", 0):
            return [s]
        axes = list(range(len(s)))
    if keep:
        return [tuple(1 if i in axes else d for i, d in enumerate(s))]
    return [tuple(d for i, d in enumerate(s) if i not in axes)]


@rule("arg_max", "arg_min")
def _arg_reduce(ctx: OpContext) -> Shapes:
    s = _shape(ctx, 0)
    axis = _axis(ctx.int_attr("axis", 0), len(s))
    if ctx.int_attr("keepdims", 1):
        return [tuple(1 if i == axis else d for i, d in enumerate(s))]
    return [tuple(d for i, d in enumerate(s) if i != axis)]


@rule("top_k")
def _top_k(ctx: OpContext) -> Shapes:
    s = _shape(ctx, 0)
    axis = _axis(ctx.int_attr("axis", -1), len(s))
    k = _scalar_int(ctx, 1) if ctx.has_input(1) else ctx.int_attr("k", 0)
    out = tuple(k if i == axis else d for i, d in enumerate(s))
    return [out, out]


# -- movement ---------------------------------------------------------------


@rule("reshape")
def _reshape(ctx: OpContext) -> Shapes:
    s = _shape(ctx, 0)
    target = _ints_value(ctx, 1) if ctx.has_input(1) else _ints_attr(ctx, "shape")
    if target is None:
        target = []
    allow_zero = ctx.int_attr("allowzero", 0)
    out: list[Dim] = []
    for i, d in enumerate(target):
        if d == 0 and not allow_zero:
            out.append(s[i] if i < len(s) else None)
        else:
            out.append(d)
    if -1 in out:
        total = _prod(s)
        rest = _prod(d for d in out if d != -1)
        i = out.index(-1)
        out[i] = None if total is None or rest is None else (total // rest if rest else 0)
    return [tuple(out)]


@rule("flatten")
def _flatten(ctx: OpContext) -> Shapes:
    s = _shape(ctx, 0)
    axis = ctx.int_attr("axis", 1)
    axis = axis + len(s) if axis < 0 else axis
    return [(_prod(s[:axis]), _prod(s[axis:]))]


@rule("squeeze")
def _squeeze(ctx: OpContext) -> Shapes:
    s = _shape(ctx, 0)
    axes = _ints_attr(ctx, "axes")
    if axes is None and len(ctx.inputs) > 1:
        axes = _ints_value(ctx, 1)
    if axes is None:
        if any(d is None for d in s):
            raise _Unknown
        return [tuple(d for d in s if d != 1)]
    drop = {_axis(a, len(s)) for a in axes}
    return [tuple(d for i, d in enumerate(s) if i not in drop)]


@rule("unsqueeze")
def _unsqueeze(ctx: OpContext) -> Shapes:
    s = _shape(ctx, 0)
    axes = _ints_attr(ctx, "axes")
    if axes is None:
        axes = _ints_value(ctx, 1) or []
    rank = len(s) + len(axes)
    ins = {_axis(a, rank) for a in axes}
    it = iter(s)
    return [tuple(1 if i in ins else next(it) for i in range(rank))]


@rule("transpose")
def _transpose(ctx: OpContext) -> Shapes:
    s = _shape(ctx, 0)
    perm = _ints_attr(ctx, "perm") or list(reversed(range(len(s))))
    return [tuple(s[p] for p in perm)]


@rule("concat")
def _concat(ctx: OpContext) -> Shapes:
    shapes = [_shape(ctx, i) for i in range(len(ctx.inputs)) if ctx.has_input(i)]
    rank = len(shapes[0])
    axis = _axis(ctx.int_attr("axis", 0), rank)
    out: list[Dim] = []
    for i in range(rank):
        if i == axis:
            out.append(_sum(s[i] for s in shapes))
        else:
            known = [s[i] for s in shapes if s[i] is not None]
            out.append(known[0] if known else None)
    return [tuple(out)]


def _sum(dims: Iterable[Dim]) -> Dim:
    n = 0
    for d in dims:
        if d is None:
            return None
        n += d
    return n


@rule("split")
def _split(ctx: OpContext) -> Shapes:
    s = _shape(ctx, 0)
    axis = _axis(ctx.int_attr("axis", 0), len(s))
    n_out = len(ctx.node.outputs)
    sizes = _ints_value(ctx, 1) if len(ctx.inputs) > 1 else None
    if sizes is None:
        sizes = _ints_attr(ctx, "split")
    dim = s[axis]
    if sizes is None:
        if dim is None:
            return [(*s[:axis], None, *s[axis + 1 :])] * n_out
        num = ctx.int_attr("num_outputs", n_out)
        chunk = -(-dim // num)
        sizes = [min(chunk, max(dim - chunk * i, 0)) for i in range(num)]
    return [(*s[:axis], n, *s[axis + 1 :]) for n in sizes]


def _slice_len(dim: int, start: int, end: int, step: int) -> int:
    return len(range(*slice(start, end, step).indices(dim)))


@rule("slice")
def _slice(ctx: OpContext) -> Shapes:
    s = _shape(ctx, 0)
    if ctx.has_input(1):
        starts = _ints_value(ctx, 1) or []
        ends = _ints_value(ctx, 2) or []
        axes = _ints_value(ctx, 3) if len(ctx.inputs) > 3 else None
        steps = _ints_value(ctx, 4) if len(ctx.inputs) > 4 else None
    else:  # Slice-1: attributes
        starts = _ints_attr(ctx, "starts") or []
        ends = _ints_attr(ctx, "ends") or []
        axes = _ints_attr(ctx, "axes")
        steps = None
    axes = axes if axes is not None else list(range(len(starts)))
    steps = steps if steps is not None else [1] * len(starts)
    out = list(s)
    for a, b, e, st in zip(axes, starts, ends, steps, strict=True):
        ax = _axis(a, len(s))
        d = s[ax]
        out[ax] = None if d is None else _slice_len(d, b, e, st)
    return [tuple(out)]


@rule("gather", "gather_block_quantized")
def _gather(ctx: OpContext) -> Shapes:
    data = _shape(ctx, 0)
    idx = _shape(ctx, 1)
    axis = _axis(ctx.int_attr("axis", 0), len(data))
    return [(*data[:axis], *idx, *data[axis + 1 :])]


@rule("gather_elements")
def _gather_elements(ctx: OpContext) -> Shapes:
    return [_shape(ctx, 1)]


@rule("gather_nd")
def _gather_nd(ctx: OpContext) -> Shapes:
    data = _shape(ctx, 0)
    idx = _shape(ctx, 1)
    b = ctx.int_attr("batch_dims", 0)
    last = idx[-1]
    if last is None:
        raise _Unknown
    return [(*idx[:-1], *data[b + last :])]


@rule("pad")
def _pad(ctx: OpContext) -> Shapes:
    s = _shape(ctx, 0)
    if ctx.has_input(1):
        pads = _ints_value(ctx, 1) or []
    else:
        pads = _ints_attr(ctx, "pads") or _ints_attr(ctx, "paddings") or []
    axes = _ints_value(ctx, 3) if len(ctx.inputs) > 3 else None
    axes = [_axis(a, len(s)) for a in axes] if axes is not None else list(range(len(s)))
    n = len(axes)
    out = list(s)
    for j, ax in enumerate(axes):
        d = s[ax]
        out[ax] = None if d is None else d + pads[j] + pads[j + n]
    return [tuple(out)]


@rule("tile")
def _tile(ctx: OpContext) -> Shapes:
    s = _shape(ctx, 0)
    reps = _ints_value(ctx, 1) or []
    return [tuple(None if d is None else d * r for d, r in zip(s, reps, strict=True))]


@rule("expand")
def _expand(ctx: OpContext) -> Shapes:
    target = _ints_value(ctx, 1) or []
    return [broadcast(_shape(ctx, 0), tuple(target))]


@rule("shape")
def _shape_op(ctx: OpContext) -> Shapes:
    rank = len(_shape(ctx, 0))
    start = ctx.int_attr("start", 0)
    end = ctx.int_attr("end", rank)
    return [(len(range(*slice(start, end).indices(rank))),)]


@rule("size", "sequence_length", "optional_has_element")
def _scalar(ctx: OpContext) -> Shapes:
    return [()]


@rule("depth_to_space")
def _depth_to_space(ctx: OpContext) -> Shapes:
    n, c, h, w = _shape(ctx, 0)
    b = ctx.int_attr("blocksize", 1)
    return [(n, None if c is None else c // (b * b), _mul(h, b), _mul(w, b))]


@rule("space_to_depth")
def _space_to_depth(ctx: OpContext) -> Shapes:
    n, c, h, w = _shape(ctx, 0)
    b = ctx.int_attr("blocksize", 1)
    return [(n, _mul(c, b * b), None if h is None else h // b, None if w is None else w // b)]


def _mul(d: Dim, k: int) -> Dim:
    return None if d is None else d * k


@rule("one_hot")
def _one_hot(ctx: OpContext) -> Shapes:
    idx = _shape(ctx, 0)
    depth_v = _floats_value(ctx, 1)
    if not depth_v:
        raise _Unknown
    depth = int(depth_v[0])
    rank = len(idx) + 1
    axis = _axis(ctx.int_attr("axis", -1), rank)
    out = list(idx)
    out.insert(axis, depth)
    return [tuple(out)]


@rule("non_zero")
def _non_zero(ctx: OpContext) -> Shapes:
    s = _shape(ctx, 0)
    v = ctx.value(0)
    return [(len(s), None if v is None else int(np.count_nonzero(v)))]


@rule("compress")
def _compress(ctx: OpContext) -> Shapes:
    s = _shape(ctx, 0)
    cond = ctx.value(1)
    axis = ctx.attr("axis")
    if axis is None:
        total = _prod(s)
        n = None if cond is None or total is None else int(np.count_nonzero(np.ravel(cond)[:total]))
        return [(n,)]
    ax = _axis(int(axis), len(s))  # type: ignore[call-overload]
    dim = s[ax]
    n = None if cond is None or dim is None else int(np.count_nonzero(np.ravel(cond)[:dim]))
    return [(*s[:ax], n, *s[ax + 1 :])]


@rule("unique")
def _unique(ctx: OpContext) -> Shapes:
    s = _shape(ctx, 0)
    v = ctx.value(0)
    axis = ctx.attr("axis")
    if axis is None:
        u = None if v is None else int(np.unique(np.ravel(v)).size)
        return [(u,), (u,), (_prod(s),), (u,)]
    ax = _axis(int(axis), len(s))  # type: ignore[call-overload]
    u = None if v is None else int(np.unique(np.asarray(v), axis=ax).shape[ax])
    return [(*s[:ax], u, *s[ax + 1 :]), (u,), (s[ax],), (u,)]


@rule("range")
def _range(ctx: OpContext) -> Shapes:
    start, limit, delta = (_floats_value(ctx, i) for i in range(3))
    if not start or not limit or not delta or delta[0] == 0:
        raise _Unknown
    return [(max(math.ceil((limit[0] - start[0]) / delta[0]), 0),)]


@rule("constant_of_shape")
def _constant_of_shape(ctx: OpContext) -> Shapes:
    return [tuple(_ints_value(ctx, 0) or [])]


@rule("center_crop_pad")
def _center_crop_pad(ctx: OpContext) -> Shapes:
    s = _shape(ctx, 0)
    target = _ints_value(ctx, 1) or []
    axes = _ints_attr(ctx, "axes") or list(range(len(s)))
    out = list(s)
    for a, d in zip(axes, target, strict=True):
        out[_axis(a, len(s))] = d
    return [tuple(out)]


@rule("col2im")
def _col2im(ctx: OpContext) -> Shapes:
    n, cb, _ = _shape(ctx, 0)
    image = _ints_value(ctx, 1) or []
    block = _ints_value(ctx, 2) or []
    k = _prod(block)
    return [(n, None if cb is None or not k else cb // k, *image)]


@rule("affine_grid")
def _affine_grid(ctx: OpContext) -> Shapes:
    size = _ints_value(ctx, 1) or []
    n, _c, *spatial = size
    return [(n, *spatial, len(spatial))]


@rule("grid_sample")
def _grid_sample(ctx: OpContext) -> Shapes:
    x = _shape(ctx, 0)
    grid = _shape(ctx, 1)
    return [(x[0], x[1], *grid[1:-1])]


def _resize_scales_sizes(ctx: OpContext) -> tuple[list[float] | None, list[int] | None]:
    native = ctx.node.native_op
    if native == "Upsample" or len(ctx.node.inputs) == 2:
        if ctx.has_input(1):
            return _floats_value(ctx, 1), None
        v = ctx.attr("scales")
        return ([float(x) for x in v] if isinstance(v, tuple | list) else None), None
    scales = _floats_value(ctx, 2) if len(ctx.inputs) > 2 else None
    sizes = _ints_value(ctx, 3) if len(ctx.inputs) > 3 else None
    return scales, sizes


@rule("resize")
def _resize(ctx: OpContext) -> Shapes:
    s = _shape(ctx, 0)
    scales, sizes = _resize_scales_sizes(ctx)
    axes = _ints_attr(ctx, "axes")
    axes = [_axis(a, len(s)) for a in axes] if axes is not None else list(range(len(s)))
    out = list(s)
    if sizes is not None:
        policy = str(ctx.attr("keep_aspect_ratio_policy", "stretch"))
        if policy in ("not_larger", "not_smaller"):
            dims = [s[a] for a in axes]
            if any(d is None for d in dims):
                raise _Unknown
            ratios = [sz / d for sz, d in zip(sizes, dims, strict=True) if d]
            scale = min(ratios) if policy == "not_larger" else max(ratios)
            for a in axes:
                d = s[a]
                out[a] = None if d is None else math.floor(d * scale + 0.5)
        else:
            for a, sz in zip(axes, sizes, strict=True):
                out[a] = sz
        return [tuple(out)]
    if scales is None:
        raise _Unknown
    for a, sc in zip(axes, scales, strict=True):
        d = s[a]
        out[a] = None if d is None else math.floor(d * sc)
    return [tuple(out)]


@rule("max_unpool")
def _max_unpool(ctx: OpContext) -> Shapes:
    if len(ctx.inputs) > 2 and ctx.has_input(2):
        return [tuple(_ints_value(ctx, 2) or [])]
    x = _shape(ctx, 0)
    k = _ints_attr(ctx, "kernel_shape") or []
    n_sp = len(k)
    strides = _ints_attr(ctx, "strides") or [1] * n_sp
    pads = _ints_attr(ctx, "pads") or [0] * (2 * n_sp)
    spatial = [
        None if d is None else (d - 1) * st + kk - pads[i] - pads[i + n_sp]
        for i, (d, st, kk) in enumerate(zip(x[2:], strides, k, strict=True))
    ]
    return [(x[0], x[1], *spatial)]


# -- convolutions and pools ---------------------------------------------------


def _conv_spatial(
    ctx: OpContext, spatial: Sequence[Dim], kernel: Sequence[int], *, ceil_mode: bool = False
) -> list[Dim]:
    n = len(spatial)
    strides = _ints_attr(ctx, "strides") or [1] * n
    dil = _ints_attr(ctx, "dilations") or [1] * n
    pads = _ints_attr(ctx, "pads") or [0] * (2 * n)
    auto = str(ctx.attr("auto_pad", "NOTSET"))
    out: list[Dim] = []
    for i, d in enumerate(spatial):
        if d is None:
            out.append(None)
            continue
        eff = (kernel[i] - 1) * dil[i] + 1
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            out.append(-(-d // strides[i]))
            continue
        if auto == "VALID":
            out.append(-(-(d - eff + 1) // strides[i]))
            continue
        total = d + pads[i] + pads[i + n] - eff
        if ceil_mode:
            o = -(-total // strides[i]) + 1
            # The last window must start inside the input or its left padding.
            if (o - 1) * strides[i] >= d + pads[i]:
                o -= 1
        else:
            o = total // strides[i] + 1
        out.append(o)
    return out


@rule("conv", "depthwise_conv", "conv_integer", "qlinear_conv", "deform_conv")
def _conv(ctx: OpContext) -> Shapes:
    x = _shape(ctx, 0)
    w = _static(ctx, 3 if ctx.node.op == "qlinear_conv" else 1)
    kernel = _ints_attr(ctx, "kernel_shape") or list(w[2:])
    return [(x[0], w[0], *_conv_spatial(ctx, x[2:], kernel))]


@rule("conv_transpose")
def _conv_transpose(ctx: OpContext) -> Shapes:
    x = _shape(ctx, 0)
    w = _static(ctx, 1)
    group = ctx.int_attr("group", 1)
    kernel = _ints_attr(ctx, "kernel_shape") or list(w[2:])
    n = len(kernel)
    out_c = w[1] * group
    given = _ints_attr(ctx, "output_shape")
    if given:
        return [(x[0], out_c, *given[-n:])]
    strides = _ints_attr(ctx, "strides") or [1] * n
    dil = _ints_attr(ctx, "dilations") or [1] * n
    opad = _ints_attr(ctx, "output_padding") or [0] * n
    pads = _ints_attr(ctx, "pads") or [0] * (2 * n)
    auto = str(ctx.attr("auto_pad", "NOTSET"))
    spatial: list[Dim] = []
    for i, d in enumerate(x[2:]):
        if d is None:
            spatial.append(None)
        elif auto in ("SAME_UPPER", "SAME_LOWER"):
            spatial.append(d * strides[i])
        else:
            pad = 0 if auto == "VALID" else pads[i] + pads[i + n]
            spatial.append(strides[i] * (d - 1) + opad[i] + (kernel[i] - 1) * dil[i] + 1 - pad)
    return [(x[0], out_c, *spatial)]


@rule("max_pool", "avg_pool", "lp_pool")
def _pool(ctx: OpContext) -> Shapes:
    x = _shape(ctx, 0)
    kernel = _ints_attr(ctx, "kernel_shape") or []
    spatial = _conv_spatial(ctx, x[2:], kernel, ceil_mode=bool(ctx.int_attr("ceil_mode", 0)))
    y = (x[0], x[1], *spatial)
    return [y, y]


@rule("global_avg_pool", "global_max_pool", "global_lp_pool")
def _global_pool(ctx: OpContext) -> Shapes:
    x = _shape(ctx, 0)
    return [(x[0], x[1], *([1] * (len(x) - 2)))]


@rule("roi_align")
def _roi_align(ctx: OpContext) -> Shapes:
    x = _shape(ctx, 0)
    rois = _shape(ctx, 1)
    return [(rois[0], x[1], ctx.int_attr("output_height", 1), ctx.int_attr("output_width", 1))]


@rule("max_roi_pool")
def _max_roi_pool(ctx: OpContext) -> Shapes:
    x = _shape(ctx, 0)
    rois = _shape(ctx, 1)
    pooled = _ints_attr(ctx, "pooled_shape")
    if not pooled or len(pooled) != 2:
        raise _Unknown
    return [(rois[0], x[1], pooled[0], pooled[1])]


@rule("causal_conv_with_state")
def _causal_conv(ctx: OpContext) -> Shapes:
    x = _shape(ctx, 0)
    w = _shape(ctx, 1)
    k = w[-1]
    return [x, (x[0], x[1], None if k is None else k - 1)]


# -- matrix products -------------------------------------------------------------


def matmul_shape(a: Shape, b: Shape) -> Shape:
    """``numpy.matmul`` shape rule (1-D operands are promoted, then the axis dropped)."""
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    batch = broadcast(a2[:-2], b2[:-2])
    out: tuple[Dim, ...] = (*batch, a2[-2], b2[-1])
    if len(a) == 1:
        out = (*out[:-2], out[-1])
    if len(b) == 1:
        out = out[:-1]
    return out


@rule("matmul", "matmul_integer")
def _matmul(ctx: OpContext) -> Shapes:
    return [matmul_shape(_shape(ctx, 0), _shape(ctx, 1))]


@rule("qlinear_matmul")
def _qlinear_matmul(ctx: OpContext) -> Shapes:
    return [matmul_shape(_shape(ctx, 0), _shape(ctx, 3))]


@rule("gemm")
def _gemm(ctx: OpContext) -> Shapes:
    a = _shape(ctx, 0)
    b = _shape(ctx, 1)
    m = a[1] if ctx.int_attr("transA", 0) else a[0]
    n = b[0] if ctx.int_attr("transB", 0) else b[1]
    return [(m, n)]


_EINSUM_TERM = re.compile(r"\.\.\.|[A-Za-z]")


@rule("einsum")
def _einsum(ctx: OpContext) -> Shapes:
    eq = str(ctx.attr("equation", "")).replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    sizes: dict[str, Dim] = {}
    ell: Shape = ()
    for i, term in enumerate(terms):
        s = _shape(ctx, i)
        letters = _EINSUM_TERM.findall(term)
        if "..." in letters:
            j = letters.index("...")
            n_ell = len(s) - (len(letters) - 1)
            ell = broadcast(ell, s[j : j + n_ell])
            s = (*s[:j], *s[j + n_ell :])
            letters.remove("...")
        for letter, d in zip(letters, s, strict=True):
            if sizes.get(letter) in (None, 1):
                sizes[letter] = d
    if arrow:
        out_letters = _EINSUM_TERM.findall(rhs)
    else:
        counts: dict[str, int] = {}
        for term in terms:
            for letter in _EINSUM_TERM.findall(term):
                counts[letter] = counts.get(letter, 0) + 1
        out_letters = (["..."] if "..." in counts else []) + sorted(
            k for k, v in counts.items() if v == 1 and k != "..."
        )
    out: list[Dim] = []
    for letter in out_letters:
        if letter == "...":
            out.extend(ell)
        else:
            out.append(sizes[letter])
    return [tuple(out)]


def _heads_3d(q: Shape, heads: int) -> Dim:
    return None if q[-1] is None or not heads else q[-1] // heads


@rule("attention")
def _attention(ctx: OpContext) -> Shapes:
    q, k, v = (_shape(ctx, i) for i in range(3))
    past = _shape(ctx, 4) if len(ctx.inputs) > 4 and ctx.has_input(4) else None
    if len(q) == 4:
        b, hq, sq, _d = q
        hkv, skv, dk = k[1], k[2], k[3]
        dv = v[3]
    else:
        hq = ctx.int_attr("q_num_heads", 0)
        hkv = ctx.int_attr("kv_num_heads", 0)
        b, sq = q[0], q[1]
        skv = k[1]
        dk = _heads_3d(k, hkv)
        dv = _heads_3d(v, hkv)
    total = skv if past is None else _sum([past[2], skv])
    y: Shape = (b, hq, sq, dv)
    if len(q) != 4:
        y = (b, sq, None if dv is None or hq is None else dv * hq)
    return [y, (b, hkv, total, dk), (b, hkv, total, dv), (b, hq, sq, total)]


@rule("ai.onnx.preview:flex_attention")
def _flex_attention(ctx: OpContext) -> Shapes:
    q = _shape(ctx, 0)
    v = _shape(ctx, 2)
    return [(q[0], q[1], q[2], v[3])]


@rule("linear_attention")
def _linear_attention(ctx: OpContext) -> Shapes:
    q, k, v = (_shape(ctx, i) for i in range(3))
    hq = ctx.int_attr("q_num_heads", 0)
    hkv = ctx.int_attr("kv_num_heads", 0)
    dk = _heads_3d(k, hkv)
    dv = _heads_3d(v, hkv)
    return [(q[0], q[1], None if dv is None else dv * hq), (q[0], hkv, dk, dv)]


@rule("det")
def _det(ctx: OpContext) -> Shapes:
    return [_shape(ctx, 0)[:-2]]


# -- recurrent -------------------------------------------------------------------


@rule("lstm", "gru", "rnn")
def _recurrent(ctx: OpContext) -> Shapes:
    x = _shape(ctx, 0)
    layout = ctx.int_attr("layout", 0)
    hidden = ctx.int_attr("hidden_size", 0) or None
    nd = 2 if ctx.attr("direction") == "bidirectional" else 1
    if layout:
        b, t = x[0], x[1]
        y: Shape = (b, t, nd, hidden)
        h: Shape = (b, nd, hidden)
    else:
        t, b = x[0], x[1]
        y = (t, nd, b, hidden)
        h = (nd, b, hidden)
    return [y, h, h]


# -- signal ------------------------------------------------------------------------


def _opset(ctx: OpContext) -> int:
    opsets = str(ctx.graph.metadata.get("opsets", ""))
    m = re.search(r"(?:^|, )ai\.onnx=(\d+)", opsets)
    return int(m.group(1)) if m else 0


@rule("dft")
def _dft(ctx: OpContext) -> Shapes:
    x = _shape(ctx, 0)
    rank = len(x)
    if "axis" in ctx.node.attrs:
        axis = ctx.int_attr("axis", 1)
    elif len(ctx.inputs) > 2 and ctx.has_input(2):
        axis = _scalar_int(ctx, 2)
    else:
        op = _opset(ctx)
        axis = 1 if op and op < 20 else -2
    axis = axis + rank if axis < 0 else axis
    given = _scalar_int(ctx, 1) if ctx.has_input(1) and ctx.node.inputs[1] else None
    n: Dim = given if given is not None else x[axis]
    onesided = bool(ctx.int_attr("onesided", 0))
    out = list(x)
    if onesided and ctx.int_attr("inverse", 0):
        # Inverse of a half spectrum: a real signal of dft_length (irfft).
        out[axis] = given if given is not None else (None if n is None else 2 * (n - 1))
        out[-1] = 1
        return [tuple(out)]
    out[axis] = None if n is None else (n // 2 + 1 if onesided else n)
    out[-1] = 2
    return [tuple(out)]


@rule("stft")
def _stft(ctx: OpContext) -> Shapes:
    x = _shape(ctx, 0)
    step = _scalar_int(ctx, 1)
    if len(ctx.inputs) > 3 and ctx.has_input(3):
        length: Dim = _scalar_int(ctx, 3)
    elif ctx.has_input(2):
        length = _shape(ctx, 2)[0]
    else:
        raise _Unknown
    frames = None if x[1] is None or length is None else (x[1] - length) // step + 1
    # onesided defaults to 1 (the schema; see ONNX_INFERENCE_WRONG).
    bins = None if length is None else (length // 2 + 1 if ctx.int_attr("onesided", 1) else length)
    return [(x[0], frames, bins, 2)]


@rule("hann_window", "hamming_window", "blackman_window")
def _window(ctx: OpContext) -> Shapes:
    return [(_scalar_int(ctx, 0),)]


@rule("mel_weight_matrix")
def _mel(ctx: OpContext) -> Shapes:
    return [(_scalar_int(ctx, 1) // 2 + 1, _scalar_int(ctx, 0))]


# -- losses, detection, strings, ML ------------------------------------------------


@rule("negative_log_likelihood_loss")
def _nll(ctx: OpContext) -> Shapes:
    if str(ctx.attr("reduction", "mean")) == "none":
        return [_shape(ctx, 1)]
    return [()]


@rule("softmax_cross_entropy_loss")
def _sce(ctx: OpContext) -> Shapes:
    loss: Shape = _shape(ctx, 1) if str(ctx.attr("reduction", "mean")) == "none" else ()
    return [loss, _shape(ctx, 0)]


@rule("non_max_suppression")
def _nms(ctx: OpContext) -> Shapes:
    return [(None, 3)]


@rule("string_split")
def _string_split(ctx: OpContext) -> Shapes:
    s = _shape(ctx, 0)
    return [(*s, None), s]


@rule("string_normalizer")
def _string_normalizer(ctx: OpContext) -> Shapes:
    s = _shape(ctx, 0)
    stop = ctx.attr("stopwords")
    if stop:  # stop-word removal makes the length data-dependent
        return [(*s[:-1], None)]
    return [s]


@rule("image_decoder")
def _image_decoder(ctx: OpContext) -> Shapes:
    channels = 1 if str(ctx.attr("pixel_format", "RGB")) == "Grayscale" else 3
    return [(None, None, channels)]


@rule("ai.onnx.ml:array_feature_extractor")
def _array_feature_extractor(ctx: OpContext) -> Shapes:
    x = _shape(ctx, 0)
    y = _shape(ctx, 1)
    n = _prod(y)
    if len(x) == 1:
        return [(1, n)]
    return [(*x[:-1], n)]


@rule("ai.onnx.ml:tree_ensemble")
def _tree_ensemble(ctx: OpContext) -> Shapes:
    x = _shape(ctx, 0)
    return [(x[0], ctx.int_attr("n_targets", 1))]


@rule("tf_idf_vectorizer")
def _tf_idf(ctx: OpContext) -> Shapes:
    x = _shape(ctx, 0)
    idx = _ints_attr(ctx, "ngram_indexes") or [0]
    width = max(idx) + 1
    return [(width,)] if len(x) == 1 else [(x[0], width)]


@rule("random_uniform", "random_normal")
def _random(ctx: OpContext) -> Shapes:
    return [tuple(_ints_attr(ctx, "shape") or [])]


@rule("multinomial")
def _multinomial(ctx: OpContext) -> Shapes:
    return [(_shape(ctx, 0)[0], ctx.int_attr("sample_size", 1))]


def _input_shapes(ctx: OpContext, positions: Iterable[int]) -> Shapes:
    return [_shape(ctx, i) for i in positions]


def _training_groups(ctx: OpContext, per_tensor: int) -> tuple[int, list[int]]:
    """(n, input offsets) of the ``per_tensor`` groups after R and T."""
    n = (len(ctx.node.inputs) - 2) // per_tensor
    return n, [2 + g * n for g in range(per_tensor)]


@rule("ai.onnx.preview.training:adagrad")
def _adagrad(ctx: OpContext) -> Shapes:
    n, (x0, _g0, h0) = _training_groups(ctx, 3)
    return _input_shapes(ctx, [x0 + j for j in range(n)] + [h0 + j for j in range(n)])


@rule("ai.onnx.preview.training:momentum")
def _momentum(ctx: OpContext) -> Shapes:
    n, (x0, _g0, v0) = _training_groups(ctx, 3)
    return _input_shapes(ctx, [x0 + j for j in range(n)] + [v0 + j for j in range(n)])


@rule("ai.onnx.preview.training:adam")
def _adam(ctx: OpContext) -> Shapes:
    n, (x0, _g0, v0, h0) = _training_groups(ctx, 4)
    return _input_shapes(ctx, [base + j for base in (x0, v0, h0) for j in range(n)])


# -- control flow ------------------------------------------------------------------


def _body_output_shapes(ctx: OpContext, key: str) -> list[Shape | None]:
    name = next((s for s in ctx.node.subgraphs if s.rsplit("/", 1)[-1] == key), None)
    if name is None or name not in ctx.graph.subgraphs:
        raise _Unknown
    body = ctx.graph.subgraphs[name]
    return [body.tensors[o].shape if o in body.tensors else None for o in body.outputs]


@rule("if")
def _if(ctx: OpContext) -> Shapes:
    then = _body_output_shapes(ctx, "then_branch")
    other = _body_output_shapes(ctx, "else_branch")
    cond = ctx.value(0)
    if cond is not None and np.asarray(cond).size == 1:
        return then if bool(np.asarray(cond).reshape(-1)[0]) else other
    return [_merge(a, b) for a, b in zip(then, other, strict=True)]


def _loop_trip_count(ctx: OpContext) -> int | None:
    """Iterations of a Loop when they are fixed: a constant trip count and a
    condition that the body passes through unchanged (or none at all)."""
    if not ctx.has_input(0):
        return None
    m = ctx.value(0)
    if m is None:
        return None
    name = next((s for s in ctx.node.subgraphs if s.endswith("/body")), None)
    if name is None or name not in ctx.graph.subgraphs:
        return None
    body = ctx.graph.subgraphs[name]
    cond_in = body.inputs[1] if len(body.inputs) > 1 else ""
    cond_out = body.outputs[0] if body.outputs else ""
    passes = cond_out == cond_in
    producer = body.producers.get(cond_out)
    if producer is not None:
        node = body.nodes[producer]
        passes = node.op == "identity" and node.inputs[0] == cond_in
    if not passes:
        return None
    if ctx.has_input(1):
        c = ctx.value(1)
        if c is None:
            return None
        if not bool(np.asarray(c).reshape(-1)[0]):
            return 0
    return int(np.asarray(m).reshape(-1)[0])


@rule("loop")
def _loop(ctx: OpContext) -> Shapes:
    outs = _body_output_shapes(ctx, "body")
    n_carried = len(ctx.node.inputs) - 2
    trips = _loop_trip_count(ctx)
    shapes: Shapes = []
    for j in range(n_carried):
        init = ctx.input(2 + j).shape if ctx.has_input(2 + j) else None
        body = outs[1 + j] if 1 + j < len(outs) else None
        # Zero iterations return the initial value; otherwise the body's output.
        shapes.append(init if trips == 0 else (body if trips else _merge(init, body)))
    for s in outs[1 + n_carried :]:
        shapes.append(None if s is None else (trips, *s))
    return shapes


def _is_scan8(ctx: OpContext) -> bool:
    """Scan-8 has a leading sequence_lens input and a batch axis; Scan-9+ has neither."""
    op = _opset(ctx)
    return bool(op) and op < 9


@rule("scan")
def _scan(ctx: OpContext) -> Shapes:
    outs = _body_output_shapes(ctx, "body")
    n_scan_in = ctx.int_attr("num_scan_inputs", 0)
    n_in = len(ctx.node.inputs)
    scan8 = _is_scan8(ctx)
    states = list(range(1 if scan8 else 0, n_in - n_scan_in))
    n_state = len(states)
    scan_inputs = list(range(n_in - n_scan_in, n_in))
    batch: Dim = None
    length: Dim = None
    if scan_inputs:
        s = _shape(ctx, scan_inputs[0])
        if scan8:
            batch, length = s[0], s[1]
        else:
            in_axes = _ints_attr(ctx, "scan_input_axes") or [0] * n_scan_in
            length = s[_axis(in_axes[0], len(s))]
    out_axes = _ints_attr(ctx, "scan_output_axes")
    shapes: Shapes = []
    for j in range(n_state):
        st = outs[j] if j < len(outs) else None
        shapes.append(None if st is None else ((batch, *st) if scan8 else st))
    for j, body_out in enumerate(outs[n_state:]):
        if body_out is None:
            shapes.append(None)
            continue
        if scan8:
            shapes.append((batch, length, *body_out))
            continue
        ax = out_axes[j] if out_axes else 0
        ax = ax + len(body_out) + 1 if ax < 0 else ax
        shapes.append((*body_out[:ax], length, *body_out[ax:]))
    return shapes


# ---------------------------------------------------------------------------
# Value propagation (small, statically known tensors)

Values = list[np.ndarray[Any, Any] | None]
ValueFn = Callable[[OpContext, Values], Values]
VALUE_RULES: dict[str, ValueFn] = {}

# ONNX TensorProto element types -> numpy (onnx/onnx.proto3 DataType)
_NP_DTYPES: dict[int, Any] = {
    1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32,
    7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64,
    16: np.float32,
}  # fmt: skip


def _value_rule(*ops: str) -> Callable[[ValueFn], ValueFn]:
    def deco(fn: ValueFn) -> ValueFn:
        for op in ops:
            VALUE_RULES[op] = fn
        return fn

    return deco


def _all(vals: list[np.ndarray[Any, Any] | None]) -> list[np.ndarray[Any, Any]]:
    if any(v is None for v in vals):
        raise _Unknown
    return [v for v in vals if v is not None]


@_value_rule("shape")
def _v_shape(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    s = _static(ctx, 0)
    rank = len(s)
    start = ctx.int_attr("start", 0)
    end = ctx.int_attr("end", rank)
    return [np.array(s[slice(start, end)], dtype=np.int64)]


@_value_rule("size")
def _v_size(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    return [np.array(math.prod(_static(ctx, 0)), dtype=np.int64)]


@_value_rule("identity")
def _v_identity(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    return _all(vals[:1])


@_value_rule("cast")
def _v_cast(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    (v,) = _all(vals[:1])
    if ctx.node.native_op == "CastLike":
        target = ctx.value(1)
        if target is None:
            raise _Unknown
        return [v.astype(np.asarray(target).dtype)]
    dt = _NP_DTYPES.get(ctx.int_attr("to", 0))
    if dt is None:
        raise _Unknown
    return [v.astype(dt)]


@_value_rule("unsqueeze", "squeeze", "reshape", "flatten")
def _v_reshape(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    if vals[0] is None:
        raise _Unknown
    shape = ctx.outputs[0].shape if ctx.outputs else None
    if shape is None or any(d is None for d in shape):
        raise _Unknown
    return [np.reshape(vals[0], tuple(int(d) for d in shape if d is not None))]


@_value_rule("concat")
def _v_concat(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    arrs = [np.asarray(v) for v in _all([v for i, v in enumerate(vals) if ctx.has_input(i)])]
    return [np.concatenate(arrs, axis=ctx.int_attr("axis", 0))]


@_value_rule("split")
def _v_split(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    if vals[0] is None:
        raise _Unknown
    data = np.asarray(vals[0])
    shapes = [t.shape for t in ctx.outputs]
    axis = _axis(ctx.int_attr("axis", 0), data.ndim)
    sizes = []
    for s in shapes:
        if s is None or s[axis] is None:
            raise _Unknown
        sizes.append(int(s[axis]))  # type: ignore[arg-type]
    return list(np.split(data, np.cumsum(sizes)[:-1], axis=axis))


@_value_rule("gather")
def _v_gather(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    data, idx = _all(vals[:2])
    return [np.take(data, np.asarray(idx, dtype=np.int64), axis=ctx.int_attr("axis", 0))]


@_value_rule("slice")
def _v_slice(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    if vals[0] is None:
        raise _Unknown
    data = np.asarray(vals[0])
    if ctx.has_input(1):
        starts = _ints_value(ctx, 1) or []
        ends = _ints_value(ctx, 2) or []
        axes = _ints_value(ctx, 3) if len(ctx.inputs) > 3 else None
        steps = _ints_value(ctx, 4) if len(ctx.inputs) > 4 else None
    else:
        starts = _ints_attr(ctx, "starts") or []
        ends = _ints_attr(ctx, "ends") or []
        axes = _ints_attr(ctx, "axes")
        steps = None
    axes = axes if axes is not None else list(range(len(starts)))
    steps = steps if steps is not None else [1] * len(starts)
    index: list[slice] = [slice(None)] * data.ndim
    for a, b, e, st in zip(axes, starts, ends, steps, strict=True):
        index[_axis(a, data.ndim)] = slice(b, e, st)
    return [data[tuple(index)]]


_NP_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "equal": np.equal,
    "less": np.less, "greater": np.greater, "less_equal": np.less_equal,
    "greater_equal": np.greater_equal, "logical_and": np.logical_and,
    "logical_or": np.logical_or, "maximum": np.maximum, "minimum": np.minimum,
}  # fmt: skip


@_value_rule(*_NP_BINARY)
def _v_binary(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    a, b = _all(vals[:2])
    out = _NP_BINARY[ctx.node.op](a, b)
    return [np.asarray(out).astype(np.result_type(a, b)) if out.dtype != np.bool_ else out]


@_value_rule("div")
def _v_div(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    a, b = _all(vals[:2])
    if np.issubdtype(a.dtype, np.integer):
        if np.any(b == 0):
            raise _Unknown
        return [np.trunc(a / b).astype(a.dtype)]
    return [np.divide(a, b)]


@_value_rule("mod")
def _v_mod(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    a, b = _all(vals[:2])
    if np.any(b == 0):
        raise _Unknown
    return [np.fmod(a, b) if ctx.int_attr("fmod", 0) else np.mod(a, b)]


_NP_UNARY: dict[str, Callable[[Any], Any]] = {
    "neg": np.negative, "abs": np.abs, "logical_not": np.logical_not, "ceil": np.ceil,
    "floor": np.floor, "sqrt": np.sqrt, "reciprocal": np.reciprocal, "sign": np.sign,
    "relu": lambda a: np.maximum(a, 0),
}  # fmt: skip


@_value_rule(*_NP_UNARY)
def _v_unary(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    (a,) = _all(vals[:1])
    if ctx.node.op == "reciprocal" and np.issubdtype(a.dtype, np.integer):
        raise _Unknown
    with np.errstate(all="ignore"):
        return [np.asarray(_NP_UNARY[ctx.node.op](a))]


@_value_rule("max", "min", "sum")
def _v_variadic(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    arrs = _all([v for i, v in enumerate(vals) if ctx.has_input(i)])
    fn = {"max": np.maximum, "min": np.minimum, "sum": np.add}[ctx.node.op]
    out = arrs[0]
    for a in arrs[1:]:
        out = fn(out, a)
    return [np.asarray(out)]


@_value_rule("where")
def _v_where(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    c, a, b = _all(vals[:3])
    return [np.where(c, a, b)]


@_value_rule("range")
def _v_range(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    start, limit, delta = (np.asarray(v).reshape(-1)[0] for v in _all(vals[:3]))
    if delta == 0:
        raise _Unknown
    return [np.arange(start, limit, delta).astype(np.asarray(vals[0]).dtype)]


@_value_rule("constant_of_shape")
def _v_constant_of_shape(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    (shape,) = _all(vals[:1])
    dims = tuple(int(d) for d in np.asarray(shape).reshape(-1))
    if math.prod(dims) > MAX_VALUE_ELEMENTS:
        raise _Unknown
    fill: Any = 0.0
    dtype: Any = np.float32
    proto = ctx.attr("value")
    if proto is not None and hasattr(proto, "data_type"):
        dtype = _NP_DTYPES.get(int(proto.data_type), np.float32)
        for f in ("int64_data", "int32_data", "float_data", "double_data"):
            data = getattr(proto, f, None)
            if data:
                fill = data[0]
                break
        else:
            raw = getattr(proto, "raw_data", b"")
            if raw:
                fill = np.frombuffer(raw, dtype=dtype)[0]
    return [np.full(dims, fill, dtype=dtype)]


@_value_rule("expand")
def _v_expand(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    data, shape = _all(vals[:2])
    target = broadcast(np.shape(data), tuple(int(d) for d in np.asarray(shape).reshape(-1)))
    return [np.broadcast_to(data, tuple(int(d) for d in target if d is not None)).copy()]


@_value_rule("tile")
def _v_tile(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    data, reps = _all(vals[:2])
    return [np.tile(data, tuple(int(r) for r in np.asarray(reps).reshape(-1)))]


@_value_rule("transpose")
def _v_transpose(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    (data,) = _all(vals[:1])
    perm = _ints_attr(ctx, "perm")
    return [np.transpose(data, perm)]


@_value_rule("reduce_prod", "reduce_sum", "reduce_max", "reduce_min")
def _v_reduce(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    if vals[0] is None:
        raise _Unknown
    data = np.asarray(vals[0])
    axes = _reduce_axes(ctx, data.ndim)
    keep = bool(ctx.int_attr("keepdims", 1))
    if axes is None:
        if ctx.int_attr("noop_with_empty_axes", 0):
            return [data]
        axes = list(range(data.ndim))
    fns: dict[str, Callable[..., Any]] = {
        "reduce_prod": np.prod, "reduce_sum": np.sum, "reduce_max": np.max, "reduce_min": np.min,
    }  # fmt: skip
    out = fns[ctx.node.op](data, axis=tuple(axes), keepdims=keep)
    return [np.asarray(out).astype(data.dtype)]


# ---------------------------------------------------------------------------
# The pass


def _has_unknown(shape: Shape | None) -> bool:
    return shape is None or any(d is None for d in shape)


def _layout_for(graph: Graph, shape: Shape | None, old: str | None) -> str | None:
    if old is not None:
        return old
    return graph.layout if shape is not None and len(shape) == 4 else None


def _run_rule(fn: Callable[[OpContext], Any], ctx: OpContext, strict: bool) -> Any:
    try:
        return fn(ctx)
    except _Unknown:
        return None
    except (ValueError, IndexError, KeyError, TypeError, ZeroDivisionError, OverflowError):
        if strict:
            raise
        return None


def _combine(old: Shape | None, new: Shape | None, replace: bool) -> Shape | None:
    """Merge a rule's shape into the frontend's; known dimensions win unless ``replace``."""
    if new is None:
        return None if replace else old
    if old is None or len(old) != len(new):
        return new if (replace or old is None) else old
    if replace:
        return tuple(n if n is not None else o for o, n in zip(old, new, strict=True))
    return tuple(o if o is not None else n for o, n in zip(old, new, strict=True))


def infer_missing_shapes(graph: Graph, *, recompute: bool = False, strict: bool = False) -> Graph:
    """Fill unknown output shapes from the rules in :data:`RULES` (ONNX graphs).

    Walks the nodes in order, propagating small known values, and returns a new
    :class:`Graph` whose tensors (and subgraphs) carry the completed shapes.
    Dimensions the frontend knows are kept, except for ops in
    :data:`ONNX_INFERENCE_WRONG`, whose rules replace them (and then everything
    downstream is recomputed from the rules).

    ``recompute=True`` ignores every shape the frontend inferred and derives all
    node outputs from the rules alone (graph inputs and constants are kept):
    a check of the rules themselves. ``strict=True`` lets a rule's error escape
    instead of leaving the shape unknown.
    """
    if graph.format != "onnx":
        return graph
    return _infer_graph(graph, graph, {}, {}, recompute, strict)[0]


BodyInputFn = Callable[[OpContext, str], list[Shape | None]]
BODY_INPUTS: dict[str, BodyInputFn] = {}
"""Shapes of a called subgraph's inputs, for bodies that do not declare them."""


def _flex_body_inputs(ctx: OpContext, key: str) -> list[Shape | None]:
    q, k = _shape(ctx, 0), _shape(ctx, 1)
    return [(q[0], q[1], q[2], k[2])]


def _loop_body_inputs(ctx: OpContext, key: str) -> list[Shape | None]:
    carried = [ctx.input(i).shape if ctx.has_input(i) else None for i in range(2, len(ctx.inputs))]
    return [(), (), *carried]


def _scan_body_inputs(ctx: OpContext, key: str) -> list[Shape | None]:
    n_scan = ctx.int_attr("num_scan_inputs", 0)
    n_in = len(ctx.node.inputs)
    scan8 = _is_scan8(ctx)
    axes = _ints_attr(ctx, "scan_input_axes") or [0] * n_scan
    out: list[Shape | None] = []
    for i in range(1 if scan8 else 0, n_in - n_scan):
        s = ctx.input(i).shape if ctx.has_input(i) else None
        out.append(None if s is None else (s[1:] if scan8 else s))
    for j, i in enumerate(range(n_in - n_scan, n_in)):
        s = ctx.input(i).shape if ctx.has_input(i) else None
        if s is None:
            out.append(None)
        elif scan8:
            out.append(s[2:])
        else:
            ax = _axis(axes[j], len(s))
            out.append((*s[:ax], *s[ax + 1 :]))
    return out


BODY_INPUTS.update(
    {"ai.onnx.preview:flex_attention": _flex_body_inputs, "loop": _loop_body_inputs,
     "scan": _scan_body_inputs}
)  # fmt: skip


def _seed_body(body: Graph, shapes: list[Shape | None] | None, recompute: bool) -> Graph:
    if not shapes:
        return body
    tensors = dict(body.tensors)
    changed = False
    for name, s in zip(body.inputs, shapes, strict=False):
        t = tensors.get(name)
        if t is None or s is None:
            continue
        if recompute or _has_unknown(t.shape):
            new = s if recompute else _combine(t.shape, s, False)
            if new != t.shape:
                tensors[name] = dataclasses.replace(t, shape=new)
                changed = True
    return dataclasses.replace(body, tensors=tensors) if changed else body


def _infer_graph(
    graph: Graph,
    root: Graph,
    outer: Mapping[str, Tensor],
    outer_values: Mapping[str, np.ndarray[Any, Any]],
    recompute: bool,
    strict: bool,
) -> tuple[Graph, dict[str, np.ndarray[Any, Any]]]:
    tensors: dict[str, Tensor] = dict(graph.tensors)
    produced = {o for n in graph.nodes for o in n.outputs if o}
    # Values visible from enclosing graphs, updated by the enclosing pass.
    for name in tensors:
        if name in outer and name not in produced and name not in graph.inputs:
            tensors[name] = outer[name]
    values: dict[str, np.ndarray[Any, Any]] = {
        k: v for k, v in outer_values.items() if k not in produced and k not in graph.inputs
    }
    if recompute:
        for node in graph.nodes:
            if node.op == "constant":
                continue
            for o in node.outputs:
                if o and o in tensors:
                    tensors[o] = dataclasses.replace(tensors[o], shape=None)
    dirty: set[str] = set()
    subgraphs: dict[str, Graph] = dict(graph.subgraphs)
    meta_graph = graph if graph.metadata else dataclasses.replace(graph, metadata=root.metadata)

    for node in graph.nodes:
        ins = [tensors.get(n) if n else None for n in node.inputs]
        sub_values: dict[str, dict[str, np.ndarray[Any, Any]]] = {}
        for sub in node.subgraphs:
            if sub not in subgraphs:
                continue
            body = subgraphs[sub]
            seed = BODY_INPUTS.get(node.op)
            if seed is not None:
                pre = OpContext(meta_graph, node, ins, [], values)
                seeds = _run_rule(_bind_key(seed, sub), pre, strict)
                body = _seed_body(body, seeds, recompute)
            subgraphs[sub], sub_values[sub] = _infer_graph(
                body, root, {**outer, **tensors}, values, recompute, strict
            )
        outs = [tensors[n] for n in node.outputs if n and n in tensors]
        view = meta_graph
        if node.subgraphs:
            view = dataclasses.replace(meta_graph, tensors=tensors, subgraphs=subgraphs)
        ctx = OpContext(view, node, ins, outs, values)
        rule_fn = RULES.get(node.op)
        replace = node.op in ONNX_INFERENCE_WRONG or any(n in dirty for n in node.inputs if n)
        need = replace or any(
            _has_unknown(tensors[o].shape) for o in node.outputs if o and o in tensors
        )
        if need:
            shapes: list[Shape | None] | None = None
            if rule_fn is not None:
                shapes = _run_rule(rule_fn, ctx, strict)
            for i, o in enumerate(node.outputs):
                if not o or o not in tensors:
                    continue
                t = tensors[o]
                new = shapes[i] if shapes is not None and i < len(shapes) else None
                final = _combine(t.shape, new, replace)
                if final != t.shape:
                    tensors[o] = dataclasses.replace(
                        t, shape=final, layout=_layout_for(graph, final, t.layout)
                    )
                    if replace and not _has_unknown(t.shape):
                        dirty.add(o)
            outs = [tensors[n] for n in node.outputs if n and n in tensors]
            ctx = OpContext(view, node, ins, outs, values)
        if node.op == "if":
            _if_values(ctx, subgraphs, sub_values, values)
            continue
        vrule = VALUE_RULES.get(node.op)
        # Values are for shape arguments: never materialise a large tensor (weights
        # generated by ConstantOfShape in ONNX's light models are tens of MB).
        small = all((t.elements or 0) <= MAX_VALUE_ELEMENTS for t in outs)
        if vrule is not None and not node.subgraphs and small:
            in_vals = [ctx.value(i) if ctx.has_input(i) else None for i in range(len(ins))]
            result = _run_rule(_bind_values(vrule, in_vals), ctx, False)
            if result is not None:
                for o, v in zip(node.outputs, result, strict=False):
                    if o and v is not None and np.size(v) <= MAX_VALUE_ELEMENTS:
                        values[o] = np.asarray(v)
    return dataclasses.replace(graph, tensors=tensors, subgraphs=subgraphs), values


def _bind_key(fn: BodyInputFn, key: str) -> Callable[[OpContext], list[Shape | None]]:
    return lambda c: fn(c, key)


def _bind_values(fn: ValueFn, vals: Values) -> Callable[[OpContext], Values]:
    return lambda c: fn(c, vals)


def _if_values(
    ctx: OpContext,
    subgraphs: Mapping[str, Graph],
    sub_values: Mapping[str, Mapping[str, np.ndarray[Any, Any]]],
    values: dict[str, np.ndarray[Any, Any]],
) -> None:
    """An If whose condition is known passes the taken branch's known values on."""
    cond = ctx.value(0)
    if cond is None or np.asarray(cond).size != 1:
        return
    key = "then_branch" if bool(np.asarray(cond).reshape(-1)[0]) else "else_branch"
    name = next((s for s in ctx.node.subgraphs if s.rsplit("/", 1)[-1] == key), None)
    if name is None or name not in subgraphs:
        return
    branch = subgraphs[name]
    bvals = sub_values.get(name, {})
    for out, bout in zip(ctx.node.outputs, branch.outputs, strict=False):
        t = branch.tensors.get(bout)
        v = bvals.get(bout)
        if v is None and t is not None and t.is_constant:
            v = t.value
        if out and v is not None:
            values[out] = v


for _op in _SAME_SHAPE:
    RULES.setdefault(_op, same_as_input)
for _op in _BROADCAST:
    RULES.setdefault(_op, broadcast_inputs)

__all__ = [
    "MAX_VALUE_ELEMENTS",
    "ONNX_INFERENCE_WRONG",
    "RULES",
    "broadcast",
    "infer_missing_shapes",
    "matmul_shape",
]
