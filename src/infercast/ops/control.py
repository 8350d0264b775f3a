"""Control flow: ops that call subgraphs.

``if``, ``loop``, ``scan`` (ONNX) and ``while``, ``call_once``, ``call`` (TFLite) are
*control flow*: the cost walker (``analysis/cost.py``) counts them itself from their
called subgraphs, times the trip count where the graph fixes it, and the memory
plan follows their calls. Their handlers state that rule and give the same figure
(each body once) when a handler is called on its own. ``sequence_map`` also calls a
body but is costed as an ordinary op: one run of its body (the sequence length is a
run-time value).

A handler reaches a called subgraph's cost through ``OpContext.subgraph_cost``,
which the cost walker supplies; ops never import the walker.
"""

from __future__ import annotations

from infercast.ir.views import ShapeUnknownError
from infercast.ops.registry import OpContext, OpCost, register


def body_costs(ctx: OpContext) -> list[OpCost]:
    """The (MACs, FLOPs) of each subgraph the node calls, each counted once."""
    if ctx.subgraph_cost is None:
        raise ShapeUnknownError("the cost of a called subgraph (supplied by the cost walker)")
    costs = []
    for name in ctx.node.subgraphs:
        sub = ctx.graph.subgraphs.get(name)
        if sub is None:
            raise ShapeUnknownError(name)
        cost = ctx.subgraph_cost(sub)
        if cost is None:
            raise ShapeUnknownError(f"{name} (a layer in the subgraph has no known cost)")
        costs.append(cost)
    return costs


@register("if", family="control", control_flow=True)
def if_cost(ctx: OpContext) -> OpCost:
    """The costlier of the two branches (MACs and FLOPs of the branch subgraph);
    which branch runs is decided at run time."""
    costs = body_costs(ctx)
    return OpCost(
        macs=max((c.macs for c in costs), default=0),
        flops=max((c.flops for c in costs), default=0),
        note="the costlier branch",
    )


@register("loop", "scan", "while", family="control", control_flow=True)
def loop_cost(ctx: OpContext) -> OpCost:
    """One iteration: the MACs and FLOPs of the called subgraphs (body; a WHILE's
    condition too), counted once; the cost walker multiplies by the trip count where
    the graph fixes it. Loop's and WHILE's trip counts are run-time values in general;
    Scan's length is static (the scan axis of its inputs)."""
    return _once(ctx, "one iteration of the body (iterations are not known statically)")


@register("call_once", "call", family="control", control_flow=True)
def call_cost(ctx: OpContext) -> OpCost:
    """The MACs and FLOPs of the called subgraph, once (TFLite CALL_ONCE runs its
    initialiser on the first invocation only; CALL runs it every time)."""
    return _once(ctx, "the called subgraph, once")


@register("sequence_map", family="control")
def sequence_map_cost(ctx: OpContext) -> OpCost:
    """One run of the body subgraph: its MACs and FLOPs counted once (the sequence
    length is a run-time value)."""
    return _once(ctx, "one iteration of the body (iterations are not known statically)")


def _once(ctx: OpContext, note: str) -> OpCost:
    costs = body_costs(ctx)
    return OpCost(macs=sum(c.macs for c in costs), flops=sum(c.flops for c in costs), note=note)
