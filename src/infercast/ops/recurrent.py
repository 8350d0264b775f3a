"""Recurrent cells (LSTM, GRU, RNN), counted per time step times steps.

Every cell multiplies the step input by its input weights and the previous
hidden state by its recurrent weights, so per step and batch row the MACs are
the element counts of those weight matrices, summed over gates and directions.
The frontends record which inputs are weight matrices (``weight_inputs``) and
where time and batch sit in the input (``time_axis``, ``batch_axis``).
"""

from __future__ import annotations

from infercast.ir.views import numel, static_shape
from infercast.ops.registry import OpContext, OpCost, register

# Elementwise work per hidden unit per step: gate activations and the cell update.
_GATE_FLOPS = {"lstm": 3 * 4 + 2 * 1 + 3 + 1 + 8, "gru": 2 * 4 + 1 + 4 + 6, "rnn": 1 + 2}


def _steps_batch(ctx: OpContext) -> tuple[int, int]:
    x = static_shape(ctx.input(0))
    if len(x) == 2:  # a single step (TFLite LSTM / RNN on [batch, input])
        return 1, x[0]
    if len(x) != 3:
        # A runtime rejects it (an If branch not taken for these inputs can carry one).
        raise ValueError(f"a recurrent cell's input has rank 3 (or 2), not {len(x)}")
    t_axis = ctx.int_attr("time_axis", 0)
    b_axis = ctx.int_attr("batch_axis", 1)
    return x[t_axis], x[b_axis]


def _hidden_units(ctx: OpContext) -> int:
    out = static_shape(ctx.outputs[0]) if ctx.outputs and ctx.outputs[0].is_static else ()
    h = ctx.int_attr("hidden_size", 0)
    if h:
        return h * max(ctx.int_attr("num_directions", 1), 1)
    return out[-1] if out else 0


def _recurrent(ctx: OpContext, kind: str) -> OpCost:
    weights = ctx.node.attrs.get("weight_inputs", (1, 2))
    assert isinstance(weights, tuple | list)
    per_step = sum(numel(ctx.input(i)) for i in weights if ctx.has_input(i))
    steps, batch = _steps_batch(ctx)
    macs = steps * batch * per_step
    gate = _GATE_FLOPS[kind] * steps * batch * _hidden_units(ctx)
    return OpCost(macs=macs, flops=2 * macs + gate)


@register("lstm", family="recurrent")
def lstm_cost(ctx: OpContext) -> OpCost:
    """MACs = steps x batch x (elements of the input and recurrent weight matrices,
    all gates and directions). FLOPs = 2 x MACs + 30 per hidden unit per step
    (3 sigmoids at 4, 2 tanh at 1, 4 products/sums of the cell update, 8 bias adds)."""
    return _recurrent(ctx, "lstm")


@register("gru", family="recurrent")
def gru_cost(ctx: OpContext) -> OpCost:
    """MACs = steps x batch x (elements of the input and recurrent weight matrices).
    FLOPs = 2 x MACs + 19 per hidden unit per step (2 sigmoids at 4, 1 tanh,
    4 products/sums of the update, 6 bias adds)."""
    return _recurrent(ctx, "gru")


@register("rnn", family="recurrent")
def rnn_cost(ctx: OpContext) -> OpCost:
    """MACs = steps x batch x (elements of the input and recurrent weight matrices).
    FLOPs = 2 x MACs + 3 per hidden unit per step (activation, 2 bias adds)."""
    return _recurrent(ctx, "rnn")
