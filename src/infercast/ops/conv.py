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


# Depthwise: one input channel per output channel, so an output can be written over
# its input as it is computed (channel by channel: MCUNet's TinyEngine, Lin et al. 2020).
@register("depthwise_conv", family="conv", weight_input=1, in_place=True)
@register("conv", "conv_integer", family="conv", weight_input=1)
def conv_cost(ctx: OpContext) -> OpCost:
    """MACs = output elements x input channels per group x kernel spatial size
    (a depthwise kernel has one input channel per group). FLOPs = 2 x MACs. A bias
    add and a fused activation are not counted (the convention of published MAC
    figures)."""
    w = ctx.input(ctx.int_attr("weight_input", 1))
    k = kernel_dims(w, _weight_layout(ctx, "OIHW"))
    macs = ctx.out_elems() * k.in_channels * k.spatial_size
    return OpCost(macs=macs, flops=2 * macs)


@register("qlinear_conv", family="conv", weight_input=3)
def qlinear_conv_cost(ctx: OpContext) -> OpCost:
    """As ``conv``: MACs = output elements x input channels per group x kernel size
    (weights are input 3 of QLinearConv); FLOPs = 2 x MACs. Requantisation of the
    output is not counted."""
    w = ctx.input(3)
    k = kernel_dims(w, _weight_layout(ctx, "OIHW"))
    macs = ctx.out_elems() * k.in_channels * k.spatial_size
    return OpCost(macs=macs, flops=2 * macs)


@register("conv_transpose", family="conv", weight_input=1)
def conv_transpose_cost(ctx: OpContext) -> OpCost:
    """MACs = input elements x output channels per group x kernel spatial size (every
    input value is scattered through the whole kernel). FLOPs = 2 x MACs."""
    x = ctx.input(ctx.int_attr("data_input", 0))
    w = ctx.input(ctx.int_attr("weight_input", 1))
    k = kernel_dims(w, _weight_layout(ctx, "IOHW"))
    macs = numel(x) * k.out_channels * k.spatial_size
    return OpCost(macs=macs, flops=2 * macs)


@register("deform_conv", family="conv", arg_inputs=(2,))
def deform_conv_cost(ctx: OpContext) -> OpCost:
    """MACs as ``conv``: output elements x input channels per group x kernel size.
    FLOPs = 2 x MACs + 9 per sampled input value (a bilinear sample: 3 lerps of 3
    FLOPs) + 1 per sample for the modulation mask when given; samples = batch x
    input channels x kernel size x output positions."""
    w = ctx.input(1)
    k = kernel_dims(w, "OIHW")
    macs = ctx.out_elems() * k.in_channels * k.spatial_size
    y = ctx.shape(ctx.outputs[0])
    x = ctx.shape(ctx.input(0))
    positions = 1
    for d in y[2:]:
        positions *= d
    samples = x[0] * x[1] * k.spatial_size * positions
    per_sample = 9 + (1 if len(ctx.inputs) > 4 and ctx.inputs[4] is not None else 0)
    return OpCost(macs=macs, flops=2 * macs + samples * per_sample)


@register("causal_conv_with_state", family="conv", arg_inputs=(3,))
def causal_conv_with_state_cost(ctx: OpContext) -> OpCost:
    """Causal depthwise 1-D conv (ONNX CausalConvWithState): MACs = output elements x
    kernel size k (weights are (channels, 1, k)). FLOPs = 2 x MACs + 5 per output
    element for a fused SiLU/Swish activation; the bias add and the state copy are
    not counted (the conv convention)."""
    k = ctx.shape(ctx.input(1))[-1]
    macs = ctx.out_elems(0) * k
    act = str(ctx.attr("activation", "none")).lower()
    extra = 5 * ctx.out_elems(0) if act in ("silu", "swish") else 0
    return OpCost(macs=macs, flops=2 * macs + extra)
