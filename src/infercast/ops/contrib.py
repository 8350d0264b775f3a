"""ONNX Runtime contrib ops (domain ``com.microsoft``) and ORT's own fusions.

These are what ONNX Runtime's optimizer writes when it saves an optimised model
(``SessionOptions.optimized_model_filepath``; ORT_ENABLE_EXTENDED fuses Conv +
activation into FusedConv, MatMul + Transpose/Mul into FusedMatMul,
x*sigmoid(1.702x) into QuickGelu, layer-norm subgraphs into (Skip)(Simplified)
LayerNormalization, QDQ pairs into QLinear* kernels) and what its quantisation
and transformer tools emit (DynamicQuantizeMatMul, MatMulNBits, Attention,
MultiHeadAttention, GroupQueryAttention, RotaryEmbedding, ...).

Semantics, input positions and attributes follow onnxruntime's
``docs/ContribOperators.md`` (schemas in ``onnxruntime/core/graph/contrib_ops/
*_defs.cc``); the output shapes are checked against ONNX Runtime itself running
each op (``tests/test_contrib_ops.py``). Counting rules are the ones of the
standard ops these kernels fuse: a fused activation or bias is counted at its
standard op's FLOPs per element (unlike a plain conv's bias, because the fused
kernel replaces separate layers that would have counted them), quantisation
arithmetic is not counted, as for QLinearConv.
"""

from __future__ import annotations

from collections.abc import Callable

from infercast.ir.graph import Dim, Shape
from infercast.ir.views import kernel_dims, numel
from infercast.ops.elementwise import UNARY
from infercast.ops.registry import OpContext, OpCost, register
from infercast.ops.shapes import broadcast, conv_spatial, ints_attr, matmul_shape

InferFn = Callable[[OpContext], "list[Shape | None]"]

MS = "com.microsoft:"
Shapes = list[Shape | None]


class _NoShape(ValueError):
    """A needed input shape or value is unknown."""


def _shape(ctx: OpContext, i: int) -> Shape:
    if not ctx.has_input(i) or ctx.input(i).shape is None:
        raise _NoShape
    s = ctx.input(i).shape
    assert s is not None
    return s


def infer(fn: Callable[[OpContext], Shapes]) -> InferFn:
    """Wrap a shape rule: an unknown input leaves the outputs unknown."""

    def run(ctx: OpContext) -> Shapes:
        try:
            out: Shapes = fn(ctx)
        except _NoShape:
            return []
        return out

    run.__name__ = fn.__name__
    return run


def _act_flops(ctx: OpContext) -> int:
    """FLOPs per element of a fused ``activation`` attribute (FusedConv, FusedGemm)."""
    act = str(ctx.attr("activation", "") or "")
    key = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "LeakyRelu": "leaky_relu",
           "Clip": "clip", "HardSigmoid": "hard_sigmoid", "Elu": "elu", "Selu": "selu",
           "Softplus": "softplus", "Softsign": "softsign", "ThresholdedRelu": "thresholded_relu",
           }.get(act)  # fmt: skip
    return UNARY[key][0] if key else 0


fused_conv_shape = infer(lambda ctx: [_conv_out(ctx, 0, 1, False)])
nhwc_conv_shape = infer(lambda ctx: [_conv_out(ctx, 0, 1, True)])
qlinear_conv_shape = infer(
    lambda ctx: [_conv_out(ctx, 0, 3, bool(ctx.int_attr("channels_last", 0)))]
)
integer_matmul_shape = infer(lambda ctx: [matmul_shape(_shape(ctx, 0), _shape(ctx, 1))])
dynamic_quantize_matmul_shape = infer(lambda ctx: [_last_dim_from(ctx, 1)[0]])
simplified_layer_norm_shape = infer(lambda ctx: _norm_outputs(ctx, False)[:2])
skip_norm_shape = infer(lambda ctx: [_shape(ctx, 0), None, None, _shape(ctx, 0)])


# -- convolutions ----------------------------------------------------------------


def _conv_out(ctx: OpContext, x_i: int, w_i: int, channels_last: bool) -> Shape:
    x = _shape(ctx, x_i)
    w = _shape(ctx, w_i)
    kernel = ints_attr(ctx, "kernel_shape") or [int(d or 1) for d in w[2:]]
    if channels_last:
        return (x[0], *conv_spatial(ctx, x[1:-1], kernel), w[0])
    return (x[0], w[0], *conv_spatial(ctx, x[2:], kernel))


