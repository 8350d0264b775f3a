"""Data movement, shape and type ops: 0 MACs and 0 FLOPs, but never silent.

Each op here moves, selects, or re-labels values without arithmetic. Their
cost is bytes, which the memory analysis and the latency forecast account for.
Listed input positions are arguments (shapes, indices, axes), not weights.
"""

from __future__ import annotations

import math

from infercast.ir.dtypes import DType
from infercast.ir.views import static_shape
from infercast.ops.registry import OpContext, OpCost, register

# op -> argument input positions
MOVEMENT: dict[str, tuple[int, ...]] = {
    "reshape": (1,), "flatten": (), "squeeze": (1,), "unsqueeze": (1,), "expand_dims": (1,),
    "transpose": (1,), "concat": (), "split": (0, 1), "split_v": (1, 2), "slice": (1, 2, 3, 4),
    "strided_slice": (1, 2, 3), "gather": (1,), "gather_nd": (1,), "gather_elements": (1,),
    "scatter": (1,), "scatter_nd": (0, 1, 2), "scatter_elements": (1,), "pad": (1, 2, 3),
    "mirror_pad": (1,), "tile": (1,), "expand": (1,), "broadcast_to": (1,), "identity": (),
    "shape": (), "size": (), "cast": (), "depth_to_space": (), "space_to_depth": (),
    "batch_to_space": (1, 2), "space_to_batch": (1, 2), "pack": (), "unpack": (),
    "reverse": (1,), "reverse_sequence": (1,), "one_hot": (1, 2), "non_zero": (),
    "compress": (1,), "trilu": (1,), "unique": (), "eye_like": (), "range": (0, 1, 2),
    "constant": (), "constant_of_shape": (0,), "fill": (0,), "zeros_like": (), "ones_like": (),
    "dropout": (1, 2), "optional": (), "optional_get_element": (), "optional_has_element": (),
    "sequence_construct": (), "sequence_at": (1,), "sequence_empty": (), "sequence_insert": (2,),
    "sequence_erase": (1,), "sequence_length": (), "split_to_sequence": (1,),
    "concat_from_sequence": (), "center_crop_pad": (1,), "bitcast": (),
    "select": (), "select_v2": (), "gather_block_quantized": (1,), "broadcast_args": (0, 1),
    "var_handle": (), "read_variable": (), "assign_variable": (),
    "embedding_lookup": (0,), "hashtable_lookup": (0, 1), "string_split": (),
    "string_concat": (), "string_normalizer": (), "regex_full_match": (), "label_encoder": (),
    "tensor_scatter_update": (1,), "dynamic_update_slice": (2,), "rank": (), "where_index": (),
    "local_response_norm_args": (), "tensor_scatter": (2,),
}  # fmt: skip


ALIASES = frozenset(
    {"reshape", "squeeze", "unsqueeze", "expand_dims", "flatten", "identity", "bitcast", "dropout"}
)
"""Ops whose output 0 is input 0's bytes re-labelled. TFLite: RESHAPE, SQUEEZE,
EXPAND_DIMS and BITCAST register ``kTfLiteInplaceOpInput0Shared |
kTfLiteInplaceOpDataUnmodified`` (``tensorflow/lite/kernels/reshape.cc``, ``squeeze.cc``,
``expand_dims.cc``, ``bitcast.cc``), which ``arena_planner.cc`` turns into a shared
buffer. ONNX Runtime: the Reshape, Squeeze, Unsqueeze, Flatten and Identity kernels
declare ``Alias(0, 0)``, and Dropout is removed at inference when its mask is unused
(``core/optimizer/dropout_elimination.cc``). TFLite has no Flatten, Unsqueeze,
Identity or Dropout op (its converter removes them)."""

GENERATORS = frozenset({"constant", "constant_of_shape", "range", "eye_like"})
"""Ops that make a tensor from their arguments alone."""


def movement_cost(ctx: OpContext) -> OpCost:
    """0 MACs and 0 FLOPs: values are copied, selected or re-labelled (their cost is
    the bytes moved, counted by the memory analysis and the forecast)."""
    return OpCost()


