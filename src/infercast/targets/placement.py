"""Placement: which processor runs each node, why, what crosses between them, what fits.

For every node of the main graph: ``accelerator`` (all of it runs there),
``partial`` (the compiler rewrites it into accelerator work plus CPU steps, e.g.
nncase's Pad + KPU conv + Crop) or ``cpu`` (the fallback processor), with every
reason that applied. Then the contiguous segments, the tensors that cross
between accelerator and CPU (and their bytes), and the fit of each memory the
target declares:

* ``layer_io``: the largest input + output of one accelerator layer (the K210's
  2 MB KPU RAM holds each KPU layer's feature maps);
* ``weights`` / ``accelerator_weights``: the unique weight tensors of all nodes /
  of accelerator nodes (the Edge TPU's parameter cache; beyond it parameters
  are streamed, ``on_overflow = "stream"``);
* ``activations``: the activation arena (Ethos-U's arena in SRAM), from the
  ``peak_activation_bytes`` callable; by default :func:`planned_arena_bytes`,
  the arena of infercast's memory plan.

Bytes are those of the tensors as the device holds them: the model's dtypes,
except where the target's compiler re-types float tensors
(``compile.quantize_float_to``, e.g. nncase's default ``--inference-type uint8``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infercast.ir.dtypes import DType
from infercast.ir.graph import Graph, Node, Shape, Tensor
from infercast.ir.labels import Placement, Processor
from infercast.ops.registry import weight_inputs
from infercast.targets import constraints as C
from infercast.targets.schema import Check, Target

SCHEMA = "infercast.check/1"
PeakFn = Callable[[Graph], int]


@dataclass(frozen=True)
class Reason:
    check: str
    outcome: str
    """``cpu`` (the op falls back), ``partial`` (rewritten), ``note`` (runs, but slower)."""
    text: str
    detail: str
    rewrite: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = {
            "check": self.check,
            "outcome": self.outcome,
            "reason": self.text,
            "detail": self.detail,
        }
        if self.rewrite:
            d["rewrite"] = self.rewrite
        return d

    def line(self) -> str:
        s = f"{self.text}: {self.detail}" if self.detail else self.text
        return f"{s} -> {self.rewrite}" if self.rewrite else s


@dataclass(frozen=True)
class LayerPlacement:
    index: int
    name: str
    op: str
    native_op: str
    placement: Placement
    unit: str
    reasons: tuple[Reason, ...]
    notes: tuple[Reason, ...]
    input_bytes: int | None
    output_bytes: int | None
    folded: bool = False

    @property
    def processor(self) -> Processor:
        return "cpu" if self.placement == "cpu" else "accelerator"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "index": self.index,
            "name": self.name,
            "op": self.op,
            "native_op": self.native_op,
            "placement": self.placement,
            "unit": self.unit,
            "reasons": [r.to_dict() for r in self.reasons],
        }
        if self.notes:
            d["notes"] = [r.to_dict() for r in self.notes]
        if self.folded:
            d["folded"] = True
        d["input_bytes"] = self.input_bytes
        d["output_bytes"] = self.output_bytes
        return d


@dataclass(frozen=True)
class Segment:
    index: int
    processor: Processor
    unit: str
    first_layer: int
    last_layer: int
    layers: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "processor": self.processor,
            "unit": self.unit,
            "first_layer": self.first_layer,
            "last_layer": self.last_layer,
            "layers": self.layers,
        }


@dataclass(frozen=True)
class CrossingItem:
    tensor: str
    bytes: int | None
    source: Processor
    destination: Processor
    producer: int | None
    """Index of the producing layer; None for a model input."""
    consumers: tuple[int, ...]
    """Indices of the consuming layers on ``destination``; empty for a model output."""
    boundary: bool
    """True for model inputs and outputs moving between host memory and the accelerator."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "tensor": self.tensor,
            "bytes": self.bytes,
            "from": self.source,
            "to": self.destination,
            "producer": self.producer,
            "consumers": list(self.consumers),
            "boundary": self.boundary,
        }


