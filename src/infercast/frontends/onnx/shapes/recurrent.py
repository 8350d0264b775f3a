"""Shape rules for recurrent cells (LSTM, GRU, RNN)."""

from __future__ import annotations

from infercast.frontends.onnx.shapes._common import (
    Shapes,
    in_shape,
    rule,
)
from infercast.ir.graph import Shape
from infercast.ops.registry import OpContext


@rule("lstm", "gru", "rnn")
def _recurrent(ctx: OpContext) -> Shapes:
    x = in_shape(ctx, 0)
    layout = ctx.int_attr("layout", 0)
    hidden = ctx.int_attr("hidden_size", 0) or None
    nd = 2 if ctx.attr("direction") == "bidirectional" else 1
    if layout:
        b, t = x[0], x[1]
        y: Shape = (b, t, nd, hidden)
        h: Shape = (b, nd, hidden)
    else:
        t, b = x[0], x[1]
        y = (t, nd, b, hidden)
        h = (nd, b, hidden)
    return [y, h, h]
