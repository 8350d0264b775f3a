"""Optimiser steps of ``ai.onnx.preview.training``: 0 MACs, FLOPs per updated element.

Per-element operation counts follow the pseudo code in the ONNX specification
(https://onnx.ai/onnx/operators/onnx_aionnxpreviewtraining_Adagrad.html and the
Adam and Momentum pages). Scalar learning-rate arithmetic is not counted. Inputs
0 and 1 (learning rate R, update count T) are arguments.
"""

from __future__ import annotations

from infercast.ir.views import numel
from infercast.ops.registry import OpContext, OpCost, register


def _updated_elements(ctx: OpContext, per_tensor: int) -> int:
    n = (len(ctx.node.inputs) - 2) // per_tensor
    return sum(numel(ctx.input(2 + j)) for j in range(n))


@register("ai.onnx.preview.training:adagrad", family="training", arg_inputs=(0, 1))
def adagrad_cost(ctx: OpContext) -> OpCost:
    """0 MACs; 9 FLOPs per optimised element: regularise (2: norm * X + G), accumulate
    the squared gradient (2), square root (1), add epsilon (1), divide (1), scale by the
    learning rate (1), subtract from X (1)."""
    return OpCost(flops=9 * _updated_elements(ctx, 3))


@register("ai.onnx.preview.training:adam", family="training", arg_inputs=(0, 1))
def adam_cost(ctx: OpContext) -> OpCost:
    """0 MACs; 16 FLOPs per optimised element: regularise (2), V update alpha*V +
    (1-alpha)*G (3), H update beta*H + (1-beta)*G*G (4), square root (1), add epsilon
    (1), divide (1), scale by the learning rate (1), subtract (1), post-update
    regularisation (1 - norm_post) * X (2)."""
    return OpCost(flops=16 * _updated_elements(ctx, 4))


@register("ai.onnx.preview.training:momentum", family="training", arg_inputs=(0, 1))
def momentum_cost(ctx: OpContext) -> OpCost:
    """0 MACs; per optimised element 7 FLOPs with standard momentum: regularise (2),
    V update alpha*V + beta*G (3), X - R*V (2); Nesterov's mode adds 2 (X - R*(G +
    alpha*V_new) needs one more multiply and add)."""
    per = 9 if str(ctx.attr("mode", "standard")) == "nesterov" else 7
    return OpCost(flops=per * _updated_elements(ctx, 3))


@register("ai.onnx.preview.training:gradient", family="training")
def gradient_cost(ctx: OpContext) -> OpCost:
    """0 MACs and 0 FLOPs counted: Gradient is a symbolic marker that a training tool
    expands into the backward graph before execution; no runtime executes it as an
    op, so its cost is that of the graph it is expanded into."""
    return OpCost(note="symbolic: expanded into a backward graph before execution")
