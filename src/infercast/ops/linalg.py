"""Matrix products: fully-connected, Gemm, MatMul / BatchMatMul, Einsum, attention."""

from __future__ import annotations

import re

from infercast.ir.views import static_shape
from infercast.ops.registry import OpContext, OpCost, register


@register("fully_connected", family="linalg")
def fully_connected_cost(ctx: OpContext) -> OpCost:
    """MACs = output elements x K, K the weights' input dimension (TFLite
    FULLY_CONNECTED weights are [units, K]); sparse weights are costed dense.
    FLOPs = 2 x MACs; bias not counted."""
    w = static_shape(ctx.input(1))
    k = w[-1]
    macs = ctx.out_elems() * k
    return OpCost(macs=macs, flops=2 * macs)


@register("gemm", family="linalg")
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


@register("matmul", "matmul_integer", family="linalg")
def matmul_cost(ctx: OpContext) -> OpCost:
    """MACs = output elements x K, K the contracted dimension of A (its last, or
    second to last when TFLite's adj_x is set); batch dimensions broadcast.
    FLOPs = 2 x MACs."""
    macs = ctx.out_elems() * _contracted_dim(ctx, 0)
    return OpCost(macs=macs, flops=2 * macs)


@register("qlinear_matmul", family="linalg")
def qlinear_matmul_cost(ctx: OpContext) -> OpCost:
    """As ``matmul`` (A is input 0 of QLinearMatMul): MACs = output elements x K.
    FLOPs = 2 x MACs; requantisation not counted."""
    macs = ctx.out_elems() * _contracted_dim(ctx, 0)
    return OpCost(macs=macs, flops=2 * macs)


_EINSUM_TERM = re.compile(r"[A-Za-z]|\.\.\.")


@register("einsum", family="linalg")
def einsum_cost(ctx: OpContext) -> OpCost:
    """MACs = product of the sizes of every index in the equation (each output
    element sums over the contracted indices), when at least one index is
    contracted; otherwise it is an elementwise product: 0 MACs and
    (operands - 1) FLOPs per output element."""
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
    if not rhs and "->" not in eq:
        # Implicit output: letters appearing once, alphabetically.
        counts: dict[str, int] = {}
        for term in terms:
            for letter in _EINSUM_TERM.findall(term):
                counts[letter] = counts.get(letter, 0) + 1
        out_letters = {k for k, v in counts.items() if v == 1}
    else:
        out_letters = set(_EINSUM_TERM.findall(rhs))
    contracted = [k for k in sizes if k not in out_letters and not k.startswith("@")]
    if not contracted:
        n = ctx.out_elems()
        return OpCost(flops=max(len(terms) - 1, 0) * n)
    total = 1
    for d in sizes.values():
        total *= d
    return OpCost(macs=total, flops=2 * total)


@register("attention", family="linalg")
def attention_cost(ctx: OpContext) -> OpCost:
    """Scaled dot-product attention (ONNX Attention, opset 23): MACs = Q·K^T plus
    P·V = batch x heads x (q_len x kv_len x head_dim + q_len x kv_len x v_head_dim);
    FLOPs = 2 x MACs + 5 per attention score for the softmax and scaling."""
    q = static_shape(ctx.input(0))
    k = static_shape(ctx.input(1))
    v = static_shape(ctx.input(2))
    if len(q) != 4 or len(k) != 4 or len(v) != 4:
        # 3-D form [batch, seq, heads*dim]: head count is an attribute.
        heads = ctx.int_attr("q_num_heads", 1)
        kv_heads = ctx.int_attr("kv_num_heads", heads)
        b, sq, hd = q
        _, skv, khd = k
        vd = v[2] // kv_heads
        d = hd // heads
        del khd
    else:
        b, heads, sq, d = q
        skv = k[2]
        vd = v[3]
    scores = b * heads * sq * skv
    macs = scores * d + scores * vd
    return OpCost(macs=macs, flops=2 * macs + 5 * scores)
