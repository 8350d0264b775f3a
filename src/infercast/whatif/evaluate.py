"""Run a variant through the same stages a model file gets: analysis, memory plan,
placement and forecast, and keep what a sweep reports.

Stages are called through their public functions on the variant's :class:`Graph`
(never a path), each once per variant.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from infercast.analysis.cost import Analysis, analyze_graph
from infercast.analysis.memory import MemoryAnalysis, plan_graph
from infercast.estimate.forecast import Forecast, Params
from infercast.estimate.forecast import estimate as forecast_stage
from infercast.ir.graph import Graph
from infercast.targets import PlacementReport, Target, place
from infercast.whatif.ops import input_resolution
from infercast.whatif.spec import VariantSpec
from infercast.whatif.transform import transform


@dataclass(frozen=True)
class MemoryFitResult:
    """One device memory: what the variant needs in it, and whether that fits."""

    required_bytes: int
    capacity_bytes: int
    fits: bool
    on_overflow: str


@dataclass(frozen=True)
class VariantTotals:
    macs: int
    flops: int
    params: int
    weight_bytes: int
    peak_activation_bytes: int
    """The arena of infercast's memory plan (``analyze --memory-plan``)."""
    activation_lower_bound_bytes: int
    """The most activation bytes alive at one step: no arena can be smaller."""
    latency_s: float
    fits: bool
    """Every memory of the target holds what it must (a cache that streams the excess
    counts as fitting; its cost is in the latency)."""


@dataclass(frozen=True)
class VariantResult:
    """What one variant comes to on a target."""

    spec: VariantSpec
    resolution: tuple[int, int] | None
    """The image input's (height, width) in this variant (None: the model has none)."""
    width: float
    dtype: str
    """The variant's compute dtype: what it asked for, else the model's own."""
    quant: str | None
    replace: tuple[str, ...]
    threads: int | None
    totals: VariantTotals
    memories: Mapping[str, MemoryFitResult]
    fallback_layers: tuple[str, ...]
    """Layers that run on the fallback CPU of a target with an accelerator."""
    bound_s: Mapping[str, float]
    """Forecast seconds by what bounds each layer (compute, memory, fallback, …)."""
    complete: bool
    """False when some layer's cost is unknown (the totals leave it out)."""
    notes: tuple[str, ...] = ()
    graph: Graph | None = field(default=None, repr=False, compare=False)
    """The variant's graph (kept in-process; dropped before results cross processes)."""
    placement: PlacementReport | None = field(default=None, repr=False, compare=False)
    forecast: Forecast | None = field(default=None, repr=False, compare=False)

    @property
    def label(self) -> str:
        return self.spec.label()

    @property
    def macs(self) -> int:
        return self.totals.macs

    def within(self, budget_s: float | None) -> bool:
        return self.totals.fits and (budget_s is None or self.totals.latency_s <= budget_s)

    def slim(self) -> VariantResult:
        """Without the graph and stage results (for sending between processes)."""
        return dataclasses.replace(self, graph=None, placement=None, forecast=None)


def model_dtype(graph: Graph) -> str:
    """The dtype the model computes in: int8 when its conv / FC weights are, else the
    widest float of its activations."""
    from infercast.whatif.retype import weight_roles

    roles = weight_roles(graph, graph.nodes)
    weights = [
        graph.tensors[n] for n, (r, _) in roles.items() if r == "weight" and n in graph.tensors
    ]
    if weights and all(t.dtype.is_integer for t in weights):
        bits = max(t.dtype.bits for t in weights)
        return f"int{bits}"
    floats = {t.dtype for t in graph.tensors.values() if t.dtype.is_float and not t.is_constant}
    if any(d.bits == 32 for d in floats) or not floats:
        return "fp32"
    return "fp16"


def model_quant(graph: Graph) -> str | None:
    from infercast.whatif.retype import weight_roles

    roles = weight_roles(graph, graph.nodes)
    qs = [
        graph.tensors[n].quant
        for n, (r, _) in roles.items()
        if r == "weight" and n in graph.tensors and graph.tensors[n].quant is not None
    ]
    if not qs:
        return None
    return "per-channel" if any(q is not None and q.per_channel for q in qs) else "per-tensor"


def thread_params(target: Target, threads: int | None) -> Params | None:
    """The target's parameters with CPU peaks scaled to ``threads`` of its cores
    (one thread cannot use the other cores); None when nothing changes."""
    if threads is None:
        return None
    p = Params.of(target)
    cal = target.calibration.threads or 0
    peak = dict(p.peak)
    changed = False
    for u in target.units.values():
        if u.kind != "cpu" or not u.cores:
            continue
        base = min(cal, u.cores) if cal else u.cores
        factor = min(threads, u.cores) / base
        for (unit, dt), v in p.peak.items():
            if unit == u.name:
                peak[(unit, dt)] = v * factor
                changed = True
    return dataclasses.replace(p, peak=peak) if changed else None


def run_stages(
    graph: Graph, target: Target, threads: int | None = None
) -> tuple[Analysis, MemoryAnalysis, PlacementReport, Forecast]:
    """Analysis, memory plan, placement and forecast of ``graph`` on ``target``, each
    once, each stage given the earlier ones' results."""
    analysis = analyze_graph(graph)
    memory = plan_graph(graph)
    placement = place(graph, target, memory=memory)
    fc = forecast_stage(
        graph,
        target,
        placement=placement,
        analysis=analysis,
        params=thread_params(target, threads),
    )
    return analysis, memory, placement, fc


def evaluate_graph(
    graph: Graph, spec: VariantSpec, target: Target, *, keep: bool = False
) -> VariantResult:
    """The figures of an already-transformed ``graph`` (``spec`` labels it)."""
    analysis, memory, placement, fc = run_stages(graph, target, spec.threads)
    fits = {
        name: MemoryFitResult(f.required_bytes, f.capacity_bytes, f.fits, f.on_overflow)
        for name, f in placement.fit.items()
    }
    has_acc = placement.has_accelerator
    fallback = tuple(
        ly.name for ly in placement.layers if has_acc and not ly.folded and ly.placement == "cpu"
    )
    t = analysis.totals
    totals = VariantTotals(
        macs=t.macs,
        flops=t.flops,
        params=t.params,
        weight_bytes=t.weight_bytes,
        peak_activation_bytes=memory.arena_bytes,
        activation_lower_bound_bytes=memory.lower_bound_bytes,
        latency_s=fc.latency_s,
        fits=all(not f.blocking for f in placement.fit.values()),
    )
    return VariantResult(
        spec=spec,
        resolution=spec.resolution or input_resolution(graph),
        width=spec.width,
        dtype=spec.dtype or model_dtype(graph),
        quant=spec.quant or model_quant(graph),
        replace=tuple(str(r) for r in spec.replace),
        threads=spec.threads,
        totals=totals,
        memories=fits,
        fallback_layers=fallback,
        bound_s=fc.by_bound(),
        complete=t.complete and fc.complete,
        notes=tuple(n for n in graph.notes if "whatif" in n),
        graph=graph if keep else None,
        placement=placement if keep else None,
        forecast=fc if keep else None,
    )


def evaluate(
    graph: Graph, spec: VariantSpec, target: Target, *, keep: bool = False
) -> VariantResult:
    """Transform ``graph`` by ``spec`` and run the stages on the variant."""
    return evaluate_graph(transform(graph, spec), spec, target, keep=keep)