def _conv_macs(ctx: OpContext, w_i: int) -> int:
    k = kernel_dims(ctx.input(w_i), "OIHW")
    return ctx.out_elems() * k.in_channels * k.spatial_size


@register(MS + "fused_conv", family="conv")
def fused_conv_cost(ctx: OpContext) -> OpCost:
    """FusedConv (Conv + optional sum input Z + activation, ORT's Conv+Activation
    fusion): MACs as ``conv`` = output elements x input channels per group x kernel
    size; FLOPs = 2 x MACs + the activation's FLOPs per output element (as its
    standard op) + 1 per output element when Z is added. The bias is not counted."""
    macs = _conv_macs(ctx, 1)
    extra = _act_flops(ctx) + (1 if ctx.has_input(3) else 0)
    return OpCost(macs=macs, flops=2 * macs + extra * ctx.out_elems())


@register(MS + "nhwc_conv", family="conv")
def nhwc_conv_cost(ctx: OpContext) -> OpCost:
    """NhwcConv (Conv on channels-last activations, OIHW weights): MACs = output
    elements x input channels per group x kernel size; FLOPs = 2 x MACs."""
    macs = _conv_macs(ctx, 1)
    return OpCost(macs=macs, flops=2 * macs)


@register(MS + "qlinear_conv", family="conv", arg_inputs=(1, 2, 4, 5, 6, 7))
def ms_qlinear_conv_cost(ctx: OpContext) -> OpCost:
    """com.microsoft QLinearConv (optionally channels-last): as ``conv``, MACs =
    output elements x input channels per group x kernel size (weights are input 3);
    FLOPs = 2 x MACs; requantisation not counted."""
    macs = _conv_macs(ctx, 3)
    return OpCost(macs=macs, flops=2 * macs)


# -- matrix products ----------------------------------------------------------------


def fused_matmul_shape(ctx: OpContext) -> Shapes:
    a = list(_shape(ctx, 0))
    b = list(_shape(ctx, 1))
    if ctx.int_attr("transBatchA", 0) and len(a) > 2:
        a = [*a[1:-1], a[0], a[-1]]
    if ctx.int_attr("transBatchB", 0) and len(b) > 2:
        b = [*b[1:-1], b[0], b[-1]]
    if ctx.int_attr("transA", 0) and len(a) >= 2:
        a[-1], a[-2] = a[-2], a[-1]
    if ctx.int_attr("transB", 0) and len(b) >= 2:
        b[-1], b[-2] = b[-2], b[-1]
    return [matmul_shape(tuple(a), tuple(b))]


def _fused_k(ctx: OpContext) -> int:
    a = ctx.shape(ctx.input(0))
    if len(a) == 1:
        return a[0]
    return a[-2] if ctx.int_attr("transA", 0) else a[-1]


@register(MS + "fused_mat_mul", family="linalg")
def fused_matmul_cost(ctx: OpContext) -> OpCost:
    """FusedMatMul (alpha x op(A) x op(B), transposes folded in): MACs = output
    elements x K, K the contracted dimension of A after its transpose; FLOPs = 2 x
    MACs (the alpha scale is not counted)."""
    macs = ctx.out_elems() * _fused_k(ctx)
    return OpCost(macs=macs, flops=2 * macs)


def _last_dim_from(ctx: OpContext, b_i: int, *, transposed: bool = False) -> Shapes:
    a = _shape(ctx, 0)
    b = _shape(ctx, b_i)
    n = b[0] if transposed else b[-1]
    return [(*a[:-1], n)]


@register(
    MS + "mat_mul_integer16",
    MS + "mat_mul_integer_to_float",
    family="linalg",
    arg_inputs=(2, 3, 4, 5),
)
def integer_matmul_cost(ctx: OpContext) -> OpCost:
    """MatMulInteger16 / MatMulIntegerToFloat: as ``matmul``, MACs = output elements
    x K (the last dimension of A); FLOPs = 2 x MACs; scaling to float not counted."""
    macs = ctx.out_elems() * ctx.shape(ctx.input(0))[-1]
    return OpCost(macs=macs, flops=2 * macs)


