"""Normalisation, softmax and reductions: 0 MACs, FLOPs per element as stated."""

from __future__ import annotations

from infercast.ir.views import numel
from infercast.ops.registry import CostFn, OpContext, OpCost, register

# op -> (FLOPs per *input* element, formula)
_PER_INPUT: dict[str, tuple[int, str]] = {
    "batch_normalization": (2, "x*scale' + shift' (scale and shift precomputed per channel)"),
    "instance_normalization": (7, "mean, variance (sub, square, add), normalise, scale, shift"),
    "layer_normalization": (7, "mean, variance (sub, square, add), normalise, scale, shift"),
    "group_normalization": (7, "mean, variance (sub, square, add), normalise, scale, shift"),
    "rms_normalization": (4, "square, add, multiply by rsqrt, scale"),
    "mean_variance_normalization": (5, "mean, variance (sub, square, add), normalise"),
    "l2_normalization": (3, "square, add, multiply by rsqrt"),
    "lp_normalization": (3, "|x| or x^2, add, divide by the norm (root per vector not counted)"),
    "lrn": (0, "see local_response_normalization"),
    "softmax": (5, "max, subtract, exp, sum, divide"),
    "log_softmax": (5, "max, subtract, exp, sum, subtract log"),
    "hardmax": (1, "argmax compare"),
    "reduce_sum": (1, "one add per input value"),
    "reduce_mean": (1, "one add per input value (the final divide per output not counted)"),
    "reduce_max": (1, "one compare per input value"),
    "reduce_min": (1, "one compare per input value"),
    "reduce_prod": (1, "one multiply per input value"),
    "reduce_any": (1, "one logical or per input value"),
    "reduce_all": (1, "one logical and per input value"),
    "reduce_l1": (2, "abs, add"),
    "reduce_l2": (2, "square, add (root per output not counted)"),
    "reduce_sum_square": (2, "square, add"),
    "reduce_log_sum": (1, "add (log per output not counted)"),
    "reduce_log_sum_exp": (2, "exp, add"),
    "arg_max": (1, "one compare per input value"),
    "arg_min": (1, "one compare per input value"),
    "cum_sum": (1, "one add per input value"),
    "cum_prod": (1, "one multiply per input value"),
    "top_k": (1, "one compare per input value (selection)"),
}

_ARGS: dict[str, tuple[int, ...]] = {
    "reduce_sum": (1,),
    "reduce_mean": (1,),
    "reduce_max": (1,),
    "reduce_min": (1,),
    "reduce_prod": (1,),
    "reduce_any": (1,),
    "reduce_all": (1,),
    "reduce_l1": (1,),
    "reduce_l2": (1,),
    "reduce_sum_square": (1,),
    "reduce_log_sum": (1,),
    "reduce_log_sum_exp": (1,),
    "arg_max": (1,),
    "arg_min": (1,),
    "cum_sum": (1,),
    "cum_prod": (1,),
    "top_k": (1,),
}


def _per_input(op: str, n: int, formula: str) -> CostFn:
    def cost(ctx: OpContext) -> OpCost:
        return OpCost(flops=n * numel(ctx.input(0)))

    cost.__doc__ = f"0 MACs; {n} FLOP(s) per input element: {formula}."
    cost.__name__ = f"{op}_cost"
    return cost


for _op, (_n, _f) in _PER_INPUT.items():
    if _op != "lrn":
        register(_op, family="normalization", arg_inputs=_ARGS.get(_op, ()))(
            _per_input(_op, _n, _f)
        )


@register("lrn", family="normalization")
def lrn_cost(ctx: OpContext) -> OpCost:
    """0 MACs; FLOPs = input elements x (size + 4): square-sum over the window of
    ``size`` channels, then scale, add bias, power and divide."""
    size = ctx.int_attr("size", 5)
    return OpCost(flops=numel(ctx.input(0)) * (size + 4))
