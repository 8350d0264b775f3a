"""Shape rules for control flow (If, Loop, Scan): outputs from the called bodies."""

from __future__ import annotations

import numpy as np

from infercast.frontends.onnx.shapes._common import (
    BODY_INPUTS,
    Shapes,
    Unknown,
    in_shape,
    ints_attr,
    norm_axis,
    opset,
    rule,
)
from infercast.ir.graph import Dim, Shape
from infercast.ops.registry import OpContext


def merge_shapes(a: Shape | None, b: Shape | None) -> Shape | None:
    """What two possible shapes have in common (If branches, loop iterations)."""
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(x if x == y else None for x, y in zip(a, b, strict=True))


def _body_output_shapes(ctx: OpContext, key: str) -> list[Shape | None]:
    name = next((s for s in ctx.node.subgraphs if s.rsplit("/", 1)[-1] == key), None)
    if name is None or name not in ctx.graph.subgraphs:
        raise Unknown
    body = ctx.graph.subgraphs[name]
    return [body.tensors[o].shape if o in body.tensors else None for o in body.outputs]


@rule("if")
def _if(ctx: OpContext) -> Shapes:
    then = _body_output_shapes(ctx, "then_branch")
    other = _body_output_shapes(ctx, "else_branch")
    cond = ctx.value(0)
    if cond is not None and np.asarray(cond).size == 1:
        return then if bool(np.asarray(cond).reshape(-1)[0]) else other
    return [merge_shapes(a, b) for a, b in zip(then, other, strict=True)]


def _loop_trip_count(ctx: OpContext) -> int | None:
    """Iterations of a Loop when they are fixed: a constant trip count and a
    condition that the body passes through unchanged (or none at all)."""
    if not ctx.has_input(0):
        return None
    m = ctx.value(0)
    if m is None:
        return None
    name = next((s for s in ctx.node.subgraphs if s.endswith("/body")), None)
    if name is None or name not in ctx.graph.subgraphs:
        return None
    body = ctx.graph.subgraphs[name]
    cond_in = body.inputs[1] if len(body.inputs) > 1 else ""
    cond_out = body.outputs[0] if body.outputs else ""
    passes = cond_out == cond_in
    producer = body.producers.get(cond_out)
    if producer is not None:
        node = body.nodes[producer]
        passes = node.op == "identity" and node.inputs[0] == cond_in
    if not passes:
        return None
    if ctx.has_input(1):
        c = ctx.value(1)
        if c is None:
            return None
        if not bool(np.asarray(c).reshape(-1)[0]):
            return 0
    return int(np.asarray(m).reshape(-1)[0])


@rule("loop")
def _loop(ctx: OpContext) -> Shapes:
    outs = _body_output_shapes(ctx, "body")
    n_carried = len(ctx.node.inputs) - 2
    trips = _loop_trip_count(ctx)
    shapes: Shapes = []
    for j in range(n_carried):
        init = ctx.input(2 + j).shape if ctx.has_input(2 + j) else None
        body = outs[1 + j] if 1 + j < len(outs) else None
        # Zero iterations return the initial value; otherwise the body's output.
        shapes.append(init if trips == 0 else (body if trips else merge_shapes(init, body)))
    for s in outs[1 + n_carried :]:
        shapes.append(None if s is None else (trips, *s))
    return shapes


def _is_scan8(ctx: OpContext) -> bool:
    """Scan-8 has a leading sequence_lens input and a batch axis; Scan-9+ has neither."""
    op = opset(ctx)
    return bool(op) and op < 9


@rule("scan")
def _scan(ctx: OpContext) -> Shapes:
    outs = _body_output_shapes(ctx, "body")
    n_scan_in = ctx.int_attr("num_scan_inputs", 0)
    n_in = len(ctx.node.inputs)
    scan8 = _is_scan8(ctx)
    states = list(range(1 if scan8 else 0, n_in - n_scan_in))
    n_state = len(states)
    scan_inputs = list(range(n_in - n_scan_in, n_in))
    batch: Dim = None
    length: Dim = None
    if scan_inputs:
        s = in_shape(ctx, scan_inputs[0])
        if scan8:
            batch, length = s[0], s[1]
        else:
            in_axes = ints_attr(ctx, "scan_input_axes") or [0] * n_scan_in
            length = s[norm_axis(in_axes[0], len(s))]
    out_axes = ints_attr(ctx, "scan_output_axes")
    shapes: Shapes = []
    for j in range(n_state):
        st = outs[j] if j < len(outs) else None
        shapes.append(None if st is None else ((batch, *st) if scan8 else st))
    for j, body_out in enumerate(outs[n_state:]):
        if body_out is None:
            shapes.append(None)
            continue
        if scan8:
            shapes.append((batch, length, *body_out))
            continue
        ax = out_axes[j] if out_axes else 0
        ax = ax + len(body_out) + 1 if ax < 0 else ax
        shapes.append((*body_out[:ax], length, *body_out[ax:]))
    return shapes


def _loop_body_inputs(ctx: OpContext, key: str) -> list[Shape | None]:
    carried = [ctx.input(i).shape if ctx.has_input(i) else None for i in range(2, len(ctx.inputs))]
    return [(), (), *carried]


def _scan_body_inputs(ctx: OpContext, key: str) -> list[Shape | None]:
    n_scan = ctx.int_attr("num_scan_inputs", 0)
    n_in = len(ctx.node.inputs)
    scan8 = _is_scan8(ctx)
    axes = ints_attr(ctx, "scan_input_axes") or [0] * n_scan
    out: list[Shape | None] = []
    for i in range(1 if scan8 else 0, n_in - n_scan):
        s = ctx.input(i).shape if ctx.has_input(i) else None
        out.append(None if s is None else (s[1:] if scan8 else s))
    for j, i in enumerate(range(n_in - n_scan, n_in)):
        s = ctx.input(i).shape if ctx.has_input(i) else None
        if s is None:
            out.append(None)
        elif scan8:
            out.append(s[2:])
        else:
            ax = norm_axis(axes[j], len(s))
            out.append((*s[:ax], *s[ax + 1 :]))
    return out


BODY_INPUTS.update({"loop": _loop_body_inputs, "scan": _scan_body_inputs})
