"""Tensor lifetimes over the execution order, and the buffers tensors share.

Which tensors live in the activation arena
    Every non-constant tensor of known size: graph inputs, graph outputs and
    intermediates, of the main graph and of every subgraph it calls. Constants
    and the outputs of ``folded`` nodes (DEQUANTIZE / DENSIFY of a constant,
    ONNX constant subgraphs) are weights, not arena. TFLite *variable* tensors
    (``is_variable``: LSTM state, resource variables) persist across
    invocations: TFLite Micro allocates them outside the planned arena
    (``needs_allocating`` is false for variables in
    ``tensorflow/lite/micro/micro_allocation_info.cc``) and TFLite in its
    persistent arena, so they are listed as *persistent*, not planned.
    Tensors whose size is not known statically are listed as *unsized*.

Steps
    One step per node, in execution order. A node that calls subgraphs
    (WHILE / IF / CALL_ONCE / Loop / If / Scan) is followed by the steps of the
    subgraphs it calls, each opened by an *entry* step where the subgraph's
    inputs come alive; the caller's inputs and outputs stay alive until the
    last of those steps. This is the scope numbering of TFLite Micro's
    ``AllocationInfoBuilder::MarkAllocationLifetimes``, which plans all
    subgraphs in one arena. A subgraph called from several places keeps one
    buffer per tensor, alive over all its calls.

Lifetimes (inclusive step ranges)
    A tensor is alive from the step that produces it to the last step that
    reads it. Graph inputs are alive from step 0; graph outputs until the last
    step (TFLite Micro: "Mark all outputs as persistent to the end of the
    subgraph invocation"). A value no one reads lives during its producer.

Buffers
    Alias-only ops (the ``alias`` fact of the op table: reshape, squeeze,
    unsqueeze, expand_dims, flatten, identity, bitcast, dropout) write no new
    data: their output shares the input's buffer, whose lifetime grows to
    cover both. The rule is TFLite's (``tensorflow/lite/arena_planner.cc``,
    ``InputTensorCanBeShared`` with the kernels' ``kTfLiteInplaceOpInput0Shared |
    kTfLiteInplaceOpDataUnmodified`` flags in ``kernels/reshape.cc``,
    ``squeeze.cc``, ``expand_dims.cc``, ``bitcast.cc``): not when the input is a
    graph input or the output a graph output, and only between tensors of the
    same byte size. ONNX Runtime's Reshape / Squeeze / Unsqueeze / Flatten /
    Identity kernels declare the same alias, and it removes a Dropout whose mask
    output no one reads (``core/optimizer/dropout_elimination.cc``); an alias op
    whose other outputs are read is not shared.
    Sharing a buffer never raises the peak: the two tensors are then never
    both in memory. (TFLite Micro's default planner copies instead; its arena
    can only be larger.)

In-place mode (optional, off by default, labelled in every output)
    An op that can write its output over an input that dies at that op shares
    that input's buffer. Ops: elementwise unary and binary ops (what TFLite's
    ADD / SUB / MUL / DIV kernels allow with ``kTfLiteInplaceOpInput0Shared``,
    and what Arm Vela does for elementwise NPU ops), and depthwise
    convolutions (channel-by-channel in-place depthwise, MCUNet's TinyEngine,
    Lin et al. 2020, whose one-channel scratch buffer is not counted here).
    Conditions: the output is not larger than the input's buffer, the input's
    shape has as many elements as the output (no broadcast input), the input
    is not a graph input, the output not a graph output, and no later step
    reads the input. This lowers the lower bound itself.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import cast

from infercast._gc import paused_gc
from infercast._records import record
from infercast.analysis.cost import called_subgraphs
from infercast.ir.graph import Graph, Node, Tensor
from infercast.ops.registry import ops_where, relabels_input


@record
class Step:
    """One position in the flattened execution order."""

    index: int
    graph: str
    scope: str
    """Unique id of the graph: its name for the main graph, the call name for a subgraph."""
    node_index: int
    """Index of the node in its graph; -1 for a subgraph entry step."""
    node_name: str
    op: str
    depth: int
    """0 for the main graph, 1 for a subgraph it calls, …"""


@record
class TensorLifetime:
    """A tensor of the arena: its size, first and last step, and its buffer."""

    key: str
    """Unique name: the tensor name, prefixed ``subgraph/`` for TFLite subgraphs."""
    graph: str
    tensor: str
    nbytes: int
    first: int
    last: int
    kind: str
    """``input`` | ``output`` | ``input_output`` (of the main graph) | ``activation``."""
    buffer: str
    """Key of the tensor whose buffer this one lives in (itself when it owns one)."""
    shares: str = ""
    """``alias`` (alias-only op) or ``in_place`` when it lives in another tensor's buffer."""
    shape: tuple[int, ...] = ()
    dtype: str = ""


