"""Convolutions: the MAC-heavy ops whose counts papers publish.

Input positions differ between formats (TFLite ``TRANSPOSE_CONV`` takes
``output_shape, weights, input``); the frontend records them in the
``data_input`` / ``weight_input`` attributes and the weight layout in
``weight_layout`` (``OIHW`` ONNX, ``OHWI`` TFLite, ``1HWO`` TFLite depthwise,
``IOHW`` ONNX transposed, ``DHWIO`` TFLite 3-D).
"""

from __future__ import annotations

from infercast.ir.views import kernel_dims, numel
from infercast.ops.registry import OpContext, OpCost, register


def _weight_layout(ctx: OpContext, default: str) -> str:
    v = ctx.attr("weight_layout", default)
    return v if isinstance(v, str) else default


@register("conv", "depthwise_conv", "conv_integer", family="conv")
def conv_cost(ctx: OpContext) -> OpCost:
    """MACs = output elements x input channels per group x kernel spatial size
    (a depthwise kernel has one input channel per group). FLOPs = 2 x MACs. A bias
    add and a fused activation are not counted (the convention of published MAC
    figures)."""
    w = ctx.input(ctx.int_attr("weight_input", 1))
    k = kernel_dims(w, _weight_layout(ctx, "OIHW"))
    macs = ctx.out_elems() * k.in_channels * k.spatial_size
    return OpCost(macs=macs, flops=2 * macs)


@register("qlinear_conv", family="conv")
def qlinear_conv_cost(ctx: OpContext) -> OpCost:
    """As ``conv``: MACs = output elements x input channels per group x kernel size
    (weights are input 3 of QLinearConv); FLOPs = 2 x MACs. Requantisation of the
    output is not counted."""
    w = ctx.input(3)
    k = kernel_dims(w, _weight_layout(ctx, "OIHW"))
    macs = ctx.out_elems() * k.in_channels * k.spatial_size
    return OpCost(macs=macs, flops=2 * macs)


@register("conv_transpose", family="conv")
def conv_transpose_cost(ctx: OpContext) -> OpCost:
    """MACs = input elements x output channels per group x kernel spatial size (every
    input value is scattered through the whole kernel). FLOPs = 2 x MACs."""
    x = ctx.input(ctx.int_attr("data_input", 0))
    w = ctx.input(ctx.int_attr("weight_input", 1))
    k = kernel_dims(w, _weight_layout(ctx, "IOHW"))
    macs = numel(x) * k.out_channels * k.spatial_size
    return OpCost(macs=macs, flops=2 * macs)
