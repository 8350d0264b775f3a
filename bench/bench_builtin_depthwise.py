#!/usr/bin/env python3
"""Cost per MAC of TFLite's built-in int8 depthwise conv against its channel count.

Where a runtime runs int8 models on TFLite's built-in kernels (NXP's i.MX BSPs, see
``src/infercast/targets/data/imx8mp-cpu.toml``), DEPTHWISE_CONV_2D runs
``optimized_integer_ops::DepthwiseConvPerChannel`` (tensorflow/lite/kernels/internal/
optimized/integer_ops/depthwise_conv.h). Outside the aarch64-only 3x3 kernel
(``DepthwiseConv3x3FilterPerChannel``) that is ``DepthwiseConvGeneral``: for every output
row and filter row it calls a row-accumulation kernel whose inner loop walks the output
pixels and, per pixel and filter tap, the channels in NEON chunks (16, then 8, then one at
a time for a variable depth, ``QuantizedDepthwiseConvKernel<true, 0, 1>``), adding into an
int32 buffer that ``optimized_ops::Quantize`` then requantises per channel. Any cost that
comes per output pixel or per tap rather than per channel makes a narrow depthwise conv
dearer per MAC than a wide one.

This script measures it here, on LiteRT's built-in kernels (no delegate, one thread): for
each channel count C one int8 model (per-channel weights, converted as the published
recipes are) with a 3x3 stride-2 SAME depthwise conv on a 2H x 2W x C map followed by a
3x3 stride-1 SAME one on the H x W x C result, H x W x C about 256 Ki output elements
(2.4 M MACs each), and prints ns per MAC and per output pixel, the median of ``--repeats``
profiles of ``--runs`` inferences. It ends with the least-squares fit of
``ns/MAC = a * (1 + c0 / C)`` per stride (c0: the per-pixel cost in channel-MACs' worth).

The host is x86, where TFLite compiles the same NEON intrinsics through NEON_2_SSE
(``neon_check.h``) and never takes the 3x3 kernel (``#if defined(__aarch64__)``): the
ratios carry over to an Arm core's ``DepthwiseConvGeneral`` as well as the instruction mix
does, which is why only ratios are used.

With ``--model PATH`` it profiles the depthwise convs of a real int8 model the same way
(e.g. the published models under ``~/.cache/infercast/published/v1``) and prints each one's
shape and ns per MAC.

Usage::

    python bench/bench_builtin_depthwise.py [--runs 30] [--repeats 5] [--model PATH ...]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

CHANNELS = (8, 16, 24, 32, 64, 96, 128, 256, 512)
OUT_ELEMENTS = 64 * 64 * 64


def _side(c: int) -> int:
    """The stride-1 map's side for about OUT_ELEMENTS output elements at ``c`` channels."""
    return max(2, round(math.sqrt(OUT_ELEMENTS / c)))


def _model(c: int) -> Any:
    import tensorflow as tf

    L = tf.keras.layers
    h = _side(c)
    x = tf.keras.Input((2 * h, 2 * h, c), batch_size=1)
    y = L.DepthwiseConv2D(3, strides=2, padding="same", name="dw_s2")(x)
    z = L.DepthwiseConv2D(3, strides=1, padding="same", name="dw_s1")(y)
    return tf.keras.Model(x, z)


def _depthwise_times(path: Path, runs: int, repeats: int) -> dict[int, list[float]]:
    """Seconds of every depthwise conv of the model at ``path`` (by node index), one entry
    per profile: LiteRT's built-in kernels (XNNPACK off), one thread."""
    import infercast

    off = {"litert.xnnpack": ["off"]}
    times: dict[int, list[float]] = {}
    for _ in range(repeats):
        res = infercast.bench(path, ["litert"], (1,), off, profile=True, profile_runs=runs)
        run = res.to_dict()["runs"][0]
        if run["status"] != "ok" or not run.get("profile"):
            raise RuntimeError(f"run failed: {run['status']} {run['error']}")
        for p in run["profile"]:
            if p["op"] == "depthwise_conv":
                times.setdefault(p["index"], []).append(p["measured_s"])
    return times