@register(MS + "dynamic_quantize_mat_mul", family="linalg", arg_inputs=(2, 3))
def dynamic_quantize_matmul_cost(ctx: OpContext) -> OpCost:
    """DynamicQuantizeMatMul (A quantised to uint8 at run time, B int8 [K, N]):
    MACs = output elements x K; FLOPs = 2 x MACs + 3 per element of A (its
    quantisation: scale, round, clamp; the min/max scan not counted)."""
    k = ctx.shape(ctx.input(0))[-1]
    macs = ctx.out_elems() * k
    return OpCost(macs=macs, flops=2 * macs + 3 * ctx.in_elems(0))


def nbits_shape(ctx: OpContext) -> Shapes:
    a = _shape(ctx, 0)
    n = ctx.int_attr("N", 0)
    return [(*a[:-1], n or None)]


@register(MS + "mat_mul_n_bits", family="linalg", arg_inputs=(2, 3, 4, 5))
def matmul_nbits_cost(ctx: OpContext) -> OpCost:
    """MatMulNBits (B packed in ``bits``-bit blocks, attributes K and N): MACs =
    output elements x K; FLOPs = 2 x MACs (dequantising B not counted; the packed
    bytes are its weights)."""
    k = ctx.int_attr("K", 0) or ctx.shape(ctx.input(0))[-1]
    macs = ctx.out_elems() * k
    return OpCost(macs=macs, flops=2 * macs)


def qgemm_shape(ctx: OpContext) -> Shapes:
    a = _shape(ctx, 0)
    b = _shape(ctx, 3)
    m = a[1] if ctx.int_attr("transA", 0) else a[0]
    n = b[0] if ctx.int_attr("transB", 0) else b[1]
    return [(m, n)]


@register(MS + "q_gemm", family="linalg", arg_inputs=(1, 2, 4, 5, 7, 8))
def qgemm_cost(ctx: OpContext) -> OpCost:
    """QGemm (quantised Gemm, B is input 3): MACs = M x N x K; FLOPs = 2 x MACs;
    the C add and requantisation not counted."""
    a = ctx.shape(ctx.input(0))
    k = a[0] if ctx.int_attr("transA", 0) else a[1]
    macs = ctx.out_elems() * k
    return OpCost(macs=macs, flops=2 * macs)


@register(MS + "fused_gemm", family="linalg")
def fused_gemm_cost(ctx: OpContext) -> OpCost:
    """FusedGemm (Gemm + activation): MACs = M x N x K; FLOPs = 2 x MACs + the
    activation's FLOPs per output element."""
    a = ctx.shape(ctx.input(0))
    k = a[0] if ctx.int_attr("transA", 0) else a[1]
    macs = ctx.out_elems() * k
    return OpCost(macs=macs, flops=2 * macs + _act_flops(ctx) * ctx.out_elems())


def gemm_shape(ctx: OpContext) -> Shapes:
    a = _shape(ctx, 0)
    b = _shape(ctx, 1)
    m = a[1] if ctx.int_attr("transA", 0) else a[0]
    n = b[0] if ctx.int_attr("transB", 0) else b[1]
    return [(m, n)]


# -- activations and bias fusions ----------------------------------------------------

same_shape = infer(lambda ctx: [_shape(ctx, 0)])


@register(MS + "quick_gelu", family="elementwise")
def quick_gelu_cost(ctx: OpContext) -> OpCost:
    """QuickGelu x * sigmoid(alpha x): 0 MACs; 6 FLOPs per output element (alpha
    multiply, sigmoid 4, multiply)."""
    return OpCost(flops=6 * ctx.out_elems())


@register(MS + "gelu", family="elementwise")
def ms_gelu_cost(ctx: OpContext) -> OpCost:
    """Gelu 0.5x(1+erf(x/sqrt 2)): 0 MACs; 5 FLOPs per output element (as ``gelu``)."""
    return OpCost(flops=UNARY["gelu"][0] * ctx.out_elems())


@register(MS + "fast_gelu", family="elementwise")
def fast_gelu_cost(ctx: OpContext) -> OpCost:
    """FastGelu (tanh approximation, optional bias added first): 0 MACs; 8 FLOPs per
    output element (as ``gelu_tanh``) + 1 when a bias is given."""
    per = UNARY["gelu_tanh"][0] + (1 if ctx.has_input(1) else 0)
    return OpCost(flops=per * ctx.out_elems())


