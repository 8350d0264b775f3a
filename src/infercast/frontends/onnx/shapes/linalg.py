"""Shape rules for matrix products and attention."""

from __future__ import annotations

import re

from infercast.frontends.onnx.shapes._common import (
    BODY_INPUTS,
    Shapes,
    in_shape,
    rule,
    sum_dims,
)
from infercast.ir.graph import Dim, Shape
from infercast.ops.registry import OpContext
from infercast.ops.shapes import broadcast
from infercast.ops.shapes import matmul_shape as matmul_shape  # re-exported


@rule("matmul", "matmul_integer")
def _matmul(ctx: OpContext) -> Shapes:
    return [matmul_shape(in_shape(ctx, 0), in_shape(ctx, 1))]


@rule("qlinear_matmul")
def _qlinear_matmul(ctx: OpContext) -> Shapes:
    return [matmul_shape(in_shape(ctx, 0), in_shape(ctx, 3))]


@rule("gemm")
def _gemm(ctx: OpContext) -> Shapes:
    a = in_shape(ctx, 0)
    b = in_shape(ctx, 1)
    m = a[1] if ctx.int_attr("transA", 0) else a[0]
    n = b[0] if ctx.int_attr("transB", 0) else b[1]
    return [(m, n)]


_EINSUM_TERM = re.compile(r"\.\.\.|[A-Za-z]")


@rule("einsum")
def _einsum(ctx: OpContext) -> Shapes:
    eq = str(ctx.attr("equation", "")).replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    sizes: dict[str, Dim] = {}
    ell: Shape = ()
    for i, term in enumerate(terms):
        s = in_shape(ctx, i)
        letters = _EINSUM_TERM.findall(term)
        if "..." in letters:
            j = letters.index("...")
            n_ell = len(s) - (len(letters) - 1)
            ell = broadcast(ell, s[j : j + n_ell])
            s = (*s[:j], *s[j + n_ell :])
            letters.remove("...")
        for letter, d in zip(letters, s, strict=True):
            if sizes.get(letter) in (None, 1):
                sizes[letter] = d
    if arrow:
        out_letters = _EINSUM_TERM.findall(rhs)
    else:
        counts: dict[str, int] = {}
        for term in terms:
            for letter in _EINSUM_TERM.findall(term):
                counts[letter] = counts.get(letter, 0) + 1
        out_letters = (["..."] if "..." in counts else []) + sorted(
            k for k, v in counts.items() if v == 1 and k != "..."
        )
    out: list[Dim] = []
    for letter in out_letters:
        if letter == "...":
            out.extend(ell)
        else:
            out.append(sizes[letter])
    return [tuple(out)]


def _heads_3d(q: Shape, heads: int) -> Dim:
    return None if q[-1] is None or not heads else q[-1] // heads


@rule("attention")
def _attention(ctx: OpContext) -> Shapes:
    q, k, v = (in_shape(ctx, i) for i in range(3))
    past = in_shape(ctx, 4) if len(ctx.inputs) > 4 and ctx.has_input(4) else None
    if len(q) == 4:
        b, hq, sq, _d = q
        hkv, skv, dk = k[1], k[2], k[3]
        dv = v[3]
    else:
        hq = ctx.int_attr("q_num_heads", 0)
        hkv = ctx.int_attr("kv_num_heads", 0)
        b, sq = q[0], q[1]
        skv = k[1]
        dk = _heads_3d(k, hkv)
        dv = _heads_3d(v, hkv)
    total = skv if past is None else sum_dims([past[2], skv])
    y: Shape = (b, hq, sq, dv)
    if len(q) != 4:
        y = (b, sq, None if dv is None or hq is None else dv * hq)
    return [y, (b, hkv, total, dk), (b, hkv, total, dv), (b, hq, sq, total)]


@rule("ai.onnx.preview:flex_attention")
def _flex_attention(ctx: OpContext) -> Shapes:
    q = in_shape(ctx, 0)
    v = in_shape(ctx, 2)
    return [(q[0], q[1], q[2], v[3])]


@rule("linear_attention")
def _linear_attention(ctx: OpContext) -> Shapes:
    q, k, v = (in_shape(ctx, i) for i in range(3))
    hq = ctx.int_attr("q_num_heads", 0)
    hkv = ctx.int_attr("kv_num_heads", 0)
    dk = _heads_3d(k, hkv)
    dv = _heads_3d(v, hkv)
    return [(q[0], q[1], None if dv is None else dv * hq), (q[0], hkv, dk, dv)]


@rule("det")
def _det(ctx: OpContext) -> Shapes:
    return [in_shape(ctx, 0)[:-2]]


def _flex_body_inputs(ctx: OpContext, key: str) -> list[Shape | None]:
    q, k = in_shape(ctx, 0), in_shape(ctx, 1)
    return [(q[0], q[1], q[2], k[2])]


BODY_INPUTS["ai.onnx.preview:flex_attention"] = _flex_body_inputs
