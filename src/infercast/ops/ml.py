"""Classical-ML and text ops (``ai.onnx.ml`` domain, ``TfIdfVectorizer``): 0 MACs.

Tree ensembles are counted by their worst case: every input row walks the deepest
path of every tree (one compare per interior node on the path) and adds each tree's
leaf value into the result; the real path depends on the data.
"""

from __future__ import annotations

from collections.abc import Sequence

from infercast.ir.views import numel, static_shape
from infercast.ops.registry import OpContext, OpCost, register


@register("ai.onnx.ml:label_encoder", family="ml")
def label_encoder_cost(ctx: OpContext) -> OpCost:
    """0 MACs and 0 FLOPs: a table lookup per element (keys to values), no arithmetic;
    its cost is the bytes read."""
    return OpCost()


@register("ai.onnx.ml:array_feature_extractor", family="ml", arg_inputs=(1,))
def array_feature_extractor_cost(ctx: OpContext) -> OpCost:
    """0 MACs and 0 FLOPs: selects elements along the last axis (a gather)."""
    return OpCost()


@register("ai.onnx.ml:binarizer", family="ml")
def binarizer_cost(ctx: OpContext) -> OpCost:
    """0 MACs; 1 FLOP per element: x > threshold ? 1 : 0."""
    return OpCost(flops=ctx.out_elems())


def _ints(v: object) -> list[int]:
    return [int(x) for x in v] if isinstance(v, Sequence) and not isinstance(v, str) else []


def _tree_depths(ctx: OpContext) -> list[int]:
    """Interior nodes on the deepest root-to-leaf path of each tree (TreeEnsemble-5)."""
    roots = _ints(ctx.attr("tree_roots", ()))
    true_ids = _ints(ctx.attr("nodes_truenodeids", ()))
    false_ids = _ints(ctx.attr("nodes_falsenodeids", ()))
    true_leaf = _ints(ctx.attr("nodes_trueleafs", ()))
    false_leaf = _ints(ctx.attr("nodes_falseleafs", ()))
    memo: dict[int, int] = {}

    def depth(i: int, guard: int = 0) -> int:
        if i in memo:
            return memo[i]
        if guard > len(true_ids):  # malformed (cyclic) tree
            raise ValueError("tree_ensemble: node references form a cycle")
        t = 0 if true_leaf[i] else depth(true_ids[i], guard + 1)
        f = 0 if false_leaf[i] else depth(false_ids[i], guard + 1)
        memo[i] = 1 + max(t, f)
        return memo[i]

    return [depth(r) for r in roots]


@register("ai.onnx.ml:tree_ensemble", family="ml")
def tree_ensemble_cost(ctx: OpContext) -> OpCost:
    """0 MACs; worst case FLOPs = rows x sum over trees of (depth + 1): one compare per
    interior node on each tree's deepest path, one add of the leaf weight into the
    aggregate (the real path, and so the count, depends on the data)."""
    rows = static_shape(ctx.input(0))[0]
    return OpCost(
        flops=rows * sum(d + 1 for d in _tree_depths(ctx)), note="worst case, data-dependent"
    )


@register("tf_idf_vectorizer", family="ml")
def tf_idf_vectorizer_cost(ctx: OpContext) -> OpCost:
    """0 MACs; FLOPs = input elements x max n-gram length (one lookup step per token
    and n-gram length, counted as a compare) + output elements (the count, or its
    IDF weighting multiply)."""
    n = ctx.int_attr("max_gram_length", 1)
    return OpCost(flops=numel(ctx.input(0)) * n + ctx.out_elems())
