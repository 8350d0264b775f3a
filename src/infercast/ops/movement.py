"""Data movement, shape and type ops: 0 MACs and 0 FLOPs, but never silent.

Each op here moves, selects, or re-labels values without arithmetic. Their
cost is bytes, which the memory analysis and the latency forecast account for.
Listed input positions are arguments (shapes, indices, axes), not weights.
"""

from __future__ import annotations

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
    "concat_from_sequence": (), "col2im": (1, 2), "center_crop_pad": (1,), "bitcast": (),
    "select": (), "select_v2": (), "gather_block_quantized": (1,), "broadcast_args": (0, 1),
    "var_handle": (), "read_variable": (), "assign_variable": (), "random_uniform": (0,),
    "random_normal": (), "random_uniform_like": (), "random_normal_like": (), "multinomial": (),
    "bernoulli": (), "embedding_lookup": (0,), "hashtable_lookup": (0, 1), "string_split": (),
    "string_concat": (), "string_normalizer": (), "regex_full_match": (), "label_encoder": (),
    "tensor_scatter_update": (1,), "dynamic_update_slice": (2,), "rank": (), "where_index": (),
    "local_response_norm_args": (), "image_decoder": (), "affine_grid": (1,), "grid_sample": (),
    "dft": (1, 2), "stft": (1, 2, 3), "window": (0,), "hann_window": (0,),
    "hamming_window": (0,), "blackman_window": (0,), "mel_weight_matrix": (0, 1, 2, 3, 4),
}


def movement_cost(ctx: OpContext) -> OpCost:
    """0 MACs and 0 FLOPs: values are copied, selected or re-labelled (their cost is
    the bytes moved, counted by the memory analysis and the forecast)."""
    return OpCost()


for _op, _args in MOVEMENT.items():
    register(_op, family="movement", arg_inputs=_args)(movement_cost)


@register("resize", family="movement", arg_inputs=(1, 2, 3))
def resize_cost(ctx: OpContext) -> OpCost:
    """0 MACs. FLOPs per output element: nearest 0; (bi/tri)linear 3 x (2^d - 1)
    (one lerp of 3 FLOPs per pair of taps, d resized axes); cubic 2 x 4^d."""
    mode = str(ctx.attr("mode", "nearest")).lower()
    d = ctx.int_attr("resized_axes", 2)
    if "linear" in mode:
        return OpCost(flops=ctx.out_elems() * 3 * (2**d - 1))
    if "cubic" in mode:
        return OpCost(flops=ctx.out_elems() * 2 * 4**d)
    return OpCost()


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
