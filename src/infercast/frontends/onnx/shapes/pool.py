"""Shape rules for pooling (windowed, global, RoI, unpooling)."""

from __future__ import annotations

from infercast.frontends.onnx.shapes._common import (
    Shapes,
    Unknown,
    in_shape,
    ints_attr,
    ints_value,
    rule,
)
from infercast.frontends.onnx.shapes.conv import conv_spatial
from infercast.ops.registry import OpContext


@rule("max_unpool")
def _max_unpool(ctx: OpContext) -> Shapes:
    if len(ctx.inputs) > 2 and ctx.has_input(2):
        return [tuple(ints_value(ctx, 2) or [])]
    x = in_shape(ctx, 0)
    k = ints_attr(ctx, "kernel_shape") or []
    n_sp = len(k)
    strides = ints_attr(ctx, "strides") or [1] * n_sp
    pads = ints_attr(ctx, "pads") or [0] * (2 * n_sp)
    spatial = [
        None if d is None else (d - 1) * st + kk - pads[i] - pads[i + n_sp]
        for i, (d, st, kk) in enumerate(zip(x[2:], strides, k, strict=True))
    ]
    return [(x[0], x[1], *spatial)]


@rule("max_pool", "avg_pool", "lp_pool")
def _pool(ctx: OpContext) -> Shapes:
    x = in_shape(ctx, 0)
    kernel = ints_attr(ctx, "kernel_shape") or []
    spatial = conv_spatial(ctx, x[2:], kernel, ceil_mode=bool(ctx.int_attr("ceil_mode", 0)))
    y = (x[0], x[1], *spatial)
    return [y, y]


@rule("global_avg_pool", "global_max_pool", "global_lp_pool")
def _global_pool(ctx: OpContext) -> Shapes:
    x = in_shape(ctx, 0)
    return [(x[0], x[1], *([1] * (len(x) - 2)))]


@rule("roi_align")
def _roi_align(ctx: OpContext) -> Shapes:
    x = in_shape(ctx, 0)
    rois = in_shape(ctx, 1)
    return [(rois[0], x[1], ctx.int_attr("output_height", 1), ctx.int_attr("output_width", 1))]


@rule("max_roi_pool")
def _max_roi_pool(ctx: OpContext) -> Shapes:
    x = in_shape(ctx, 0)
    rois = in_shape(ctx, 1)
    pooled = ints_attr(ctx, "pooled_shape")
    if not pooled or len(pooled) != 2:
        raise Unknown
    return [(rois[0], x[1], pooled[0], pooled[1])]