@record
class Buffer:
    """A region the arena must hold: one tensor, or several that share it.

    Tensors sharing a buffer all start at its offset, so at each step it needs
    the largest of its tensors alive then: ``segments`` are the (bytes, first,
    last) pieces of that footprint; ``nbytes`` is the largest.
    """

    key: str
    nbytes: int
    first: int
    last: int
    tensors: tuple[str, ...]
    segments: tuple[tuple[int, int, int], ...] = ()


@record
class OutsideTensor:
    """A non-constant tensor not planned in the arena (persistent or unsized)."""

    key: str
    graph: str
    tensor: str
    nbytes: int | None
    reason: str


@dataclass(frozen=True)
class Lifetimes:
    steps: tuple[Step, ...]
    tensors: tuple[TensorLifetime, ...]
    buffers: tuple[Buffer, ...]
    persistent: tuple[OutsideTensor, ...]
    unsized: tuple[OutsideTensor, ...]
    node_spans: Mapping[tuple[str, int], tuple[int, int]]
    """(graph name, node index) -> (first step, last step) the node occupies;
    a node that calls subgraphs spans their steps; a node of a subgraph called
    several times spans from its first to its last execution."""
    in_place: bool
    notes: tuple[str, ...]

    def tensor(self, key: str) -> TensorLifetime:
        for t in self.tensors:
            if t.key == key:
                return t
        raise KeyError(key)


