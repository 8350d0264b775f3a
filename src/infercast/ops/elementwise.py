"""Elementwise ops: 0 MACs, a stated number of FLOPs per output element.

Counting rule: one FLOP per arithmetic operation, comparison or select, and one
per evaluation of a transcendental function (exp, log, tanh, erf, sqrt, sin …).
Composite activations are the sum of their parts, e.g. sigmoid
``1 / (1 + exp(-x))`` = negate + exp + add + divide = 4.
"""

from __future__ import annotations

from infercast.ops.registry import CostFn, OpContext, OpCost, register

# op -> (FLOPs per output element, formula shown in the docs)
UNARY: dict[str, tuple[int, str]] = {
    "relu": (1, "max(x, 0)"),
    "relu6": (2, "min(max(x, 0), 6)"),
    "relu_n1_to_1": (2, "min(max(x, -1), 1)"),
    "relu_0_to_1": (2, "min(max(x, 0), 1)"),
    "leaky_relu": (2, "x < 0 ? a*x : x"),
    "prelu": (2, "x < 0 ? a*x : x"),
    "thresholded_relu": (1, "x > a ? x : 0"),
    "elu": (4, "x < 0 ? a*(exp(x)-1) : x"),
    "selu": (5, "g*(x < 0 ? a*(exp(x)-1) : x)"),
    "celu": (5, "max(0,x) + min(0, a*(exp(x/a)-1))"),
    "sigmoid": (4, "1/(1+exp(-x))"),
    "hard_sigmoid": (4, "max(0, min(1, a*x+b))"),
    "hard_swish": (5, "x * relu6(x+3) / 6"),
    "swish": (5, "x * sigmoid(x)"),
    "gelu": (5, "0.5*x*(1+erf(x/sqrt(2))); 8 with approximate='tanh' (see gelu_tanh)"),
    "mish": (5, "x * tanh(softplus(x))"),
    "softplus": (3, "log(1+exp(x))"),
    "softsign": (3, "x/(1+|x|)"),
    "shrink": (2, "compare and shift"),
    "tanh": (1, "tanh(x)"),
    "exp": (1, "exp(x)"),
    "log": (1, "log(x)"),
    "sqrt": (1, "sqrt(x)"),
    "rsqrt": (1, "1/sqrt(x)"),
    "reciprocal": (1, "1/x"),
    "square": (1, "x*x"),
    "abs": (1, "|x|"),
    "neg": (1, "-x"),
    "sign": (1, "sign(x)"),
    "floor": (1, "floor(x)"),
    "ceil": (1, "ceil(x)"),
    "round": (1, "round(x)"),
    "erf": (1, "erf(x)"),
    "sin": (1, "sin(x)"),
    "cos": (1, "cos(x)"),
    "tan": (1, "tan(x)"),
    "asin": (1, "asin(x)"),
    "acos": (1, "acos(x)"),
    "atan": (1, "atan(x)"),
    "sinh": (1, "sinh(x)"),
    "cosh": (1, "cosh(x)"),
    "asinh": (1, "asinh(x)"),
    "acosh": (1, "acosh(x)"),
    "atanh": (1, "atanh(x)"),
    "logical_not": (1, "!x"),
    "bitwise_not": (1, "~x"),
    "is_nan": (1, "x != x"),
    "is_inf": (1, "|x| == inf"),
    "clip": (2, "min(max(x, lo), hi)"),
    "quantize": (3, "round(x / scale) + zero_point, saturated"),
    "dequantize": (2, "(q - zero_point) * scale"),
    "fake_quant": (5, "quantize then dequantize"),
    "gelu_tanh": (8, "0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3)))"),
}

BINARY: dict[str, tuple[int, str]] = {
    "add": (1, "a + b"),
    "sub": (1, "a - b"),
    "mul": (1, "a * b"),
    "div": (1, "a / b"),
    "pow": (1, "a ** b"),
    "maximum": (1, "max(a, b)"),
    "minimum": (1, "min(a, b)"),
    "mod": (1, "a mod b"),
    "floor_div": (1, "floor(a / b)"),
    "floor_mod": (1, "a - floor(a/b)*b"),
    "squared_difference": (2, "(a - b)^2"),
    "atan2": (1, "atan2(a, b)"),
    "equal": (1, "a == b"),
    "not_equal": (1, "a != b"),
    "less": (1, "a < b"),
    "less_equal": (1, "a <= b"),
    "greater": (1, "a > b"),
    "greater_equal": (1, "a >= b"),
    "logical_and": (1, "a && b"),
    "logical_or": (1, "a || b"),
    "logical_xor": (1, "a ^ b"),
    "bitwise_and": (1, "a & b"),
    "bitwise_or": (1, "a | b"),
    "bitwise_xor": (1, "a ^ b"),
    "bit_shift": (1, "a << b / a >> b"),
    "right_shift": (1, "a >> b"),
    "where": (1, "c ? a : b"),
}

# Arguments that bound or parameterise the op rather than carry weights.
_ARGS: dict[str, tuple[int, ...]] = {
    "clip": (1, 2), "quantize": (1, 2), "dequantize": (1, 2),
}  # fmt: skip


def _per_element(op: str, n: int, formula: str) -> CostFn:
    def cost(ctx: OpContext) -> OpCost:
        if op == "gelu" and ctx.attr("approximate") == "tanh":
            return OpCost(flops=UNARY["gelu_tanh"][0] * ctx.all_out_elems())
        return OpCost(flops=n * ctx.all_out_elems())

    cost.__doc__ = f"0 MACs; {n} FLOP(s) per output element: {formula}."
    cost.__name__ = f"{op}_cost"
    return cost


# Unary and binary ops write each output element from the same element of the inputs:
# an output can overwrite an input that dies there (TFLite's ADD / SUB / MUL / DIV
# kernels declare kTfLiteInplaceOpInput0Shared; Arm Vela runs elementwise NPU ops in place).
for _op, (_n, _f) in {**UNARY, **BINARY}.items():
    register(_op, family="elementwise", arg_inputs=_ARGS.get(_op, ()), in_place=True)(
        _per_element(_op, _n, _f)
    )


@register("sum", "add_n", "max", "min", family="elementwise")
def variadic_cost(ctx: OpContext) -> OpCost:
    """0 MACs; (inputs - 1) FLOPs per output element (a chain of adds / compares)."""
    n_in = sum(1 for t in ctx.inputs if t is not None)
    return OpCost(flops=max(n_in - 1, 1) * ctx.out_elems())


@register("mean", family="elementwise")
def variadic_mean_cost(ctx: OpContext) -> OpCost:
    """0 MACs; (inputs - 1) adds + 1 divide = inputs FLOPs per output element."""
    n_in = sum(1 for t in ctx.inputs if t is not None)
    return OpCost(flops=n_in * ctx.out_elems())


@register("rotary_embedding", family="elementwise", arg_inputs=(1, 2, 3))
def rotary_embedding_cost(ctx: OpContext) -> OpCost:
    """0 MACs; 3 FLOPs per rotated element (x1*cos - x2*sin, or x2*cos + x1*sin); with
    a partial rotation (rotary_embedding_dim < head size) the rest is copied, 0 FLOPs.
    The cos/sin caches are arguments, not parameters."""
    x = ctx.shape(ctx.input(0))
    head = x[-1] if len(x) == 4 else x[-1] // max(ctx.int_attr("num_heads", 1), 1)
    rot = ctx.int_attr("rotary_embedding_dim", 0) or head
    return OpCost(flops=3 * ctx.out_elems() * rot // head)