@dataclass(frozen=True)
class MemoryFit:
    memory: str
    required_bytes: int
    capacity_bytes: int
    on_overflow: str
    parts: Mapping[str, int]
    worst_layer: str | None = None

    @property
    def fits(self) -> bool:
        return self.required_bytes <= self.capacity_bytes

    @property
    def over_by_bytes(self) -> int:
        return max(self.required_bytes - self.capacity_bytes, 0)

    @property
    def blocking(self) -> bool:
        """Does not fit and the device cannot stream the excess."""
        return not self.fits and self.on_overflow == "fail"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "required_bytes": self.required_bytes,
            "capacity_bytes": self.capacity_bytes,
            "fits": self.fits,
            "over_by_bytes": self.over_by_bytes,
            "on_overflow": self.on_overflow,
            "parts": dict(self.parts),
        }
        if self.on_overflow == "stream":
            d["streamed_bytes"] = self.over_by_bytes
        if self.worst_layer is not None:
            d["worst_layer"] = self.worst_layer
        return d


@dataclass(frozen=True)
class PlacementReport:
    target: Target
    model: str
    graph: Graph
    layers: tuple[LayerPlacement, ...]
    segments: tuple[Segment, ...]
    crossings: tuple[CrossingItem, ...]
    fit: Mapping[str, MemoryFit]
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def has_accelerator(self) -> bool:
        return self.target.placement.accelerator is not None

    @property
    def inference_layers(self) -> list[LayerPlacement]:
        return [ly for ly in self.layers if not ly.folded]

    @property
    def all_on_accelerator(self) -> bool:
        if not self.has_accelerator:
            return True
        return all(ly.placement == "accelerator" for ly in self.inference_layers)

    @property
    def fits(self) -> bool:
        return not any(f.blocking for f in self.fit.values())

    @property
    def exit_code(self) -> int:
        """0: everything on the accelerator and fits; 3: something falls back or does not fit."""
        return 0 if self.all_on_accelerator and self.fits else 3

    def counts(self) -> dict[str, int]:
        out = {"accelerator": 0, "partial": 0, "cpu": 0}
        for ly in self.inference_layers:
            out[ly.placement] += 1
        return out

    def internal_crossings(self) -> list[CrossingItem]:
        return [c for c in self.crossings if not c.boundary]

    def crossings_dict(self) -> dict[str, Any]:
        internal = self.internal_crossings()
        boundary = [c for c in self.crossings if c.boundary]
        cost = self.target.crossing
        return {
            "count": len(internal),
            "bytes": sum(c.bytes or 0 for c in internal),
            "switches": max(len(self.segments) - 1, 0),
            "boundary_count": len(boundary),
            "boundary_bytes": sum(c.bytes or 0 for c in boundary),
            "estimated_s": sum(cost.seconds(c.bytes or 0) for c in internal),
            "items": [c.to_dict() for c in self.crossings],
        }

    def to_dict(self) -> dict[str, Any]:
        t = self.target
        return {
            "schema": SCHEMA,
            "target": t.name,
            "target_file": t.path,
            "model": self.model,
            "accelerator": t.placement.accelerator,
            "fallback": t.placement.fallback,
            "summary": {
                **self.counts(),
                "all_on_accelerator": self.all_on_accelerator,
                "fits": self.fits,
                "exit_code": self.exit_code,
                "graph_compile_s": t.graph_compile_s,
            },
            "layers": [ly.to_dict() for ly in self.layers],
            "segments": [s.to_dict() for s in self.segments],
            "crossings": self.crossings_dict(),
            "fit": {name: f.to_dict() for name, f in self.fit.items()},
            "notes": list(self.notes),
        }


# --------------------------------------------------------------------------- #
# Activation memory: a lower bound of the arena
# --------------------------------------------------------------------------- #


def planned_arena_bytes(graph: Graph) -> int:
    """The activation arena of infercast's memory plan (analysis/memory.py): tensor
    lifetimes over the execution order, packed by the smallest of its planners."""
    from infercast.analysis.memory import plan_graph

    return plan_graph(graph).arena_bytes


# --------------------------------------------------------------------------- #
# The device's view of the graph
# --------------------------------------------------------------------------- #


def device_graph(graph: Graph, target: Target) -> Graph:
    """``graph`` with float tensors re-typed as the target's compiler stores them."""
    q = target.quantize_float_to
    if q == "none":
        return graph
    new_dtype = DType(q)
    return graph.with_tensors(
        {
            name: dataclasses.replace(t, dtype=new_dtype) if t.dtype.is_float else t
            for name, t in graph.tensors.items()
        }
    )


