"""Shape rules for convolutions (ONNX Conv, ConvTranspose and their quantised forms)."""

from __future__ import annotations

from infercast.frontends.onnx.shapes._common import (
    Shapes,
    in_shape,
    in_static,
    rule,
)
from infercast.ir.graph import Dim
from infercast.ops.registry import OpContext
from infercast.ops.shapes import conv_spatial as conv_spatial  # re-exported (pool)
from infercast.ops.shapes import ints_attr


@rule("conv", "depthwise_conv", "conv_integer", "qlinear_conv", "deform_conv")
def _conv(ctx: OpContext) -> Shapes:
    x = in_shape(ctx, 0)
    w = in_static(ctx, 3 if ctx.node.op == "qlinear_conv" else 1)
    kernel = ints_attr(ctx, "kernel_shape") or list(w[2:])
    return [(x[0], w[0], *conv_spatial(ctx, x[2:], kernel))]


@rule("conv_transpose")
def _conv_transpose(ctx: OpContext) -> Shapes:
    x = in_shape(ctx, 0)
    w = in_static(ctx, 1)
    group = ctx.int_attr("group", 1)
    kernel = ints_attr(ctx, "kernel_shape") or list(w[2:])
    n = len(kernel)
    out_c = w[1] * group
    given = ints_attr(ctx, "output_shape")
    if given:
        return [(x[0], out_c, *given[-n:])]
    strides = ints_attr(ctx, "strides") or [1] * n
    dil = ints_attr(ctx, "dilations") or [1] * n
    opad = ints_attr(ctx, "output_padding") or [0] * n
    pads = ints_attr(ctx, "pads") or [0] * (2 * n)
    auto = str(ctx.attr("auto_pad", "NOTSET"))
    spatial: list[Dim] = []
    for i, d in enumerate(x[2:]):
        if d is None:
            spatial.append(None)
        elif auto in ("SAME_UPPER", "SAME_LOWER"):
            spatial.append(d * strides[i])
        else:
            pad = 0 if auto == "VALID" else pads[i] + pads[i + n]
            spatial.append(strides[i] * (d - 1) + opad[i] + (kernel[i] - 1) * dil[i] + 1 - pad)
    return [(x[0], out_c, *spatial)]


@rule("causal_conv_with_state")
def _causal_conv(ctx: OpContext) -> Shapes:
    x = in_shape(ctx, 0)
    w = in_shape(ctx, 1)
    k = w[-1]
    return [x, (x[0], x[1], None if k is None else k - 1)]