@register(MS + "bias_gelu", family="elementwise")
def bias_gelu_cost(ctx: OpContext) -> OpCost:
    """BiasGelu gelu(A + bias): 0 MACs; 6 FLOPs per output element (add, gelu 5)."""
    return OpCost(flops=(1 + UNARY["gelu"][0]) * ctx.out_elems())


@register(MS + "bias_add", family="elementwise")
def bias_add_cost(ctx: OpContext) -> OpCost:
    """BiasAdd X + bias + skip: 0 MACs; 2 FLOPs per output element."""
    return OpCost(flops=2 * ctx.out_elems())


@register(MS + "bias_softmax", family="normalization")
def bias_softmax_cost(ctx: OpContext) -> OpCost:
    """BiasSoftmax softmax(data + bias): 0 MACs; 6 FLOPs per element (add, then
    softmax's 5: max, subtract, exp, sum, divide)."""
    return OpCost(flops=6 * ctx.out_elems())


# -- normalisations ------------------------------------------------------------------


def _norm_outputs(ctx: OpContext, with_sum: bool) -> Shapes:
    """Output, then mean and inv_std_var (reduced over the normalised axes), then
    the input+skip(+bias) sum for the Skip variants."""
    x = _shape(ctx, 0)
    axis = ctx.int_attr("axis", -1)
    axis = axis + len(x) if axis < 0 else axis
    stat: Shape = (*x[:axis], *([1] * (len(x) - axis)))
    out: Shapes = [x, stat, stat]
    if with_sum:
        out.append(x)
    return out


@register("simplified_layer_normalization", family="normalization")
def simplified_layer_norm_cost(ctx: OpContext) -> OpCost:
    """SimplifiedLayerNormalization (RMSNorm, ORT's fusion in the ONNX domain): 0
    MACs; 4 FLOPs per input element (square, add, multiply by rsqrt, scale), as
    ``rms_normalization``."""
    return OpCost(flops=4 * ctx.in_elems(0))


@register(MS + "skip_layer_normalization", family="normalization")
def skip_layer_norm_cost(ctx: OpContext) -> OpCost:
    """SkipLayerNormalization LayerNorm(input + skip (+ bias)): 0 MACs; 9 FLOPs per
    input element (1 or 2 adds, then layer normalisation's 7)."""
    adds = 2 if ctx.has_input(4) else 1
    return OpCost(flops=(7 + adds) * ctx.in_elems(0))


@register(MS + "skip_simplified_layer_normalization", family="normalization")
def skip_simplified_layer_norm_cost(ctx: OpContext) -> OpCost:
    """SkipSimplifiedLayerNormalization RMSNorm(input + skip (+ bias)): 0 MACs;
    5 FLOPs per input element (the add, then RMSNorm's 4; +1 with a bias)."""
    adds = 2 if ctx.has_input(3) else 1
    return OpCost(flops=(4 + adds) * ctx.in_elems(0))


def embed_shapes(ctx: OpContext) -> Shapes:
    ids = _shape(ctx, 0)
    word = _shape(ctx, 2)
    return [(*ids, word[-1]), (ids[0],), (*ids, word[-1])]


@register(MS + "embed_layer_normalization", family="normalization", arg_inputs=(0, 1, 7, 8))
def embed_layer_norm_cost(ctx: OpContext) -> OpCost:
    """EmbedLayerNormalization: gathers word, position (and segment) embeddings,
    adds them, then layer-normalises: 0 MACs; 9 FLOPs per output element (2 adds,
    layer normalisation 7)."""
    return OpCost(flops=9 * ctx.out_elems())


# -- attention -------------------------------------------------------------------------


