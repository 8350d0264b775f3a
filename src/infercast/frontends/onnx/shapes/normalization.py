"""Shape rules for normalisations, reductions, softmax-like and top-k ops."""

from __future__ import annotations

from infercast.frontends.onnx.shapes._common import (
    Shapes,
    in_shape,
    norm_axis,
    reduce_axes,
    rule,
    same_as_input,
    scalar_int,
)
from infercast.ir.graph import Shape
from infercast.ops.registry import OpContext


@rule("layer_normalization")
def _layer_norm(ctx: OpContext) -> Shapes:
    s = in_shape(ctx, 0)
    axis = norm_axis(ctx.int_attr("axis", -1), len(s))
    stats: Shape = (*s[:axis], *([1] * (len(s) - axis)))
    return [s, stats, stats]


@rule("batch_normalization")
def _batch_norm(ctx: OpContext) -> Shapes:
    s = in_shape(ctx, 0)
    c: Shape = (s[1],) if len(s) > 1 else (None,)
    return [s, *([c] * (len(ctx.node.outputs) - 1))]


@rule(
    "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_l1",
    "reduce_l2", "reduce_sum_square", "reduce_log_sum", "reduce_log_sum_exp",
)  # fmt: skip
def _reduce(ctx: OpContext) -> Shapes:
    s = in_shape(ctx, 0)
    axes = reduce_axes(ctx, len(s))
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
    s = in_shape(ctx, 0)
    axis = norm_axis(ctx.int_attr("axis", 0), len(s))
    if ctx.int_attr("keepdims", 1):
        return [tuple(1 if i == axis else d for i, d in enumerate(s))]
    return [tuple(d for i, d in enumerate(s) if i != axis)]


@rule("top_k")
def _top_k(ctx: OpContext) -> Shapes:
    s = in_shape(ctx, 0)
    axis = norm_axis(ctx.int_attr("axis", -1), len(s))
    k = scalar_int(ctx, 1) if ctx.has_input(1) else ctx.int_attr("k", 0)
    out = tuple(k if i == axis else d for i, d in enumerate(s))
    return [out, out]


# Outputs with input 0's shape.
_SAME_SHAPE = (
    "cum_sum", "cum_prod", "softmax", "log_softmax", "hardmax", "instance_normalization",
    "group_normalization", "rms_normalization", "mean_variance_normalization", "lrn",
    "lp_normalization",
)  # fmt: skip
rule(*_SAME_SHAPE)(same_as_input)
