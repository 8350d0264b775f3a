"""The public API: every command of the CLI as a function, on a model file or a loaded graph.

Each function takes a model as a path or a :class:`~infercast.ir.Graph` (then
``input_shapes`` does not apply: give them to :func:`load`), a target as a
built-in name, a ``.toml`` path or a loaded :class:`~infercast.targets.Target`,
and the earlier stages' results where the caller has them (``analysis=``,
``memory=``, ``placement=``): what is missing is computed once. Each returns
plain data with two renderings:

* ``to_records()`` -- a list of flat dicts, one per layer / run / row
  (``pandas.DataFrame(result.to_records())``);
* ``to_dict()`` -- the versioned JSON document the CLI writes.

The result classes extend the stages' own results (``AnalysisResult`` is an
:class:`~infercast.analysis.cost.Analysis`, ``EstimateResult`` a
:class:`~infercast.estimate.forecast.Forecast`, ...), so every field of those
is there too.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from infercast._gc import paused_gc
from infercast.analysis.cost import Analysis, analyze_graph
from infercast.analysis.memory import MemoryAnalysis, plan_graph
from infercast.bench import BenchReport, plan_runs
from infercast.bench import bench as run_bench
from infercast.bench.harness import RunSpec
from infercast.bench.join import Joined, model_compute_dtype, target_peak_macs_per_s
from infercast.bench.join import join as join_profile
from infercast.bench.profiles import Profile, read_profile
from infercast.errors import InfercastError
from infercast.estimate.calibrate import CalibrationResult, calibrate_profiles, calibrate_runtime
from infercast.estimate.forecast import Forecast, Params
from infercast.estimate.forecast import estimate as forecast
from infercast.estimate.validate import Validation
from infercast.estimate.validate import validate as run_validation
from infercast.files import write_atomic
from infercast.frontends import load as load_file
from infercast.ir.graph import Graph, Shape
from infercast.report import analysis as analysis_report
from infercast.report import bench as bench_report
from infercast.report import calibration as calibration_report
from infercast.report import estimate as estimate_report
from infercast.report import memory as memory_report
from infercast.report import placement as placement_report
from infercast.report import targets as targets_report
from infercast.report import validation as validation_report
from infercast.report import whatif as whatif_report
from infercast.targets import PlacementReport, Target, load_target, place
from infercast.targets import list_targets as builtin_targets
from infercast.whatif import WhatIfResult as _WhatIf
from infercast.whatif import whatif as run_whatif
from infercast.whatif.advise import AdviceResult as _Advice
from infercast.whatif.advise import advise as run_advise

ModelLike = str | os.PathLike[str] | Graph
TargetLike = str | os.PathLike[str] | Target
InputShapes = Mapping[str, Shape] | None
Records = list[dict[str, Any]]

_R = TypeVar("_R")


def _upgrade(cls: type[_R], base: Any, **extra: Any) -> _R:
    """``base`` (a stage's result) as its façade subclass ``cls``, with ``extra`` fields."""
    values = {f.name: getattr(base, f.name) for f in dataclasses.fields(base) if f.init}
    return cls(**values, **extra)


def load(model: str | os.PathLike[str], input_shapes: InputShapes = None) -> Graph:
    """Read a ``.tflite`` or ``.onnx`` file into a :class:`Graph` (``input_shapes`` fix
    symbolic input dimensions: ``{"input": (1, 3, 224, 224)}``)."""
    return load_file(model, input_shapes)


def _graph(model: ModelLike, input_shapes: InputShapes) -> Graph:
    if not isinstance(model, Graph):
        return load_file(model, input_shapes)
    if input_shapes:
        raise InfercastError(
            "input shapes apply when a model file is read; this graph is already loaded",
            "pass them to infercast.load(path, input_shapes)",
        )
    return model


def _target(target: TargetLike) -> Target:
    return target if isinstance(target, Target) else load_target(os.fspath(target))


# --------------------------------------------------------------------------- #
# analyze, plan_memory
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class AnalysisResult(Analysis):
    """Per-layer compute of a model (:class:`~infercast.analysis.cost.Analysis`)."""

    memory: MemoryAnalysis | None = field(default=None, repr=False)
    """The memory plan given to :func:`analyze`, if any."""

    @cached_property
    def memory_plan(self) -> MemoryAnalysis:
        """The memory plan the renderings show (planned once, 16-byte alignment, when
        none was given)."""
        return self.memory if self.memory is not None else plan_graph(self.graph)

    def to_records(self) -> Records:
        return analysis_report.records(self, self.memory_plan)

    def to_dict(self) -> dict[str, Any]:
        return analysis_report.to_dict(self, self.memory_plan)


def analyze(
    model: ModelLike, input_shapes: InputShapes = None, *, memory: MemoryAnalysis | None = None
) -> AnalysisResult:
    """Per-layer MACs, FLOPs, parameters, weight and activation bytes.

    ``memory``: the model's memory plan when already made (:func:`plan_memory`);
    the renderings include it, and plan one themselves without it.
    """
    graph = _graph(model, input_shapes)
    if memory is not None and memory.graph is not graph:
        raise ValueError("analyze(): the memory plan is of another graph")
    return _upgrade(AnalysisResult, analyze_graph(graph), memory=memory)


@dataclass(frozen=True)
class MemoryPlan(MemoryAnalysis):
    """Lifetimes, the arena plan and weights (an
    :class:`~infercast.analysis.memory.MemoryAnalysis`)."""

    def to_records(self) -> Records:
        """One flat dict per arena tensor: offset, size, lifetime."""
        return memory_report.plan_records(self)

    def to_dict(self) -> dict[str, Any]:
        return memory_report.plan_dict(self)


def plan_memory(
    model: ModelLike,
    input_shapes: InputShapes = None,
    *,
    alignment: int = 16,
    in_place: bool = False,
) -> MemoryPlan:
    """Activation lifetimes, the lower bound, the arena plan and the weight bytes."""
    graph = _graph(model, input_shapes)
    return _upgrade(MemoryPlan, plan_graph(graph, alignment=alignment, in_place=in_place))


# --------------------------------------------------------------------------- #
# check, estimate
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class CheckResult(PlacementReport):
    """Placement on a target (:class:`~infercast.targets.placement.PlacementReport`)."""

    def to_records(self) -> Records:
        return placement_report.records(self)

    def to_dict(self) -> dict[str, Any]:
        return placement_report.to_dict(self)


def check(
    model: ModelLike,
    target: TargetLike,
    input_shapes: InputShapes = None,
    *,
    memory: MemoryAnalysis | None = None,
) -> CheckResult:
    """Where each op runs on ``target`` and why; segments, crossings, memory fit.
    ``exit_code`` is 0 when everything runs on the accelerator and fits, 3 when something
    falls back or does not fit, 4 when whether it fits is unknown (unknown tensor sizes)."""
    graph = _graph(model, input_shapes)
    with paused_gc():  # acyclic per-layer records (see html_report)
        return _upgrade(CheckResult, place(graph, _target(target), memory=memory))


@dataclass(frozen=True)
class EstimateResult(Forecast):
    """A latency forecast (:class:`~infercast.estimate.forecast.Forecast`)."""

    analysis: Analysis | None = field(default=None, repr=False)
    """The compute analysis the forecast was made from."""

    def to_records(self) -> Records:
        return estimate_report.records(self)

    def to_dict(self) -> dict[str, Any]:
        return estimate_report.to_dict(self)


def estimate(
    model: ModelLike,
    target: TargetLike,
    input_shapes: InputShapes = None,
    *,
    analysis: Analysis | None = None,
    placement: PlacementReport | None = None,
    memory: MemoryAnalysis | None = None,
    fuse: bool = True,
    params: Params | None = None,
    threads: int | None = None,
    clock_hz: float | None = None,
    edgetpu_compiled: str | Path | None = None,
) -> EstimateResult:
    """Per-layer latency forecast on ``target``, with what bounds each layer.

    ``analysis``, ``placement`` and ``memory`` are the earlier stages' results when
    the caller has them; ``fuse=False`` costs every op as its own kernel;
    ``params`` overrides the target's numbers; ``threads``: the CPU runtime's thread
    count (default 1); ``clock_hz``: the main unit's clock when not the file's;
    ``edgetpu_compiled``: the model as edgetpu_compiler compiled it, whose parameter
    split (cached on chip / streamed every inference) replaces the target's stated cache.
    """
    graph = _graph(model, input_shapes)
    tgt = _target(target) if placement is None else placement.target
    extra_notes: tuple[str, ...] = ()
    if edgetpu_compiled is not None:
        from infercast.estimate.compiled import with_compiled_cache

        tgt, extra_notes = with_compiled_cache(graph, tgt, edgetpu_compiled, memory)
        placement = None
    with paused_gc():  # acyclic per-layer records (see html_report)
        if placement is None:
            placement = place(graph, tgt, memory=memory)
        if analysis is None:
            analysis = analyze_graph(graph)
        fc = forecast(
            graph, tgt, placement=placement, analysis=analysis, fuse=fuse, params=params,
            threads=threads, clock_hz=clock_hz,
        )  # fmt: skip
    if extra_notes:
        fc = dataclasses.replace(fc, notes=(*fc.notes, *extra_notes))
    return _upgrade(EstimateResult, fc, analysis=analysis)


# --------------------------------------------------------------------------- #
# bench, profile_import
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class BenchResult(BenchReport):
    """Runs on real runtimes (:class:`~infercast.bench.BenchReport`)."""

    def to_records(self) -> Records:
        """One flat dict per run."""
        return bench_report.run_records(self)

    def to_dict(self) -> dict[str, Any]:
        return bench_report.to_dict(self)


PeakFor = Callable[[RunSpec], float]


def peak_for(
    target: TargetLike | None, peak_gmacs: float | None, analysis: Analysis | None
) -> PeakFor | None:
    """spec -> the peak MAC/s a run is compared with: ``peak_gmacs``, else ``target``'s
    peak for the model's compute dtype (a CPU's scaled to the run's threads)."""
    if peak_gmacs is not None:
        if peak_gmacs <= 0:
            raise InfercastError("--peak-gmacs must be positive")
        return lambda spec: peak_gmacs * 1e9
    if target is None:
        return None
    tgt = _target(target)
    dtype = model_compute_dtype(analysis) if analysis is not None else "fp32"
    target_peak_macs_per_s(tgt, dtype)  # a target without a usable peak is bad input
    return lambda spec: target_peak_macs_per_s(tgt, dtype, spec.threads)


def _static_cost(
    model: str | os.PathLike[str], input_shapes: InputShapes, required: bool
) -> tuple[Analysis | None, list[str]]:
    """The model's analysis for the joins, or why there is none (raised when ``required``)."""
    try:
        return analyze_graph(load_file(model, input_shapes)), []
    except InfercastError as exc:
        if required:
            raise
        return None, [f"static cost unavailable, no MAC/s figures: {exc}"]


def bench(
    model: str | os.PathLike[str],
    runtimes: Sequence[str] | None = None,
    threads: Sequence[int | None] = (1,),
    sweeps: Mapping[str, Sequence[str]] | None = None,
    *,
    input_shapes: InputShapes = None,
    target: TargetLike | None = None,
    peak_gmacs: float | None = None,
    timeout_s: float = 600.0,
    on_start: Callable[[Sequence[RunSpec]], None] | None = None,
    on_progress: Callable[[int, RunSpec, str, float], None] | None = None,
    **run_options: Any,
) -> BenchResult:
    """Time ``model`` on real runtimes (each run isolated, with a timeout), per-op
    profiles joined with the static cost; ``run_options`` go to every
    :class:`~infercast.bench.harness.RunSpec` (``timing``, ``profile``, ``seed``, ...).
    ``on_start`` gets the planned runs, ``on_progress`` each run's phases."""
    specs = plan_runs(
        Path(model), runtimes, threads, sweeps, input_shapes=input_shapes or {}, **run_options
    )
    needs_dtype = target is not None and peak_gmacs is None
    analysis, notes = _static_cost(model, input_shapes, required=needs_dtype)
    if on_start is not None:
        on_start(specs)
    rep = run_bench(
        specs,
        timeout_s=timeout_s,
        peak_for=peak_for(target, peak_gmacs, analysis),
        on_progress=on_progress,
        analysis=analysis,
        notes=notes,
    )
    return _upgrade(BenchResult, rep)


def bench_remote(
    model: str | os.PathLike[str],
    board: str,
    runtimes: Sequence[str] | None = None,
    threads: Sequence[int | None] | None = None,
    sweeps: Mapping[str, Sequence[str]] | None = None,
    *,
    input_shapes: InputShapes = None,
    target: TargetLike | None = None,
    peak_gmacs: float | None = None,
    timeout_s: float = 600.0,
    connect_timeout_s: float = 15.0,
    remote_python: str | None = None,
    delegate: str | None = None,
    delegate_options: Sequence[str] = (),
    on_start: Callable[[Sequence[RunSpec]], None] | None = None,
    on_progress: Callable[[int, RunSpec, str, float], None] | None = None,
    **run_options: Any,
) -> BenchResult:
    """:func:`bench` on a board over SSH (``board``: a name of the boards file or
    ``[user@]host[:port]``; :mod:`infercast.bench.remote`): the board's runtime, the same
    protocol, the board's environment; ``target`` defaults to the board's."""
    from infercast.bench.remote import bench_remote as run_remote
    from infercast.bench.remote_cli import plan

    brd, specs, tgt = plan(
        Path(model),
        board,
        remote_python=remote_python,
        runtimes=runtimes,
        threads=threads,
        sweeps=sweeps or {},
        delegate=delegate,
        delegate_options=delegate_options,
        target=target,
        common={"input_shapes": input_shapes or {}, **run_options},
    )
    tgt = tgt if peak_gmacs is None else None
    analysis, notes = _static_cost(model, input_shapes, required=tgt is not None)
    if on_start is not None:
        on_start(specs)
    rep = run_remote(
        specs,
        brd,
        timeout_s=timeout_s,
        connect_timeout_s=connect_timeout_s,
        peak_for=peak_for(tgt, peak_gmacs, analysis),
        on_progress=on_progress,
        analysis=analysis,
        notes=notes,
    )
    return _upgrade(BenchResult, rep)


@dataclass(frozen=True)
class ProfileResult(Joined):
    """A per-op profile joined with the model's static cost (a
    :class:`~infercast.bench.join.Joined`)."""

    model: str = ""
    file: str = ""

    def to_records(self) -> Records:
        """One flat dict per measured unit."""
        return bench_report.joined_records(self)

    def to_dict(self) -> dict[str, Any]:
        return bench_report.joined_to_dict(self, self.model, self.file)


def profile_import(
    profile: str | os.PathLike[str] | Profile,
    model: ModelLike,
    input_shapes: InputShapes = None,
    *,
    kind: str | None = None,
    skip_runs: int = 1,
    analysis: Analysis | None = None,
    target: TargetLike | None = None,
    peak_gmacs: float | None = None,
    threads: int | None = None,
) -> ProfileResult:
    """Join a per-op profile measured elsewhere (ONNX Runtime JSON, TFLite
    ``benchmark_model`` output, TVM debug table) with the model's static cost."""
    if isinstance(profile, Profile):
        prof = profile
    else:
        prof = read_profile(Path(profile), kind, skip_runs=skip_runs)
    if analysis is None:
        analysis = analyze_graph(_graph(model, input_shapes))
    peak_fn = peak_for(target, peak_gmacs, analysis)
    name = str(analysis.graph.path or analysis.graph.name)
    peak = peak_fn(RunSpec(name, "imported", threads)) if peak_fn else None
    joined = join_profile(analysis, prof, peak_macs_per_s=peak)
    file = "" if isinstance(profile, Profile) else os.fspath(profile)
    model_name = name if isinstance(model, Graph) else os.fspath(model)
    return _upgrade(ProfileResult, joined, model=model_name, file=file)


# --------------------------------------------------------------------------- #
# calibrate, validate, targets
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class Calibration(CalibrationResult):
    """A target fitted to measurements; ``toml`` is the calibrated target file."""

    def to_records(self) -> Records:
        """One flat dict per fitted sample (predicted and measured seconds)."""
        return calibration_report.records(self)

    def to_dict(self) -> dict[str, Any]:
        return calibration_report.to_dict(self)


def calibrate(
    target: TargetLike,
    *,
    runtime: str | None = None,
    profiles: Sequence[tuple[str | os.PathLike[str], str | os.PathLike[str]]] = (),
    threads: int = 1,
    budget_s: float = 240.0,
    progress: Callable[[str], None] | None = None,
) -> Calibration:
    """Fit ``target``'s efficiencies and overheads: micro-kernels measured here with
    ``runtime`` (``ort`` / ``litert``), or ``profiles``, (model, profile) file pairs
    measured elsewhere."""
    if (runtime is None) == (not profiles):
        raise InfercastError(
            "give either --runtime (measure here) or --from PROFILE (fit a profile)",
            "e.g. infercast calibrate --target host --runtime ort -o host-ort.toml",
        )
    tgt = _target(target)
    if profiles:
        pairs = [(Path(m), Path(p)) for m, p in profiles]
        return _upgrade(Calibration, calibrate_profiles(tgt, pairs))
    assert runtime is not None
    res = calibrate_runtime(tgt, runtime, threads=threads, budget_s=budget_s, progress=progress)
    return _upgrade(Calibration, res)


@dataclass(frozen=True)
class ValidationResult(Validation):
    """Forecasts against measurements on this machine (a
    :class:`~infercast.estimate.validate.Validation`)."""

    def to_records(self) -> Records:
        return validation_report.records(self)

    def to_dict(self) -> dict[str, Any]:
        return validation_report.to_dict(self)


def validate(
    models: Sequence[str | os.PathLike[str]],
    target: TargetLike,
    *,
    threads: int | None = None,
    budget_s: float = 60.0,
    progress: Callable[[str], None] | None = None,
) -> ValidationResult:
    """Forecast and measure each model file on this machine (ONNX Runtime for .onnx,
    LiteRT for .tflite); per-model error, share within ±10%, RMSPE, Spearman ρ."""
    if threads is not None and threads < 1:
        raise InfercastError(f"--threads must be at least 1, not {threads}")
    tgt = _target(target)
    pairs = [(os.fspath(m), load_file(m)) for m in models]
    v = run_validation(tgt, pairs, threads=threads, budget_s=budget_s, progress=progress)
    return _upgrade(ValidationResult, v)


@dataclass(frozen=True)
class TargetList:
    """The built-in targets."""

    targets: tuple[Target, ...]

    def __iter__(self) -> Iterator[Target]:
        return iter(self.targets)

    def __len__(self) -> int:
        return len(self.targets)

    def to_records(self) -> Records:
        return targets_report.records(self.targets)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": targets_report.SCHEMA,
            "targets": [targets_report.target_dict(t) for t in self.targets],
        }


