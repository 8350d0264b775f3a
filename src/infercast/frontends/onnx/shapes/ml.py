"""Shape rules for ``ai.onnx.ml`` ops and the text vectoriser."""

from __future__ import annotations

from infercast.frontends.onnx.shapes._common import (
    Shapes,
    in_shape,
    ints_attr,
    prod_dims,
    rule,
    same_as_input,
)
from infercast.ops.registry import OpContext


@rule("ai.onnx.ml:array_feature_extractor")
def _array_feature_extractor(ctx: OpContext) -> Shapes:
    x = in_shape(ctx, 0)
    y = in_shape(ctx, 1)
    n = prod_dims(y)
    if len(x) == 1:
        return [(1, n)]
    return [(*x[:-1], n)]


@rule("ai.onnx.ml:tree_ensemble")
def _tree_ensemble(ctx: OpContext) -> Shapes:
    x = in_shape(ctx, 0)
    return [(x[0], ctx.int_attr("n_targets", 1))]


@rule("tf_idf_vectorizer")
def _tf_idf(ctx: OpContext) -> Shapes:
    x = in_shape(ctx, 0)
    idx = ints_attr(ctx, "ngram_indexes") or [0]
    width = max(idx) + 1
    return [(width,)] if len(x) == 1 else [(x[0], width)]


# Outputs with input 0's shape.
rule(
    "ai.onnx.ml:label_encoder", "ai.onnx.ml:binarizer",
)(same_as_input)  # fmt: skip
