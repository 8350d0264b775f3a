"""Control flow: ``If``, ``Loop``, ``Scan`` and ``SequenceMap`` call subgraphs.

The cost walker (``analysis/cost.py``) counts ``if``, ``loop`` and ``scan`` itself
from their called subgraphs; these handlers document that rule, give the same
figure when called directly, and serve ``sequence_map``, which the walker treats
as an ordinary op. Iteration counts are values known only at run time, so every
body is counted once.
"""

from __future__ import annotations

from infercast.ir.views import ShapeUnknownError
from infercast.ops.registry import OpContext, OpCost, register


def body_costs(ctx: OpContext) -> list[OpCost]:
    """The (MACs, FLOPs) of each subgraph the node calls, each counted once."""
    if ctx.subgraph_cost is None:
        raise ShapeUnknownError("the called subgraphs (the cost walker costs them)")
    return [ctx.subgraph_cost(name) for name in ctx.node.subgraphs]


@register("if", family="control")
def if_cost(ctx: OpContext) -> OpCost:
    """The costlier of the two branches (MACs and FLOPs of the branch subgraph);
    which branch runs is decided at run time."""
    costs = body_costs(ctx)
    return OpCost(
        macs=max((c.macs for c in costs), default=0),
        flops=max((c.flops for c in costs), default=0),
        note="the costlier branch",
    )


@register("loop", "scan", "sequence_map", family="control")
def loop_cost(ctx: OpContext) -> OpCost:
    """One iteration: the MACs and FLOPs of the body subgraph, counted once, as the
    cost walker counts every called subgraph. Loop's trip count and SequenceMap's
    sequence length are run-time values; Scan's length is static (the scan axis of its
    inputs), so its full cost is this figure times that length."""
    costs = body_costs(ctx)
    return OpCost(
        macs=sum(c.macs for c in costs),
        flops=sum(c.flops for c in costs),
        note="one iteration of the body (iterations are not known statically)",
    )
