"""Shape rules for elementwise ops: same shape as the input, or the broadcast of the inputs."""

from __future__ import annotations

from infercast.frontends.onnx.shapes._common import (
    Shapes,
    broadcast_inputs,
    in_shape,
    rule,
    same_as_input,
)
from infercast.ops.registry import OpContext


@rule("quantize")
def _quantize(ctx: OpContext) -> Shapes:
    # QuantizeLinear: y like x. DynamicQuantizeLinear: y like x, scale and zero point scalars.
    s = in_shape(ctx, 0)
    if ctx.node.native_op == "DynamicQuantizeLinear":
        return [s, (), ()]
    return [s]


# Outputs with input 0's shape.
_SAME_SHAPE = (
    "relu", "leaky_relu", "thresholded_relu", "elu", "selu", "celu", "sigmoid", "hard_sigmoid",
    "hard_swish", "swish", "gelu", "mish", "softplus", "softsign", "shrink", "tanh", "exp",
    "log", "sqrt", "reciprocal", "abs", "neg", "sign", "floor", "ceil", "round", "erf", "sin",
    "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
    "logical_not", "bitwise_not", "is_nan", "is_inf", "clip", "dequantize", "rotary_embedding",
)  # fmt: skip
rule(*_SAME_SHAPE)(same_as_input)


# Outputs with the broadcast of the inputs.
_BROADCAST = (
    "add", "sub", "mul", "div", "pow", "mod", "bit_shift", "equal", "less", "less_equal",
    "greater", "greater_equal", "logical_and", "logical_or", "logical_xor", "bitwise_and",
    "bitwise_or", "bitwise_xor", "where", "prelu", "sum", "max", "min", "mean",
)  # fmt: skip
rule(*_BROADCAST)(broadcast_inputs)
