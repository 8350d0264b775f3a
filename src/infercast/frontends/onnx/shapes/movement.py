"""Shape rules for data movement: reshapes, slices, gathers, padding, resizing,
generators, data-dependent outputs (NonZero, Unique, Compress, NMS), strings.
"""

from __future__ import annotations

import math

import numpy as np

from infercast.frontends.onnx.shapes._common import (
    Shapes,
    Unknown,
    broadcast,
    broadcast_inputs,
    floats_value,
    in_shape,
    ints_attr,
    ints_value,
    norm_axis,
    prod_dims,
    rule,
    same_as_input,
    sum_dims,
)
from infercast.ir.graph import Dim
from infercast.ops.registry import OpContext


@rule("reshape")
def _reshape(ctx: OpContext) -> Shapes:
    s = in_shape(ctx, 0)
    target = ints_value(ctx, 1) if ctx.has_input(1) else ints_attr(ctx, "shape")
    if target is None:
        target = []
    allow_zero = ctx.int_attr("allowzero", 0)
    out: list[Dim] = []
    for i, d in enumerate(target):
        if d == 0 and not allow_zero:
            out.append(s[i] if i < len(s) else None)
        else:
            out.append(d)
    if -1 in out:
        total = prod_dims(s)
        rest = prod_dims(d for d in out if d != -1)
        i = out.index(-1)
        out[i] = None if total is None or rest is None else (total // rest if rest else 0)
    return [tuple(out)]


@rule("flatten")
def _flatten(ctx: OpContext) -> Shapes:
    s = in_shape(ctx, 0)
    axis = ctx.int_attr("axis", 1)
    axis = axis + len(s) if axis < 0 else axis
    return [(prod_dims(s[:axis]), prod_dims(s[axis:]))]


@rule("squeeze")
def _squeeze(ctx: OpContext) -> Shapes:
    s = in_shape(ctx, 0)
    axes = ints_attr(ctx, "axes")
    if axes is None and len(ctx.inputs) > 1:
        axes = ints_value(ctx, 1)
    if axes is None:
        if any(d is None for d in s):
            raise Unknown
        return [tuple(d for d in s if d != 1)]
    drop = {norm_axis(a, len(s)) for a in axes}
    return [tuple(d for i, d in enumerate(s) if i not in drop)]


@rule("unsqueeze")
def _unsqueeze(ctx: OpContext) -> Shapes:
    s = in_shape(ctx, 0)
    axes = ints_attr(ctx, "axes")
    if axes is None:
        axes = ints_value(ctx, 1) or []
    rank = len(s) + len(axes)
    ins = {norm_axis(a, rank) for a in axes}
    it = iter(s)
    return [tuple(1 if i in ins else next(it) for i in range(rank))]


@rule("transpose")
def _transpose(ctx: OpContext) -> Shapes:
    s = in_shape(ctx, 0)
    perm = ints_attr(ctx, "perm") or list(reversed(range(len(s))))
    return [tuple(s[p] for p in perm)]


@rule("concat")
def _concat(ctx: OpContext) -> Shapes:
    shapes = [in_shape(ctx, i) for i in range(len(ctx.inputs)) if ctx.has_input(i)]
    rank = len(shapes[0])
    axis = norm_axis(ctx.int_attr("axis", 0), rank)
    out: list[Dim] = []
    for i in range(rank):
        if i == axis:
            out.append(sum_dims(s[i] for s in shapes))
        else:
            known = [s[i] for s in shapes if s[i] is not None]
            out.append(known[0] if known else None)
    return [tuple(out)]


@rule("split")
def _split(ctx: OpContext) -> Shapes:
    s = in_shape(ctx, 0)
    axis = norm_axis(ctx.int_attr("axis", 0), len(s))
    n_out = len(ctx.node.outputs)
    sizes = ints_value(ctx, 1) if len(ctx.inputs) > 1 else None
    if sizes is None:
        sizes = ints_attr(ctx, "split")
    dim = s[axis]
    if sizes is None:
        if dim is None:
            return [(*s[:axis], None, *s[axis + 1 :])] * n_out
        num = ctx.int_attr("num_outputs", n_out)
        chunk = -(-dim // num)
        if chunk * (num - 1) > dim:
            # ONNX Runtime rejects it ("Split sizes would produce a negative final
            # split"); onnx.reference returns chunks of 2, 2, 1, 0 for 5 into 4.
            raise Unknown
        sizes = [min(chunk, max(dim - chunk * i, 0)) for i in range(num)]
    return [(*s[:axis], n, *s[axis + 1 :]) for n in sizes]


def _slice_len(dim: int, start: int, end: int, step: int) -> int:
    return len(range(*slice(start, end, step).indices(dim)))


@rule("slice")
def _slice(ctx: OpContext) -> Shapes:
    s = in_shape(ctx, 0)
    if ctx.has_input(1):
        starts = ints_value(ctx, 1) or []
        ends = ints_value(ctx, 2) or []
        axes = ints_value(ctx, 3) if len(ctx.inputs) > 3 else None
        steps = ints_value(ctx, 4) if len(ctx.inputs) > 4 else None
    else:  # Slice-1: attributes
        starts = ints_attr(ctx, "starts") or []
        ends = ints_attr(ctx, "ends") or []
        axes = ints_attr(ctx, "axes")
        steps = None
    axes = axes if axes is not None else list(range(len(starts)))
    steps = steps if steps is not None else [1] * len(starts)
    out = list(s)
    for a, b, e, st in zip(axes, starts, ends, steps, strict=True):
        ax = norm_axis(a, len(s))
        d = s[ax]
        out[ax] = None if d is None else _slice_len(d, b, e, st)
    return [tuple(out)]


@rule("gather", "gather_block_quantized")
def _gather(ctx: OpContext) -> Shapes:
    data = in_shape(ctx, 0)
    idx = in_shape(ctx, 1)
    axis = norm_axis(ctx.int_attr("axis", 0), len(data))
    return [(*data[:axis], *idx, *data[axis + 1 :])]


@rule("gather_elements")
def _gather_elements(ctx: OpContext) -> Shapes:
    return [in_shape(ctx, 1)]


@rule("gather_nd")
def _gather_nd(ctx: OpContext) -> Shapes:
    data = in_shape(ctx, 0)
    idx = in_shape(ctx, 1)
    b = ctx.int_attr("batch_dims", 0)
    last = idx[-1]
    if last is None:
        raise Unknown
    return [(*idx[:-1], *data[b + last :])]


@rule("pad")
def _pad(ctx: OpContext) -> Shapes:
    s = in_shape(ctx, 0)
    if ctx.has_input(1):
        pads = ints_value(ctx, 1) or []
    else:
        pads = ints_attr(ctx, "pads") or ints_attr(ctx, "paddings") or []
    axes = ints_value(ctx, 3) if len(ctx.inputs) > 3 else None
    axes = [norm_axis(a, len(s)) for a in axes] if axes is not None else list(range(len(s)))
    n = len(axes)
    out = list(s)
    for j, ax in enumerate(axes):
        d = s[ax]
        out[ax] = None if d is None else d + pads[j] + pads[j + n]
    return [tuple(out)]


@rule("tile")
def _tile(ctx: OpContext) -> Shapes:
    s = in_shape(ctx, 0)
    reps = ints_value(ctx, 1) or []
    return [tuple(None if d is None else d * r for d, r in zip(s, reps, strict=True))]


@rule("expand")
def _expand(ctx: OpContext) -> Shapes:
    target = ints_value(ctx, 1) or []
    return [broadcast(in_shape(ctx, 0), tuple(target))]


@rule("shape")
def _shape_op(ctx: OpContext) -> Shapes:
    rank = len(in_shape(ctx, 0))
    start = ctx.int_attr("start", 0)
    end = ctx.int_attr("end", rank)
    return [(len(range(*slice(start, end).indices(rank))),)]


@rule("size", "sequence_length", "optional_has_element")
def _scalar(ctx: OpContext) -> Shapes:
    return [()]


@rule("depth_to_space")
def _depth_to_space(ctx: OpContext) -> Shapes:
    n, c, h, w = in_shape(ctx, 0)
    b = ctx.int_attr("blocksize", 1)
    return [(n, None if c is None else c // (b * b), _mul(h, b), _mul(w, b))]


@rule("space_to_depth")
def _space_to_depth(ctx: OpContext) -> Shapes:
    n, c, h, w = in_shape(ctx, 0)
    b = ctx.int_attr("blocksize", 1)
    return [(n, _mul(c, b * b), None if h is None else h // b, None if w is None else w // b)]


def _mul(d: Dim, k: int) -> Dim:
    return None if d is None else d * k


@rule("one_hot")
def _one_hot(ctx: OpContext) -> Shapes:
    idx = in_shape(ctx, 0)
    depth_v = floats_value(ctx, 1)
    if not depth_v:
        raise Unknown
    depth = int(depth_v[0])
    rank = len(idx) + 1
    axis = norm_axis(ctx.int_attr("axis", -1), rank)
    out = list(idx)
    out.insert(axis, depth)
    return [tuple(out)]


@rule("non_zero")
def _non_zero(ctx: OpContext) -> Shapes:
    s = in_shape(ctx, 0)
    v = ctx.value(0)
    return [(len(s), None if v is None else int(np.count_nonzero(v)))]


@rule("compress")
def _compress(ctx: OpContext) -> Shapes:
    s = in_shape(ctx, 0)
    cond = ctx.value(1)
    axis = ctx.attr("axis")
    if axis is None:
        total = prod_dims(s)
        n = None if cond is None or total is None else int(np.count_nonzero(np.ravel(cond)[:total]))
        return [(n,)]
    ax = norm_axis(int(axis), len(s))  # type: ignore[call-overload]
    dim = s[ax]
    n = None if cond is None or dim is None else int(np.count_nonzero(np.ravel(cond)[:dim]))
    return [(*s[:ax], n, *s[ax + 1 :])]


@rule("unique")
def _unique(ctx: OpContext) -> Shapes:
    s = in_shape(ctx, 0)
    v = ctx.value(0)
    axis = ctx.attr("axis")
    if axis is None:
        u = None if v is None else int(np.unique(np.ravel(v)).size)
        return [(u,), (u,), (prod_dims(s),), (u,)]
    ax = norm_axis(int(axis), len(s))  # type: ignore[call-overload]
    u = None if v is None else int(np.unique(np.asarray(v), axis=ax).shape[ax])
    return [(*s[:ax], u, *s[ax + 1 :]), (u,), (s[ax],), (u,)]


@rule("range")
def _range(ctx: OpContext) -> Shapes:
    start, limit, delta = (floats_value(ctx, i) for i in range(3))
    if not start or not limit or not delta or delta[0] == 0:
        raise Unknown
    return [(max(math.ceil((limit[0] - start[0]) / delta[0]), 0),)]


@rule("constant_of_shape")
def _constant_of_shape(ctx: OpContext) -> Shapes:
    return [tuple(ints_value(ctx, 0) or [])]


@rule("center_crop_pad")
def _center_crop_pad(ctx: OpContext) -> Shapes:
    s = in_shape(ctx, 0)
    target = ints_value(ctx, 1) or []
    axes = ints_attr(ctx, "axes") or list(range(len(s)))
    out = list(s)
    for a, d in zip(axes, target, strict=True):
        out[norm_axis(a, len(s))] = d
    return [tuple(out)]


@rule("col2im")
def _col2im(ctx: OpContext) -> Shapes:
    n, cb, _ = in_shape(ctx, 0)
    image = ints_value(ctx, 1) or []
    block = ints_value(ctx, 2) or []
    k = prod_dims(block)
    return [(n, None if cb is None or not k else cb // k, *image)]


@rule("affine_grid")
def _affine_grid(ctx: OpContext) -> Shapes:
    size = ints_value(ctx, 1) or []
    n, _c, *spatial = size
    return [(n, *spatial, len(spatial))]


@rule("grid_sample")
def _grid_sample(ctx: OpContext) -> Shapes:
    x = in_shape(ctx, 0)
    grid = in_shape(ctx, 1)
    return [(x[0], x[1], *grid[1:-1])]


def _resize_scales_sizes(ctx: OpContext) -> tuple[list[float] | None, list[int] | None]:
    native = ctx.node.native_op
    if native == "Upsample" or len(ctx.node.inputs) == 2:
        if ctx.has_input(1):
            return floats_value(ctx, 1), None
        v = ctx.attr("scales")
        return ([float(x) for x in v] if isinstance(v, tuple | list) else None), None
    scales = floats_value(ctx, 2) if len(ctx.inputs) > 2 else None
    sizes = ints_value(ctx, 3) if len(ctx.inputs) > 3 else None
    return scales, sizes


@rule("resize")
def _resize(ctx: OpContext) -> Shapes:
    s = in_shape(ctx, 0)
    scales, sizes = _resize_scales_sizes(ctx)
    axes = ints_attr(ctx, "axes")
    axes = [norm_axis(a, len(s)) for a in axes] if axes is not None else list(range(len(s)))
    out = list(s)
    if sizes is not None:
        policy = str(ctx.attr("keep_aspect_ratio_policy", "stretch"))
        if policy in ("not_larger", "not_smaller"):
            dims = [s[a] for a in axes]
            if any(d is None for d in dims):
                raise Unknown
            ratios = [sz / d for sz, d in zip(sizes, dims, strict=True) if d]
            scale = min(ratios) if policy == "not_larger" else max(ratios)
            for a in axes:
                d = s[a]
                out[a] = None if d is None else math.floor(d * scale + 0.5)
        else:
            for a, sz in zip(axes, sizes, strict=True):
                out[a] = sz
        return [tuple(out)]
    if scales is None:
        raise Unknown
    for a, sc in zip(axes, scales, strict=True):
        d = s[a]
        out[a] = None if d is None else math.floor(d * sc)
    return [tuple(out)]


@rule("non_max_suppression")
def _nms(ctx: OpContext) -> Shapes:
    return [(None, 3)]


@rule("string_split")
def _string_split(ctx: OpContext) -> Shapes:
    s = in_shape(ctx, 0)
    return [(*s, None), s]


@rule("string_normalizer")
def _string_normalizer(ctx: OpContext) -> Shapes:
    s = in_shape(ctx, 0)
    stop = ctx.attr("stopwords")
    if stop:  # stop-word removal makes the length data-dependent
        return [(*s[:-1], None)]
    return [s]


@rule("image_decoder")
def _image_decoder(ctx: OpContext) -> Shapes:
    channels = 1 if str(ctx.attr("pixel_format", "RGB")) == "Grayscale" else 3
    return [(None, None, channels)]


@rule("random_uniform", "random_normal")
def _random(ctx: OpContext) -> Shapes:
    return [tuple(ints_attr(ctx, "shape") or [])]


@rule("multinomial")
def _multinomial(ctx: OpContext) -> Shapes:
    return [(in_shape(ctx, 0)[0], ctx.int_attr("sample_size", 1))]


# Outputs with input 0's shape.
_SAME_SHAPE = (
    "cast", "bitcast", "identity", "dropout", "trilu", "reverse_sequence", "eye_like",
    "scatter", "scatter_elements", "scatter_nd", "tensor_scatter", "regex_full_match",
    "random_uniform_like", "random_normal_like", "bernoulli",
)  # fmt: skip
rule(*_SAME_SHAPE)(same_as_input)


# Outputs with the broadcast of the inputs.
_BROADCAST = (
    "string_concat",
)  # fmt: skip
rule(*_BROADCAST)(broadcast_inputs)  # fmt: skip