class _Builder:
    def __init__(self, root: Graph) -> None:
        self.root = root
        self.steps: list[Step] = []
        self.first: dict[str, int] = {}
        self.last: dict[str, int] = {}
        self.where: dict[str, tuple[Graph, str]] = {}
        self.persistent: dict[str, OutsideTensor] = {}
        self.unsized: dict[str, OutsideTensor] = {}
        self.spans: dict[tuple[str, int], tuple[int, int]] = {}
        self.scope_spans: dict[tuple[str, int], tuple[int, int]] = {}
        self.runs: dict[str, int] = {}
        self.graphs: dict[str, Graph] = {}
        self.key_cache: dict[int, dict[str, str | None]] = {}
        self.stack: list[int] = []
        self.notes: list[str] = []

    def key(self, g: Graph, name: str) -> str:
        # ONNX names are unique across the model (bodies read outer values by name);
        # TFLite subgraphs number their tensors independently.
        if g is self.root or self.root.format == "onnx":
            return name
        return f"{g.name}/{name}"

    def arena_key(self, g: Graph, name: str) -> str | None:
        """The tensor's key if it belongs in the arena, else None (recording why)."""
        if not name:
            return None
        t = g.tensors.get(name)
        if t is None or t.is_constant:
            return None
        k = self.key(g, name)
        if t.is_variable:
            if k not in self.persistent:
                self.persistent[k] = OutsideTensor(
                    k, g.name, name, t.nbytes, "variable tensor: persistent across invocations"
                )
            return None
        n = t.nbytes
        if n is None:
            if k not in self.unsized:
                self.unsized[k] = OutsideTensor(
                    k, g.name, name, None, f"shape {t.shape_str()} is not known statically"
                )
            return None
        if n == 0:
            return None
        self.where.setdefault(k, (g, name))
        return k

    def keys_of(self, g: Graph) -> dict[str, str | None]:
        """The arena key of each of ``g``'s tensor names seen so far (None: not arena)."""
        keys = self.key_cache.get(id(g))
        if keys is None:
            keys = self.key_cache[id(g)] = {}
        return keys

    def touch_names(
        self, keys: dict[str, str | None], g: Graph, names: tuple[str, ...], step: int
    ) -> list[str]:
        """Mark the arena tensors among ``names`` alive at ``step``; their keys."""
        first, last = self.first, self.last
        out: list[str] = []
        for name in names:
            if name in keys:
                k = keys[name]
            else:
                k = keys[name] = self.arena_key(g, name)
            if k is None:
                continue
            if k not in first:
                first[k] = step
            if last.get(k, -1) < step:
                last[k] = step
            out.append(k)
        return out

    def new_step(self, g: Graph, scope: str, node: Node | None, depth: int) -> int:
        i = len(self.steps)
        if node is None:
            self.steps.append(Step(i, g.name, scope, -1, f"enter {scope}", "subgraph_entry", depth))
        else:
            self.steps.append(Step(i, g.name, scope, node.index, node.name, node.op, depth))
        return i

    def sub(self, g: Graph, name: str) -> Graph | None:
        return g.subgraphs.get(name) or self.root.subgraphs.get(name)

    def run(self, g: Graph, scope: str, depth: int) -> tuple[int, set[str]]:
        """Append the steps of one execution of ``g``; return its last step and the
        keys of enclosing-scope tensors it reads (ONNX bodies)."""
        self.runs[scope] = self.runs.get(scope, 0) + 1
        self.graphs[scope] = g
        keys = self.keys_of(g)
        local: set[str] = set()
        outer: set[str] = set()
        if g is self.root:
            start = 0
            if not g.nodes:
                self.new_step(g, scope, None, depth)
        else:
            start = self.new_step(g, scope, None, depth)
        local.update(self.touch_names(keys, g, g.inputs, start))
        steps, gname = self.steps, g.name
        for node in g.nodes:
            s = len(steps)
            steps.append(Step(s, gname, scope, node.index, node.name, node.op, depth))
            local.update(self.touch_names(keys, g, node.outputs, s))
            e = s
            called_outer: set[str] = set()
            if node.subgraphs:
                e, called_outer = self.call(g, node, depth, e)
            for k in self.touch_names(keys, g, node.inputs, e):
                if k not in local:
                    outer.add(k)
            if e != s:  # outputs stay alive over the called subgraphs' steps
                self.touch_names(keys, g, node.outputs, e)
                for k in called_outer:
                    if k in self.first:
                        self.last[k] = max(self.last[k], e)
                        if k not in local:
                            outer.add(k)
            for spans, gk in ((self.spans, gname), (self.scope_spans, scope)):
                prev = spans.get((gk, node.index))
                spans[(gk, node.index)] = (prev[0], e) if prev else (s, e)
        self.touch_names(keys, g, g.outputs, len(steps) - 1)
        return len(steps) - 1, outer

    def call(self, g: Graph, node: Node, depth: int, e: int) -> tuple[int, set[str]]:
        """Run the subgraphs ``node`` calls; the last step, the outer keys they read."""
        called_outer: set[str] = set()
        for sub_name in called_subgraphs(node):
            sub = self.sub(g, sub_name)
            if sub is None:
                self.notes.append(f"{node.name}: called subgraph '{sub_name}' not found")
                continue
            if id(sub) in self.stack:
                self.notes.append(f"{node.name}: recursive call of '{sub_name}' not followed")
                continue
            self.stack.append(id(sub))
            e, reads = self.run(sub, sub_name, depth + 1)
            self.stack.pop()
            called_outer |= reads
        return e, called_outer


@paused_gc()
def compute_lifetimes(graph: Graph, *, in_place: bool = False) -> Lifetimes:
    """Lifetimes and buffers of every arena tensor of ``graph`` (see module docstring)."""
    b = _Builder(graph)
    b.stack.append(id(graph))
    b.run(graph, graph.name, 0)
    _resource_variables(b)
    called = {id(g) for g in b.graphs.values()}
    uncalled = [n for n, g in graph.subgraphs.items() if id(g) not in called]
    if uncalled:
        b.notes.append(
            f"{len(uncalled)} subgraph(s) not called from the main graph are not planned: "
            + ", ".join(uncalled[:5])
        )
    union = _Union(b)
    union.share(b, in_place)
    tensors, members = _tensor_lifetimes(b, union, graph)
    by_key = {t.key: t for t in tensors}
    buffers = tuple(
        Buffer(
            r,
            union.size[r],
            union.first[r],
            union.last[r],
            tuple(ms),
            _footprint([(by_key[k].nbytes, by_key[k].first, by_key[k].last) for k in ms]),
        )
        for r, ms in members.items()
    )
    notes = list(b.notes)
    if b.unsized:
        notes.append(
            f"{len(b.unsized)} tensor(s) have no static size and are not planned "
            "(fix input shapes with --input-shape)"
        )
    return Lifetimes(
        steps=tuple(b.steps),
        tensors=tuple(tensors),
        buffers=buffers,
        persistent=tuple(b.persistent.values()),
        unsized=tuple(b.unsized.values()),
        node_spans=dict(b.spans),
        in_place=in_place,
        notes=tuple(notes),
    )


