"""The cost walker: one pass over a graph, one handler per node, per-layer figures.

Conventions (stated in every output):

* **MACs** are multiply-accumulates of conv, depthwise conv, transposed conv,
  fully-connected, MatMul/Gemm/Einsum/attention and recurrent cells.
* **FLOPs** count every arithmetic operation; a MAC is 2 FLOPs. Bias adds and
  fused activations of a conv / FC are not counted (the papers' convention).
* **params** are elements of constant inputs that carry weights (float or
  quantised values); shape, axis and bound arguments are not parameters. A
  tensor shared by several layers counts once in the totals.
* **weight_bytes** are the bytes the file stores for those parameters;
  **runtime_weight_bytes** what the runtime holds after decoding (fp16 weights
  dequantised to fp32, sparse weights densified).
* An op with no handler is *unsupported*: its MACs and FLOPs are ``None``, it is
  listed in ``unsupported_ops``, and the totals say they are incomplete.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any

from infercast._gc import paused_gc
from infercast._records import record
from infercast.analysis.loops import trip_count
from infercast.errors import ModelFileError
from infercast.ir.dtypes import DType
from infercast.ir.graph import Graph, Node, Shape, Tensor
from infercast.ir.labels import LayerStatus
from infercast.ir.views import ShapeUnknownError
from infercast.ops.registry import (
    Handler,
    OpContext,
    OpCost,
    argument_inputs,
    handler_table,
    is_weight,
)

MAX_CALL_DEPTH = 64
"""Deepest chain of subgraphs calling subgraphs analysed (deeper: a corrupt file)."""


@record
class LayerCost:
    subgraph: str
    index: int
    name: str
    op: str
    native_op: str
    status: LayerStatus
    output_shapes: tuple[Shape | None, ...]
    output_dtypes: tuple[str, ...]
    macs: int | None
    flops: int | None
    params: int
    weight_bytes: int
    runtime_weight_bytes: int
    input_bytes: int | None
    output_bytes: int | None
    note: str = ""

    @property
    def bytes_moved(self) -> int | None:
        if self.input_bytes is None or self.output_bytes is None:
            return None
        return self.input_bytes + self.output_bytes + self.weight_bytes

    @property
    def arithmetic_intensity(self) -> float | None:
        """FLOPs per byte moved (activations in and out, weights as stored)."""
        moved = self.bytes_moved
        if self.flops is None or not moved:
            return None
        return self.flops / moved


@dataclass(frozen=True)
class Totals:
    macs: int
    flops: int
    params: int
    weight_bytes: int
    runtime_weight_bytes: int
    input_bytes: int
    output_bytes: int
    layers: int
    unsupported_layers: int
    unknown_shape_layers: int

    @property
    def complete(self) -> bool:
        """False when some layer's cost is unknown (unsupported op or unknown shape)."""
        return self.unsupported_layers == 0 and self.unknown_shape_layers == 0

    @property
    def arithmetic_intensity(self) -> float | None:
        moved = self.input_bytes + self.output_bytes + self.weight_bytes
        return self.flops / moved if moved else None


@dataclass(frozen=True)
class UnsupportedOp:
    op: str
    native_op: str
    count: int
    layers: tuple[str, ...]


