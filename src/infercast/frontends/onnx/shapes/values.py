"""Value propagation: small tensors known statically (at most
:data:`MAX_VALUE_ELEMENTS` elements) computed with numpy, so that shape arguments
built from ``Shape``/``Size``, integer arithmetic, gathers, slices and
concatenations are known to the rules that read them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from infercast.frontends.onnx.shapes._common import (
    MAX_VALUE_ELEMENTS,
    Unknown,
    broadcast,
    in_static,
    ints_attr,
    ints_value,
    norm_axis,
    reduce_axes,
)
from infercast.ops.registry import OpContext

Values = list[np.ndarray[Any, Any] | None]


ValueFn = Callable[[OpContext, Values], Values]


VALUE_RULES: dict[str, ValueFn] = {}


# ONNX TensorProto element types -> numpy (onnx/onnx.proto3 DataType)
_NP_DTYPES: dict[int, Any] = {
    1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32,
    7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64,
    16: np.float32,
}  # fmt: skip


def _value_rule(*ops: str) -> Callable[[ValueFn], ValueFn]:
    def deco(fn: ValueFn) -> ValueFn:
        for op in ops:
            VALUE_RULES[op] = fn
        return fn

    return deco


def _all(vals: list[np.ndarray[Any, Any] | None]) -> list[np.ndarray[Any, Any]]:
    if any(v is None for v in vals):
        raise Unknown
    return [v for v in vals if v is not None]


@_value_rule("shape")
def _v_shape(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    s = in_static(ctx, 0)
    rank = len(s)
    start = ctx.int_attr("start", 0)
    end = ctx.int_attr("end", rank)
    return [np.array(s[slice(start, end)], dtype=np.int64)]


@_value_rule("size")
def _v_size(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    return [np.array(math.prod(in_static(ctx, 0)), dtype=np.int64)]


@_value_rule("identity")
def _v_identity(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    return _all(vals[:1])


@_value_rule("cast")
def _v_cast(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    (v,) = _all(vals[:1])
    if ctx.node.native_op == "CastLike":
        target = ctx.value(1)
        if target is None:
            raise Unknown
        return [v.astype(np.asarray(target).dtype)]
    dt = _NP_DTYPES.get(ctx.int_attr("to", 0))
    if dt is None:
        raise Unknown
    return [v.astype(dt)]


@_value_rule("unsqueeze", "squeeze", "reshape", "flatten")
def _v_reshape(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    if vals[0] is None:
        raise Unknown
    shape = ctx.outputs[0].shape if ctx.outputs else None
    if shape is None or any(d is None for d in shape):
        raise Unknown
    return [np.reshape(vals[0], tuple(int(d) for d in shape if d is not None))]


@_value_rule("concat")
def _v_concat(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    arrs = [np.asarray(v) for v in _all([v for i, v in enumerate(vals) if ctx.has_input(i)])]
    return [np.concatenate(arrs, axis=ctx.int_attr("axis", 0))]


@_value_rule("split")
def _v_split(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    if vals[0] is None:
        raise Unknown
    data = np.asarray(vals[0])
    shapes = [t.shape for t in ctx.outputs]
    axis = norm_axis(ctx.int_attr("axis", 0), data.ndim)
    sizes = []
    for s in shapes:
        if s is None or s[axis] is None:
            raise Unknown
        sizes.append(int(s[axis]))  # type: ignore[arg-type]
    return list(np.split(data, np.cumsum(sizes)[:-1], axis=axis))


@_value_rule("gather")
def _v_gather(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    data, idx = _all(vals[:2])
    return [np.take(data, np.asarray(idx, dtype=np.int64), axis=ctx.int_attr("axis", 0))]


@_value_rule("slice")
def _v_slice(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    if vals[0] is None:
        raise Unknown
    data = np.asarray(vals[0])
    if ctx.has_input(1):
        starts = ints_value(ctx, 1) or []
        ends = ints_value(ctx, 2) or []
        axes = ints_value(ctx, 3) if len(ctx.inputs) > 3 else None
        steps = ints_value(ctx, 4) if len(ctx.inputs) > 4 else None
    else:
        starts = ints_attr(ctx, "starts") or []
        ends = ints_attr(ctx, "ends") or []
        axes = ints_attr(ctx, "axes")
        steps = None
    axes = axes if axes is not None else list(range(len(starts)))
    steps = steps if steps is not None else [1] * len(starts)
    index: list[slice] = [slice(None)] * data.ndim
    for a, b, e, st in zip(axes, starts, ends, steps, strict=True):
        index[norm_axis(a, data.ndim)] = slice(b, e, st)
    return [data[tuple(index)]]


_NP_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "equal": np.equal,
    "less": np.less, "greater": np.greater, "less_equal": np.less_equal,
    "greater_equal": np.greater_equal, "logical_and": np.logical_and,
    "logical_or": np.logical_or, "maximum": np.maximum, "minimum": np.minimum,
}  # fmt: skip


@_value_rule(*_NP_BINARY)
def _v_binary(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    a, b = _all(vals[:2])
    out = _NP_BINARY[ctx.node.op](a, b)
    return [np.asarray(out).astype(np.result_type(a, b)) if out.dtype != np.bool_ else out]


@_value_rule("div")
def _v_div(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    a, b = _all(vals[:2])
    if np.issubdtype(a.dtype, np.integer):
        if np.any(b == 0):
            raise Unknown
        return [np.trunc(a / b).astype(a.dtype)]
    return [np.divide(a, b)]


@_value_rule("mod")
def _v_mod(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    a, b = _all(vals[:2])
    if np.any(b == 0):
        raise Unknown
    return [np.fmod(a, b) if ctx.int_attr("fmod", 0) else np.mod(a, b)]


_NP_UNARY: dict[str, Callable[[Any], Any]] = {
    "neg": np.negative, "abs": np.abs, "logical_not": np.logical_not, "ceil": np.ceil,
    "floor": np.floor, "sqrt": np.sqrt, "reciprocal": np.reciprocal, "sign": np.sign,
    "relu": lambda a: np.maximum(a, 0),
}  # fmt: skip


@_value_rule(*_NP_UNARY)
def _v_unary(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    (a,) = _all(vals[:1])
    if ctx.node.op == "reciprocal" and np.issubdtype(a.dtype, np.integer):
        raise Unknown
    with np.errstate(all="ignore"):
        return [np.asarray(_NP_UNARY[ctx.node.op](a))]


@_value_rule("max", "min", "sum")
def _v_variadic(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    arrs = _all([v for i, v in enumerate(vals) if ctx.has_input(i)])
    fn = {"max": np.maximum, "min": np.minimum, "sum": np.add}[ctx.node.op]
    out = arrs[0]
    for a in arrs[1:]:
        out = fn(out, a)
    return [np.asarray(out)]


@_value_rule("where")
def _v_where(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    c, a, b = _all(vals[:3])
    return [np.where(c, a, b)]


@_value_rule("range")
def _v_range(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    start, limit, delta = (np.asarray(v).reshape(-1)[0] for v in _all(vals[:3]))
    if delta == 0:
        raise Unknown
    return [np.arange(start, limit, delta).astype(np.asarray(vals[0]).dtype)]


@_value_rule("constant_of_shape")
def _v_constant_of_shape(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    (shape,) = _all(vals[:1])
    dims = tuple(int(d) for d in np.asarray(shape).reshape(-1))
    if math.prod(dims) > MAX_VALUE_ELEMENTS:
        raise Unknown
    fill: Any = 0.0
    dtype: Any = np.float32
    proto = ctx.attr("value")
    if proto is not None and hasattr(proto, "data_type"):
        dtype = _NP_DTYPES.get(int(proto.data_type), np.float32)
        for f in ("int64_data", "int32_data", "float_data", "double_data"):
            data = getattr(proto, f, None)
            if data:
                fill = data[0]
                break
        else:
            raw = getattr(proto, "raw_data", b"")
            if raw:
                fill = np.frombuffer(raw, dtype=dtype)[0]
    return [np.full(dims, fill, dtype=dtype)]


@_value_rule("expand")
def _v_expand(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    data, shape = _all(vals[:2])
    target = broadcast(np.shape(data), tuple(int(d) for d in np.asarray(shape).reshape(-1)))
    return [np.broadcast_to(data, tuple(int(d) for d in target if d is not None)).copy()]


@_value_rule("tile")
def _v_tile(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    data, reps = _all(vals[:2])
    return [np.tile(data, tuple(int(r) for r in np.asarray(reps).reshape(-1)))]


@_value_rule("transpose")
def _v_transpose(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    (data,) = _all(vals[:1])
    perm = ints_attr(ctx, "perm")
    return [np.transpose(data, perm)]


@_value_rule("reduce_prod", "reduce_sum", "reduce_max", "reduce_min")
def _v_reduce(ctx: OpContext, vals: list[np.ndarray[Any, Any] | None]) -> list[Any]:
    if vals[0] is None:
        raise Unknown
    data = np.asarray(vals[0])
    axes = reduce_axes(ctx, data.ndim)
    keep = bool(ctx.int_attr("keepdims", 1))
    if axes is None:
        if ctx.int_attr("noop_with_empty_axes", 0):
            return [data]
        axes = list(range(data.ndim))
    fns: dict[str, Callable[..., Any]] = {
        "reduce_prod": np.prod, "reduce_sum": np.sum, "reduce_max": np.max, "reduce_min": np.min,
    }  # fmt: skip
    out = fns[ctx.node.op](data, axis=tuple(axes), keepdims=keep)
    return [np.asarray(out).astype(data.dtype)]