class _Union:
    """Tensors joined into buffers (union-find), with each buffer's size and lifetime."""

    def __init__(self, b: _Builder) -> None:
        self.parent: dict[str, str] = {k: k for k in b.first}
        self.size: dict[str, int] = {}
        for k, (g, name) in b.where.items():
            n = g.tensors[name].nbytes
            assert n is not None
            self.size[k] = n
        self.first = dict(b.first)
        self.last = dict(b.last)
        self.shares: dict[str, str] = {}
        # Graph inputs and outputs (of the main graph and of each called subgraph): an
        # op never writes in place over a buffer that holds one.
        parent = self.parent
        self.pinned = {
            b.key(g, n)
            for g in b.graphs.values()
            for n in (*g.inputs, *g.outputs)
            if n and b.key(g, n) in parent
        }

    def find(self, k: str) -> str:
        parent = self.parent
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    def merge(self, into: str, k: str, how: str) -> None:
        r = self.find(into)
        self.parent[k] = r
        if k in self.pinned:
            self.pinned.add(r)
        self.size[r] = max(self.size[r], self.size[k])
        self.first[r] = min(self.first[r], self.first[k])
        self.last[r] = max(self.last[r], self.last[k])
        self.shares[k] = how

    def share(self, b: _Builder, in_place: bool) -> None:
        """Join each alias op's output to its input's buffer, and (``in_place``) each
        in-place op's output to an input that dies there; in step order, once per node."""
        alias_ops = ops_where(lambda h: h.alias)
        ip_ops = ops_where(lambda h: h.in_place) if in_place else frozenset()
        for step in b.steps:
            if step.node_index < 0 or (step.op not in alias_ops and step.op not in ip_ops):
                continue
            g = b.graphs[step.scope]
            node = g.nodes[step.node_index]
            if node.folded or not node.outputs or not node.outputs[0]:
                continue
            is_alias = relabels_input(g, node)
            if not is_alias and node.op not in ip_ops:
                continue
            span = b.scope_spans.get((step.scope, node.index))
            if span is None or span[0] != step.index:
                continue  # decide once per node, at its first step
            out = b.key(g, node.outputs[0])
            if out not in self.parent or out in self.shares or self.find(out) != out:
                continue
            if node.outputs[0] in g.outputs:
                continue
            once = b.runs.get(step.scope, 0) == 1 and span[0] == span[1]
            self.join_input(b, g, node, out, is_alias, once, step.index)

    def join_input(
        self, b: _Builder, g: Graph, node: Node, out: str, is_alias: bool, once: bool, step: int
    ) -> None:
        """Share the output's buffer with the first input that qualifies."""
        if is_alias:
            cands = [0]
        elif node.op == "depthwise_conv":
            cands = [int(node.attrs.get("data_input", 0))]
        else:
            cands = list(range(len(node.inputs)))
        out_t = g.tensors[node.outputs[0]]
        for ci in cands:
            if ci >= len(node.inputs) or not node.inputs[ci]:
                continue
            in_name = node.inputs[ci]
            ik = b.key(g, in_name)
            if ik not in self.parent or in_name in g.inputs:
                continue
            r = self.find(ik)
            if r == out:
                continue
            in_t = g.tensors[in_name]
            if is_alias:
                if in_t.nbytes != out_t.nbytes:
                    continue
                self.merge(ik, out, "alias")
                return
            # In-place: the input buffer dies here, is big enough, same element count;
            # only for nodes that run once (a subgraph run twice reuses its buffers).
            if not once or self.last[r] != step or self.size[out] > self.size[r]:
                continue
            if r in self.pinned:
                continue
            if node.op != "depthwise_conv" and in_t.elements != out_t.elements:
                continue
            self.merge(ik, out, "in_place")
            return