@dataclass(frozen=True)
class Analysis:
    graph: Graph
    layers: tuple[LayerCost, ...]
    totals: Totals
    unsupported: tuple[UnsupportedOp, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    def main_layers(self) -> list[LayerCost]:
        return [ly for ly in self.layers if ly.subgraph == self.graph.name]


_DTYPE_NAMES: dict[DType, str] = {d: d.value for d in DType}
_NO_VALUES: dict[str, Any] = {}
"""The cost walker knows no values beyond the constants' own (read only)."""


def _weights(node: Node, ins: list[Tensor | None], handler: Handler | None) -> list[Tensor]:
    """The node's weight tensors, each once (by name), skipping the op's argument
    inputs: :func:`~infercast.ops.registry.weight_inputs` over tensors already looked up."""
    args = argument_inputs(node, handler)
    out: list[Tensor] = []
    names: list[str] = []
    for i, t in enumerate(ins):
        if t is None or not t.is_constant or i in args or not is_weight(t):
            continue
        name = node.inputs[i]
        if name not in names:
            names.append(name)
            out.append(t)
    return out


def _activation_bytes(tensors: list[Tensor]) -> int | None:
    total = 0
    for t in tensors:
        n = t.nbytes
        if n is None:
            return None
        total += n
    return total


def _shape_str(shape: Shape | None) -> str:
    if shape is None:
        return "?"
    return "x".join("?" if d is None else str(d) for d in shape) or "scalar"


_CONTAINERS = (DType.VARIANT, DType.RESOURCE)


def dead_graphs(graph: Graph) -> set[int]:
    """id() of every subgraph that cannot run: the other branches of an If with a
    ``static_branch``, and everything they call."""
    dead: set[int] = set()

    def mark(g: Graph) -> None:
        dead.add(id(g))
        for sub in g.subgraphs.values():
            mark(sub)

    def visit(g: Graph) -> None:
        for node in g.nodes:
            run = called_subgraphs(node)
            for key in node.subgraphs:
                sub = g.subgraphs.get(key)
                if sub is not None:
                    (visit if key in run else mark)(sub)

    visit(graph)
    return dead


def called_subgraphs(node: Node) -> tuple[str, ...]:
    """The subgraphs ``node`` may run: an If whose other branch cannot run with these
    shapes (``static_branch``, set by the ONNX shape pass) runs that branch only."""
    taken = node.attrs.get("static_branch")
    if node.op == "if" and isinstance(taken, str) and taken in node.subgraphs:
        return (taken,)
    return node.subgraphs


def _partial_outputs(layer: LayerCost, outs: list[Tensor]) -> LayerCost:
    """A layer with an output whose shape is not fully known is ``unknown_shape``.

    Its size (bytes, memory, everything downstream) is unknown, so the totals cannot
    be complete. The cost rule ran without needing those dimensions, so the MACs and
    FLOPs it gave stay (they depend on the inputs only, as a Reshape's 0 or a
    NonMaxSuppression's worst case); the note says so.
    """
    # Containers (ONNX sequences, optionals, maps; handles) have no shape to know.
    partial = [t for t in outs if not t.is_static and t.dtype not in _CONTAINERS]
    if not partial:
        return layer
    shown = ", ".join(f"{t.name} [{_shape_str(t.shape)}]" for t in partial[:3])
    if len(partial) > 3:
        shown += f" and {len(partial) - 3} more"
    counted = ""
    if layer.flops is not None and layer.status == "ok":
        counted = f"; its {layer.flops:,} FLOPs do not depend on the unknown dimensions"
    note = f"output shape not known statically: {shown}{counted}"
    if layer.note:
        note = f"{note} ({layer.note})"
    return replace(layer, status="unknown_shape", note=note)


class _Walker:
    def __init__(self, root: Graph) -> None:
        self.root = root
        self.layers: list[LayerCost] = []
        self.notes: list[str] = []
        self.sub_totals: dict[str, tuple[int | None, int | None]] = {}
        self.sub_partial: dict[str, bool] = {}
        self.layer_graphs: list[int] = []
        """id() of the graph of each entry of ``layers``."""
        # (graph name, node index) -> the node's weight tensors, for the unique totals
        self.weights: dict[tuple[str, int], list[Tensor]] = {}
        self.handlers = handler_table()
        self.depth = 0

    def walk(self, graph: Graph) -> tuple[int | None, int | None]:
        """Append the layers of ``graph``; return its (MACs, FLOPs). When some layer
        has no cost rule or a shape not known statically, they are a lower bound and
        ``sub_partial[graph.name]`` says so (the op calling it is then unknown too)."""
        macs = 0
        flops = 0
        complete = True
        for node in graph.nodes:
            layer = self.layer(graph, node)
            self.layers.append(layer)
            self.layer_graphs.append(id(graph))
            if layer.status in ("unsupported", "unknown_shape"):
                complete = False
            macs += layer.macs or 0
            flops += layer.flops or 0
        self.sub_partial[graph.name] = not complete
        return macs, flops

    def subgraph_cost(self, graph: Graph, name: str) -> tuple[int | None, int | None]:
        if name not in self.sub_totals:
            sub = graph.subgraphs.get(name) or self.root.subgraphs.get(name)
            if sub is None:
                self.sub_totals[name] = (None, None)
            else:
                self.sub_totals[name] = (0, 0)  # guards recursion
                self.depth += 1
                if self.depth > MAX_CALL_DEPTH:
                    raise ModelFileError(
                        f"{self.root.path}: subgraphs call each other more than "
                        f"{MAX_CALL_DEPTH} deep",
                        "the file is corrupt or crafted",
                    )
                self.sub_totals[name] = self.walk(sub)
                self.depth -= 1
        return self.sub_totals[name]

    def layer(self, graph: Graph, node: Node) -> LayerCost:
        tensors = graph.tensors
        outs = [tensors[n] for n in node.outputs if n]
        ins = [tensors[n] if n else None for n in node.inputs]
        act_in: list[Tensor] = []  # distinct activation inputs
        has_constant = False
        for t in ins:
            if t is not None:
                if t.is_constant:
                    has_constant = True
                elif t not in act_in:
                    act_in.append(t)
        folded = node.folded
        if folded:
            return LayerCost(
                graph.name,
                node.index,
                node.name,
                node.op,
                node.native_op,
                "folded",
                tuple([t.shape for t in outs]),
                tuple([_DTYPE_NAMES[t.dtype] for t in outs]),
                0,
                0,
                0,
                0,
                0,
                _activation_bytes(act_in),
                _activation_bytes(outs),
                "constant: computed once at load time",
            )
        handler = self.handlers.get(node.op)
        weights = _weights(node, ins, handler) if has_constant else []
        if weights:
            self.weights[(graph.name, node.index)] = weights
        status: LayerStatus = "ok"
        macs: int | None = None
        flops: int | None = None
        note = ""
        control_flow = handler is not None and handler.control_flow
        if handler is None:
            status, note = "unsupported", f"no cost rule for {node.native_op}"
        elif not control_flow:  # control flow: counted from the called subgraphs below
            try:
                ctx = OpContext(graph, node, ins, outs, _NO_VALUES, _complete_cost)
                cost = handler.cost(ctx)
                macs, flops, note = cost.macs, cost.flops, cost.note
            except ShapeUnknownError as exc:
                status, note = "unknown_shape", str(exc)
            except (IndexError, KeyError, ValueError, TypeError, ZeroDivisionError) as exc:
                status, note = "unknown_shape", f"cost rule failed on this node's shapes: {exc}"
        params = weight_bytes = runtime_weight_bytes = 0
        for t in weights:
            params += t.elements or 0
            weight_bytes += t.storage_bytes
            runtime_weight_bytes += t.nbytes or 0
        layer = LayerCost(
            graph.name,
            node.index,
            node.name,
            node.op,
            node.native_op,
            status,
            tuple([t.shape for t in outs]),
            tuple([_DTYPE_NAMES[t.dtype] for t in outs]),
            macs,
            flops,
            params,
            weight_bytes,
            runtime_weight_bytes,
            _activation_bytes(act_in),
            _activation_bytes(outs),
            note,
        )
        if control_flow:
            layer = self.control_flow(graph, node, layer)
        if layer.status in ("ok", "control_flow") or control_flow:
            for t in outs:
                if not t.is_static:
                    return _partial_outputs(layer, outs)
        return layer

    def control_flow(self, graph: Graph, node: Node, base: LayerCost) -> LayerCost:
        """WHILE / IF / Loop / Scan / CALL_ONCE: the called subgraphs' cost, times the
        trip count where the graph fixes it (analysis/loops.py), else once. When a
        called subgraph has layers of unknown cost, the layer is ``unknown_shape`` and
        its MACs and FLOPs are a lower bound (the note says so)."""
        layer = self._control_flow_cost(graph, node, base)
        partial = [s for s in called_subgraphs(node) if self.sub_partial.get(s)]
        if layer.status != "control_flow" or not partial:
            return layer
        return replace(
            layer,
            status="unknown_shape",
            note=f"lower bound: {len(partial)} called subgraph(s) have layers of unknown cost "
            f"({', '.join(partial[:2])}); {layer.note}",
        )

    def _control_flow_cost(self, graph: Graph, node: Node, base: LayerCost) -> LayerCost:
        costs = {s: self.subgraph_cost(graph, s) for s in node.subgraphs}
        taken = node.attrs.get("static_branch")
        if node.op == "if" and isinstance(taken, str) and taken in costs:
            m, f = costs[taken]
            if m is None or f is None:
                return replace(
                    base, status="unknown_shape", note="a called subgraph has unknown cost"
                )
            other = ", ".join(s.rsplit("/", 1)[-1] for s in node.subgraphs if s != taken)
            return replace(
                base,
                status="control_flow",
                macs=m,
                flops=f,
                note=f"the {taken.rsplit('/', 1)[-1]}: {other} cannot run with these shapes",
            )
        if any(m is None or f is None for m, f in costs.values()):
            return replace(base, status="unknown_shape", note="a called subgraph has unknown cost")
        macs = {s: m or 0 for s, (m, _) in costs.items()}
        flops = {s: f or 0 for s, (_, f) in costs.items()}
        if node.op == "if":
            return replace(
                base,
                status="control_flow",
                macs=max(macs.values(), default=0),
                flops=max(flops.values(), default=0),
                note="the costlier branch",
            )
        trips = trip_count(graph, node, {**self.root.subgraphs, **graph.subgraphs})
        if trips is None or node.op not in ("while", "loop", "scan"):
            note = "called subgraphs counted once"
            if node.op in ("while", "loop", "scan"):
                note += " (iterations are not fixed in the graph)"
            return replace(
                base,
                status="control_flow",
                macs=sum(macs.values()),
                flops=sum(flops.values()),
                note=note,
            )
        cond = str(node.attrs.get("cond_subgraph", ""))

        def times(s: str) -> int:
            # A WHILE condition runs once more than the body.
            return trips + 1 if s == cond else trips

        return replace(
            base,
            status="control_flow",
            macs=sum(times(s) * m for s, m in macs.items()),
            flops=sum(times(s) * f for s, f in flops.items()),
            note=f"{trips} iterations (fixed in the graph); subgraphs counted per iteration",
        )


def _complete_cost(sub: Graph) -> OpCost | None:
    """A called subgraph's cost, for handlers (None when a layer of it has no known cost)."""
    result = analyze_graph(sub)
    if not result.totals.complete:
        return None
    return OpCost(macs=result.totals.macs, flops=result.totals.flops)


_MEMO: ContextVar[dict[int, tuple[Graph, Analysis]] | None] = ContextVar("memo", default=None)


def analyze_graph(graph: Graph) -> Analysis:
    """Per-layer and total compute of ``graph`` (subgraphs listed after the main graph).

    While one analysis runs, a graph reached again (a control-flow body an op handler
    costs through this function) is analysed once: nested ``If`` bodies cost linear
    time in the depth, not 2^depth."""
    memo = _MEMO.get()
    if memo is None:
        memo = {}
        token = _MEMO.set(memo)
        try:
            return _memoised(graph, memo)
        finally:
            _MEMO.reset(token)
    return _memoised(graph, memo)


def _memoised(graph: Graph, memo: dict[int, tuple[Graph, Analysis]]) -> Analysis:
    hit = memo.get(id(graph))
    if hit is not None and hit[0] is graph:
        return hit[1]
    result = _analyze_graph(graph)
    memo[id(graph)] = (graph, result)
    return result


@paused_gc()
def _analyze_graph(graph: Graph) -> Analysis:
    walker = _Walker(graph)
    dead = dead_graphs(graph)
    walker.walk(graph)
    for name, sub in graph.subgraphs.items():
        if name not in walker.sub_totals:
            walker.sub_totals[name] = walker.walk(sub)
    layers = walker.layers
    main = [ly for ly in layers if ly.subgraph == graph.name] if graph.subgraphs else layers
    # Layers of branches that cannot run with these shapes are listed, not counted.
    never = {i for i, g in enumerate(walker.layer_graphs) if g in dead} if dead else set()
    live = [ly for i, ly in enumerate(layers) if i not in never] if never else layers

    # Unique weights over the main graph and everything it calls.
    unique: dict[str, tuple[int, int, int]] = {}
    for (gname, _index), weights in walker.weights.items():
        for t in weights:
            root = t.derived_from or t.name
            # ONNX names are unique across the model (bodies read outer values by
            # name); TFLite subgraphs number their tensors independently.
            key = root if graph.format == "onnx" else f"{gname}/{root}"
            unique[key] = (t.elements or 0, t.storage_bytes, t.nbytes or 0)
    macs = sum(ly.macs or 0 for ly in main)
    flops = sum(ly.flops or 0 for ly in main)
    unsupported = [ly for ly in live if ly.status == "unsupported"]
    unknown = [ly for ly in live if ly.status == "unknown_shape"]
    totals = Totals(
        macs=macs,
        flops=flops,
        params=sum(v[0] for v in unique.values()),
        weight_bytes=sum(v[1] for v in unique.values()),
        runtime_weight_bytes=sum(v[2] for v in unique.values()),
        input_bytes=sum(ly.input_bytes or 0 for ly in main),
        output_bytes=sum(ly.output_bytes or 0 for ly in main),
        layers=len(layers),
        unsupported_layers=len(unsupported),
        unknown_shape_layers=len(unknown),
    )
    groups: dict[tuple[str, str], list[str]] = {}
    for ly in unsupported:
        groups.setdefault((ly.op, ly.native_op), []).append(ly.name)
    unsup = tuple(
        UnsupportedOp(op, native, len(names), tuple(names))
        for (op, native), names in sorted(groups.items())
    )
    notes = list(graph.notes)
    for _name, sub in graph.subgraphs.items():
        notes.extend(sub.notes)
    if never:
        notes.append(
            f"{len(never)} layer(s) of If branches that cannot run with these input shapes "
            "are listed but not counted"
        )
    if unknown:
        notes.append(
            f"{len(unknown)} layer(s) have shapes that are not known statically; "
            "their cost or their activation bytes are missing from the totals"
        )
    if unsup:
        notes.append(
            f"{len(unsupported)} layer(s) of {len(unsup)} op type(s) have no cost rule; "
            "the totals exclude them"
        )
    return Analysis(graph, tuple(layers), totals, unsup, tuple(notes))
