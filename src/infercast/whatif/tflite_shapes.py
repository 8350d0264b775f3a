"""Output-shape rules for TFLite builtins, on the IR (what LiteRT's kernels compute in
their ``Prepare`` step).

The TFLite frontend takes every shape from the file, so it needs no rules; a what-if
variant changes input, weight and shape-argument tensors and has to re-derive the
rest. Each rule follows the op's definition in LiteRT
(``tensorflow/lite/kernels/*.cc`` ``Prepare`` and ``kernel_util.cc``) and the TFLite
op set documented with the schema (``tensorflow/compiler/mlir/lite/ir/tfl_ops.td``);
layouts are TFLite's: activations NHWC, conv weights OHWI, depthwise 1HWO, fully
connected (O, I).

A rule returns the output shapes in order, or raises :class:`RuleError` when an input
it needs is unknown or inconsistent; ops without a rule are listed in the error the
transform raises. :func:`values_of` propagates the small integer values that shape
arguments are built from (``SHAPE`` of a static tensor, and the slicing / packing of
it), as LiteRT would compute them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from infercast.ir.graph import Shape
from infercast.ops.registry import OpContext

Shapes = list[Shape]
Rule = Callable[[OpContext], Shapes]


class RuleError(Exception):
    """A rule cannot derive the shape (unknown input or value, inconsistent sizes)."""


RULES: dict[str, Rule] = {}


def _rule(*ops: str) -> Callable[[Rule], Rule]:
    def deco(fn: Rule) -> Rule:
        for op in ops:
            RULES[op] = fn
        return fn

    return deco


# --------------------------------------------------------------------------- #
# Reading inputs
# --------------------------------------------------------------------------- #


def shape_of(ctx: OpContext, i: int) -> tuple[int, ...]:
    if not ctx.has_input(i):
        raise RuleError(f"input {i} is missing")
    s = ctx.input(i).shape
    if s is None or any(d is None for d in s):
        raise RuleError(f"input {i} has an unknown shape")
    return tuple(int(d) for d in s if d is not None)


def ints_of(ctx: OpContext, i: int) -> list[int]:
    v = ctx.value(i)
    if v is None:
        raise RuleError(f"the value of input {i} is not known statically")
    return [int(x) for x in np.asarray(v).reshape(-1)]


def _attr_ints(ctx: OpContext, key: str) -> list[int]:
    v = ctx.attr(key)
    if isinstance(v, int):
        return [v]
    if isinstance(v, tuple | list):
        return [int(x) for x in v]
    return []


def _axis(a: int, rank: int) -> int:
    if not -rank <= a < max(rank, 1):
        raise RuleError(f"axis {a} out of range for rank {rank}")
    return a + rank if a < 0 else a


def broadcast(*shapes: Sequence[int]) -> tuple[int, ...]:
    """Numpy broadcasting (LiteRT ``CalculateShapeForBroadcast``)."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(rank):
        dims = {s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0}
        big = {d for d in dims if d != 1}
        if len(big) > 1:
            raise RuleError(f"shapes {[tuple(s) for s in shapes]} do not broadcast")
        out.append(big.pop() if big else 1)
    return tuple(out)


