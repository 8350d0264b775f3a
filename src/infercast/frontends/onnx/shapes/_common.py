"""What every shape rule uses: the rule table, reading inputs and attributes, broadcasting.

A rule raises :class:`Unknown` when a shape or value it needs is not known; the
pass then leaves the output unknown.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

import numpy as np

from infercast.ir.graph import Dim, Shape
from infercast.ops.registry import OpContext
from infercast.ops.shapes import broadcast as broadcast  # re-exported to the rules
from infercast.ops.shapes import ints_attr as ints_attr

Shapes = list[Shape | None]


InferFn = Callable[[OpContext], Shapes]
"""Output shapes by position in ``node.outputs`` (None: not known); shorter lists leave
the remaining outputs unknown."""


MAX_VALUE_ELEMENTS = 4096
"""Largest value (in elements) the pass propagates."""


class Unknown(Exception):
    """A rule cannot decide (a needed shape or value is not known)."""


def in_shape(ctx: OpContext, i: int) -> Shape:
    """Input ``i``'s shape (rank must be known; dimensions may be None)."""
    if not ctx.has_input(i):
        raise Unknown
    s = ctx.input(i).shape
    if s is None:
        raise Unknown
    return s


def in_static(ctx: OpContext, i: int) -> tuple[int, ...]:
    s = in_shape(ctx, i)
    if any(d is None for d in s):
        raise Unknown
    return tuple(int(d) for d in s if d is not None)


def ints_value(ctx: OpContext, i: int) -> list[int] | None:
    """Input ``i`` as a list of ints; None when omitted or an empty tensor."""
    if not ctx.has_input(i):
        return None
    v = ctx.value(i)
    if v is None:
        raise Unknown
    flat = np.asarray(v).reshape(-1)
    if flat.size == 0:
        return None
    return [int(x) for x in flat]


def floats_value(ctx: OpContext, i: int) -> list[float] | None:
    if not ctx.has_input(i):
        return None
    v = ctx.value(i)
    if v is None:
        raise Unknown
    flat = np.asarray(v, dtype=np.float64).reshape(-1)
    if flat.size == 0:
        return None
    return [float(x) for x in flat]


def scalar_int(ctx: OpContext, i: int) -> int:
    vals = ints_value(ctx, i)
    if not vals:
        raise Unknown
    return vals[0]


def norm_axis(a: int, rank: int) -> int:
    if not -rank <= a < max(rank, 1):
        raise ValueError(f"axis {a} out of range for rank {rank}")
    return a + rank if a < 0 else a


def prod_dims(dims: Iterable[Dim]) -> Dim:
    n = 1
    for d in dims:
        if d is None:
            return None
        n *= d
    return n


RULES: dict[str, InferFn] = {}


def rule(*ops: str) -> Callable[[InferFn], InferFn]:
    def deco(fn: InferFn) -> InferFn:
        for op in ops:
            if op in RULES:
                raise ValueError(f"shape rule for '{op}' defined twice")
            RULES[op] = fn
        return fn

    return deco


def same_as_input(ctx: OpContext) -> Shapes:
    """Every output has the shape of input 0."""
    s = in_shape(ctx, 0)
    return [s] * len(ctx.node.outputs)


def broadcast_inputs(ctx: OpContext) -> Shapes:
    """The broadcast of all given inputs."""
    shapes = [in_shape(ctx, i) for i in range(len(ctx.inputs)) if ctx.has_input(i)]
    return [broadcast(*shapes)]


def reduce_axes(ctx: OpContext, rank: int) -> list[int] | None:
    axes = ints_attr(ctx, "axes")
    if axes is None and len(ctx.inputs) > 1:
        axes = ints_value(ctx, 1)
    if axes is None:
        return None
    return sorted({norm_axis(a, rank) for a in axes})


def sum_dims(dims: Iterable[Dim]) -> Dim:
    n = 0
    for d in dims:
        if d is None:
            return None
        n += d
    return n


def opset(ctx: OpContext) -> int:
    opsets = str(ctx.graph.metadata.get("opsets", ""))
    m = re.search(r"(?:^|, )ai\.onnx=(\d+)", opsets)
    return int(m.group(1)) if m else 0


BodyInputFn = Callable[[OpContext, str], list[Shape | None]]


BODY_INPUTS: dict[str, BodyInputFn] = {}
"""Shapes of a called subgraph's inputs, for bodies that do not declare them."""
