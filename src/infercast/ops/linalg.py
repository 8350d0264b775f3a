"""Matrix products: fully-connected, Gemm, MatMul / BatchMatMul, Einsum, attention."""

from __future__ import annotations

import re

from infercast.ir.views import numel, static_shape
from infercast.ops.registry import OpContext, OpCost, register


@register("fully_connected", family="linalg", weight_input=1)
def fully_connected_cost(ctx: OpContext) -> OpCost:
    """MACs = output elements x K, K the weights' input dimension (TFLite
    FULLY_CONNECTED weights are [units, K]); sparse weights are costed dense.
    FLOPs = 2 x MACs; bias not counted."""
    w = static_shape(ctx.input(1))
    k = w[-1]
    macs = ctx.out_elems() * k
    return OpCost(macs=macs, flops=2 * macs)


@register("gemm", family="linalg", weight_input=1)
def gemm_cost(ctx: OpContext) -> OpCost:
    """Y = alpha * A' x B' + beta * C: MACs = M x N x K. FLOPs = 2 x MACs; the
    alpha/beta scaling and the C add are not counted."""
    a = static_shape(ctx.input(0))
    trans_a = ctx.int_attr("transA", 0)
    k = a[0] if trans_a else a[-1]
    macs = ctx.out_elems() * k
    return OpCost(macs=macs, flops=2 * macs)


def _contracted_dim(ctx: OpContext, a_index: int) -> int:
    a = static_shape(ctx.input(a_index))
    if len(a) == 1:
        return a[0]
    adj = ctx.int_attr("adj_x", 0)
    return a[-2] if adj else a[-1]


@register("matmul", "matmul_integer", family="linalg", weight_input=1)
def matmul_cost(ctx: OpContext) -> OpCost:
    """MACs = output elements x K, K the contracted dimension of A (its last, or
    second to last when TFLite's adj_x is set); batch dimensions broadcast.
    FLOPs = 2 x MACs."""
    macs = ctx.out_elems() * _contracted_dim(ctx, 0)
    return OpCost(macs=macs, flops=2 * macs)


@register("qlinear_matmul", family="linalg", weight_input=3)
def qlinear_matmul_cost(ctx: OpContext) -> OpCost:
    """As ``matmul`` (A is input 0 of QLinearMatMul): MACs = output elements x K.
    FLOPs = 2 x MACs; requantisation not counted."""
    macs = ctx.out_elems() * _contracted_dim(ctx, 0)
    return OpCost(macs=macs, flops=2 * macs)


_EINSUM_TERM = re.compile(r"[A-Za-z]|\.\.\.")


@register("einsum", family="linalg")
def einsum_cost(ctx: OpContext) -> OpCost:
    """Counted as its naive evaluation: one term per combination of all index values
    (product P of every index size). With two or more operands and a summed index,
    MACs = P and FLOPs = P x operands ((operands - 1) multiplies + 1 add per term: 2 x
    MACs for a matrix product). A single operand with a summed index is a reduction:
    0 MACs, P FLOPs (one add per input value). With no summed index it is an
    elementwise product: 0 MACs, (operands - 1) FLOPs per output element; a pure
    re-indexing (transpose, diagonal) is data movement, 0 FLOPs."""
    eq = str(ctx.attr("equation", "")).replace(" ", "")
    lhs, _, rhs = eq.partition("->")
    terms = lhs.split(",")
    sizes: dict[str, int] = {}
    for term, t in zip(terms, ctx.inputs, strict=False):
        if t is None:
            continue
        shape = static_shape(t)
        letters = _EINSUM_TERM.findall(term)
        if "..." in letters:
            i = letters.index("...")
            n_ell = len(shape) - (len(letters) - 1)
            letters = [*letters[:i], *(f"@{j}" for j in range(n_ell)), *letters[i + 1 :]]
        for letter, d in zip(letters, shape, strict=False):
            sizes[letter] = max(sizes.get(letter, 1), d)
    if "->" not in eq:
        # Implicit output: letters appearing once, alphabetically.
        counts: dict[str, int] = {}
        for term in terms:
            for letter in _EINSUM_TERM.findall(term):
                counts[letter] = counts.get(letter, 0) + 1
        out_letters = {k for k, v in counts.items() if v == 1}
    else:
        out_letters = set(_EINSUM_TERM.findall(rhs))
    summed = [k for k in sizes if k not in out_letters and not k.startswith("@")]
    operands = len(terms)
    if not summed:
        return OpCost(flops=max(operands - 1, 0) * ctx.out_elems())
    total = 1
    for d in sizes.values():
        total *= d
    if operands == 1:
        return OpCost(flops=total)
    return OpCost(macs=total, flops=total * operands)


