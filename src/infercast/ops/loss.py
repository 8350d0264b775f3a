"""Loss functions (training graphs): 0 MACs, FLOPs per element as stated.

Counting follows the ONNX specification's definitions
(https://onnx.ai/onnx/operators/onnx__NegativeLogLikelihoodLoss.html,
https://onnx.ai/onnx/operators/onnx__SoftmaxCrossEntropyLoss.html): the gather of
the target class is data movement; the negation, the optional class weight, the
reduction's accumulation and the mean's divide are arithmetic.
"""

from __future__ import annotations

from infercast.ir.views import numel
from infercast.ops.registry import OpContext, OpCost, register


def _nll_flops(ctx: OpContext, target_index: int, weight_index: int) -> int:
    n = numel(ctx.input(target_index))
    weighted = ctx.has_input(weight_index)
    reduction = str(ctx.attr("reduction", "mean"))
    per = 1 + (1 if weighted else 0)  # negate, weight multiply
    total = n * per
    if reduction != "none":
        total += n  # accumulate the sum
        if reduction == "mean":
            total += (n if weighted else 0) + 1  # sum of the weights, one divide
    return total


@register("negative_log_likelihood_loss", family="loss", arg_inputs=(1,))
def nll_loss_cost(ctx: OpContext) -> OpCost:
    """0 MACs; per target element: 1 FLOP (negate) + 1 (class weight multiply, when
    weights are given) + 1 (accumulate, when reduced); "mean" adds 1 per element for
    the weight sum (when weighted) and 1 divide."""
    return OpCost(flops=_nll_flops(ctx, 1, 2))


@register("softmax_cross_entropy_loss", family="loss", arg_inputs=(1,))
def softmax_cross_entropy_cost(ctx: OpContext) -> OpCost:
    """0 MACs; log-softmax over the scores at 5 FLOPs per score element (max,
    subtract, exp, sum, subtract log) plus the negative-log-likelihood rule over the
    label elements (negate, weight, accumulate, mean)."""
    return OpCost(flops=5 * numel(ctx.input(0)) + _nll_flops(ctx, 1, 2))
