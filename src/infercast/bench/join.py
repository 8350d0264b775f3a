"""Measured time per layer beside the static cost: achieved MAC/s and FLOP/s, shares, hotspots.

One row per *measured unit* (a kernel, a fused kernel, a single-op model): its
time, the model layers it covers (see :mod:`infercast.bench.profiles.base`),
their MACs and FLOPs from the model's :class:`~infercast.analysis.cost.Analysis`, and

* ``achieved_macs_per_s = macs / measured_s`` (and FLOP/s alike);
* ``share`` -- the row's part of the summed per-op time;
* ``pct_of_peak`` -- achieved MAC/s over a peak given as a plain number
  (MAC/s; 1 MAC = 2 ops, so a device rated P ops/s peaks at P/2 MAC/s).

Overall figures divide the model's total MACs by the whole-inference time (the
benchmark's median when given, else the profiler's own whole time). Layers the
profile does not account for are listed with their MACs, never silently
dropped; rows the profiler reports but that map to no layer (inserted layout
conversions, delegate nodes) keep their time with ``macs = None``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from infercast.analysis.cost import Analysis, LayerCost
from infercast.bench.profiles.base import OpTime, Profile, absorb_fused, map_profile
from infercast.errors import InfercastError
from infercast.ir.graph import Graph
from infercast.targets.schema import Target

INTERNAL = "delegate internal"


@dataclass(frozen=True)
class JoinedRow:
    index: int | None
    name: str
    op: str
    measured_s: float
    share: float
    macs: int | None
    flops: int | None
    achieved_macs_per_s: float | None
    achieved_flops_per_s: float | None
    pct_of_peak: float | None
    layers: tuple[int, ...] = ()
    layer_names: tuple[str, ...] = ()
    mapping: str = ""
    provider: str = ""
    count: int = 1
    note: str = ""


@dataclass(frozen=True)
class Unaccounted:
    index: int
    name: str
    op: str
    macs: int | None
    status: str


@dataclass(frozen=True)
class Joined:
    source: str
    rows: tuple[JoinedRow, ...]
    whole_s: float | None
    """Reference whole-inference time: the benchmark's median, else the profile's."""
    profile_whole_s: float | None
    ops_total_s: float
    total_macs: int
    total_flops: int
    achieved_macs_per_s: float | None
    achieved_flops_per_s: float | None
    peak_macs_per_s: float | None
    pct_of_peak: float | None
    unaccounted: tuple[Unaccounted, ...] = ()
    notes: tuple[str, ...] = ()
    outside: str = ""
    runs: int = 0
    statistic: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def sum_vs_whole(self) -> float | None:
        """Summed per-op time over the reference whole time."""
        return self.ops_total_s / self.whole_s if self.whole_s else None

    @property
    def sum_vs_profile_whole(self) -> float | None:
        """Summed per-op time over the profiler's own whole time (same runs)."""
        return self.ops_total_s / self.profile_whole_s if self.profile_whole_s else None

    @property
    def mapped_share(self) -> float:
        """Part of the summed per-op time that maps to model layers."""
        if not self.ops_total_s:
            return 0.0
        return sum(r.measured_s for r in self.rows if r.layers and r.provider != INTERNAL) / (
            self.ops_total_s
        )

    def hotspots(self, n: int = 5) -> list[JoinedRow]:
        rows = [r for r in self.rows if r.provider != INTERNAL]
        return sorted(rows, key=lambda r: r.measured_s, reverse=True)[:n]


def map_to_model(profile: Profile, graph: Graph) -> tuple[Profile, list[int], list[str]]:
    """Map a profile of any source onto the model; (mapped profile, unaccounted, notes)."""
    notes: list[str] = []
    src = profile.source
    if src == "onnxruntime":
        if graph.format != "onnx":
            notes.append(
                "an ONNX Runtime profile joined with a non-ONNX model: names will not match"
            )
        mapped, missing = map_profile(profile, graph)
    elif src == "tflite_benchmark_model":
        from infercast.bench.profiles.tflite import map_tflite

        if graph.format != "tflite":
            notes.append("a TFLite profile joined with a non-TFLite model: nothing can map")
        mapped, mismatches = map_tflite(profile, graph)
        notes.extend(mismatches)
        covered = {i for o in mapped.ops for i in o.layers}
        missing = [n.index for n in graph.nodes if n.index not in covered]
    elif src.startswith("tvm"):
        from infercast.bench.profiles.tvm import map_by_order

        ops = map_by_order(profile.ops, graph)
        ops2, missing = absorb_fused(ops, graph)
        mapped = replace(profile, ops=tuple(ops2))
    else:
        mapped = profile
        covered = {i for o in mapped.ops for i in o.layers}
        missing = [n.index for n in graph.nodes if n.index not in covered]
    return mapped, missing, notes


def _sum_known(values: Sequence[int | None]) -> int | None:
    if any(v is None for v in values):
        return None
    return sum(v for v in values if v is not None)