def _attention_dims(ctx: OpContext) -> tuple[int, int, int, int, int, int]:
    """(batch, q heads, q length, total kv length, head dim, value head dim)."""
    q = static_shape(ctx.input(0))
    k = static_shape(ctx.input(1))
    v = static_shape(ctx.input(2))
    if len(q) == 4:
        b, heads, sq, d = q
        skv = k[2]
        vd = v[3]
    else:  # 3-D [batch, seq, heads * dim]: head counts are attributes
        heads = ctx.int_attr("q_num_heads", 1)
        kv_heads = ctx.int_attr("kv_num_heads", heads)
        b, sq, _ = q
        skv = k[1]
        d = k[2] // kv_heads
        vd = v[2] // kv_heads
    past = ctx.inputs[4] if len(ctx.inputs) > 4 else None
    if past is not None:
        skv += static_shape(past)[2]
    return b, heads, sq, skv, d, vd


@register("attention", family="linalg")
def attention_cost(ctx: OpContext) -> OpCost:
    """Scaled dot-product attention (ONNX Attention, opset 23): MACs = Q·K^T plus
    P·V = batch x q_heads x q_len x kv_len x (head_dim + v_head_dim), kv_len including
    past_key; FLOPs = 2 x MACs + 5 per attention score (scale, and softmax: max,
    subtract, exp, sum, divide counted as 4) + 1 per score for an attn_mask add + 3 per
    score for a softcap (divide, tanh, multiply)."""
    b, heads, sq, skv, d, vd = _attention_dims(ctx)
    scores = b * heads * sq * skv
    macs = scores * d + scores * vd
    extra = 5 + (1 if len(ctx.inputs) > 3 and ctx.inputs[3] is not None else 0)
    softcap = ctx.attr("softcap", 0.0)
    if isinstance(softcap, int | float) and softcap > 0:
        extra += 3
    return OpCost(macs=macs, flops=2 * macs + extra * scores)


@register("ai.onnx.preview:flex_attention", family="linalg")
def flex_attention_cost(ctx: OpContext) -> OpCost:
    """As ``attention`` (rank-4 inputs): MACs = batch x q_heads x q_len x kv_len x
    (head_dim + v_head_dim); FLOPs = 2 x MACs + 5 per score (scale, softmax), plus
    the MACs and FLOPs of the score_mod / prob_mod subgraphs (each applied once to
    the whole score tensor)."""
    from infercast.ops.control import body_costs

    b, heads, sq, skv, d, vd = _attention_dims(ctx)
    scores = b * heads * sq * skv
    macs = scores * (d + vd)
    mods = body_costs(ctx)
    return OpCost(
        macs=macs + sum(c.macs for c in mods),
        flops=2 * macs + 5 * scores + sum(c.flops for c in mods),
    )


_DELTA_RULES = ("delta", "gated_delta")


@register("linear_attention", family="linalg")
def linear_attention_cost(ctx: OpContext) -> OpCost:
    """Recurrent linear attention (ONNX LinearAttention), per token: each KV head
    updates its d_k x d_v state with an outer product (d_k·d_v MACs; the delta rules
    also read S^T k, another d_k·d_v), each query head reads q^T S (d_k·d_v MACs).
    MACs = batch x T x (kv_heads x d_k x d_v x (2 for delta rules, else 1) + q_heads x
    d_k x d_v). FLOPs = 2 x MACs + the gated decay (1 multiply per state element and
    1 exp per decay value) + the delta correction (2 per value element per KV head:
    v - S^T k, times beta) + 1 scale multiply per output element."""
    b, t, qd = static_shape(ctx.input(0))
    k = static_shape(ctx.input(1))
    v = static_shape(ctx.input(2))
    hq = ctx.int_attr("q_num_heads", 1)
    hkv = ctx.int_attr("kv_num_heads", hq)
    dk = k[2] // hkv
    dv = v[2] // hkv
    rule = str(ctx.attr("update_rule", "gated_delta"))
    state = b * t * hkv * dk * dv
    macs = state * (2 if rule in _DELTA_RULES else 1) + b * t * hq * dk * dv
    flops = 2 * macs + b * t * hq * dv
    if rule.startswith("gated"):
        decay = ctx.inputs[4] if len(ctx.inputs) > 4 else None
        flops += state + (numel(decay) if decay is not None else 0)
    if rule in _DELTA_RULES:
        flops += 2 * b * t * hkv * dv
    del qd
    return OpCost(macs=macs, flops=flops)


@register("det", family="linalg")
def det_cost(ctx: OpContext) -> OpCost:
    """0 MACs (not a product the MAC figures cover); per n x n matrix an LU
    factorisation, 2n^3/3 FLOPs (Golub & Van Loan, Matrix Computations, 3.2), plus n
    multiplies for the product of the diagonal."""
    shape = static_shape(ctx.input(0))
    n = shape[-1]
    batch = 1
    for d in shape[:-2]:
        batch *= d
    return OpCost(flops=batch * ((2 * n**3 + 2) // 3 + n))
