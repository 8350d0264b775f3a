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
* ``activations``: the activation arena (Ethos-U's arena in SRAM): the arena of
  infercast's memory plan (:mod:`infercast.analysis.memory`).

Bytes are those of the tensors as the device holds them: the model's dtypes,
except where the target's compiler re-types float tensors
(``compile.quantize_float_to``, e.g. nncase's default ``--inference-type uint8``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from infercast.analysis.memory import MemoryAnalysis, plan_graph
from infercast.ir.dtypes import DType
from infercast.ir.graph import Graph, Node, Tensor
from infercast.ir.labels import Placement, Processor
from infercast.ops.registry import weight_inputs
from infercast.targets import constraints as C
from infercast.targets.schema import Check, Target


@dataclass(frozen=True)
class Reason:
    check: str
    outcome: str
    """``cpu`` (the op falls back), ``partial`` (rewritten), ``note`` (runs, but slower)."""
    text: str
    detail: str
    rewrite: str = ""


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


@dataclass(frozen=True)
class Segment:
    index: int
    processor: Processor
    unit: str
    first_layer: int
    last_layer: int
    layers: int


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


@dataclass(frozen=True)
class MemoryFit:
    memory: str
    required_bytes: int
    capacity_bytes: int
    on_overflow: str
    parts: Mapping[str, int]
    worst_layer: str | None = None
    unknown_parts: tuple[str, ...] = ()
    """Parts some of whose tensors have sizes not known statically: ``required_bytes``
    is then a lower bound."""

    @property
    def fits(self) -> bool:
        """The required bytes (a lower bound when ``unknown_parts``) fit the capacity."""
        return self.required_bytes <= self.capacity_bytes

    @property
    def known(self) -> bool:
        """Whether it is known to fit or not: a lower bound over capacity does not fit;
        one under it says nothing."""
        return not self.unknown_parts or not self.fits

    @property
    def over_by_bytes(self) -> int:
        return max(self.required_bytes - self.capacity_bytes, 0)

    @property
    def blocking(self) -> bool:
        """Does not fit and the device cannot stream the excess."""
        return not self.fits and self.on_overflow == "fail"


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
    def format_mismatch(self) -> bool:
        """The accelerator's toolchain reads another model format: nothing is placed on it."""
        return format_mismatch(self.graph, self.target)

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
    def fit_known(self) -> bool:
        """False when some memory's requirement is a lower bound under its capacity."""
        return all(f.known for f in self.fit.values())

    @property
    def exit_code(self) -> int:
        """0: everything on the accelerator and fits; 3: something falls back or does not
        fit; 4: nothing falls back, but whether it fits is not known (tensors of unknown
        size)."""
        if not (self.all_on_accelerator and self.fits):
            return 3
        return 0 if self.fit_known else 4

    def counts(self) -> dict[str, int]:
        out = {"accelerator": 0, "partial": 0, "cpu": 0}
        for ly in self.inference_layers:
            out[ly.placement] += 1
        return out

    def internal_crossings(self) -> list[CrossingItem]:
        return [c for c in self.crossings if not c.boundary]


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


def format_mismatch(graph: Graph, target: Target) -> bool:
    """True when the target's accelerator takes TFLite models and ``graph`` is not one."""
    return (
        target.placement.accelerator is not None
        and target.placement.op_names == "tflite"
        and graph.format != "tflite"
    )


FORMAT_MISMATCH = (
    "the {accelerator} runs TFLite models only (its toolchain reads .tflite files) and this "
    "is a{an} {format} model: every layer runs on the {fallback}; convert the model to TFLite "
    "to see what the {accelerator} would run"
)


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
        if ok is None:  # undecided: said, without moving the op (a note)
            out.append(Reason(chk.name, "note", reason_text(chk, target), detail))
        elif not ok:
            out.append(Reason(chk.name, chk.on_fail, reason_text(chk, target), detail, chk.rewrite))
    return out


def _place_node(graph: Graph, node: Node, target: Target, *, placed: bool = True) -> LayerPlacement:
    """Where ``node`` runs and why; ``placed=False``: on the fallback, with no
    per-layer reason (the report states the one reason, e.g. a format mismatch)."""
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
    if accel is None or not placed:
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


def _compiled(graph: Graph, target: Target) -> bool:
    """The model was already compiled for this accelerator (it holds the toolchain's op)."""
    op = target.placement.compiled_op
    return bool(op) and any(n.native_op == op for n in graph.nodes)


def compiled_note(target: Target) -> str:
    """What a check or forecast of a model compiled for ``target``'s accelerator says."""
    return C.COMPILED_MODEL.format(**_context(target), op=target.placement.compiled_op)


def is_compiled_for(report: PlacementReport) -> bool:
    """The placed model was already compiled for the report's accelerator."""
    return _compiled(report.graph, report.target)


def _place_compiled(graph: Graph, node: Node, target: Target) -> LayerPlacement:
    """In a compiled model the toolchain has placed every op: its own op on the
    accelerator, the rest on the fallback, where it left them."""
    accel = target.placement.accelerator
    mine = node.native_op == target.placement.compiled_op and accel is not None
    ly = _place_node(graph, node, target, placed=False)
    if not mine:
        text = C.LEFT_BY_COMPILER.format_map(_context(target))
        return dataclasses.replace(ly, reasons=(Reason("compiled", "cpu", text, ""),))
    return dataclasses.replace(ly, placement="accelerator", unit=accel or ly.unit, reasons=())


def _single_segment(
    graph: Graph, layers: list[LayerPlacement], target: Target
) -> list[LayerPlacement]:
    """Edge TPU compiler default, one Edge TPU subgraph: an op that depends on a CPU op which
    itself depends on an Edge TPU op cannot go back to the Edge TPU. Ops that do not depend
    on such a CPU op stay: MoveNet's heads, after its CPU decode in operator order but not fed
    by it, are in the one Edge TPU op of Coral's compiled file (google-coral/test_data
    movenet_single_pose_lightning_ptq_edgetpu.tflite; bench/bench_edgetpu_placement.py)."""
    producer = {o: i for i, n in enumerate(graph.nodes) for o in n.outputs if o}
    after_accel = [False] * len(layers)  # fed, directly or not, by an accelerator op
    behind_cpu = [False] * len(layers)  # fed by a CPU op that came after accelerator ops
    out = []
    text = C.SINGLE_SEGMENT.format_map(_context(target))
    for i, (ly, node) in enumerate(zip(layers, graph.nodes, strict=True)):
        preds = [producer[t] for t in node.inputs if t in producer and producer[t] < i]
        fed_accel = any(after_accel[p] for p in preds)
        fed_cpu = any(behind_cpu[p] for p in preds)
        if not ly.folded and fed_cpu and ly.placement != "cpu":
            r = Reason("single_segment", "cpu", text, "fed by an op that falls back")
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
        on_acc = ly.placement != "cpu"
        after_accel[i] = fed_accel or (on_acc and not ly.folded)
        behind_cpu[i] = fed_cpu or (not on_acc and not ly.folded and fed_accel)
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
    graph: Graph, layers: list[LayerPlacement], target: Target, arena_bytes: Callable[[], int]
) -> dict[str, MemoryFit]:
    on_acc = {ly.index for ly in layers if not ly.folded and ly.processor == "accelerator"}
    live = [n for n in graph.nodes if not n.folded]

    unknown: set[str] = set()

    def unique_weight_bytes(nodes: list[tuple[Graph, Node]], kind: str) -> int:
        seen: dict[str, int] = {}
        for g, n in nodes:
            for t in weight_inputs(g, n):
                if t.nbytes is None:
                    unknown.add(kind)
                seen[t.derived_from or t.name] = t.nbytes or 0
        return sum(seen.values())

    # Weights of loop and branch bodies are loaded with the model too.
    every = [(g, n) for _, g in graph.all_graphs() for n in g.nodes if not n.folded]

    cache: dict[str, tuple[int, str | None]] = {}

    def part(kind: str) -> tuple[int, str | None]:
        if kind not in cache:
            if kind == "weights":
                cache[kind] = (unique_weight_bytes(every, kind), None)
            elif kind == "accelerator_weights":
                acc_nodes = [(graph, n) for n in live if n.index in on_acc]
                cache[kind] = (unique_weight_bytes(acc_nodes, kind), None)
            elif kind == "activations":
                cache[kind] = (arena_bytes(), None)
                if _unsized_activations(graph):
                    unknown.add(kind)
            else:  # layer_io
                worst, worst_name = 0, None
                for ly in layers:
                    if ly.index in on_acc:
                        if ly.input_bytes is None or ly.output_bytes is None:
                            unknown.add(kind)
                        b = (ly.input_bytes or 0) + (ly.output_bytes or 0)
                        if b > worst:
                            worst, worst_name = b, ly.name
                cache[kind] = (worst, worst_name)
        return cache[kind]

    out: dict[str, MemoryFit] = {}
    for name, mem in target.memories.items():
        if not mem.holds:
            continue
        holds = mem.holds
        if mem.on_overflow == "stream" and not mem.size_varies:
            # A stated size (a compiler's report) is the room for weights already.
            holds = tuple(h for h in holds if h != "layer_io")
        parts = {f"{k}_bytes": part(k)[0] for k in holds}
        if "layer_io" in holds and mem.layer_io_max_bytes:
            parts["layer_io_bytes"] = min(parts["layer_io_bytes"], mem.layer_io_max_bytes)
        worst = part("layer_io")[1] if "layer_io" in holds else None
        out[name] = MemoryFit(
            name,
            sum(parts.values()),
            mem.size_bytes,
            mem.on_overflow,
            parts,
            worst,
            tuple(f"{k}_bytes" for k in holds if k in unknown),
        )
    return out


def _unsized_activations(graph: Graph) -> bool:
    """Some non-constant tensor (of the graph or a subgraph that can run) has a size not
    known statically."""
    from infercast.analysis.cost import dead_graphs

    dead = dead_graphs(graph)
    return any(
        not t.is_constant and t.nbytes is None
        for _, g in graph.all_graphs()
        if id(g) not in dead
        for t in g.tensors.values()
    )


def _arena_bytes(graph: Graph, dev: Graph, memory: MemoryAnalysis | None) -> int:
    """The activation arena the device needs: ``memory``'s when it plans the device's
    graph, else a plan made now (analysis/memory.py)."""
    if memory is not None and dev is graph and memory.graph is graph:
        return memory.arena_bytes
    return plan_graph(dev).arena_bytes


def place(graph: Graph, target: Target, *, memory: MemoryAnalysis | None = None) -> PlacementReport:
    """Place every node of ``graph`` on ``target``.

    ``memory`` is ``graph``'s memory plan when the caller has made it: its arena is
    the ``activations`` part of a memory fit. When the target re-types the
    tensors (``compile.quantize_float_to``) or no plan is given, the device's
    graph is planned here, once, and only if one of the target's memories holds
    activations.
    """
    tgt = target
    if not isinstance(tgt, Target):
        raise TypeError(f"place() takes a loaded Target, not {type(tgt).__name__}")
    dev = device_graph(graph, tgt)
    notes = []
    if format_mismatch(graph, tgt):
        # One statement for the whole model, not "does not run this operator" per layer.
        notes.append(
            FORMAT_MISMATCH.format(
                **_context(tgt), format=graph.format.upper(),
                an="n" if graph.format.upper()[:1] in "AEIOU" else "",
            )
        )  # fmt: skip
        layers = [_place_node(dev, node, tgt, placed=False) for node in dev.nodes]
    elif _compiled(dev, tgt):
        notes.append(compiled_note(tgt))
        layers = [_place_compiled(dev, node, tgt) for node in dev.nodes]
    else:
        layers = [_place_node(dev, node, tgt) for node in dev.nodes]
        if tgt.placement.segments == "single" and tgt.placement.accelerator:
            layers = _single_segment(dev, layers, tgt)
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
        fit=_fit(dev, layers, tgt, lambda: _arena_bytes(graph, dev, memory)),
        notes=tuple(notes),
    )
