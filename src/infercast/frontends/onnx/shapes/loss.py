"""Shape rules for losses."""

from __future__ import annotations

from infercast.frontends.onnx.shapes._common import (
    Shapes,
    in_shape,
    rule,
)
from infercast.ir.graph import Shape
from infercast.ops.registry import OpContext


@rule("negative_log_likelihood_loss")
def _nll(ctx: OpContext) -> Shapes:
    if str(ctx.attr("reduction", "mean")) == "none":
        return [in_shape(ctx, 1)]
    return [()]


@rule("softmax_cross_entropy_loss")
def _sce(ctx: OpContext) -> Shapes:
    loss: Shape = in_shape(ctx, 1) if str(ctx.attr("reduction", "mean")) == "none" else ()
    return [loss, in_shape(ctx, 0)]
