"""Measuring on real runtimes: a benchmark harness, per-op profiles, and their join with the
static cost.

* :func:`plan_runs` -- the runs of one command: runtimes x threads x runtime options;
* :func:`bench` -- run them, each in its own worker process with a timeout;
  join each per-op profile with the model's static cost (an
  :class:`~infercast.analysis.cost.Analysis`);
* :mod:`infercast.bench.profiles` -- ONNX Runtime JSON, TFLite ``benchmark_model``
  text / CSV and TVM debug-executor importers;
* :mod:`infercast.bench.join` -- achieved MAC/s, shares, hotspots, % of a peak.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infercast.analysis.cost import Analysis
from infercast.bench.harness import RunResult, RunSpec, TimingConfig, run_isolated
from infercast.bench.join import Joined, join
from infercast.bench.runtimes import RuntimeOptionError, get_runtime, resolve_options
from infercast.errors import InfercastError

__all__ = [
    "BenchReport",
    "RunResult",
    "RunSpec",
    "TimingConfig",
    "assemble",
    "bench",
    "plan_runs",
]

DEFAULT_RUNTIME = {"onnx": "ort", "tflite": "litert"}


def model_format(path: str | Path) -> str:
    """``tflite`` or ``onnx``, by content (the frontends' rule)."""
    p = Path(path)
    if not p.is_file():
        raise InfercastError(f"{p}: no such file")
    with p.open("rb") as fh:
        head = fh.read(8)
    return "tflite" if len(head) >= 8 and head[4:8] == b"TFL3" else "onnx"


def plan_runs(
    model: str | Path,
    runtimes: Sequence[str] | None = None,
    threads: Sequence[int | None] = (1,),
    sweeps: Mapping[str, Sequence[str]] | None = None,
    **common: Any,
) -> list[RunSpec]:
    """One :class:`RunSpec` per runtime x thread count x combination of that runtime's options.

    ``sweeps`` maps ``"<runtime>.<option>"`` to the values to try, e.g.
    ``{"ort.opt_level": ["all", "disable"], "litert.xnnpack": ["on", "off"]}``.
    """
    fmt = model_format(model)
    names = list(runtimes) if runtimes else [DEFAULT_RUNTIME[fmt]]
    sweeps = dict(sweeps or {})
    specs: list[RunSpec] = []
    used: set[str] = set()
    for name in names:
        rt = get_runtime(name)
        if fmt not in rt.formats:
            raise InfercastError(
                f"runtime '{rt.name}' runs {'/'.join(sorted(rt.formats))} models; "
                f"{Path(model).name} is {fmt}",
                f"for a .{fmt} model use --runtime {DEFAULT_RUNTIME[fmt]}",
            )
        keys = [k for k in sweeps if k.split(".", 1)[0] == rt.name]
        used.update(keys)
        axes = [[(k.split(".", 1)[1], v) for v in sweeps[k]] for k in keys]
        for combo in itertools.product(*axes) if axes else [()]:
            opts = dict(combo)
            resolve_options(rt, opts)  # fail early, in the parent, on a bad option
            for thr in threads:
                specs.append(
                    RunSpec(model=str(model), runtime=rt.name, threads=thr, options=opts, **common)
                )
    unused = sorted(set(sweeps) - used)
    if unused:
        raise RuntimeOptionError(
            f"option(s) {', '.join(unused)} name a runtime that is not being run",
            "add it to --runtime",
        )
    return specs


@dataclass(frozen=True)
class BenchReport:
    model: str
    format: str
    environment: Mapping[str, Any]
    runs: tuple[RunResult, ...]
    joins: Mapping[int, Joined]
    total_macs: int | None
    total_flops: int | None
    timeout_s: float
    peaks: Mapping[int, float | None] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def fastest(self) -> int | None:
        ok = [(r.summary.median_s, i) for i, r in enumerate(self.runs) if r.ok and r.summary]
        return min(ok)[1] if ok else None

    @property
    def failed(self) -> list[RunResult]:
        """Runs that failed, including a run whose requested profile failed (the
        timing alone is not what was asked for)."""
        return [r for r in self.runs if not r.ok or (r.spec.profile and r.profile_error)]


def bench(
    specs: Sequence[RunSpec],
    *,
    timeout_s: float = 600.0,
    peak_for: Callable[[RunSpec], float | None] | None = None,
    on_progress: Callable[[int, RunSpec, str, float], None] | None = None,
    on_done: Callable[[int, RunResult], None] | None = None,
    analysis: Analysis | None = None,
    notes: Sequence[str] = (),
) -> BenchReport:
    """Run every spec in isolation, then join each profile with ``analysis``, the static
    cost of the model (without it: no MAC/s figures). ``notes`` go into the report."""
    from infercast.bench.env import environment

    if not specs:
        raise InfercastError("nothing to run")
    model_format(specs[0].model)
    results: list[RunResult] = []
    for i, spec in enumerate(specs):
        cb = None
        if on_progress is not None:

            def cb(phase: str, done: float, i: int = i, spec: RunSpec = spec) -> None:
                on_progress(i, spec, phase, done)

        res = run_isolated(spec, timeout_s, cb)
        results.append(res)
        if on_done is not None:
            on_done(i, res)
    return assemble(
        specs,
        results,
        environment(),
        timeout_s,
        peak_for=peak_for,
        analysis=analysis,
        notes=notes,
    )


def assemble(
    specs: Sequence[RunSpec],
    results: Sequence[RunResult],
    environment: Mapping[str, Any],
    timeout_s: float,
    *,
    peak_for: Callable[[RunSpec], float | None] | None = None,
    analysis: Analysis | None = None,
    notes: Sequence[str] = (),
) -> BenchReport:
    """The :class:`BenchReport` of finished runs (here, or on a board): each profile joined
    with ``analysis``, the model's static cost (without it: no MAC/s figures)."""
    model = specs[0].model
    joins: dict[int, Joined] = {}
    peaks: dict[int, float | None] = {}
    for i, res in enumerate(results):
        peak = peak_for(res.spec) if peak_for else None
        peaks[i] = peak
        if analysis is not None and res.profile is not None:
            joins[i] = join(
                analysis,
                res.profile,
                whole_s=res.summary.median_s if res.summary else None,
                peak_macs_per_s=peak,
            )
    complete = analysis is not None and analysis.totals.complete
    if analysis is not None and not complete:
        t = analysis.totals
        notes = [
            *notes,
            f"the model's MACs are incomplete ({t.unsupported_layers} layer(s) without a "
            f"cost rule, {t.unknown_shape_layers} with shapes not known statically): "
            "no GMAC/s is computed",
        ]
    return BenchReport(
        model=model,
        format=model_format(model),
        environment=environment,
        runs=tuple(results),
        joins=joins,
        # MAC/s from a partial count would be too low and look measured: none at all.
        total_macs=analysis.totals.macs if analysis and complete else None,
        total_flops=analysis.totals.flops if analysis and complete else None,
        timeout_s=timeout_s,
        peaks=peaks,
        notes=tuple(notes),
    )