for _op, _args in MOVEMENT.items():
    register(
        _op, family="movement", arg_inputs=_args, alias=_op in ALIASES, generator=_op in GENERATORS
    )(movement_cost)


def interpolation_flops(mode: str, d: int) -> int:
    """FLOPs to interpolate one output value from its taps over ``d`` axes."""
    mode = mode.lower()
    if "linear" in mode:
        return 3 * ((1 << d) - 1)
    if "cubic" in mode:
        return 2 * (1 << (2 * d))
    return 0


@register("resize", family="movement", arg_inputs=(1, 2, 3))
def resize_cost(ctx: OpContext) -> OpCost:
    """0 MACs. FLOPs per output element: nearest 0; (bi/tri)linear 3 x (2^d - 1)
    (one lerp of 3 FLOPs per pair of taps, d resized axes); cubic 2 x 4^d."""
    mode = str(ctx.attr("mode", "nearest"))
    per = interpolation_flops(mode, ctx.int_attr("resized_axes", 2))
    return OpCost(flops=ctx.out_elems() * per)


@register("grid_sample", family="movement")
def grid_sample_cost(ctx: OpContext) -> OpCost:
    """0 MACs. FLOPs per output element as ``resize`` over the d sampled axes (nearest
    0, linear 3 x (2^d - 1), cubic 2 x 4^d), plus 2 per axis per output position (the
    grid coordinate's unnormalisation, shared by the channels)."""
    y = static_shape(ctx.outputs[0])
    d = len(y) - 2
    mode = str(ctx.attr("mode", "linear"))
    positions = y[0] * math.prod(y[2:])
    return OpCost(flops=ctx.out_elems() * interpolation_flops(mode, d) + positions * 2 * d)


@register("affine_grid", family="movement", arg_inputs=(1,))
def affine_grid_cost(ctx: OpContext) -> OpCost:
    """0 MACs; 2 x d FLOPs per output element (d = 2 or 3 spatial axes): each output
    coordinate is a row of theta times the homogeneous base point (d multiplies and d
    adds); generating the base grid is not counted."""
    y = static_shape(ctx.outputs[0])
    return OpCost(flops=ctx.out_elems() * 2 * y[-1])


@register("col2im", family="movement", arg_inputs=(1, 2))
def col2im_cost(ctx: OpContext) -> OpCost:
    """0 MACs; 1 FLOP per input element: every column value is added into its image
    position (overlapping blocks accumulate)."""
    return OpCost(flops=ctx.in_elems(0))


@register("random_uniform", "random_uniform_like", "random_normal", "random_normal_like",
          family="movement", nondeterministic=True)  # fmt: skip
def random_cost(ctx: OpContext) -> OpCost:
    """0 MACs; 2 FLOPs per output element: the generator's raw value scaled and
    shifted (to [low, high), or by scale and mean). The random number generator
    itself is not counted."""
    return OpCost(flops=2 * ctx.out_elems())


@register("bernoulli", family="movement", nondeterministic=True)
def bernoulli_cost(ctx: OpContext) -> OpCost:
    """0 MACs; 1 FLOP per output element: a uniform draw compared with the input
    probability (the generator itself is not counted)."""
    return OpCost(flops=ctx.out_elems())


@register("multinomial", family="movement", nondeterministic=True)
def multinomial_cost(ctx: OpContext) -> OpCost:
    """0 MACs; per batch row 2 FLOPs per class (exp of the unnormalised
    log-probability, running sum for the cumulative distribution) plus
    ceil(log2(classes)) compares per sample (a binary search). The random number
    generator itself is not counted."""
    batch, classes = static_shape(ctx.input(0))
    samples = ctx.int_attr("sample_size", 1)
    search = math.ceil(math.log2(classes)) if classes > 1 else 0
    return OpCost(flops=batch * (2 * classes + samples * search))


@register("image_decoder", family="movement")
def image_decoder_cost(ctx: OpContext) -> OpCost:
    """0 MACs and 0 FLOPs counted: decoding (entropy decoding, inverse DCT, colour
    conversion) depends on the codec and the encoded content, which are not known
    statically; the output shape is data-dependent too. Reported, never a silent zero:
    the layer's note says the decode cost is not modelled."""
    return OpCost(note="decode cost not modelled (codec- and content-dependent)")