def list_targets() -> TargetList:
    """The built-in targets (``infercast targets list``)."""
    return TargetList(tuple(builtin_targets()))


# --------------------------------------------------------------------------- #
# whatif, advise
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class WhatIfResult(_WhatIf):
    """Variants of a model on a target (:class:`infercast.whatif.WhatIfResult`)."""

    def to_records(self) -> Records:
        """One flat dict per variant (memories as ``<name>_required_bytes`` / ``_fits``)."""
        return whatif_report.records(self)

    def to_dict(self) -> dict[str, Any]:
        return whatif_report.to_dict(self)


def whatif(
    model: ModelLike,
    target: TargetLike,
    input_shapes: InputShapes = None,
    **options: Any,
) -> WhatIfResult:
    """Variants of the model on ``target``: ``resolution=[128, 160]``, ``width=[0.5, 1.0]``,
    ``dtype=["int8"]``, ``quant``, ``replace=["HARD_SWISH=RELU6"]``, ``keep``, ``divisor``,
    ``threads``, ``fit=True`` (with ``budget_s``): :func:`infercast.whatif.whatif`.
    ``to_records()`` gives one row per variant, ``to_dict()`` ``infercast.whatif/1``."""
    result = run_whatif(_graph(model, input_shapes), _target(target), **options)
    return _upgrade(WhatIfResult, result)