def _profile(c: int, runs: int, repeats: int, d: str) -> dict[int, float]:
    """Median seconds per depthwise conv (keyed by stride) over ``repeats`` profiles."""
    import infercast
    from infercast.estimate.published.recipes import convert

    path = Path(d) / f"dw{c}.tflite"
    path.write_bytes(convert(_model(c), "int8fio"))
    graph = infercast.load(path)
    out: dict[int, float] = {}
    for index, ts in _depthwise_times(path, runs, repeats).items():
        node = graph.nodes[index]
        src = graph.tensors[node.inputs[0]].shape
        dst = graph.tensors[node.outputs[0]].shape
        out[2 if src[1] > dst[1] else 1] = statistics.median(ts)
    return out


def _model_rows(path: Path, runs: int, repeats: int) -> None:
    """Print every depthwise conv of the int8 model at ``path``: shape, ns/MAC, ns/pixel."""
    import infercast

    graph = infercast.load(path)
    times = _depthwise_times(path, runs, repeats)
    print(f"{path.name}")
    print(f"{'in HxWxC':>14s} {'k':>3s} {'s':>2s} {'MACs':>9s} {'ns/MAC':>7s} {'ns/pixel':>9s}")
    total = macs_all = 0.0
    for index, ts in sorted(times.items()):
        node = graph.nodes[index]
        src = graph.tensors[node.inputs[0]].shape
        filt = graph.tensors[node.inputs[1]].shape
        dst = graph.tensors[node.outputs[0]].shape
        pixels = dst[1] * dst[2]
        macs = pixels * dst[3] * filt[1] * filt[2]
        s = statistics.median(ts)
        total += s
        macs_all += macs
        shape = f"{src[1]}x{src[2]}x{src[3]}"
        print(
            f"{shape:>14s} {filt[1]:3d} {node.attrs.get('stride_h', 1):2d} {macs:9d} "
            f"{s / macs * 1e9:7.4f} {s / pixels * 1e9:9.2f}"
        )
    if macs_all:
        print(f"{'all':>14s} {'':3s} {'':2s} {int(macs_all):9d} {total / macs_all * 1e9:7.4f}")


def _fit(rows: list[tuple[int, float]]) -> tuple[float, float]:
    """Least squares of ns/MAC = a + b / C; returns (a, c0 = b / a)."""
    xs = [1.0 / c for c, _ in rows]
    ys = [v for _, v in rows]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )
    a = my - b * mx
    return a, b / a


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=30, help="inferences per profile")
    ap.add_argument("--repeats", type=int, default=5, help="profiles per model (median)")
    ap.add_argument("--channels", type=int, nargs="*", default=list(CHANNELS))
    ap.add_argument("--model", type=Path, nargs="*", default=[], help="profile these instead")
    args = ap.parse_args()
    if args.model:
        for path in args.model:
            _model_rows(path, args.runs, args.repeats)
        return 0
    print(
        f"LiteRT built-in int8 DEPTHWISE_CONV_2D 3x3 SAME (no delegate), one thread, "
        f"median of {args.repeats} x {args.runs} runs"
    )
    print(f"{'C':>4s} {'stride':>6s} {'out HxW':>9s} {'MACs':>9s} {'ns/MAC':>7s} {'ns/pixel':>9s}")
    per_stride: dict[int, list[tuple[int, float]]] = {}
    with tempfile.TemporaryDirectory() as d:
        for c in args.channels:
            h = _side(c)
            for stride, s in sorted(_profile(c, args.runs, args.repeats, d).items()):
                macs = h * h * c * 9
                ns_mac = s / macs * 1e9
                per_stride.setdefault(stride, []).append((c, ns_mac))
                print(
                    f"{c:4d} {stride:6d} {f'{h}x{h}':>9s} {macs:9d} {ns_mac:7.4f} "
                    f"{s / (h * h) * 1e9:9.2f}"
                )
    for stride, rows in sorted(per_stride.items()):
        if len(rows) >= 2:
            a, c0 = _fit(rows)
            print(f"stride {stride}: ns/MAC = {a:.4f} * (1 + {c0:.1f} / C)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