@register("non_max_suppression", family="detection", arg_inputs=(2, 3, 4))
def nms_cost(ctx: OpContext) -> OpCost:
    """0 MACs; worst case FLOPs = classes x batch x boxes^2 / 2 x 15 (an IoU is about
    15 FLOPs; every pair compared). Data-dependent: the real count is lower."""
    boxes = ctx.input(0)
    scores = ctx.input(1)
    s = ctx.shape(scores)
    b = ctx.shape(boxes)
    n = b[-2] if len(b) >= 2 else b[0]
    classes = s[1] if len(s) == 3 else 1
    batch = s[0] if len(s) == 3 else 1
    return OpCost(flops=batch * classes * n * n // 2 * 15, note="worst case, data-dependent")


IOU_FLOPS = 15
"""FLOPs of one intersection-over-union of two corner boxes (two areas, four min / max, two
differences clamped at 0, a product, a sum and a division: ``ComputeIntersectionOverUnion``
in ``tensorflow/lite/kernels/detection_postprocess.cc``)."""


@register("detection_postprocess", family="detection")
def detection_postprocess_cost(ctx: OpContext) -> OpCost:
    """TFLite's ``TFLite_Detection_PostProcess`` custom op (the SSD exporters' last op; kernel
    ``tensorflow/lite/kernels/detection_postprocess.cc``), for ``N`` anchors, ``C`` classes
    (+1 background), ``D`` = ``max_detections``, ``k`` = ``max_classes_per_detection``:

    * decode: per anchor 4 box codes (dequantised first when uint8) against the anchor's
      centre and size, 2 exps, 4 corners and a validity check: 20 FLOPs (+8 when uint8);
    * uint8 class scores are dequantised first: 2 FLOPs each of ``N x (C + 1)``;
    * fast NMS (``use_regular_nms`` false, the exporters' default): per anchor a partial
      arg-sort of its ``C`` scores to the top ``k`` (``C x (1 + log2 k)`` compares) and its
      best score, then one NMS over the ``N`` best scores: a threshold compare each, a sort
      (``N log2 N``), and at most ``D`` kept boxes each compared with every remaining box
      (``D x N`` IoUs of :data:`IOU_FLOPS`);
    * regular NMS: that NMS once per class over the class's ``N`` scores with
      ``detections_per_class`` kept boxes (default 100), plus copying the class's column.

    The NMS part is the worst case: how many boxes pass the score threshold and how many a
    kept box suppresses depend on the data. The options (``max_detections`` ...) are read
    from the op's FlexBuffer; missing ones take the kernel's defaults (the note says so)."""
    box, scores = ctx.input(0), ctx.input(1)
    bs, ss = ctx.shape(box), ctx.shape(scores)
    n = bs[-2] if len(bs) >= 2 else 0
    with_bg = ss[-1] if ss else 0
    classes = max(ctx.int_attr("num_classes", with_bg - 1), 1)
    missing = [k for k in ("max_detections", "use_regular_nms") if k not in ctx.node.attrs]
    d = max(ctx.int_attr("max_detections", 10), 0)
    per_anchor = max(ctx.int_attr("max_classes_per_detection", 1), 1)
    per_class = max(ctx.int_attr("detections_per_class", 100), 1)
    regular = bool(ctx.attr("use_regular_nms", False))
    quant_box = box.dtype == DType.UINT8
    quant_scores = scores.dtype == DType.UINT8
    sort = n * max(math.ceil(math.log2(n)), 1) if n > 1 else 0
    flops = n * (28 if quant_box else 20)
    if quant_scores:
        flops += 2 * n * with_bg
    if regular:
        flops += classes * (2 * n + sort + min(per_class, n) * n * IOU_FLOPS)
    else:
        top = 1 + math.ceil(math.log2(min(per_anchor, classes))) if classes > 1 else 1
        flops += n * classes * top + n + sort + min(d, n) * n * IOU_FLOPS
    note = "worst case of the NMS loop (data-dependent)"
    if missing:
        note += f"; options not in the file, kernel defaults assumed: {', '.join(missing)}"
    return OpCost(flops=flops, note=note)
