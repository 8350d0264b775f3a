"""Shape arithmetic shared by the ONNX shape rules (``frontends/onnx/shapes``) and the
ONNX Runtime contrib-op rules (:mod:`infercast.ops.contrib`): broadcasting, the matmul
rule, integer-list attributes, and conv / pool output sizes (ONNX ``Conv`` / ``MaxPool``
semantics: pads, strides, dilations, ``auto_pad``, ``ceil_mode``)."""

from __future__ import annotations

from collections.abc import Sequence

from infercast.ir.graph import Dim, Shape
from infercast.ops.registry import OpContext


def broadcast(*shapes: Shape) -> Shape:
    """Numpy / ONNX multidirectional broadcasting, with None for unknown dimensions."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[Dim] = []
    for i in range(rank):
        dims = [s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0]
        known = {d for d in dims if d is not None and d != 1}
        if len(known) > 1:
            raise ValueError(f"shapes {shapes} do not broadcast")
        if known:
            out.append(known.pop())
        elif any(d is None for d in dims):
            out.append(None)
        else:
            out.append(1)
    return tuple(out)


def matmul_shape(a: Shape, b: Shape) -> Shape:
    """``numpy.matmul`` shape rule (1-D operands are promoted, then the axis dropped)."""
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    batch = broadcast(a2[:-2], b2[:-2])
    out: tuple[Dim, ...] = (*batch, a2[-2], b2[-1])
    if len(a) == 1:
        out = (*out[:-2], out[-1])
    if len(b) == 1:
        out = out[:-1]
    return out


def ints_attr(ctx: OpContext, key: str) -> list[int] | None:
    """An integer or integer-list attribute as a list (None when absent)."""
    v = ctx.attr(key)
    if v is None:
        return None
    if isinstance(v, int | float):
        return [int(v)]
    if isinstance(v, tuple | list):
        return [int(x) for x in v]
    return None


def conv_spatial(
    ctx: OpContext, spatial: Sequence[Dim], kernel: Sequence[int], *, ceil_mode: bool = False
) -> list[Dim]:
    """Output sizes of a conv / pool window over ``spatial`` (ONNX attributes of ``ctx``)."""
    n = len(spatial)
    strides = ints_attr(ctx, "strides") or [1] * n
    dil = ints_attr(ctx, "dilations") or [1] * n
    pads = ints_attr(ctx, "pads") or [0] * (2 * n)
    auto = str(ctx.attr("auto_pad", "NOTSET"))
    out: list[Dim] = []
    for i, d in enumerate(spatial):
        if d is None:
            out.append(None)
            continue
        eff = (kernel[i] - 1) * dil[i] + 1
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            out.append(-(-d // strides[i]))
            continue
        if auto == "VALID":
            out.append(-(-(d - eff + 1) // strides[i]))
            continue
        total = d + pads[i] + pads[i + n] - eff
        if ceil_mode:
            o = -(-total // strides[i]) + 1
            # The last window must start inside the input or its left padding.
            if (o - 1) * strides[i] >= d + pads[i]:
                o -= 1
        else:
            o = total // strides[i] + 1
        out.append(o)
    return out