def _bytes(ts: list[Tensor]) -> int | None:
    total = 0
    for t in ts:
        if t.nbytes is None:
            return None
        total += t.nbytes
    return total


# --------------------------------------------------------------------------- #
# Placement
# --------------------------------------------------------------------------- #


def op_key(node: Node, graph: Graph, target: Target) -> str | None:
    """The name the target's support list uses for ``node`` (None: no name applies)."""
    if target.placement.op_names == "tflite":
        return node.native_op if graph.format == "tflite" else None
    return node.op


def _context(target: Target) -> dict[str, str]:
    acc = target.accelerator
    return {
        "accelerator": acc.description or acc.name if acc else "accelerator",
        "fallback": target.fallback.description or target.fallback.name,
    }


def reason_text(check: Check, target: Target) -> str:
    return C.REGISTRY[check.name].reason(check.params, _context(target))


def _evaluate(view: C.NodeView, checks: list[Check], target: Target) -> list[Reason]:
    out = []
    for chk in checks:
        ok, detail = C.REGISTRY[chk.name].run(view, chk.params)
        if not ok:
            out.append(Reason(chk.name, chk.on_fail, reason_text(chk, target), detail, chk.rewrite))
    return out


def _place_node(graph: Graph, node: Node, target: Target) -> LayerPlacement:
    ins = [
        t for t in dict.fromkeys(graph.input_tensors(node)) if t is not None and not t.is_constant
    ]
    in_bytes, out_bytes = _bytes(ins), _bytes(graph.output_tensors(node))

    def make(
        placement: Placement,
        unit: str,
        reasons: tuple[Reason, ...],
        notes: tuple[Reason, ...] = (),
        folded: bool = False,
    ) -> LayerPlacement:
        return LayerPlacement(
            node.index,
            node.name,
            node.op,
            node.native_op,
            placement,
            unit,
            reasons,
            notes,
            in_bytes,
            out_bytes,
            folded,
        )

    fallback = target.placement.fallback
    ctx = _context(target)
    if node.folded:
        return make("cpu", fallback, (Reason("folded", "cpu", C.FOLDED, ""),), folded=True)
    accel = target.placement.accelerator
    if accel is None:
        return make("cpu", fallback, ())
    sup = target.support
    key = op_key(node, graph, target)
    view = C.NodeView(graph, node)
    reasons: list[Reason] = []
    listed = key is not None and (sup.all_ops or key in sup.ops)
    if not listed:
        detail = node.native_op if key is not None else f"{node.native_op} ({graph.format} op)"
        reasons.append(Reason("op_listed", "cpu", C.NOT_LISTED.format_map(ctx), detail))
    rule = sup.rules.get(key or "")
    skip = set(rule.skip_generic) if rule else set()
    checks = [c for c in sup.generic if c.name not in skip] + (list(rule.checks) if rule else [])
    reasons += _evaluate(view, checks, target)
    blocking = tuple(r for r in reasons if r.outcome != "note")
    notes = tuple(r for r in reasons if r.outcome == "note")
    unit = accel
    for chk in checks:
        if chk.on_fail == "note" and chk.unit and any(n.check == chk.name for n in notes):
            unit = chk.unit
    if any(r.outcome == "cpu" for r in blocking):
        return make("cpu", fallback, blocking)
    return make("partial" if blocking else "accelerator", unit, blocking, notes)


def _single_segment(layers: list[LayerPlacement], target: Target) -> list[LayerPlacement]:
    """Edge TPU compiler default: accelerator work stops at the first op it cannot map."""
    started = cut = False
    out = []
    text = C.SINGLE_SEGMENT.format_map(_context(target))
    for ly in layers:
        if ly.folded:
            out.append(ly)
            continue
        if not started and ly.placement != "cpu":
            started = True
        elif started and not cut and ly.placement == "cpu":
            cut = True
        elif cut and ly.placement != "cpu":
            r = Reason("single_segment", "cpu", text, "after an earlier op that falls back")
            ly = LayerPlacement(
                ly.index,
                ly.name,
                ly.op,
                ly.native_op,
                "cpu",
                target.placement.fallback,
                (*ly.reasons, r),
                (),
                ly.input_bytes,
                ly.output_bytes,
            )
        out.append(ly)
    return out