def join(
    analysis: Analysis,
    profile: Profile,
    *,
    whole_s: float | None = None,
    peak_macs_per_s: float | None = None,
    mapped: bool = False,
) -> Joined:
    """Join ``profile`` with the static cost in ``analysis`` (see the module docstring)."""
    if peak_macs_per_s is not None and peak_macs_per_s <= 0:
        raise InfercastError("the peak must be a positive number of MAC/s")
    graph = analysis.graph
    notes: list[str] = list(profile.notes)
    if mapped:
        prof = profile
        covered = {i for o in prof.ops for i in o.layers}
        missing = [n.index for n in graph.nodes if n.index not in covered]
    else:
        prof, missing, extra = map_to_model(profile, graph)
        notes.extend(extra)
    layers: dict[int, LayerCost] = {ly.index: ly for ly in analysis.main_layers()}
    counted = [o for o in prof.ops if o.provider != INTERNAL]
    total_t = sum(o.measured_s for o in counted)
    rows: list[JoinedRow] = []
    for o in prof.ops:
        rows.append(_row(o, layers, total_t, peak_macs_per_s))
    ref = whole_s if whole_s is not None else prof.whole_s
    tot_macs = analysis.totals.macs
    tot_flops = analysis.totals.flops
    complete = analysis.totals.complete
    ach = tot_macs / ref if (ref and complete) else None
    achf = tot_flops / ref if (ref and complete) else None
    if not complete:
        t = analysis.totals
        notes.append(
            f"the model's MAC/FLOP totals are incomplete ({t.unsupported_layers} layer(s) "
            f"without a cost rule, {t.unknown_shape_layers} with shapes not known "
            "statically): no whole-model MAC/s or FLOP/s"
        )
    unacc = tuple(
        Unaccounted(i, layers[i].name, layers[i].op, layers[i].macs, layers[i].status)
        for i in missing
        if i in layers
    )
    heavy = [u for u in unacc if u.macs]
    if heavy:
        notes.append(
            f"{len(heavy)} layer(s) with {sum(u.macs or 0 for u in heavy):,} MACs are not in the "
            "profile: " + ", ".join(u.name for u in heavy[:5]) + (" ..." if len(heavy) > 5 else "")
        )
    return Joined(
        source=prof.source,
        rows=tuple(rows),
        whole_s=ref,
        profile_whole_s=prof.whole_s,
        ops_total_s=total_t,
        total_macs=tot_macs,
        total_flops=tot_flops,
        achieved_macs_per_s=ach,
        achieved_flops_per_s=achf,
        peak_macs_per_s=peak_macs_per_s,
        pct_of_peak=(100.0 * ach / peak_macs_per_s) if (ach and peak_macs_per_s) else None,
        unaccounted=unacc,
        notes=tuple(notes),
        outside=prof.outside,
        runs=prof.runs,
        statistic=prof.statistic,
        meta=dict(prof.meta),
    )


def _row(o: OpTime, layers: dict[int, LayerCost], total_t: float, peak: float | None) -> JoinedRow:
    cov = [layers[i] for i in o.layers if i in layers]
    macs = _sum_known([ly.macs for ly in cov]) if cov else None
    flops = _sum_known([ly.flops for ly in cov]) if cov else None
    # The row is named after its heaviest layer (a fused Conv+Relu is a conv), not the
    # layer the runtime happened to name it after.
    anchor = max(cov, key=lambda ly: ly.macs or 0) if cov else None
    t = o.measured_s
    ach = macs / t if (macs is not None and t > 0) else None
    achf = flops / t if (flops is not None and t > 0) else None
    note = ""
    if not o.layers:
        note = "not a model layer (inserted by the runtime) or not mapped"
    elif len(cov) > 1:
        note = "fused: " + "+".join(ly.op for ly in cov)
    if o.provider == INTERNAL:
        note = "inside a delegate node (not added to the total)"
    return JoinedRow(
        index=anchor.index if anchor else None,
        name=o.name,
        op=anchor.op if anchor else o.op,
        measured_s=t,
        share=(t / total_t) if (total_t and o.provider != INTERNAL) else 0.0,
        macs=macs,
        flops=flops,
        achieved_macs_per_s=ach,
        achieved_flops_per_s=achf,
        pct_of_peak=(100.0 * ach / peak) if (ach is not None and peak) else None,
        layers=o.layers,
        layer_names=tuple(ly.name for ly in cov),
        mapping=o.mapping,
        provider=o.provider,
        count=o.count,
        note=note,
    )


def model_compute_dtype(analysis: Analysis) -> str:
    """``int8`` | ``fp16`` | ``fp32``: the output dtype of the layers doing most MACs."""
    by: dict[str, int] = {}
    for ly in analysis.main_layers():
        if ly.macs and ly.output_dtypes:
            by[ly.output_dtypes[0]] = by.get(ly.output_dtypes[0], 0) + ly.macs
    if not by:
        return "fp32"
    top = max(by, key=lambda k: by[k])
    if top in ("int8", "uint8", "int16", "int32"):
        return "int8" if top != "int16" else "int16"
    if top in ("float16", "fp16"):
        return "fp16"
    return "fp32"


def target_peak_macs_per_s(target: Target, dtype: str, threads: int | None = None) -> float:
    """Peak MAC/s of ``target``'s accelerator (else its CPU) for ``dtype``.

    For a CPU unit and a run limited to ``threads`` threads, the peak is scaled by
    ``threads / cores``: one thread cannot use the other cores.
    """
    unit = target.accelerator or target.fallback
    peak_ops = unit.peak(dtype)
    if peak_ops is None:
        peak_ops = unit.peak("fp32")
    if peak_ops is None:
        raise InfercastError(
            f"target '{target.name}' states no peak for {dtype} on {unit.name}",
            "add peak_<dtype>_ops_per_s to its [units] table",
        )
    peak = peak_ops / 2.0
    if unit.kind == "cpu" and threads and unit.cores:
        peak *= min(threads, unit.cores) / unit.cores
    return float(peak)
