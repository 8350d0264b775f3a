"""Calibrate a target: measure micro-kernels (or read profiles), fit, write a target file.

Two ways in:

* :func:`calibrate_runtime` -- on this machine: generate the micro-kernel set
  (:mod:`infercast.estimate.microkernels`), time every kernel with the
  runtime (:mod:`infercast.estimate.measure`), fit the processor's
  efficiencies, per-op overhead, memory bandwidth, channel multiple and the
  per-call overhead (:mod:`infercast.estimate.fit`).
* :func:`calibrate_profiles` -- from per-op profiles measured elsewhere (a
  board without infercast): each profiled op is a sample
  (:mod:`infercast.bench.profiles`); the per-call overhead is not in a
  per-op profile and keeps its value.

Either way the result is a TOML target file that ``extends`` the original
and states plain numbers (efficiencies, ``op_overhead_s``,
``channel_multiple``, ``bandwidth_bytes_per_s``, ``[calibration]`` with the
runtime, threads, sample count and the fit's RMSPE): nothing pickled, and it
loads with ``--target FILE`` anywhere.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infercast.errors import InfercastError
from infercast.estimate.fit import FitResult, Sample, fit
from infercast.estimate.forecast import coverage, estimate
from infercast.estimate.measure import (
    RUNTIMES,
    Timing,
    check_clock,
    cold_floor_s,
    cold_times,
    l2_bytes,
    measure,
    ort_layout_share,
)
from infercast.estimate.microkernels import Spec, build, default_specs, quick_specs
from infercast.ir.graph import Graph
from infercast.targets.loader import to_toml
from infercast.targets.schema import Target

DEFAULT_BUDGET_S = 240.0

COLD_RUNTIMES = frozenset({"litert", "ort"})
"""Runtimes whose micro-kernels are fitted cold (L2 flushed before each run). ONNX Runtime
joined once its one-op models' NCHWc layout conversions were taken off their times
(``calibrate_from_timings(layout=)``): with them left in, its cold fit over-forecast
held-out models by +23% (median), the conversions standing in for the cold weights; without
them, on the same measurements, warm: -20%, cold: -5% (micro-kernel fit RMSPE 45% -> 21%)."""

GEMM_BLOCK_ROWS = (0, 4, 7, 16)
"""Candidates for ``units.U.gemm_block_rows`` a host calibration tries (0: weights read
once). XNNPACK's f32 GEMM micro-kernel tiles ``mr x nr``: 7x16 on AVX-512
(``f32_gemm_minmax_ukernel_7x16__avx512f_broadcast``), 4x8 / 5x16 on AVX2 and Arm (google/
XNNPACK ``src/configs/gemm-config.c``); 16 stands for a blocked GEMM that keeps a larger
block of rows (ONNX Runtime's MLAS packs weights per panel)."""
"""Runtimes whose micro-kernels calibration fits cold (:mod:`infercast.estimate.measure`).

LiteRT: each single-op model runs the op with the same XNNPACK kernel as the whole model,
so only the cache state differs; MobileNetV2's ops timed cold sum to the whole model's time
(5.9 vs 6.2 ms; warm: 4.4 ms), and on 10 held-out keras.applications models the cold fit
takes the median error from -13% to +2% (``bench/bench_forecast.py``). ONNX Runtime: the
cold fit over-forecasts the same models by +28% (warm: +10%); a one-op ONNX model is not
one op of a whole model there (its graph optimiser wraps each conv in NCHWc layout
reorders that a whole model pays once per run of convs, a likely cause not yet separated),
so its micro-kernels stay warm."""


class CalibrationError(InfercastError):
    """Calibration cannot run or cannot fit."""


@dataclass(frozen=True)
class CalibrationResult:
    base: Target
    fit: FitResult
    toml: str
    runtime: str
    threads: int
    samples: int
    elapsed_s: float
    timings: tuple[Timing, ...] = ()


def _require_scipy() -> None:
    try:
        import scipy.optimize  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise CalibrationError(
            "calibration needs SciPy (least-squares fit)", "pip install 'infercast[calibrate]'"
        ) from exc


def _fit_unit(target: Target) -> str:
    return target.placement.accelerator or target.placement.fallback


def _samples_from_graphs(
    graphs: Sequence[tuple[str, Graph, float]], threads: int = 1
) -> Callable[[Target], list[Sample]]:
    def build_samples(t: Target) -> list[Sample]:
        out = []
        for name, g, seconds in graphs:
            fc = estimate(g, t, threads=threads)
            works = tuple(w for _, w in fc.works)
            out.append(Sample(name, works, seconds, whole_model=True, threads=threads))
        return out

    return build_samples


def calibrate_runtime(
    target: Target,
    runtime: str,
    *,
    threads: int = 1,
    budget_s: float = DEFAULT_BUDGET_S,
    specs: Sequence[Spec] | None = None,
    progress: Callable[[str], None] | None = None,
    clock: str = "wall",
    cold: bool | None = None,
) -> CalibrationResult:
    """Measure the micro-kernel set on this machine with ``runtime`` and fit ``target``.

    ``clock``: ``wall`` (``perf_counter``) or ``cpu`` (the CPU time of the calling thread,
    one-thread runs only: far less inflated by other processes on a shared machine).
    ``cold``: fit the runs made after the core's L2 cache was flushed (twice its size
    written), the state a layer of a whole model meets its weights in
    (:mod:`infercast.estimate.measure`); False: fit runs repeated back to back; None: as
    :data:`COLD_RUNTIMES` says for ``runtime``."""
    _require_scipy()
    if runtime not in RUNTIMES:
        raise CalibrationError(f"unknown runtime '{runtime}'", f"use {' or '.join(RUNTIMES)}")
    if target.placement.accelerator is not None:
        raise CalibrationError(
            f"{target.name} has an accelerator ({target.placement.accelerator}); measuring on "
            "this machine calibrates this machine's CPU",
            "calibrate a board from its profiles with --from PROFILE, or use --target host",
        )
    if budget_s < 5:
        raise CalibrationError(f"--budget must be at least 5 seconds, not {budget_s:g}")
    check_clock(clock, threads)
    if cold is None:
        cold = runtime in COLD_RUNTIMES
    t0 = time.perf_counter()
    chosen = (
        list(specs) if specs is not None else (default_specs() if budget_s >= 90 else quick_specs())
    )
    fmt = "onnx" if runtime == "ort" else "tflite"
    if progress:
        progress(f"generating {len(chosen)} {fmt} micro-kernels")
    paths = build(chosen, fmt)
    gen_s = time.perf_counter() - t0
    if progress:
        progress(f"measuring with {runtime}, {threads} thread(s)")
    timings = measure(
        paths,
        runtime,
        threads,
        budget_s=max(budget_s - gen_s - 5.0, 3.0),
        progress=progress,
        cold_bytes=2 * l2_bytes() if cold else 0,
    )
    result = calibrate_from_timings(
        target, runtime, chosen, timings, threads=threads, clock=clock, cold=cold
    )
    return dataclasses.replace(result, elapsed_s=time.perf_counter() - t0)


def calibrate_from_timings(
    target: Target,
    runtime: str,
    specs: Sequence[Spec],
    timings: Sequence[Timing],
    *,
    threads: int = 1,
    clock: str = "wall",
    cold: bool | None = None,
    spill: bool | None = None,
    pointwise: bool = True,
    free_peak: bool = True,
    reread: bool | None = None,
    layout: bool | None = None,
    layout_shares: Sequence[float] | None = None,
) -> CalibrationResult:
    """Fit ``target`` to micro-kernel ``timings`` already measured (one per spec, in order):
    the fit step of :func:`calibrate_runtime`, apart so that one set of measurements can be
    fitted more than once (two cost models side by side). ``cold``: fit the cold runs
    (:func:`infercast.estimate.measure.measure`'s ``cold_bytes``; default: for the runtimes
    in :data:`COLD_RUNTIMES`). ``spill`` (default: as
    ``cold``): state this machine's L2 size as the CPU's ``cache_bytes`` and fit the
    bandwidth beyond it (:func:`infercast.estimate.forecast.spill_bytes`). ``pointwise``:
    fit 1x1 convs' own efficiency (``efficiency.pointwise_conv``), else they share ``conv``'s.
    ``free_peak``: this machine's peak is a detected guess; let the fit raise it
    (:func:`infercast.estimate.fit.fit`). ``reread`` (default: as ``spill``): weights beyond
    the cache are streamed once per block of GEMM rows, the block chosen among
    :data:`GEMM_BLOCK_ROWS` by the fit (:func:`infercast.estimate.forecast.weight_passes`).
    ``layout`` (default: for ONNX Runtime): take off each micro-kernel's time the share its
    NCHWc layout conversions take in ORT's own profile of it
    (:func:`infercast.estimate.measure.ort_layout_share`): a one-op conv model converts its
    input and output, a conv inside a whole model does not. ``layout_shares``: those shares
    measured already (one per timing), so that refits of one set of measurements agree."""
    from infercast.frontends import load

    check_clock(clock, threads)
    if cold is None:
        cold = runtime in COLD_RUNTIMES
    t0 = time.perf_counter()
    seconds = cold_times(timings, clock) if cold else [t.min_of(clock) for t in timings]
    if runtime == "ort" if layout is None else layout:
        shares = (
            list(layout_shares)
            if layout_shares is not None
            else [ort_layout_share(t.path, threads) for t in timings]
        )
        seconds = [sec * (1.0 - sh) for sec, sh in zip(seconds, shares, strict=True)]
    graphs = [
        (s.name, load(t.path), sec) for s, t, sec in zip(specs, timings, seconds, strict=True)
    ]
    unit = _fit_unit(target)
    spills = cold if spill is None else spill
    if spills and not target.units[unit].cache_bytes:
        u = dataclasses.replace(target.units[unit], cache_bytes=l2_bytes())
        target = dataclasses.replace(target, units={**target.units, unit: u})
    result, _ = fit(
        target,
        _samples_from_graphs(graphs, threads),
        unit,
        pointwise=pointwise,
        free_peak=free_peak,
        gemm_block_rows=GEMM_BLOCK_ROWS if (spills if reread is None else reread) else (),
    )
    what = "CPU time of the calling thread" if clock == "cpu" else "wall-clock time"
    if cold:
        what += (
            ", each run after the L2 cache was flushed, less the flush's cost to a call that "
            f"moves no data ({cold_floor_s(timings, clock) * 1e6:.2g} us)"
        )
    source = (
        f"infercast calibrate: {len(specs)} micro-kernels timed with {_runtime_version(runtime)}, "
        f"{threads} thread(s), minimum of repeated runs ({what})"
    )
    text = calibrated_toml(target, result, runtime, threads, len(specs), source)
    return CalibrationResult(
        base=target,
        fit=result,
        toml=text,
        runtime=runtime,
        threads=threads,
        samples=len(specs),
        elapsed_s=time.perf_counter() - t0,
        timings=tuple(timings),
    )


def _runtime_version(runtime: str) -> str:
    try:
        if runtime == "ort":
            import onnxruntime

            return f"ONNX Runtime {onnxruntime.__version__}"
        from importlib.metadata import version

        return f"LiteRT {version('ai-edge-litert')}"
    except Exception:  # pragma: no cover - version lookup only
        return runtime


def read_profile(path: str | Path) -> Any:
    """A per-op profile file: ONNX Runtime JSON or TFLite ``benchmark_model`` output."""
    from infercast.bench.profiles.ort import read_ort_profile
    from infercast.bench.profiles.result import is_bench_result, read_bench_result
    from infercast.bench.profiles.tflite import looks_like_tflite_benchmark, read_tflite_benchmark

    p = Path(path)
    try:
        head = p.read_text(errors="replace")
    except OSError as exc:
        raise CalibrationError(f"cannot read profile {p}: {exc.strerror}") from exc
    if looks_like_tflite_benchmark(head):
        return read_tflite_benchmark(p)
    if is_bench_result(p):  # infercast bench -f json, here or from a board (--remote)
        return read_bench_result(p).profile
    if head.lstrip().startswith(("[", "{")):
        return read_ort_profile(p)
    raise CalibrationError(
        f"{p} is neither an ONNX Runtime profile (JSON) nor TFLite benchmark_model output",
        "profile with SessionOptions.enable_profiling (ORT) or "
        "benchmark_model --enable_op_profiling=true (TFLite)",
    )


def profile_samples(
    target: Target, graph: Graph, profile: Any, label: str = ""
) -> tuple[list[Sample], int]:
    """Samples of ``profile`` mapped onto ``graph``'s kernels.

    The profile's units are mapped to model nodes by the bench importers
    (names, output tensors, fused neighbours). Units and infercast's kernels
    that overlap form one sample: the units' summed time against the kernels'
    work. Units that map to no node (layout reorders the runtime inserted,
    delegate nodes) are left out; the second value is their count.
    """
    from infercast.bench.profiles.base import map_profile
    from infercast.bench.profiles.tflite import map_tflite

    if profile.source == "tflite_benchmark_model":
        mapped, _ = map_tflite(profile, graph)
    else:
        mapped, _ = map_profile(profile, graph)
    fc = estimate(graph, target)
    kernel_of = {i: k.anchor for k, _ in fc.works for i in k.members}
    work_of = {k.anchor: w for k, w in fc.works}
    # Units and kernels are joined where they overlap: a runtime that splits what we
    # fuse (Conv, then Relu) gives one sample of their summed time, and so does a
    # runtime that fuses more than we do.
    groups: list[tuple[set[int], float, list[str]]] = []
    skipped = 0
    for op in mapped.ops:
        anchors = {kernel_of[i] for i in op.layers if i in kernel_of}
        if not anchors or op.measured_s <= 0:
            skipped += 1
            continue
        merged = (set(anchors), op.measured_s, [f"{op.op} {op.name}"])
        rest = []
        for g in groups:
            if g[0] & merged[0]:
                merged = (g[0] | merged[0], g[1] + merged[1], g[2] + merged[2])
            else:
                rest.append(g)
        groups = [*rest, merged]
    samples: list[Sample] = []
    for anchors, seconds, names in groups:
        works = tuple(work_of[a] for a in sorted(anchors) if not work_of[a].elided)
        if works:
            name = names[0] if len(names) == 1 else f"{names[0]} (+{len(names) - 1})"
            samples.append(Sample(f"{label}{name}", works, seconds, False))
    return samples, skipped


def calibrate_profiles(
    target: Target,
    pairs: Sequence[tuple[str | Path, str | Path]],
) -> CalibrationResult:
    """Fit ``target`` to per-op times of profiles measured elsewhere.

    ``pairs`` are (model, profile) files: the profile of that model, from ONNX
    Runtime (JSON) or TFLite ``benchmark_model --enable_op_profiling=true``.
    The unit fitted is the accelerator when the target has one, else its CPU.
    """
    _require_scipy()
    from infercast.frontends import load

    if not pairs:
        raise CalibrationError("no profiles given", "pass --from PROFILE with --model MODEL")
    t0 = time.perf_counter()
    loaded = [(load(m), read_profile(p), f"{Path(m).stem}: ") for m, p in pairs]
    unit = _fit_unit(target)

    def build_samples(t: Target) -> list[Sample]:
        out: list[Sample] = []
        for graph, profile, label in loaded:
            out.extend(profile_samples(t, graph, profile, label)[0])
        return out

    samples = build_samples(target)
    if len(samples) < 3:
        raise CalibrationError(
            f"the profile(s) map {len(samples)} op(s) onto the model(s); at least 3 are needed",
            "give each profile with the model it was measured on (--model), in the same order",
        )
    result, _ = fit(target, build_samples, unit, fit_invoke=False)
    names = ", ".join(Path(p).name for _, p in pairs)
    source = f"infercast calibrate --from: {len(samples)} profiled ops from {names}"
    text = calibrated_toml(target, result, "profile", 0, len(samples), source)
    return CalibrationResult(
        base=target,
        fit=result,
        toml=text,
        runtime="profile",
        threads=0,
        samples=len(samples),
        elapsed_s=time.perf_counter() - t0,
    )


def calibrated_toml(
    base: Target, result: FitResult, runtime: str, threads: int, samples: int, source: str
) -> str:
    """The calibrated target file: ``extends`` the base, plain fitted numbers."""
    unit = base.units[result.unit]
    extends = base.name if _builtin(base) else base.path
    table: dict[str, Any] = {
        "extends": extends,
        "description": f"{base.name} calibrated for {runtime}"
        + (f" with {threads} thread(s)" if threads else "")
        + f": {base.units[result.unit].description}",
    }
    if base.raw.get("detect"):
        table["detect"] = False  # the detected figures below are what the fit is relative to
    table["calibration"] = {
        "calibrated": True,
        "source": source,
        "date": _dt.date.today().isoformat(),
        "runtime": runtime,
        "threads": threads,
        "invoke_overhead_s": float(f"{result.invoke_overhead_s:.4g}"),
        "samples": samples,
        "fit_rmspe": float(f"{result.rmspe:.4g}"),
    }
    u: dict[str, Any] = {}
    if base.raw.get("detect"):
        u["description"] = unit.description
        u["cores"] = unit.cores
        if unit.clock_hz:
            u["clock_hz"] = unit.clock_hz
        for k, v in unit.peak_ops_per_s.items():
            u[f"peak_{k}_ops_per_s"] = v
    if result.peak_scale != 1.0:  # the fit moved the peak (fit(free_peak=True))
        for k, v in unit.peak_ops_per_s.items():
            u[f"peak_{k}_ops_per_s"] = float(f"{v * result.peak_scale:.4g}")
    u["op_overhead_s"] = float(f"{result.op_overhead_s:.4g}")
    u["channel_multiple"] = result.channel_multiple
    if result.reduction_half_depth > 0:
        u["reduction_half_depth"] = float(f"{result.reduction_half_depth:.4g}")
    if result.spill_bandwidth > 0:
        u["cache_bytes"] = unit.cache_bytes
        u["spill_bandwidth_bytes_per_s"] = float(f"{result.spill_bandwidth:.4g}")
        if result.gemm_block_rows:
            u["gemm_block_rows"] = result.gemm_block_rows
    u["efficiency"] = {k: float(f"{v:.4g}") for k, v in sorted(result.efficiency.items())}
    table["units"] = {result.unit: u}
    if result.bandwidth:
        table["memories"] = {
            m: {"bandwidth_bytes_per_s": float(f"{bw:.4g}")}
            for m, bw in sorted(result.bandwidth.items())
        }
    header = (
        f"# {base.name} calibrated by infercast ({runtime}); fitted numbers only.\n"
        f"# Efficiencies are fractions of the peak ops/s above (1 MAC = 2 ops); fitted on "
        f"{samples} samples, RMSPE {result.rmspe:.1%} on them.\n"
    )
    body = to_toml(table)
    return header + body


def _builtin(t: Target) -> bool:
    from infercast.targets.loader import DATA_DIR

    return Path(t.path).resolve().parent == DATA_DIR.resolve()


# --------------------------------------------------------------------------- #
# Whole-model latencies measured elsewhere
# --------------------------------------------------------------------------- #

DEFAULT_WHOLE_MODEL_KEYS = (
    "efficiency.conv",
    "efficiency.depthwise_conv",
    "op_overhead_s",
)
"""Free parameters of a whole-model fit when neither the command nor the target names
any: the main unit's conv and depthwise rates and its per-op cost, plus the per-call
cost; few enough that a handful of models identifies them."""


@dataclass(frozen=True)
class LatencyRow:
    model: Path
    seconds: float
    threads: int
    whole_model: bool = True
    """False for a device-side time (an NPU driver log): no per-call runtime cost in it."""


def read_latencies(path: str | Path) -> list[LatencyRow]:
    """Rows of a whole-model latency file: CSV with columns ``model`` (a path, relative to
    the file), ``ms`` and, optionally, ``threads``; a header line is required."""
    import csv

    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise CalibrationError(f"cannot read latency file {p}: {exc.strerror}") from exc
    reader = csv.DictReader(line for line in text.splitlines() if line.strip())
    cols = [c.strip() for c in reader.fieldnames or ()]
    if "model" not in cols or "ms" not in cols:
        raise CalibrationError(
            f"{p}: needs a header with columns model, ms[, threads]; "
            f"got {', '.join(cols) or 'none'}",
            "e.g. model,ms,threads / mobilenet_v2_int8.tflite,44.1,4",
        )
    rows: list[LatencyRow] = []
    for i, rec in enumerate(reader, start=2):
        rec = {k.strip(): (v or "").strip() for k, v in rec.items() if k}
        try:
            ms = float(rec["ms"])
            threads = int(rec.get("threads") or 1)
        except ValueError as exc:
            raise CalibrationError(f"{p} line {i}: ms and threads must be numbers ({exc})") from exc
        if not ms > 0 or threads < 1:
            raise CalibrationError(f"{p} line {i}: ms must be > 0 and threads >= 1")
        model = (p.parent / rec["model"]).expanduser()
        if not model.is_file():
            raise CalibrationError(f"{p} line {i}: model file {rec['model']} not found")
        rows.append(LatencyRow(model, ms / 1e3, threads))
    if not rows:
        raise CalibrationError(f"{p}: no latency rows")
    return rows


@dataclass(frozen=True)
class LatencyCalibration:
    base: Target
    keys: tuple[str, ...]
    values: dict[str, float]
    fit: tuple[tuple[str, float, float], ...]
    """(model, forecast s, measured s) with the fitted values."""
    loo: tuple[tuple[str, float, float], ...]
    """(model, leave-one-out forecast s, measured s)."""
    toml: str


def loo_median(loo: Sequence[tuple[str, float, float]]) -> float:
    import statistics

    return statistics.median(abs(f / m - 1) for _, f, m in loo) if loo else 0.0


def loo_worst(loo: Sequence[tuple[str, float, float]]) -> float:
    return max((max(f / m, m / f) for _, f, m in loo), default=0.0)


def whole_model_keys(target: Target, requested: Sequence[str] = ()) -> list[str]:
    """The free parameters of a whole-model fit: ``requested``, else the target's
    ``calibration.parameters``, else :data:`DEFAULT_WHOLE_MODEL_KEYS` on its main unit
    plus the per-call cost."""
    if requested:
        return list(requested)
    if target.calibration.parameters:
        return list(target.calibration.parameters)
    unit = _fit_unit(target)
    return [f"units.{unit}.{k}" for k in DEFAULT_WHOLE_MODEL_KEYS] + [
        "calibration.invoke_overhead_s"
    ]


def calibrate_latencies(
    target: Target,
    rows: Sequence[LatencyRow],
    keys: Sequence[str] = (),
    *,
    label: str = "",
) -> LatencyCalibration:
    """Fit ``target`` to whole-model latencies measured elsewhere (see :func:`read_latencies`):
    least squares over the models' forecasts, then each model forecast by a fit on the
    others (leave-one-out)."""
    _require_scipy()
    from infercast.estimate.fit import fit_values, leave_one_out, target_bounds
    from infercast.estimate.forecast import Params
    from infercast.frontends import load

    free = whole_model_keys(target, keys)
    if not any(r.whole_model for r in rows):
        free = [k for k in free if k != "calibration.invoke_overhead_s"]
    prior = Params.of(target, prior_for=free)
    for k in free:
        prior.get(k)  # an unknown key is reported here, with the keys that exist
    samples = []
    forecasts = []
    for r in rows:
        fc = estimate(load(r.model), target, threads=r.threads)
        forecasts.append(fc)
        works = tuple(w for _, w in fc.works)
        samples.append(
            Sample(
                r.model.name,
                works,
                r.seconds,
                r.whole_model,
                threads=r.threads,
                device_only=not r.whole_model,
            )
        )
    bounds = target_bounds(target, free)
    f = fit_values(samples, prior, free, bounds=bounds)
    loo = leave_one_out(samples, prior, free, bounds=bounds)
    names = [r.model.name for r in rows]
    text = latency_toml(target, f.values, names, loo, label, coverage(forecasts))
    return LatencyCalibration(target, tuple(free), f.values, f.residuals, tuple(loo), text)


def latency_toml(
    base: Target,
    values: dict[str, float],
    rows: Sequence[str],
    loo: Sequence[tuple[str, float, float]],
    label: str = "",
    covered: Sequence[str] = (),
) -> str:
    """A target file that ``extends`` ``base`` with fitted values by dotted key; ``covered``:
    the kernel kinds the rows exercised (with ``base``'s, whose values are the prior)."""
    from infercast.estimate.forecast import covered_kinds, fitted_values

    merged = {**fitted_values(base), **values}
    kinds = sorted(set(covered) | (covered_kinds(base) or set()))
    table: dict[str, Any] = {
        "extends": base.name if _builtin(base) else base.path,
        "description": f"{base.name} calibrated on whole-model latencies: {base.description}",
        "calibration": {
            "calibrated": True,
            "source": f"infercast calibrate --from-latencies {label}".strip(),
            "date": _dt.date.today().isoformat(),
            "runtime": "whole-model latencies",
            "samples": len(rows),
            "rows": list(rows),
            "parameters": list(values),
            "loo_median_abs_error": float(f"{loo_median(loo):.4g}"),
            "loo_worst_ratio": float(f"{loo_worst(loo):.4g}"),
            **({"covered": kinds} if kinds else {}),
            "values": {k: float(f"{v:.6g}") for k, v in merged.items()},
        },
    }
    header = (
        f"# {base.name} calibrated by infercast on {len(rows)} whole-model latencies; "
        "fitted numbers only.\n# Leave-one-out: "
        f"median |error| {loo_median(loo):.0%}, worst {loo_worst(loo):.2f}x.\n"
    )
    return header + to_toml(table)


# --------------------------------------------------------------------------- #
# VeriSilicon (Vivante) NPU driver performance log
# --------------------------------------------------------------------------- #

_VX_BLOCK = re.compile(
    r"layer_id:\s*(?P<layer>\d+)\s+layer name:(?P<name>.*?)\s+operation\[(?P<op_index>\d+)\]:"
    r"(?P<op>.*?)\s+target:(?P<target>.*?)\.\s*$"
)
_VX_TIME = re.compile(r"^\s*execution time:\s*(?P<us>\d+(?:\.\d+)?)\s*us\s*$")


@dataclass(frozen=True)
class VxOperation:
    layer_id: int
    layer_name: str
    operation: str
    engine: str
    """``NN``, ``TP``, ``SH``, ``SW`` ... as the driver prints it."""
    seconds: float


def read_vx_perf_log(path: str | Path) -> list[VxOperation]:
    """Operations of a VeriSilicon NPU driver performance log (``CNN_PERF=1
    VIV_VX_DEBUG_LEVEL=1``). The driver prints, per executed operation, a block::

        layer_id: 0 layer name:<name> operation[0]:<operation> target:<engine>.
        uid: 0
        abs_op_id: 0
        execution time:             20552 us

    (a real sample: khadas/khadas_docs ``linux/source/vim3/KSNNUsage.md``, A311D; a model
    compiled to one binary graph prints a single ``network_binary_graph`` block). Only
    these lines are read; everything else in the log is ignored."""
    p = Path(path)
    try:
        lines = p.read_text(errors="replace").splitlines()
    except OSError as exc:
        raise CalibrationError(f"cannot read {p}: {exc.strerror}") from exc
    ops: list[VxOperation] = []
    current: re.Match[str] | None = None
    for line in lines:
        m = _VX_BLOCK.search(line)
        if m:
            current = m
            continue
        t = _VX_TIME.match(line)
        if t and current is not None:
            ops.append(
                VxOperation(
                    int(current["layer"]),
                    current["name"].strip(),
                    current["op"].strip(),
                    current["target"].strip(),
                    float(t["us"]) / 1e6,
                )
            )
            current = None
    return ops


def looks_like_vx_perf_log(text: str) -> bool:
    """A VeriSilicon NPU driver log of either kind: per-layer blocks (``CNN_PERF=1
    VIV_VX_DEBUG_LEVEL=1``) or per-operation counters (``VIV_VX_PROFILE=1``)."""
    head = text.splitlines()[:2000]
    return any(_VX_BLOCK.search(line) or _VXP_COUNTER.match(line) for line in head)


_VXP_COUNTER = re.compile(
    r"^\[\s*\d+\]\s+(?P<key>[A-Z_]+)\s*(?:\(MByte\))?\s*:\s*(?P<val>\d+(?:\.\d+)?)\s*$"
)
_VXP_COUNT = re.compile(r"^count=(?P<n>\d+)\s")
_VXP_AVG = re.compile(r"Inference \(avg\):\s*(?P<us>\d+(?:\.\d+)?(?:e[+-]?\d+)?)")


@dataclass(frozen=True)
class VxProfiledOperation:
    """One NPU operation's counters in a ``VIV_VX_PROFILE=1`` log."""

    total_cycles: int
    """``GPUTOTALCYCLES``: the operation's wall time in NPU clock cycles."""
    busy_cycles: int
    """``GPUCYCLES``: cycles the NPU was executing the operation."""
    idle_cycles: int
    """``GPUIDLECYCLES``: cycles it waited (the profiler submits and waits per operation)."""
    ddr_read_bytes: float
    ddr_write_bytes: float


@dataclass(frozen=True)
class VxProfileLog:
    """A TFLite ``benchmark_model`` run through the VX delegate with ``VIV_VX_PROFILE=1``:
    the driver prints, per executed NPU operation, a numbered block of counters (bandwidth
    in MByte, then ``GPUTOTALCYCLES``, ``GPUIDLECYCLES``, ``GPUCYCLES``), without operation
    names or engines. A real sample, from an i.MX 8M Plus EVK:
    github.com/ruitaodong/imx-benchmarks ``logs/yolov3-tiny-NPU.log`` (see
    tests/data/profiles/SOURCES.md)."""

    runs: tuple[tuple[VxProfiledOperation, ...], ...]
    """Operations per inference, in order; the first run is the warm-up (graph compile)."""
    inference_avg_s: float | None
    """``benchmark_model``'s ``Inference (avg)``: wall seconds per timed inference."""

    @property
    def timed(self) -> tuple[tuple[VxProfiledOperation, ...], ...]:
        return self.runs[1:] if len(self.runs) > 1 else self.runs

    def implied_clock_hz(self) -> float | None:
        """NPU clock the log implies: cycles of a timed inference (busy and idle) over its
        wall time. None without an ``Inference (avg)`` line."""
        if not self.inference_avg_s or not self.timed:
            return None
        cycles = sum(sum(op.total_cycles for op in run) for run in self.timed) / len(self.timed)
        return cycles / self.inference_avg_s

    def busy_s(self, clock_hz: float | None = None) -> float:
        """NPU execution seconds of one timed inference: its busy cycles at ``clock_hz``
        (default: the clock the log implies). The idle cycles are left out, an
        assumption (U): in the sample every one of the 75 operations idles 0.28-0.44 ms
        (69% of the inference), whatever its size, which reads as the profiler's
        submit-and-wait per operation rather than work an unprofiled run also does."""
        clock = clock_hz or self.implied_clock_hz()
        if not clock:
            raise CalibrationError(
                "the NPU profile log states no 'Inference (avg)' time and no clock was given",
                "keep benchmark_model's summary lines in the log",
            )
        timed = self.timed
        return sum(sum(op.busy_cycles for op in run) for run in timed) / len(timed) / clock


def read_vx_profile_log(path: str | Path) -> VxProfileLog:
    """Parse a ``VIV_VX_PROFILE=1`` log (:class:`VxProfileLog`). The operations of one
    inference are those printed before ``benchmark_model``'s first ``count=N`` line (its
    warm-up), divided by N; the rest of the log must hold whole inferences of that many."""
    p = Path(path)
    try:
        lines = p.read_text(errors="replace").splitlines()
    except OSError as exc:
        raise CalibrationError(f"cannot read {p}: {exc.strerror}") from exc
    ops: list[VxProfiledOperation] = []
    cur: dict[str, float] = {}
    warmup_ops: int | None = None
    avg_s: float | None = None

    def close() -> None:
        if cur:
            try:
                ops.append(
                    VxProfiledOperation(
                        int(cur["GPUTOTALCYCLES"]),
                        int(cur["GPUCYCLES"]),
                        int(cur["GPUIDLECYCLES"]),
                        cur.get("DDR_READ_BANDWIDTH", 0.0) * 1e6,
                        cur.get("DDR_WRITE_BANDWIDTH", 0.0) * 1e6,
                    )
                )
            except KeyError as exc:
                raise CalibrationError(f"{p}: an operation's counters lack {exc}") from exc
            cur.clear()

    for line in lines:
        m = _VXP_COUNTER.match(line)
        if m:
            if m["key"] == "TOTAL_READ_BANDWIDTH":
                close()
            cur[m["key"]] = float(m["val"])
            continue
        c = _VXP_COUNT.match(line)
        if c and warmup_ops is None:
            close()
            warmup_ops = len(ops) // max(int(c["n"]), 1)
        a = _VXP_AVG.search(line)
        if a:
            avg_s = float(a["us"]) / 1e6
    close()
    if not ops:
        raise CalibrationError(
            f"{p} holds no VIV_VX_PROFILE counter blocks",
            "run benchmark_model with VIV_VX_PROFILE=1 and capture the driver's output",
        )
    per_run = warmup_ops or len(ops)
    if per_run <= 0 or len(ops) % per_run:
        raise CalibrationError(
            f"{p}: {len(ops)} operations do not split into inferences of {per_run}",
            "capture whole inferences (the log was cut inside one)",
        )
    runs = tuple(tuple(ops[i : i + per_run]) for i in range(0, len(ops), per_run))
    return VxProfileLog(runs, avg_s)


def vx_log_latency(ops: Sequence[VxOperation]) -> float:
    """NPU execution seconds of one inference in a driver log: the sum of the operation
    times of the first run (an operation id seen again starts the next run)."""
    seen: set[tuple[int, int, str]] = set()
    total = 0.0
    for op in ops:
        key = (op.layer_id, hash(op.layer_name), op.operation)
        if key in seen:
            break
        seen.add(key)
        total += op.seconds
    return total


def vx_log_rows(pairs: Sequence[tuple[str | Path, str | Path]]) -> list[LatencyRow]:
    """(model, VeriSilicon driver log) pairs as device-time latency rows."""
    rows = []
    for model, log in pairs:
        ops = read_vx_perf_log(log)
        if not ops and _has_profile_counters(log):
            prof = read_vx_profile_log(log)
            rows.append(LatencyRow(Path(model), prof.busy_s(), 1, whole_model=False))
            continue
        if not ops:
            raise CalibrationError(
                f"{log} holds no 'layer_id: ... execution time: ... us' blocks",
                "run with CNN_PERF=1 VIV_VX_DEBUG_LEVEL=1 and capture the driver's output",
            )
        rows.append(LatencyRow(Path(model), vx_log_latency(ops), 1, whole_model=False))
    return rows


def _has_profile_counters(path: str | Path) -> bool:
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return False
    return any(_VXP_COUNTER.match(line) for line in text.splitlines()[:2000])