def _segments(layers: list[LayerPlacement]) -> list[Segment]:
    segs: list[Segment] = []
    cur: list[LayerPlacement] = []

    def close() -> None:
        if cur:
            segs.append(
                Segment(
                    len(segs), cur[0].processor, cur[0].unit, cur[0].index, cur[-1].index, len(cur)
                )
            )

    for ly in layers:
        if ly.folded:
            continue
        if cur and ly.processor != cur[-1].processor:
            close()
            cur = []
        cur.append(ly)
    close()
    return segs


def _crossings(graph: Graph, layers: list[LayerPlacement], has_accel: bool) -> list[CrossingItem]:
    if not has_accel:
        return []
    proc = {ly.index: ly.processor for ly in layers if not ly.folded}
    producers = graph.producers
    consumers = graph.consumers
    out: list[CrossingItem] = []
    names = list(graph.inputs) + [o for n in graph.nodes if n.index in proc for o in n.outputs if o]
    for name in dict.fromkeys(names):
        t = graph.tensors.get(name)
        if t is None or t.is_constant:
            continue
        prod = producers.get(name)
        src: Processor = proc.get(prod, "cpu") if prod is not None else "cpu"
        by_proc: dict[Processor, list[int]] = {}
        for c in consumers.get(name, ()):
            if c in proc:
                by_proc.setdefault(proc[c], []).append(c)
        for dst, idx in by_proc.items():
            if dst != src:
                out.append(CrossingItem(name, t.nbytes, src, dst, prod, tuple(idx), prod is None))
        if name in graph.outputs and src != "cpu":
            out.append(CrossingItem(name, t.nbytes, src, "cpu", prod, (), True))
    return out


def _fit(
    graph: Graph, layers: list[LayerPlacement], target: Target, peak_fn: PeakFn
) -> dict[str, MemoryFit]:
    on_acc = {ly.index for ly in layers if not ly.folded and ly.processor == "accelerator"}
    live = [n for n in graph.nodes if not n.folded]

    def unique_weight_bytes(nodes: list[Node]) -> int:
        seen: dict[str, int] = {}
        for n in nodes:
            for t in weight_inputs(graph, n):
                seen[t.derived_from or t.name] = t.nbytes or 0
        return sum(seen.values())

    cache: dict[str, tuple[int, str | None]] = {}

    def part(kind: str) -> tuple[int, str | None]:
        if kind not in cache:
            if kind == "weights":
                cache[kind] = (unique_weight_bytes(live), None)
            elif kind == "accelerator_weights":
                cache[kind] = (unique_weight_bytes([n for n in live if n.index in on_acc]), None)
            elif kind == "activations":
                cache[kind] = (int(peak_fn(graph)), None)
            else:  # layer_io
                worst, worst_name = 0, None
                for ly in layers:
                    if ly.index in on_acc:
                        b = (ly.input_bytes or 0) + (ly.output_bytes or 0)
                        if b > worst:
                            worst, worst_name = b, ly.name
                cache[kind] = (worst, worst_name)
        return cache[kind]

    out: dict[str, MemoryFit] = {}
    for name, mem in target.memories.items():
        if not mem.holds:
            continue
        parts = {f"{k}_bytes": part(k)[0] for k in mem.holds}
        worst = part("layer_io")[1] if "layer_io" in mem.holds else None
        out[name] = MemoryFit(
            name, sum(parts.values()), mem.size_bytes, mem.on_overflow, parts, worst
        )
    return out


