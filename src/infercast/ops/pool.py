"""Pooling: 0 MACs; FLOPs counted over each window."""

from __future__ import annotations

from infercast.ir.views import numel
from infercast.ops.registry import OpContext, OpCost, register


def _window(ctx: OpContext) -> int:
    k = ctx.attr("kernel_shape", ())
    n = 1
    if isinstance(k, tuple | list):
        for d in k:
            n *= int(d)
    return n


@register("max_pool", "avg_pool", "lp_pool", "l2_pool", family="pool", windowed=True)
def pool_cost(ctx: OpContext) -> OpCost:
    """0 MACs; FLOPs = output elements x kernel window (one compare or add per
    window element; the average's divide and the Lp power/root are not counted)."""
    return OpCost(flops=ctx.out_elems() * _window(ctx))


@register("global_avg_pool", "global_max_pool", "global_lp_pool", family="pool")
def global_pool_cost(ctx: OpContext) -> OpCost:
    """0 MACs; FLOPs = input elements (one add or compare per input value)."""
    return OpCost(flops=numel(ctx.input(0)))


@register("max_unpool", family="pool", arg_inputs=(1, 2))
def unpool_cost(ctx: OpContext) -> OpCost:
    """0 MACs and 0 FLOPs: a scatter of the input values (data movement)."""
    return OpCost()


@register("roi_align", "max_roi_pool", family="pool", arg_inputs=(1, 2))
def roi_cost(ctx: OpContext) -> OpCost:
    """0 MACs; FLOPs = output elements x samples per bin x 9 (a bilinear sample is
    3 lerps of 3 FLOPs), samples per bin = sampling_ratio^2 (2^2 when adaptive)."""
    ratio = ctx.int_attr("sampling_ratio", 0) or 2
    return OpCost(flops=ctx.out_elems() * ratio * ratio * 9)