@dataclass(frozen=True)
class AdviceResult(_Advice):
    """Ranked advice (:class:`infercast.whatif.advise.AdviceResult`)."""

    def to_records(self) -> Records:
        """One flat dict per item, ranked."""
        return whatif_report.advice_records(self)

    def to_dict(self) -> dict[str, Any]:
        return whatif_report.advice_dict(self)


def advise(model: ModelLike, target: TargetLike, input_shapes: InputShapes = None) -> AdviceResult:
    """Ranked advice for the model on ``target``, each item's gain from its what-if
    (``infercast advise``); ``to_dict()`` gives ``infercast.advice/1``."""
    return _upgrade(AdviceResult, run_advise(_graph(model, input_shapes), _target(target)))


# The HTML report
# --------------------------------------------------------------------------- #


def html_report(
    model: ModelLike,
    targets: Sequence[TargetLike] = (),
    input_shapes: InputShapes = None,
    *,
    profile: str | os.PathLike[str] | None = None,
    profile_kind: str | None = None,
    whatif: Any = None,
    output: str | os.PathLike[str] | None = None,
) -> str:
    """One self-contained HTML page of ``model`` on ``targets`` (``infercast report``).

    ``profile``: a per-op profile (measured points on the roofline, a measured
    column); ``whatif``: a what-if result (an ``infercast.whatif`` result, its
    ``to_dict()``, the JSON document or a path to it) or a list of them, each shown
    as a variant table. The model is loaded once and each stage runs once per
    target. Returns the HTML; writes it to ``output`` when given.
    """
    from infercast.report.html import ReportInputs, render_html

    loaded = [_target(t) for t in targets]
    many = isinstance(whatif, list | tuple)
    docs = [_whatif_doc(w) for w in (whatif if many else [whatif]) if w is not None]
    graph = _graph(model, input_shapes)
    # The whole report builds acyclic per-layer records (placement, works, forecast
    # layers, then the page's view): the cyclic collector would rescan them all again
    # and again (infercast._gc). Measured on a 100,000-node chain: placement and
    # forecast 5.1 s CPU with it on, 3.0 s paused.
    with paused_gc():
        memory = plan_graph(graph)
        analysis = analyze_graph(graph)
        forecasts = [
            forecast(graph, t, placement=place(graph, t, memory=memory), analysis=analysis)
            for t in loaded
        ]
        joined = None
        if profile is not None:
            joined = join_profile(analysis, read_profile(Path(profile), profile_kind))
        text = render_html(
            ReportInputs(
                analysis=analysis,
                memory=memory,
                forecasts=tuple(forecasts),
                joined=joined,
                profile_source=os.fspath(profile) if profile is not None else "",
                whatif=tuple(docs),
            )
        )
    if output is not None:
        write_atomic(Path(output), text)
    return text


def _whatif_doc(whatif: Any) -> Mapping[str, Any]:
    """A what-if result as the report reads it (a path is read as its JSON document)."""
    import json

    from infercast.report.html import whatif_document

    if isinstance(whatif, str | os.PathLike):
        where = os.fspath(whatif)
        try:
            raw = json.loads(Path(where).read_text("utf-8"))
        except OSError as exc:
            raise InfercastError(f"cannot read {where}: {exc.strerror}") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InfercastError(f"{where}: not a JSON what-if result ({exc})") from None
        return whatif_document(raw, where)
    return whatif_document(whatif)


__all__ = [
    "AdviceResult",
    "AnalysisResult",
    "BenchResult",
    "Calibration",
    "CheckResult",
    "EstimateResult",
    "MemoryPlan",
    "ProfileResult",
    "TargetList",
    "ValidationResult",
    "WhatIfResult",
    "advise",
    "analyze",
    "bench",
    "calibrate",
    "check",
    "estimate",
    "html_report",
    "list_targets",
    "load",
    "load_target",
    "plan_memory",
    "profile_import",
    "validate",
    "whatif",
]