def place(
    model: str | Path | Graph,
    target: Target | str,
    input_shapes: Mapping[str, Shape] | None = None,
    *,
    peak_activation_bytes: PeakFn = planned_arena_bytes,
) -> PlacementReport:
    """Place every node of ``model`` on ``target`` (a :class:`Target` or a name / path)."""
    from infercast.targets.loader import load_target

    tgt = load_target(target) if isinstance(target, str) else target
    if isinstance(model, Graph):
        graph = model
    else:
        from infercast.frontends import load

        graph = load(model, input_shapes)
    dev = device_graph(graph, tgt)
    layers = [_place_node(dev, node, tgt) for node in dev.nodes]
    if tgt.placement.segments == "single" and tgt.placement.accelerator:
        layers = _single_segment(layers, tgt)
    notes = []
    if graph.subgraphs:
        notes.append(
            f"{len(graph.subgraphs)} subgraph(s) (loop / branch bodies) run with the op that calls "
            "them; only the main graph is placed"
        )
    if tgt.quantize_float_to != "none" and any(t.dtype.is_float for t in graph.tensors.values()):
        notes.append(
            f"float tensors counted as {tgt.quantize_float_to}: the {tgt.name} compiler quantises "
            "float models (compile.quantize_float_to)"
        )
    unknown = [ly.name for ly in layers if ly.input_bytes is None or ly.output_bytes is None]
    if unknown:
        notes.append(
            f"{len(unknown)} layer(s) have tensors of unknown size; their bytes are not counted"
        )
    if not tgt.placement.accelerator:
        notes.append(C.NO_ACCELERATOR.format_map(_context(tgt)))
    return PlacementReport(
        target=tgt,
        model=str(graph.path or graph.name),
        graph=graph,
        layers=tuple(layers),
        segments=tuple(_segments(layers)),
        crossings=tuple(_crossings(dev, layers, tgt.placement.accelerator is not None)),
        fit=_fit(dev, layers, tgt, peak_activation_bytes),
        notes=tuple(notes),
    )


# --------------------------------------------------------------------------- #
# Rendering
# --------------------------------------------------------------------------- #

_STYLE = {"accelerator": "green", "partial": "yellow", "cpu": "red"}


def render_table(report: PlacementReport) -> Any:
    """A rich renderable: per-layer placement, then segments, crossings and memory fit."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from infercast.report.units import human_bytes

    t = report.target
    c = report.counts()
    head = Text()
    head.append(f"{report.model} on {t.name}", style="bold")
    head.append(
        f"\naccelerator: {t.placement.accelerator or 'none'}, fallback: {t.placement.fallback}; "
        f"{c['accelerator']} on the accelerator, {c['partial']} partial, {c['cpu']} on the CPU"
    )
    layers = Table(show_lines=False, expand=False)
    for col in ("#", "layer", "op", "placement", "unit", "reasons"):
        layers.add_column(col, overflow="fold")
    for ly in report.layers:
        why = "; ".join(r.line() for r in (*ly.reasons, *ly.notes))
        name = ly.name if len(ly.name) <= 48 else "…" + ly.name[-47:]
        layers.add_row(
            str(ly.index),
            name,
            ly.native_op,
            Text(ly.placement, style=_STYLE[ly.placement]),
            ly.unit,
            why,
        )
    segs = ", ".join(f"{s.processor}[{s.first_layer}-{s.last_layer}]" for s in report.segments)
    cr = report.crossings_dict()
    tail = Text()
    tail.append(f"segments: {len(report.segments)} ({segs})\n")
    tail.append(
        f"crossings: {cr['count']} accelerator<->CPU transfer(s), {human_bytes(cr['bytes'])}; "
        f"model inputs/outputs: {cr['boundary_count']}, {human_bytes(cr['boundary_bytes'])}\n"
    )
    fit = Table(title="memory fit")
    for col in ("memory", "required", "capacity", "fits", "note"):
        fit.add_column(col)
    for f in report.fit.values():
        note = ""
        if not f.fits:
            note = (
                f"streamed: {human_bytes(f.over_by_bytes)}"
                if f.on_overflow == "stream"
                else f"over by {human_bytes(f.over_by_bytes)}"
            )
        if f.worst_layer:
            note = (note + "; " if note else "") + f"largest layer: {f.worst_layer[-40:]}"
        fit.add_row(
            f.memory,
            human_bytes(f.required_bytes),
            human_bytes(f.capacity_bytes),
            Text("yes" if f.fits else "no", style="green" if f.fits else "red"),
            note,
        )
    notes = Text("\n".join(f"note: {n}" for n in report.notes))
    if not report.has_accelerator:
        ok_text = "OK: fits (a CPU-only target: nothing to fall back from)"
    else:
        ok_text = "OK: everything runs on the accelerator and fits"
    verdict = Text(
        ok_text
        if report.exit_code == 0
        else "NOT OK: something falls back to the CPU or does not fit",
        style="bold green" if report.exit_code == 0 else "bold red",
    )
    return Group(head, layers, tail, fit, notes, verdict)
