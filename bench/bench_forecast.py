#!/usr/bin/env python3
"""Latency forecast vs measurement: the validation table, and the published device anchors.

Usage::

    python bench/bench_forecast.py [--runtimes ort litert] [--threads 1]
        [--cal-budget 240] [--val-budget 180] [--skip-host] [--skip-anchors] [--json FILE]

**Host** (this machine, ONNX Runtime and LiteRT): for each runtime, calibrate
the ``host`` target on the generated micro-kernels only (``infercast
calibrate``: single-op models, never a whole architecture), then forecast and
measure real architectures the calibration never saw: the fixture models
(keras.applications MobileNet v1 / v2, ResNet50 as fp32 ONNX / TFLite, and
the fp16 TFLite) and 15 more keras.applications models with ``weights=None``
(``bench/forecast_models.py``: MobileNet / V2 / V3 variants, EfficientNet B0
and V2-B0, DenseNet121, ResNet50V2, ResNet101, InceptionV3, Xception,
NASNetMobile, smaller inputs). Printed per model: runtime, threads, forecast,
measured (minimum over repeated runs, models interleaved in rounds), error;
then the share within ±10%, RMSPE and Spearman ρ, for the calibrated target
and for the uncalibrated ``host`` target (datasheet-style guesses) beside it.

**Anchors** (``/work/shared/reference/latency.md``): for each device, (a) the
uncalibrated target's forecast of every published figure, a pure prediction;
(b) where a device has several figures, the target calibrated on exactly one
of them, and its forecast of the others and of the fixture models. A figure
used to calibrate is marked as such and never reported as a prediction.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(REPO / "bench"))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import forecast_models  # noqa: E402
from build_fixtures import ensure  # noqa: E402
from infercast import estimate  # noqa: E402
from infercast.estimate.calibrate import calibrate_from_timings, calibrated_toml  # noqa: E402
from infercast.estimate.fit import FitResult, Sample, fit_params, predict  # noqa: E402
from infercast.estimate.measure import Timing, l2_bytes, measure, ort_layout_share  # noqa: E402
from infercast.estimate.microkernels import build, default_specs  # noqa: E402
from infercast.frontends import load  # noqa: E402
from infercast.targets import load_target  # noqa: E402
from infercast.targets.schema import Target  # noqa: E402

OUT = Path.home() / ".cache" / "infercast" / "bench_forecast"

VARIANTS: dict[str, dict[str, Any]] = {
    "old": {"cold": False, "spill": False, "pointwise": False, "free_peak": False, "layout": False},
    "prev": {"reread": False, "layout": False, "cold": "litert"},
    "warm": {"cold": False},
    "new": {},
}
"""Calibrations fitted side by side on the same measurements: name -> options of
``calibrate_from_timings``: ``cold`` (fit the micro-kernels' runs timed after the L2 cache
was flushed, not those timed back to back), ``spill`` (fit the bandwidth beyond the L2
cache), ``pointwise`` (1x1 convs' own efficiency), ``free_peak`` (let the fit raise the
detected peak), ``reread`` (weights beyond the cache streamed once per block of GEMM rows;
``layout`` (ONNX Runtime: take its NCHWc layout conversions' share off each micro-kernel's
time). A ``cold`` naming a runtime: cold for that runtime only. ``old`` is what calibration
did before the cold runs; ``prev`` before the layout conversions were taken off and ONNX
Runtime's kernels fitted cold; ``warm`` is ``new`` fitted on the warm runs; ``new`` (no
options) is what ``infercast calibrate`` does now for the runtime."""


def _ms(s: float) -> str:
    return f"{s * 1e3:9.3f}"


def _log(msg: str) -> None:
    print(f"  .. {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- #
# Host validation
# --------------------------------------------------------------------------- #


def host_models(runtime: str) -> list[Path]:
    kd = ensure("keras")
    ext = ".onnx" if runtime == "ort" else ".tflite"
    fixtures = [kd / f"{m}_fp32{ext}" for m in ("mobilenet_v1", "mobilenet_v2", "resnet50")]
    if runtime == "litert":
        fixtures += [kd / f"{m}_fp16.tflite" for m in ("mobilenet_v1", "mobilenet_v2")]
    built = forecast_models.ensure()
    extra = [tfl if runtime == "litert" else onx for tfl, onx in built.values()]
    return fixtures + extra


def _timings_file(runtime: str, threads: int) -> Path:
    return OUT / f"timings-{runtime}-{threads}t.json"


def _save_timings(
    path: Path, cal: list[Timing], val: list[Timing], shares: list[float] | None
) -> None:
    d: dict[str, Any] = {
        "calibration": [asdict(t) for t in cal],
        "validation": [asdict(t) for t in val],
    }
    if shares is not None:
        d["layout_shares"] = shares
    path.write_text(json.dumps(d))


def _load_timings(path: Path) -> tuple[list[Timing], list[Timing], list[float] | None]:
    d = json.loads(path.read_text())
    cal = [Timing(**t) for t in d["calibration"]]
    return cal, [Timing(**t) for t in d["validation"]], d.get("layout_shares")


def _summary(errs: list[float]) -> dict[str, float]:
    a = np.asarray(errs)
    return {
        "n": len(a),
        "within_10": float(np.mean(np.abs(a) <= 0.10 + 1e-12)),
        "rmspe": float(np.sqrt(np.mean(a * a))),
        "median_abs_error": float(np.median(np.abs(a))),
        "median_signed_error": float(np.median(a)),
    }


def _fmt_summary(m: dict[str, float]) -> str:
    return (
        f"within ±10% {m['within_10']:4.0%}, RMSPE {m['rmspe']:5.1%}, "
        f"median |err| {m['median_abs_error']:5.1%}, median err {m['median_signed_error']:+6.1%}"
    )


def host(
    runtime: str,
    threads: int,
    cal_budget: float,
    val_budget: float,
    clocks: list[str],
    reuse: bool,
) -> dict[str, Any]:
    """Measure once (micro-kernels, then the validation models; both clocks per run), then
    fit and forecast under every cost-model variant and clock on those same measurements."""
    OUT.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    specs = default_specs()
    paths = build(specs, "onnx" if runtime == "ort" else "tflite")
    models = host_models(runtime)
    saved = _timings_file(runtime, threads)
    shares: list[float] | None = None
    fresh = not (reuse and saved.is_file())
    if not fresh:
        cal_t, val_t, shares = _load_timings(saved)
        print(f"\n== host, {runtime}, {threads} thread(s): measurements reused from {saved}")
    else:
        cal_t = measure(
            paths, runtime, threads, budget_s=cal_budget, progress=_log, cold_bytes=2 * l2_bytes()
        )
        val_t = measure(models, runtime, threads, budget_s=val_budget, progress=_log)
        print(f"\n== host, {runtime}, {threads} thread(s): measured in {time.time() - t0:.0f} s")
    if runtime == "ort" and shares is None:  # measured once, for every variant and refit
        shares = [ort_layout_share(t.path, threads) for t in cal_t]
        fresh = True
    if fresh:
        _save_timings(saved, cal_t, val_t, shares)
    graphs = {str(m): load(m) for m in models}
    uncal = load_target("host")
    out: dict[str, Any] = {"runtime": runtime, "threads": threads, "variants": {}}
    table: dict[str, dict[str, float]] = {}  # model -> column -> error
    for clock in clocks:
        for variant, options in VARIANTS.items():
            col = f"{variant}/{clock}"
            options = {
                k: (v == runtime) if k == "cold" and isinstance(v, str) else v
                for k, v in options.items()
            }
            cal = calibrate_from_timings(
                load_target("host"),
                runtime,
                specs,
                cal_t,
                threads=threads,
                clock=clock,
                layout_shares=shares,
                **options,
            )
            f = cal.fit
            path = OUT / f"host-{runtime}-{threads}t-{variant}-{clock}.toml"
            path.write_text(cal.toml)
            print(
                f"  [{col}] fit RMSPE {f.rmspe:.1%} on {cal.samples} micro-kernels; efficiency "
                + ", ".join(f"{k} {v:.3g}" for k, v in sorted(f.efficiency.items()))
                + f"; op overhead {f.op_overhead_s * 1e6:.2f} us; call "
                f"{f.invoke_overhead_s * 1e6:.2f} us; ch x{f.channel_multiple}; "
                + ", ".join(f"{k} {v / 1e9:.0f} GB/s" for k, v in f.bandwidth.items())
                + (f"; beyond L2 {f.spill_bandwidth / 1e9:.1f} GB/s" if f.spill_bandwidth else "")
                + (f"; GEMM rows/pass {f.gemm_block_rows}" if f.gemm_block_rows else "")
                + (f"; peak x{f.peak_scale:.2f}" if f.peak_scale != 1 else "")
            )
            target = load_target(str(path))
            errs = []
            for t in val_t:
                fc = estimate(graphs[t.path], target, threads=threads).latency_s
                meas = t.min_of(clock)
                errs.append(fc / meas - 1)
                table.setdefault(t.path, {})[col] = fc / meas - 1
                table[t.path][f"ms/{clock}"] = meas * 1e3
            out["variants"][col] = {"summary": _summary(errs), "toml": str(path)}
    cols = list(out["variants"])
    print(f"\n{'model':30s} {'wall ms':>9s} {'cpu ms':>9s} " + " ".join(f"{c:>12s}" for c in cols))
    for t in val_t:
        r = table[t.path]
        print(
            f"{Path(t.path).name[:30]:30s} {r.get('ms/wall', float('nan')):9.2f} "
            f"{r.get('ms/cpu', float('nan')):9.2f} " + " ".join(f"{r[c]:+12.1%}" for c in cols)
        )
    unc = [estimate(graphs[t.path], uncal, threads=threads).latency_s / t.min_s - 1 for t in val_t]
    print(f"  {runtime:6s} {'uncalibrated':14s} {_fmt_summary(_summary(unc))} (wall clock)")
    for c in cols:
        print(f"  {runtime:6s} {c:14s} {_fmt_summary(out['variants'][c]['summary'])}")
    out["rows"] = [
        {"model": t.path, "wall_min_s": t.min_s, "cpu_min_s": t.cpu_min_s, "runs": t.runs,
         "errors": {c: table[t.path][c] for c in cols}}
        for t in val_t
    ]  # fmt: skip
    print(f"({time.time() - t0:.0f} s)")
    return out


# --------------------------------------------------------------------------- #
# Device anchors
# --------------------------------------------------------------------------- #


def _onnx_conv(path: Path, cin: int, cout: int, h: int, w: int, k: int = 3) -> Path:
    if path.is_file():
        return path
    rng = np.random.default_rng(0)
    wt = numpy_helper.from_array(rng.standard_normal((cout, cin, k, k)).astype(np.float32), "w")
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], pads=[k // 2] * 4)],
        path.stem,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, h, w])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[wt],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(onnx.shape_inference.infer_shapes(m), path)
    return path


def accel_s(model: Path, target: Target) -> float:
    """Accelerator-side time: the forecast without model input / output transfers (what an
    NPU's own per-layer log or a conv benchmark on the device reports)."""
    fc = estimate(model, target)
    return sum(ly.latency_s - ly.transfer_s for ly in fc.layers)


def upload_s(model: Path, target: Target) -> float:
    """Forecast time of moving the model inputs to the accelerator (boundary crossings)."""
    fc = estimate(model, target)
    cost = target.crossing
    return sum(
        cost.seconds(c.bytes or 0)
        for c in fc.placement.crossings
        if c.boundary and c.destination == "accelerator"
    )


def calibrate_on(target: Target, model: Path, seconds: float, what: str) -> Target:
    """``target`` fitted to ONE published figure (its accelerator unit's efficiency and
    overhead; everything else keeps its stated value), written as a target file."""
    unit = target.placement.accelerator or target.placement.fallback
    fc = estimate(model, target)
    works = tuple(w for _, w in fc.works)
    if what == "accel":
        works = tuple(replace(w, transfers=(), readbacks=()) for w in works)
    sample = Sample(model.name, works, seconds, whole_model=False)
    p, values, err = fit_params(target, [sample], unit, fit_invoke=False)
    result = FitResult(
        unit=unit,
        params=p,
        channel_multiple=target.units[unit].channel_multiple,
        efficiency={k[4:]: v for k, v in values.items() if k.startswith("eff:")},
        reduction_half_depth=values.get("half", 0.0),
        op_overhead_s=values.get("overhead", p.overhead_s.get(unit, 0.0)),
        bandwidth={},
        invoke_overhead_s=0.0,
        rmspe=err,
        residuals=((model.name, predict(sample, p), seconds),),
        fitted_classes=(),
    )
    text = calibrated_toml(
        target, result, "anchor", 0, 1, f"one published figure: {model.name} = {seconds * 1e3:g} ms"
    )
    out = OUT / f"{target.name}-anchor.toml"
    out.write_text(text)
    return load_target(str(out))


def _row(label: str, forecast: float, published: float | None, note: str = "") -> None:
    pub = f"{published * 1e3:10.3f}" if published else f"{'–':>10s}"
    err = f"{forecast / published - 1:+8.1%}" if published else f"{'':8s}"
    print(f"  {label:52s} {forecast * 1e3:10.3f} {pub} {err}  {note}")


def anchors() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    kd = ensure("keras")
    extra = forecast_models.ensure_anchors()
    print("\n== published device anchors (latency.md); times in ms")
    print(f"  {'workload':52s} {'forecast':>10s} {'published':>10s} {'error':>8s}")

    # -- K210 KPU at 300 MHz (the anchors' clock): peak scaled from 576 MAC/cycle (D).
    k210_300 = OUT / "k210-kpu-300mhz.toml"
    k210_300.write_text(
        'extends = "k210-kpu"\n'
        'description = "K210 KPU at 300 MHz (the clock of the published conv figures)"\n'
        "[units.kpu]\nclock_hz = 300e6\n"
        "peak_int8_ops_per_s = 3.456e11  # D: 576 MAC/cycle x 2 ops x 300 MHz\n"
    )
    k210 = load_target(str(k210_300))
    # 3x3 conv 128 -> 128 at these sizes; published GMAC/s -> seconds
    convs = {
        s: _onnx_conv(OUT / f"k210_conv128_{s}.onnx", 128, 128, s, s) for s in (256, 64, 16, 4)
    }
    gmacs = {256: 167e9, 64: 155e9, 16: 90.5e9, 4: 6.9e9}
    pub = {s: 128 * 128 * 9 * s * s / gmacs[s] for s in convs}
    nn = _onnx_conv(OUT / "k210_conv_320x240x3_16.onnx", 3, 16, 240, 320)
    print("  K210 KPU, 300 MHz; uncalibrated target (pure prediction):")
    for s, m in convs.items():
        _row(f"3x3 conv 128->128, {s}x{s} (KPU)", accel_s(m, k210), pub[s])
    _row("nncase 3x3 conv 320x240x3->16: KPU", accel_s(nn, k210), 0.21e-3)
    _row(
        "  ...input upload (model input -> KPU)",
        upload_s(nn, k210),
        0.33e-3,
        "crossing of the uint8 model input",
    )
    cal = calibrate_on(k210, convs[256], pub[256], "accel")
    print("  K210 KPU calibrated on the 256x256 conv alone (efficiency.conv, op_overhead_s):")
    _row("3x3 conv 128->128, 256x256 (KPU)", accel_s(convs[256], cal), pub[256], "CALIBRATED ON")
    for s in (64, 16, 4):
        _row(f"3x3 conv 128->128, {s}x{s} (KPU)", accel_s(convs[s], cal), pub[s])
    _row("nncase 3x3 conv 320x240x3->16: KPU", accel_s(nn, cal), 0.21e-3)
    for f in ("mobilenet_v1_fp32.tflite", "mobilenet_v2_fp32.tflite"):
        _row(f"fixture {f} (nncase quantises to uint8)", estimate(kd / f, cal).latency_s, None)

    # -- i.MX 8M Plus NPU (VX delegate)
    imx = load_target("imx8mp-npu-vx")
    conv = extra["conv3x3_64_24_int8_pt"]
    mnv1 = extra["mobilenet_v1_int8_pt"]
    print("  i.MX 8M Plus NPU (VX); uncalibrated target:")
    _row("single Conv2D 42.5 MFLOP (3x3 64->64, 24x24; NPU log)", accel_s(conv, imx), 362e-6)
    _row(
        "mobilenet_v1 int8 per-tensor (A311D VIPNano sibling)",
        estimate(mnv1, imx).latency_s,
        6.42e-3,
        "a different, 5 TOPS chip",
    )
    cal = calibrate_on(imx, conv, 362e-6, "accel")
    print("  i.MX 8M Plus NPU calibrated on the single-conv figure alone:")
    _row("single Conv2D 42.5 MFLOP (NPU log)", accel_s(conv, cal), 362e-6, "CALIBRATED ON")
    _row(
        "mobilenet_v1 int8 per-tensor (A311D VIPNano sibling)",
        estimate(mnv1, cal).latency_s,
        6.42e-3,
        "a different, 5 TOPS chip",
    )
    _row(
        "fixture mobilenet_v1_int8 (per-channel weights)",
        estimate(kd / "mobilenet_v1_int8.tflite", cal).latency_s,
        None,
        "x50 per-channel slowdown note",
    )
    _row(
        "fixture mobilenet_v2_fp32 (float: PPU)",
        estimate(kd / "mobilenet_v2_fp32.tflite", cal).latency_s,
        None,
    )

    # -- Coral Edge TPU (USB) and Raspberry Pi 4: one figure each, so prediction only.
    tpu = load_target("edgetpu-usb")
    print("  Coral Edge TPU, USB (one figure: predicted, not calibrated):")
    _row(
        "mobilenet_v1 int8 224 (fixture, per-channel)",
        estimate(kd / "mobilenet_v1_int8.tflite", tpu).latency_s,
        2.4e-3,
        "target assumes the std runtime (250 MHz)",
    )
    _row("mobilenet_v1 int8 224 (per-tensor)", estimate(mnv1, tpu).latency_s, 2.4e-3)
    _row(
        "fixture resnet50_int8 (weights > 8 MiB cache: streamed)",
        estimate(kd / "resnet50_int8.tflite", tpu).latency_s,
        None,
    )
    rpi = load_target("rpi4-cpu")
    print("  Raspberry Pi 4, 4x A72 (ncnn fp32; one figure):")
    mv1 = kd / "mobilenet_v1_fp32.tflite"
    _row("mobilenet_v1 fp32 (uncalibrated prediction)", estimate(mv1, rpi).latency_s, 86.0e-3)
    cal = calibrate_on(rpi, mv1, 86.0e-3, "whole")
    _row("mobilenet_v1 fp32", estimate(mv1, cal).latency_s, 86.0e-3, "CALIBRATED ON")
    for f in ("mobilenet_v2_fp32.tflite", "resnet50_fp32.tflite"):
        _row(f"fixture {f}", estimate(kd / f, cal).latency_s, None, "no published figure")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--runtimes", nargs="*", default=["ort", "litert"])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cal-budget", type=float, default=240.0)
    ap.add_argument("--val-budget", type=float, default=180.0)
    ap.add_argument("--skip-host", action="store_true")
    ap.add_argument("--skip-anchors", action="store_true")
    ap.add_argument("--json", type=Path)
    ap.add_argument(
        "--clocks",
        nargs="*",
        default=None,
        help="wall and/or cpu (CPU time of the calling thread; one thread only). "
        "Default: both with --threads 1, else wall",
    )
    ap.add_argument(
        "--reuse", action="store_true", help="refit on the last saved measurements (no timing)"
    )
    a = ap.parse_args()
    clocks = a.clocks or (["wall", "cpu"] if a.threads == 1 else ["wall"])
    results: dict[str, Any] = {"host": []}
    if not a.skip_host:
        for rt in a.runtimes:
            results["host"].append(host(rt, a.threads, a.cal_budget, a.val_budget, clocks, a.reuse))
    if not a.skip_anchors:
        anchors()
    if a.json:
        a.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
