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

import datetime as _dt
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infercast.errors import InfercastError
from infercast.estimate.fit import FitResult, Sample, fit
from infercast.estimate.forecast import estimate
from infercast.estimate.measure import RUNTIMES, Timing, measure
from infercast.estimate.microkernels import Spec, build, default_specs, quick_specs
from infercast.ir.graph import Graph
from infercast.targets.loader import to_toml
from infercast.targets.schema import Target

DEFAULT_BUDGET_S = 240.0


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
    graphs: Sequence[tuple[str, Graph, float]],
) -> Callable[[Target], list[Sample]]:
    def build_samples(t: Target) -> list[Sample]:
        out = []
        for name, g, seconds in graphs:
            fc = estimate(g, t)
            out.append(Sample(name, tuple(w for _, w in fc.works), seconds, whole_model=True))
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
) -> CalibrationResult:
    """Measure the micro-kernel set on this machine with ``runtime`` and fit ``target``."""
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
        paths, runtime, threads, budget_s=max(budget_s - gen_s - 5.0, 3.0), progress=progress
    )
    from infercast.frontends import load

    graphs = [(s.name, load(p), t.min_s) for s, p, t in zip(chosen, paths, timings, strict=True)]
    unit = _fit_unit(target)
    result, _ = fit(target, _samples_from_graphs(graphs), unit)
    source = (
        f"infercast calibrate: {len(chosen)} micro-kernels timed with {_runtime_version(runtime)}, "
        f"{threads} thread(s), minimum of repeated runs"
    )
    text = calibrated_toml(target, result, runtime, threads, len(chosen), source)
    return CalibrationResult(
        base=target,
        fit=result,
        toml=text,
        runtime=runtime,
        threads=threads,
        samples=len(chosen),
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
    u["op_overhead_s"] = float(f"{result.op_overhead_s:.4g}")
    u["channel_multiple"] = result.channel_multiple
    if result.reduction_half_depth > 0:
        u["reduction_half_depth"] = float(f"{result.reduction_half_depth:.4g}")
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