def window_out(size: int, kernel: int, stride: int, dilation: int, padding: str) -> int:
    """Output extent of a window op (LiteRT ``ComputeOutSize``): SAME ``ceil(in / s)``,
    VALID ``ceil((in - (k - 1) d) / s)``."""
    eff = (kernel - 1) * dilation + 1
    if padding == "SAME":
        return -(-size // stride)
    if padding == "VALID":
        out = -(-(size - eff + 1) // stride)
        if out < 1:
            raise RuleError(f"a {kernel}-wide window does not fit an input of {size}")
        return out
    raise RuleError(f"padding {padding!r}")


def _spatial(ctx: OpContext, x: tuple[int, ...], kernel: Sequence[int]) -> list[int]:
    strides = _attr_ints(ctx, "strides") or [1] * len(kernel)
    dil = _attr_ints(ctx, "dilations") or [1] * len(kernel)
    pad = str(ctx.attr("padding", "VALID"))
    return [window_out(x[1 + i], kernel[i], strides[i], dil[i], pad) for i in range(len(kernel))]


# --------------------------------------------------------------------------- #
# Rules
# --------------------------------------------------------------------------- #


@_rule("conv")
def _conv(ctx: OpContext) -> Shapes:
    x, w = shape_of(ctx, 0), shape_of(ctx, 1)
    if len(x) != 4 or len(w) != 4:
        raise RuleError("CONV_2D needs 4-D input and weights")
    if x[3] % w[3]:
        raise RuleError(f"input channels {x[3]} are not a multiple of the filter's {w[3]}")
    return [(x[0], *_spatial(ctx, x, w[1:3]), w[0])]


@_rule("depthwise_conv")
def _depthwise(ctx: OpContext) -> Shapes:
    x, w = shape_of(ctx, 0), shape_of(ctx, 1)
    if len(x) != 4 or len(w) != 4:
        raise RuleError("DEPTHWISE_CONV_2D needs 4-D input and weights")
    if w[3] % x[3]:
        raise RuleError(f"filter channels {w[3]} are not a multiple of the input's {x[3]}")
    return [(x[0], *_spatial(ctx, x, w[1:3]), w[3])]


@_rule("conv_transpose")
def _conv_transpose(ctx: OpContext) -> Shapes:
    out = ints_of(ctx, 0)
    w = shape_of(ctx, 1)
    if out[-1] != w[0]:
        raise RuleError(f"output_shape channels {out[-1]} differ from the filter's {w[0]}")
    return [tuple(out)]


@_rule("avg_pool", "max_pool", "l2_pool")
def _pool(ctx: OpContext) -> Shapes:
    x = shape_of(ctx, 0)
    kernel = _attr_ints(ctx, "kernel_shape")
    if len(x) != 4 or len(kernel) != 2:
        raise RuleError("pooling needs a 4-D input and a 2-D window")
    return [(x[0], *_spatial(ctx, x, kernel), x[3])]


@_rule("fully_connected")
def _fc(ctx: OpContext) -> Shapes:
    x, w = shape_of(ctx, 0), shape_of(ctx, 1)
    o, i = w[0], w[-1]
    if bool(ctx.attr("keep_num_dims", False)):
        if x[-1] != i:
            raise RuleError(f"input depth {x[-1]} differs from the weights' {i}")
        return [(*x[:-1], o)]
    n = int(np.prod(x))
    if n % i:
        raise RuleError(f"input of {n} elements cannot be rows of {i}")
    return [(n // i, o)]


@_rule("matmul")
def _batch_matmul(ctx: OpContext) -> Shapes:
    a, b = list(shape_of(ctx, 0)), list(shape_of(ctx, 1))
    if bool(ctx.attr("adj_x", False)):
        a[-1], a[-2] = a[-2], a[-1]
    if bool(ctx.attr("adj_y", False)):
        b[-1], b[-2] = b[-2], b[-1]
    if a[-1] != b[-2]:
        raise RuleError(f"inner dimensions {a[-1]} and {b[-2]} differ")
    batch = broadcast(a[:-2], b[:-2])
    return [(*batch, a[-2], b[-1])]


def _resolve_reshape(x: tuple[int, ...], target: list[int]) -> tuple[int, ...]:
    n = int(np.prod(x))
    if target.count(-1) > 1:
        raise RuleError("more than one -1 in the new shape")
    known = int(np.prod([d for d in target if d != -1])) if target else 1
    if -1 in target:
        if known == 0 or n % known:
            raise RuleError(f"{n} elements do not reshape to {target}")
        target = [n // known if d == -1 else d for d in target]
    elif known != n:
        raise RuleError(f"{n} elements do not reshape to {target}")
    return tuple(target)


@_rule("reshape")
def _reshape(ctx: OpContext) -> Shapes:
    x = shape_of(ctx, 0)
    if ctx.has_input(1) and ctx.value(1) is not None:
        target = ints_of(ctx, 1)
    else:
        target = _attr_ints(ctx, "new_shape")
    return [_resolve_reshape(x, target)]


@_rule("squeeze")
def _squeeze(ctx: OpContext) -> Shapes:
    x = shape_of(ctx, 0)
    dims = {_axis(a, len(x)) for a in _attr_ints(ctx, "squeeze_dims")}
    if not dims:
        dims = {i for i, d in enumerate(x) if d == 1}
    return [tuple(d for i, d in enumerate(x) if i not in dims)]


@_rule("expand_dims")
def _expand_dims(ctx: OpContext) -> Shapes:
    x = list(shape_of(ctx, 0))
    a = ints_of(ctx, 1)[0]
    a = a + len(x) + 1 if a < 0 else a
    x.insert(a, 1)
    return [tuple(x)]


@_rule(
    "reduce_mean", "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_any",
    "reduce_all",
)  # fmt: skip
def _reduce(ctx: OpContext) -> Shapes:
    x = shape_of(ctx, 0)
    axes = {_axis(a, len(x)) for a in ints_of(ctx, 1)}
    if bool(ctx.attr("keep_dims", False)):
        return [tuple(1 if i in axes else d for i, d in enumerate(x))]
    return [tuple(d for i, d in enumerate(x) if i not in axes)]


@_rule("arg_max", "arg_min")
def _arg(ctx: OpContext) -> Shapes:
    x = shape_of(ctx, 0)
    a = _axis(ints_of(ctx, 1)[0], len(x))
    return [tuple(d for i, d in enumerate(x) if i != a)]


@_rule("concat")
def _concat(ctx: OpContext) -> Shapes:
    shapes = [shape_of(ctx, i) for i in range(len(ctx.inputs)) if ctx.has_input(i)]
    rank = len(shapes[0])
    a = _axis(int(ctx.int_attr("axis", 0)), rank)
    for s in shapes[1:]:
        if len(s) != rank or any(
            d != e for i, (d, e) in enumerate(zip(s, shapes[0], strict=True)) if i != a
        ):
            raise RuleError(f"concatenated shapes {shapes} differ off axis {a}")
    out = list(shapes[0])
    out[a] = sum(s[a] for s in shapes)
    return [tuple(out)]


@_rule("pad", "mirror_pad")
def _pad(ctx: OpContext) -> Shapes:
    x = shape_of(ctx, 0)
    p = ints_of(ctx, 1)
    if len(p) != 2 * len(x):
        raise RuleError(f"paddings of {len(p)} values for rank {len(x)}")
    return [tuple(d + p[2 * i] + p[2 * i + 1] for i, d in enumerate(x))]


@_rule("resize")
def _resize(ctx: OpContext) -> Shapes:
    x = shape_of(ctx, 0)
    size = ints_of(ctx, 1)
    return [(x[0], size[0], size[1], x[3])]


def strided_slice_shape(
    x: Sequence[int],
    begin: Sequence[int],
    end: Sequence[int],
    strides: Sequence[int],
    begin_mask: int,
    end_mask: int,
    shrink_mask: int,
    offset: bool = False,
) -> tuple[int, ...]:
    """LiteRT ``strided_slice.cc`` for masks without ellipsis / new axes."""
    out = []
    for i, d in enumerate(x):
        if i >= len(begin):
            out.append(d)
            continue
        s = strides[i]
        if s == 0:
            raise RuleError("stride 0")
        b, e = begin[i], end[i]
        if offset:
            e = b + e
        if shrink_mask >> i & 1:
            continue
        lo, hi = (0, d) if s > 0 else (-1, d - 1)
        if begin_mask >> i & 1:
            b = 0 if s > 0 else d - 1
        else:
            b = b + d if b < 0 else b
            b = min(max(b, lo), hi)
        if end_mask >> i & 1:
            e = d if s > 0 else -1
        else:
            e = e + d if e < 0 else e
            e = min(max(e, lo), hi)
        n = -(-(e - b) // s) if s > 0 else -(-(b - e) // -s)
        out.append(max(n, 0))
    return tuple(out)


@_rule("strided_slice")
def _strided_slice(ctx: OpContext) -> Shapes:
    x = shape_of(ctx, 0)
    if ctx.int_attr("ellipsis_mask", 0) or ctx.int_attr("new_axis_mask", 0):
        raise RuleError("STRIDED_SLICE with ellipsis or new-axis masks")
    return [
        strided_slice_shape(
            x,
            ints_of(ctx, 1),
            ints_of(ctx, 2),
            ints_of(ctx, 3),
            ctx.int_attr("begin_mask", 0),
            ctx.int_attr("end_mask", 0),
            ctx.int_attr("shrink_axis_mask", 0),
            bool(ctx.attr("offset", False)),
        )
    ]


@_rule("slice")
def _slice(ctx: OpContext) -> Shapes:
    x = shape_of(ctx, 0)
    begin, size = ints_of(ctx, 1), ints_of(ctx, 2)
    return [tuple(d - b if s == -1 else s for d, b, s in zip(x, begin, size, strict=True))]


@_rule("split")
def _split(ctx: OpContext) -> Shapes:
    x = shape_of(ctx, 1)
    a = _axis(ints_of(ctx, 0)[0], len(x))
    n = ctx.int_attr("num_splits", len(ctx.node.outputs))
    if x[a] % n:
        raise RuleError(f"axis of {x[a]} does not split in {n}")
    out = list(x)
    out[a] = x[a] // n
    return [tuple(out)] * n


@_rule("split_v")
def _split_v(ctx: OpContext) -> Shapes:
    x = shape_of(ctx, 0)
    sizes = ints_of(ctx, 1)
    a = _axis(ints_of(ctx, 2)[0], len(x))
    if -1 in sizes:
        i = sizes.index(-1)
        sizes[i] = x[a] - (sum(sizes) + 1)
    if sum(sizes) != x[a]:
        raise RuleError(f"split sizes {sizes} do not add up to {x[a]}")
    out: Shapes = []
    for s in sizes:
        o = list(x)
        o[a] = s
        out.append(tuple(o))
    return out


@_rule("transpose")
def _transpose(ctx: OpContext) -> Shapes:
    x = shape_of(ctx, 0)
    perm = ints_of(ctx, 1)
    return [tuple(x[p] for p in perm)]


@_rule("pack")
def _pack(ctx: OpContext) -> Shapes:
    x = list(shape_of(ctx, 0))
    a = ctx.int_attr("axis", 0)
    a = a + len(x) + 1 if a < 0 else a
    x.insert(a, sum(1 for i in range(len(ctx.inputs)) if ctx.has_input(i)))
    return [tuple(x)]


@_rule("unpack")
def _unpack(ctx: OpContext) -> Shapes:
    x = shape_of(ctx, 0)
    a = _axis(ctx.int_attr("axis", 0), len(x))
    out = tuple(d for i, d in enumerate(x) if i != a)
    return [out] * len(ctx.node.outputs)


@_rule("gather")
def _gather(ctx: OpContext) -> Shapes:
    p, idx = shape_of(ctx, 0), shape_of(ctx, 1)
    a = _axis(ctx.int_attr("axis", 0), len(p))
    bd = ctx.int_attr("batch_dims", 0)
    return [(*p[:a], *idx[bd:], *p[a + 1 :])]


@_rule("space_to_depth")
def _space_to_depth(ctx: OpContext) -> Shapes:
    n, h, w, c = shape_of(ctx, 0)
    b = ctx.int_attr("block_size", 1)
    if h % b or w % b:
        raise RuleError(f"{h}x{w} is not a multiple of block {b}")
    return [(n, h // b, w // b, c * b * b)]


@_rule("depth_to_space")
def _depth_to_space(ctx: OpContext) -> Shapes:
    n, h, w, c = shape_of(ctx, 0)
    b = ctx.int_attr("block_size", 1)
    if c % (b * b):
        raise RuleError(f"depth {c} is not a multiple of block {b} squared")
    return [(n, h * b, w * b, c // (b * b))]


@_rule("space_to_batch")
def _space_to_batch(ctx: OpContext) -> Shapes:
    x = shape_of(ctx, 0)
    block, pads = ints_of(ctx, 1), ints_of(ctx, 2)
    out = [x[0] * int(np.prod(block))]
    for i, b in enumerate(block):
        padded = x[1 + i] + pads[2 * i] + pads[2 * i + 1]
        if padded % b:
            raise RuleError(f"padded size {padded} is not a multiple of block {b}")
        out.append(padded // b)
    return [(*out, *x[1 + len(block) :])]


@_rule("batch_to_space")
def _batch_to_space(ctx: OpContext) -> Shapes:
    x = shape_of(ctx, 0)
    block, crops = ints_of(ctx, 1), ints_of(ctx, 2)
    prod = int(np.prod(block))
    if x[0] % prod:
        raise RuleError(f"batch {x[0]} is not a multiple of the block {prod}")
    out = [x[0] // prod]
    for i, b in enumerate(block):
        out.append(x[1 + i] * b - crops[2 * i] - crops[2 * i + 1])
    return [(*out, *x[1 + len(block) :])]


@_rule("shape")
def _shape(ctx: OpContext) -> Shapes:
    return [(len(shape_of(ctx, 0)),)]


@_rule("tile")
def _tile(ctx: OpContext) -> Shapes:
    x = shape_of(ctx, 0)
    m = ints_of(ctx, 1)
    return [tuple(d * k for d, k in zip(x, m, strict=True))]


@_rule("broadcast_to")
def _broadcast_to(ctx: OpContext) -> Shapes:
    return [broadcast(shape_of(ctx, 0), ints_of(ctx, 1))]


@_rule("fill")
def _fill(ctx: OpContext) -> Shapes:
    return [tuple(ints_of(ctx, 0))]


@_rule("top_k")
def _top_k(ctx: OpContext) -> Shapes:
    x = shape_of(ctx, 0)
    k = ints_of(ctx, 1)[0]
    return [(*x[:-1], k)] * 2


_UNARY = (
    "relu", "relu6", "relu_n1_to_1", "relu_0_to_1", "sigmoid", "tanh", "hard_swish",
    "leaky_relu", "elu", "gelu", "exp", "log", "sqrt", "rsqrt", "abs", "neg", "square",
    "sign", "floor", "ceil", "round", "sin", "cos", "quantize", "dequantize", "cast",
    "softmax", "log_softmax", "l2_normalization", "lrn", "zeros_like", "ones_like",
    "logical_not", "add_n", "cum_sum", "reverse", "identity",
)  # fmt: skip


@_rule(*_UNARY)
def _same(ctx: OpContext) -> Shapes:
    return [shape_of(ctx, 0)]


_BROADCAST = (
    "add", "sub", "mul", "div", "maximum", "minimum", "pow", "squared_difference",
    "floor_div", "floor_mod", "less", "less_equal", "greater", "greater_equal", "equal",
    "not_equal", "logical_and", "logical_or", "where", "prelu", "atan2", "bitwise_xor",
    "right_shift",
)  # fmt: skip


@_rule(*_BROADCAST)
def _broadcast_rule(ctx: OpContext) -> Shapes:
    shapes = [shape_of(ctx, i) for i in range(len(ctx.inputs)) if ctx.has_input(i)]
    return [broadcast(*shapes)]


# --------------------------------------------------------------------------- #
# Values of shape arguments
# --------------------------------------------------------------------------- #

Value = np.ndarray[Any, Any]


def values_of(ctx: OpContext) -> list[Value | None]:
    """Small integer values of the node's outputs when they follow statically
    (``SHAPE`` of a static tensor, then slicing, packing, concatenating, arithmetic)."""
    op = ctx.node.op
    try:
        if op == "shape":
            return [np.asarray(shape_of(ctx, 0), dtype=np.int32)]
        ins = [ctx.value(i) if ctx.has_input(i) else None for i in range(len(ctx.inputs))]
        if any(v is None for v in ins) or not ins:
            return []
        vals = [np.asarray(v) for v in ins if v is not None]
        if op == "strided_slice" and vals[0].ndim == 1:
            b, e, s = (int(vals[k][0]) for k in (1, 2, 3))
            bm, em = ctx.int_attr("begin_mask", 0), ctx.int_attr("end_mask", 0)
            sl = slice(None if bm & 1 else b, None if em & 1 else e, s)
            out = vals[0][sl]
            if ctx.int_attr("shrink_axis_mask", 0) & 1:
                out = out[:1].reshape(())
            return [out]
        if op == "pack":
            return [np.stack(vals, axis=ctx.int_attr("axis", 0))]
        if op == "concat":
            return [np.concatenate(vals, axis=ctx.int_attr("axis", 0))]
        if op == "gather":
            return [np.take(vals[0], vals[1], axis=ctx.int_attr("axis", 0))]
        if op in ("mul", "add", "sub", "floor_div"):
            fn = {
                "mul": np.multiply,
                "add": np.add,
                "sub": np.subtract,
                "floor_div": np.floor_divide,
            }
            return [fn[op](vals[0], vals[1])]
        if op in ("cast", "identity", "reshape"):
            return [vals[0].reshape(-1) if op == "reshape" else vals[0]]
    except (RuleError, ValueError, IndexError, TypeError):
        return []
    return []
