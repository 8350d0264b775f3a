"""Shape rules for signal processing (DFT, STFT, windows, mel matrix)."""

from __future__ import annotations

from infercast.frontends.onnx.shapes._common import (
    Shapes,
    Unknown,
    in_shape,
    opset,
    rule,
    scalar_int,
)
from infercast.ir.graph import Dim
from infercast.ops.registry import OpContext


@rule("dft")
def _dft(ctx: OpContext) -> Shapes:
    x = in_shape(ctx, 0)
    rank = len(x)
    if "axis" in ctx.node.attrs:
        axis = ctx.int_attr("axis", 1)
    elif len(ctx.inputs) > 2 and ctx.has_input(2):
        axis = scalar_int(ctx, 2)
    else:
        op = opset(ctx)
        axis = 1 if op and op < 20 else -2
    axis = axis + rank if axis < 0 else axis
    given = scalar_int(ctx, 1) if ctx.has_input(1) and ctx.node.inputs[1] else None
    n: Dim = given if given is not None else x[axis]
    onesided = bool(ctx.int_attr("onesided", 0))
    out = list(x)
    if onesided and ctx.int_attr("inverse", 0):
        # Inverse of a half spectrum: a real signal of dft_length (irfft).
        out[axis] = given if given is not None else (None if n is None else 2 * (n - 1))
        out[-1] = 1
        return [tuple(out)]
    out[axis] = None if n is None else (n // 2 + 1 if onesided else n)
    out[-1] = 2
    return [tuple(out)]


@rule("stft")
def _stft(ctx: OpContext) -> Shapes:
    x = in_shape(ctx, 0)
    step = scalar_int(ctx, 1)
    if len(ctx.inputs) > 3 and ctx.has_input(3):
        length: Dim = scalar_int(ctx, 3)
    elif ctx.has_input(2):
        length = in_shape(ctx, 2)[0]
    else:
        raise Unknown
    frames = None if x[1] is None or length is None else (x[1] - length) // step + 1
    # onesided defaults to 1 (the schema; see ONNX_INFERENCE_WRONG).
    bins = None if length is None else (length // 2 + 1 if ctx.int_attr("onesided", 1) else length)
    return [(x[0], frames, bins, 2)]


@rule("hann_window", "hamming_window", "blackman_window")
def _window(ctx: OpContext) -> Shapes:
    return [(scalar_int(ctx, 0),)]


@rule("mel_weight_matrix")
def _mel(ctx: OpContext) -> Shapes:
    return [(scalar_int(ctx, 1) // 2 + 1, scalar_int(ctx, 0))]
