"""Shape rules for ``ai.onnx.preview.training`` optimisers."""

from __future__ import annotations

from collections.abc import Iterable

from infercast.frontends.onnx.shapes._common import (
    Shapes,
    in_shape,
    rule,
)
from infercast.ops.registry import OpContext


def _input_shapes(ctx: OpContext, positions: Iterable[int]) -> Shapes:
    return [in_shape(ctx, i) for i in positions]


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