def _tensor_lifetimes(
    b: _Builder, union: _Union, graph: Graph
) -> tuple[list[TensorLifetime], dict[str, list[str]]]:
    """Every arena tensor in order of (first, last step, key), and each buffer's members."""
    main_in = set(graph.inputs)
    main_out = set(graph.outputs)
    first, last, shares, find = b.first, b.last, union.shares, union.find
    tensors: list[TensorLifetime] = []
    members: dict[str, list[str]] = {}
    for f, la, k in sorted((first[k], last[k], k) for k in first):
        g, name = b.where[k]
        t = g.tensors[name]
        if g is graph and name in main_in:
            kind = "input_output" if name in main_out else "input"
        elif g is graph and name in main_out:
            kind = "output"
        else:
            kind = "activation"
        r = find(k)
        members.setdefault(r, []).append(k)
        tensors.append(
            TensorLifetime(
                k,
                g.name,
                name,
                size_of(t),
                f,
                la,
                kind,
                r,
                shares.get(k, ""),
                tuple(map(int, cast(tuple[int, ...], t.shape or ()))),
                t.dtype.value,
            )
        )
    return tensors, members


def _resource_variables(b: _Builder) -> None:
    """Resource variables (TFLite VAR_HANDLE / ASSIGN_VARIABLE): the runtime keeps
    their values outside the arena (TFLite Micro's ``MicroResourceVariables``, one
    per shared name); sized by the largest value assigned to them."""
    names: dict[tuple[int, str], str] = {}
    for g in b.graphs.values():
        for node in g.nodes:
            if node.op == "var_handle" and node.outputs:
                shared = (
                    str(node.attrs.get("container", ""))
                    + "/"
                    + str(node.attrs.get("shared_name", node.outputs[0]))
                )
                names[(id(g), node.outputs[0])] = shared.lstrip("/")
    sizes: dict[str, int | None] = {}
    for g in b.graphs.values():
        for node in g.nodes:
            if node.op != "assign_variable" or len(node.inputs) < 2:
                continue
            var = names.get((id(g), node.inputs[0]))
            value = g.tensors.get(node.inputs[1])
            if var is None or value is None:
                continue
            n = value.nbytes
            prev = sizes.get(var, 0)
            sizes[var] = None if n is None or prev is None else max(prev, n)
    for shared in sorted(set(names.values())):
        k = f"resource:{shared}"
        b.persistent[k] = OutsideTensor(
            k, "", shared, sizes.get(shared), "resource variable: held by the runtime"
        )


def size_of(t: Tensor) -> int:
    n = t.nbytes
    return 0 if n is None else n


def _footprint(members: list[tuple[int, int, int]]) -> tuple[tuple[int, int, int], ...]:
    """(bytes, first, last) of the tensors sharing a buffer -> the buffer's size over
    time: at each step the largest tensor alive, as maximal constant pieces."""
    if len(members) == 1:
        return (members[0],)
    points = sorted({f for _, f, _ in members} | {la + 1 for _, _, la in members})
    out: list[tuple[int, int, int]] = []
    for a, b in itertools.pairwise(points):
        n = max((s for s, f, la in members if f <= a and la >= b - 1), default=0)
        if n == 0:
            continue
        if out and out[-1][0] == n and out[-1][2] == a - 1:
            out[-1] = (n, out[-1][1], b - 1)
        else:
            out.append((n, a, b - 1))
    return tuple(out)


def live_bytes_per_step(n_steps: int, buffers: Iterable[Buffer], alignment: int = 1) -> list[int]:
    """Bytes (each piece rounded up to ``alignment``) alive at each step."""
    diff = [0] * (n_steps + 1)
    for buf in buffers:
        for size, first, last in buf.segments or ((buf.nbytes, buf.first, buf.last),):
            n = -(-size // alignment) * alignment
            diff[first] += n
            diff[last + 1] -= n
    out = []
    acc = 0
    for i in range(n_steps):
        acc += diff[i]
        out.append(acc)
    return out
