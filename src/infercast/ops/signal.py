"""Signal processing: DFT, STFT, window and mel-filter generators. 0 MACs.

A DFT of length N is counted as an FFT: 5 N log2 N FLOPs for a complex transform and
half that (2.5 N log2 N) for real input, the nominal counts FFTW's benchmarks use
for every length (http://www.fftw.org/speed/method.html).
"""

from __future__ import annotations

import math

from infercast.ir.views import static_shape
from infercast.ops.registry import OpContext, OpCost, register


def fft_flops(n: int, complex_input: bool) -> int:
    """Nominal FFT FLOPs of one length-``n`` transform (FFTW's convention)."""
    if n <= 1:
        return 0
    f = 5 * n * math.log2(n)
    return math.ceil(f if complex_input else f / 2)


def _value_int(ctx: OpContext, i: int) -> int | None:
    v = ctx.value(i) if ctx.has_input(i) else None
    if v is None or getattr(v, "size", 0) == 0:
        return None
    return int(v.reshape(-1)[0])


@register("dft", family="signal", arg_inputs=(1, 2))
def dft_cost(ctx: OpContext) -> OpCost:
    """0 MACs; transforms x 5 N log2 N FLOPs (complex input) or 2.5 N log2 N (real
    input), N the transform length (dft_length, else the signal axis), transforms the
    product of the other signal dimensions."""
    x = static_shape(ctx.input(0))
    y = static_shape(ctx.outputs[0])
    rank = len(x)
    axis_attr = ctx.attr("axis")
    if axis_attr is not None:
        axis = int(axis_attr)  # type: ignore[call-overload]
    else:
        axis = _value_int(ctx, 2) if len(ctx.inputs) > 2 else None
        if axis is None:
            axis = -2
    axis = axis + rank if axis < 0 else axis
    n = _value_int(ctx, 1) or x[axis]
    transforms = math.prod(d for i, d in enumerate(y[:-1]) if i != axis)
    return OpCost(flops=transforms * fft_flops(n, x[-1] == 2))


@register("stft", family="signal", arg_inputs=(1, 3))
def stft_cost(ctx: OpContext) -> OpCost:
    """0 MACs; per frame one FFT of frame_length (5 N log2 N FLOPs complex, 2.5 N
    log2 N real input) plus N multiplies by the window when one is given."""
    x = static_shape(ctx.input(0))
    y = static_shape(ctx.outputs[0])
    n = _value_int(ctx, 3) if len(ctx.inputs) > 3 else None
    if n is None:
        n = static_shape(ctx.input(2))[0]
    frames = y[0] * y[1]
    window = n if ctx.has_input(2) else 0
    return OpCost(flops=frames * (fft_flops(n, x[-1] == 2) + window))


@register("hann_window", "hamming_window", family="signal", arg_inputs=(0,))
def cosine_window_cost(ctx: OpContext) -> OpCost:
    """0 MACs; 5 FLOPs per output element: the angle 2 pi n / N (2), one cosine (1),
    a0 - a1 cos (2). A generator: usually folded at load time."""
    return OpCost(flops=5 * ctx.out_elems())


@register("blackman_window", family="signal", arg_inputs=(0,))
def blackman_window_cost(ctx: OpContext) -> OpCost:
    """0 MACs; 9 FLOPs per output element: the angle (2), the doubled angle (1), two
    cosines (2), a0 - a1 cos + a2 cos2 (4). A generator: usually folded at load time."""
    return OpCost(flops=9 * ctx.out_elems())


@register("mel_weight_matrix", family="signal", arg_inputs=(0, 1, 2, 3, 4))
def mel_weight_matrix_cost(ctx: OpContext) -> OpCost:
    """0 MACs; 2 FLOPs per output element (the triangle filter's slope: one subtract,
    one multiply). A generator: usually folded at load time."""
    return OpCost(flops=2 * ctx.out_elems())


@register("rfft2d", family="signal", arg_inputs=(1,))
def rfft2d_cost(ctx: OpContext) -> OpCost:
    """TFLite RFFT2D (real input [..., M, N], fft_length [m, n], output [..., m, n/2 + 1]
    complex): 0 MACs; per 2-D transform, m real FFTs of length n (2.5 n log2 n FLOPs
    each) then n/2 + 1 complex FFTs of length m (5 m log2 m each; none when m = 1, the
    STFT case); transforms = the product of the leading dimensions."""
    y = static_shape(ctx.outputs[0])
    v = ctx.value(1)
    if v is not None and v.size == 2:
        m, n = (int(d) for d in v.reshape(-1))
    else:
        m, n = y[-2], 2 * (y[-1] - 1)
    transforms = math.prod(y[:-2])
    per = m * fft_flops(n, False) + (n // 2 + 1) * fft_flops(m, True)
    return OpCost(flops=transforms * per)


@register("complex_abs", family="signal")
def complex_abs_cost(ctx: OpContext) -> OpCost:
    """TFLite COMPLEX_ABS |re + i im| = sqrt(re^2 + im^2): 0 MACs; 4 FLOPs per output
    element (2 multiplies, 1 add, 1 square root)."""
    return OpCost(flops=4 * ctx.out_elems())


@register("real", "imag", family="signal")
def complex_part_cost(ctx: OpContext) -> OpCost:
    """TFLite REAL / IMAG (one part of a complex tensor): 0 MACs, 0 FLOPs: data
    movement."""
    return OpCost()