def attention_shapes(ctx: OpContext) -> Shapes:
    """com.microsoft Attention: input [B, S, in], weights [in, q+k+v hidden]."""
    x = _shape(ctx, 0)
    w = _shape(ctx, 1)
    sizes = ints_attr(ctx, "qkv_hidden_sizes")
    v_hidden: Dim = sizes[2] if sizes else (None if w[1] is None else w[1] // 3)
    out: Shapes = [(x[0], x[1], v_hidden)]
    heads = ctx.int_attr("num_heads", 0)
    if ctx.has_input(4) and v_hidden is not None and heads:
        past = _shape(ctx, 4)  # [2, B, heads, past, head]
        total = None if past[3] is None or x[1] is None else past[3] + x[1]
        out.append((2, x[0], heads, total, v_hidden // heads))
    return out


@register(MS + "attention", family="linalg", arg_inputs=(3,))
def ms_attention_cost(ctx: OpContext) -> OpCost:
    """Attention (BERT self-attention with its input projection): MACs = B x S x
    in x (q+k+v hidden) for the projection + B x heads x S x T x (head_k +
    head_v) for Q·K^T and the weighted sum of V (T = past + S); FLOPs = 2 x MACs +
    5 per attention score (scale, softmax: max, exp, sum, divide). The bias add
    and the mask are not counted."""
    x = ctx.shape(ctx.input(0))
    w = ctx.shape(ctx.input(1))
    b, s, d_in = x
    sizes = ints_attr(ctx, "qkv_hidden_sizes") or [w[1] // 3] * 3
    heads = max(ctx.int_attr("num_heads", 1), 1)
    past = ctx.shape(ctx.input(4))[3] if ctx.has_input(4) else 0
    t = past + s
    proj = b * s * d_in * w[1]
    scores = b * heads * s * t
    attn = scores * (sizes[0] // heads + sizes[2] // heads)
    return OpCost(macs=proj + attn, flops=2 * (proj + attn) + 5 * scores)


def _mha_dims(ctx: OpContext) -> tuple[Dim, Dim, Dim, Dim, Dim, Dim]:
    """(batch, q_len, kv_len, heads, head_k, v_hidden) of MultiHeadAttention."""
    q = _shape(ctx, 0)
    heads = ctx.int_attr("num_heads", 0) or None
    if len(q) == 5:  # packed QKV [B, S, N, 3, H]
        return q[0], q[1], q[1], q[2], q[4], _mul(q[2], q[4])
    if not ctx.has_input(1):
        raise _NoShape
    k = _shape(ctx, 1)
    if len(k) == 5:  # packed KV [B, L, N, 2, H]
        head = k[4]
        return q[0], q[1], k[1], heads, head, _mul(heads, head)
    if len(k) == 4:  # key already [B, N, L, H]
        v = _shape(ctx, 2)
        return q[0], q[1], k[2], heads, k[3], _mul(heads, v[3])
    v = _shape(ctx, 2)
    head = None if k[2] is None or heads is None else k[2] // heads
    return q[0], q[1], k[1], heads, head, v[2]


def _mul(a: Dim, b: Dim) -> Dim:
    return None if a is None or b is None else a * b


def mha_shapes(ctx: OpContext) -> Shapes:
    b, s, kv_len, heads, head_k, v_hidden = _mha_dims(ctx)
    out: Shapes = [(b, s, v_hidden)]
    past = _shape(ctx, 6) if len(ctx.inputs) > 6 and ctx.has_input(6) else None
    total = kv_len if past is None or kv_len is None or past[2] is None else past[2] + kv_len
    head_v = None if v_hidden is None or not heads else v_hidden // heads
    out += [(b, heads, total, head_k), (b, heads, total, head_v)]
    return out


@register(MS + "multi_head_attention", family="linalg", arg_inputs=(4, 5))
def mha_cost(ctx: OpContext) -> OpCost:
    """MultiHeadAttention (projections done outside): MACs = B x heads x S x T x
    (head_k + head_v) for Q·K^T and the weighted sum of V (T = past + kv length);
    FLOPs = 2 x MACs + 5 per attention score (scale, softmax)."""
    b, s, kv_len, heads, head_k, v_hidden = _mha_dims(ctx)
    past = ctx.shape(ctx.input(6))[2] if len(ctx.inputs) > 6 and ctx.has_input(6) else 0
    if None in (b, s, kv_len, heads, head_k, v_hidden):
        from infercast.ir.views import ShapeUnknownError

        raise ShapeUnknownError("MultiHeadAttention: a dimension is unknown")
    assert b and s and kv_len and heads and head_k and v_hidden
    scores = b * heads * s * (kv_len + past)
    macs = scores * (head_k + v_hidden // heads)
    return OpCost(macs=macs, flops=2 * macs + 5 * scores)


def _gqa_dims(ctx: OpContext) -> tuple[Dim, Dim, int, int, Dim, Dim]:
    """(batch, q_len, heads, kv_heads, head, total kv length) of GroupQueryAttention."""
    q = _shape(ctx, 0)
    heads = ctx.int_attr("num_heads", 0)
    kv_heads = ctx.int_attr("kv_num_heads", 0)
    if not heads or not kv_heads:
        raise _NoShape
    if ctx.has_input(1):
        head = None if q[2] is None else q[2] // heads
    else:  # packed QKV [B, S, (heads + 2 kv_heads) x head]
        head = None if q[2] is None else q[2] // (heads + 2 * kv_heads)
    total: Dim = None
    if len(ctx.inputs) > 6 and ctx.has_input(6):
        v = ctx.value(6)
        if v is not None:
            total = int(v.reshape(-1)[0])
    if total is not None and len(ctx.inputs) > 3 and ctx.has_input(3):
        past = _shape(ctx, 3)[2]
        total = None if past is None else max(past, total)
    return q[0], q[1], heads, kv_heads, head, total


def gqa_shapes(ctx: OpContext) -> Shapes:
    b, s, heads, kv_heads, head, total = _gqa_dims(ctx)
    return [(b, s, _mul(heads, head)), (b, kv_heads, total, head), (b, kv_heads, total, head)]


@register(MS + "group_query_attention", family="linalg", arg_inputs=(5, 6, 7, 8))
def gqa_cost(ctx: OpContext) -> OpCost:
    """GroupQueryAttention: MACs = B x heads x S x T x 2 x head (Q·K^T and the
    weighted sum of V, T the total kv length = present_key's length); FLOPs = 2 x
    MACs + 5 per attention score. Rotary embedding, when fused, adds 3 FLOPs per
    rotated Q and K element."""
    q = ctx.shape(ctx.input(0))
    heads = ctx.int_attr("num_heads", 1)
    kv_heads = ctx.int_attr("kv_num_heads", 1)
    head = q[2] // heads if ctx.has_input(1) else q[2] // (heads + 2 * kv_heads)
    t = ctx.shape(ctx.outputs[1])[2] if len(ctx.outputs) > 1 else q[1]
    scores = q[0] * heads * q[1] * t
    macs = scores * 2 * head
    rotary = 3 * q[0] * q[1] * (heads + kv_heads) * head if ctx.int_attr("do_rotary", 0) else 0
    return OpCost(macs=macs, flops=2 * macs + 5 * scores + rotary)


@register(MS + "rotary_embedding", family="elementwise", arg_inputs=(1, 2, 3))
def ms_rotary_embedding_cost(ctx: OpContext) -> OpCost:
    """com.microsoft RotaryEmbedding (input, position_ids, cos_cache, sin_cache):
    0 MACs; 3 FLOPs per rotated element (x1 cos - x2 sin, or x2 cos + x1 sin); with
    ``rotary_embedding_dim`` smaller than the head the rest is copied, 0 FLOPs."""
    x = ctx.shape(ctx.input(0))
    heads = max(ctx.int_attr("num_heads", 0), 1)
    head = x[-1] if len(x) == 4 else x[-1] // heads
    rot = ctx.int_attr("rotary_embedding_dim", 0) or head
    return OpCost(flops=3 * ctx.out_elems() * rot // head)


# -- recurrent -------------------------------------------------------------------------


def dq_lstm_shapes(ctx: OpContext) -> Shapes:
    x = _shape(ctx, 0)  # [seq, batch, input]
    w = _shape(ctx, 1)  # [dirs, input, 4 hidden]
    hidden = ctx.int_attr("hidden_size", 0) or (None if w[2] is None else w[2] // 4)
    dirs = w[0]
    return [(x[0], dirs, x[1], hidden), (dirs, x[1], hidden), (dirs, x[1], hidden)]


@register(MS + "dynamic_quantize_lstm", family="recurrent", arg_inputs=(4, 8, 9, 10, 11))
def dq_lstm_cost(ctx: OpContext) -> OpCost:
    """DynamicQuantizeLSTM (W [dirs, input, 4h] and R [dirs, h, 4h] int8): MACs =
    seq x batch x dirs x 4h x (input + h); FLOPs = 2 x MACs + per cell element 3
    sigmoids + 2 tanh + 3 multiplies + 1 add = 17 x seq x batch x dirs x h, as
    ``lstm``. Quantising the activations is not counted."""
    x = ctx.shape(ctx.input(0))
    w = ctx.shape(ctx.input(1))
    seq, batch, d_in = x
    dirs, four_h = w[0], w[2]
    h = four_h // 4
    macs = seq * batch * dirs * four_h * (d_in + h)
    return OpCost(macs=macs, flops=2 * macs + 17 * seq * batch * dirs * h)


# -- QLinear elementwise, pools, concat ----------------------------------------------


def qbinary_shape(ctx: OpContext) -> Shapes:
    return [broadcast(_shape(ctx, 0), _shape(ctx, 3))]


@register(
    MS + "q_linear_add", MS + "q_linear_mul", family="elementwise", arg_inputs=(1, 2, 4, 5, 6, 7)
)
def qlinear_binary_cost(ctx: OpContext) -> OpCost:
    """QLinearAdd / QLinearMul (A is input 0, B input 3): 0 MACs; 1 FLOP per output
    element, as ``add`` / ``mul``; requantisation not counted."""
    return OpCost(flops=ctx.out_elems())


QUNARY = {
    "q_linear_sigmoid": ("sigmoid", 4),
    "q_linear_leaky_relu": ("leaky_relu", 2),
    "q_linear_softmax": ("softmax", 5),
}


def _qunary(name: str, base: str, n: int) -> None:
    def cost(ctx: OpContext) -> OpCost:
        return OpCost(flops=n * ctx.out_elems())

    cost.__doc__ = (
        f"QLinear form of ``{base}`` (8-bit in and out, commonly through a lookup table): "
        f"0 MACs; {n} FLOP(s) per output element, as ``{base}``; requantisation not counted."
    )
    cost.__name__ = f"{name}_cost"
    register(MS + name, family="elementwise", arg_inputs=(1, 2, 3, 4))(cost)


for _name, (_base, _n) in QUNARY.items():
    _qunary(_name, _base, _n)


def qgap_shape(ctx: OpContext) -> Shapes:
    x = _shape(ctx, 0)
    if ctx.int_attr("channels_last", 0):
        return [(x[0], *([1] * (len(x) - 2)), x[-1])]
    return [(x[0], x[1], *([1] * (len(x) - 2)))]


@register(MS + "q_linear_global_average_pool", family="pool", arg_inputs=(1, 2, 3, 4))
def qlinear_gap_cost(ctx: OpContext) -> OpCost:
    """QLinearGlobalAveragePool: 0 MACs; 1 FLOP (add) per input element, as
    ``global_avg_pool`` (the divide per output not counted)."""
    return OpCost(flops=numel(ctx.input(0)))


def qavgpool_shape(ctx: OpContext) -> Shapes:
    x = _shape(ctx, 0)
    kernel = ints_attr(ctx, "kernel_shape") or []
    if ctx.int_attr("channels_last", 0):
        return [(x[0], *conv_spatial(ctx, x[1:-1], kernel), x[-1])]
    return [(x[0], x[1], *conv_spatial(ctx, x[2:], kernel))]


@register(MS + "q_linear_average_pool", family="pool", arg_inputs=(1, 2, 3, 4))
def qlinear_avgpool_cost(ctx: OpContext) -> OpCost:
    """QLinearAveragePool: 0 MACs; FLOPs = output elements x kernel size (one add
    per window element), as ``avg_pool``."""
    k = 1
    for d in ints_attr(ctx, "kernel_shape") or [1]:
        k *= d
    return OpCost(flops=ctx.out_elems() * k)


def qconcat_shape(ctx: OpContext) -> Shapes:
    parts = [_shape(ctx, i) for i in range(2, len(ctx.inputs), 3)]
    axis = ctx.int_attr("axis", 0)
    rank = len(parts[0])
    axis = axis + rank if axis < 0 else axis
    total: Dim = 0
    for p in parts:
        d = p[axis]
        total = None if total is None or d is None else total + d
    first = parts[0]
    return [(*first[:axis], total, *first[axis + 1 :])]


@register(
    MS + "q_linear_concat", family="movement", arg_inputs=tuple(i for i in range(64) if i % 3 != 2)
)
def qlinear_concat_cost(ctx: OpContext) -> OpCost:
    """QLinearConcat (Y_scale, Y_zero_point, then (tensor, scale, zero point) per
    input): 0 MACs, 0 FLOPs: data movement (requantisation not counted)."""
    return OpCost()
