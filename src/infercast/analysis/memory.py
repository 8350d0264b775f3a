"""Memory: activation lifetimes, the arena plan, the peak, and weight bytes.

:func:`plan_graph` answers "will it fit" before deployment:

* **activation_lower_bound_bytes** — the largest total size of tensors alive
  at the same step (no arena can be smaller), and where it occurs: the step,
  its node, and the tensors alive there;
* **peak_activation_bytes** — the size of an actual arena plan: a byte offset
  for every tensor (:mod:`infercast.analysis.planner`), sizes rounded up to
  ``alignment`` (16 bytes by default, TFLite Micro's
  ``MicroArenaBufferAlignment()``); the smallest of the strategies tried;
* **weights** — bytes of constant weight data by storage dtype, as stored in
  the file and as the runtime holds them after decoding (fp16 weights
  dequantised to fp32 by DEQUANTIZE, sparse weights densified): the same
  parameters ``analyze`` counts, a tensor shared by layers counted once;
* **timeline** — live activation bytes at each step (per layer ``live_bytes``);
* **persistent** — variable tensors (state kept across invocations), which
  runtimes keep outside the planned arena.

Which tensors are in the arena, how subgraphs, alias-only ops and the optional
in-place mode are treated: :mod:`infercast.analysis.lifetimes`. What is not
counted: kernels' scratch buffers (TFLite Micro plans them in the same arena;
reference int8 kernels request none for conv / depthwise), the runtime's own
structures (TFLite Micro's "tail": tensor metadata, node structs, quantisation
parameters), and weights copied into RAM.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from infercast._gc import paused_gc
from infercast._records import record
from infercast.analysis.lifetimes import (
    Lifetimes,
    TensorLifetime,
    compute_lifetimes,
    live_bytes_per_step,
)
from infercast.analysis.planner import align_up, plan_offsets
from infercast.errors import InfercastError
from infercast.ir.graph import Graph


@record
class Allocation:
    """One buffer of the plan: where it lies and which tensors live in it."""

    buffer: str
    offset: int
    nbytes: int
    aligned_bytes: int
    first: int
    last: int
    tensors: tuple[str, ...]
    segments: tuple[tuple[int, int, int], ...] = ()
    """(bytes, first, last) pieces when the tensors sharing it differ in size."""

    @property
    def end(self) -> int:
        return self.offset + self.aligned_bytes


@dataclass(frozen=True)
class Peak:
    """The step where the most activation bytes are alive."""

    step: int
    graph: str
    node_index: int
    node_name: str
    op: str
    live_bytes: int
    tensors: tuple[TensorLifetime, ...]
    """The buffers alive there (one tensor per buffer: its owner), largest first."""


@dataclass(frozen=True)
class WeightGroup:
    """Weights of one storage dtype."""

    dtype: str
    """Storage dtype in the file."""
    runtime_dtype: str
    """Dtype the kernels read (after DEQUANTIZE / DENSIFY at load)."""
    tensors: int
    stored_bytes: int
    runtime_bytes: int


@dataclass(frozen=True)
class MemoryAnalysis:
    graph: Graph
    lifetimes: Lifetimes
    alignment: int
    in_place: bool
    lower_bound_bytes: int
    """Largest sum of raw tensor sizes alive at one step."""
    aligned_lower_bound_bytes: int
    """The same with every size rounded up to ``alignment``: the floor for any plan."""
    peak: Peak
    allocations: tuple[Allocation, ...]
    arena_bytes: int
    strategy: str
    strategies: Mapping[str, int]
    timeline: tuple[int, ...]
    """Raw live activation bytes at each step of ``lifetimes.steps``."""
    weights: tuple[WeightGroup, ...]
    persistent_bytes: int
    notes: tuple[str, ...]

    @property
    def complete(self) -> bool:
        """False when some activation's size is not known statically: it is left out
        of the plan, so the arena and the lower bound are only lower bounds."""
        return not self.lifetimes.unsized and all(
            t.nbytes is not None for t in self.lifetimes.persistent
        )

    @property
    def weight_bytes(self) -> int:
        return sum(w.stored_bytes for w in self.weights)

    @property
    def runtime_weight_bytes(self) -> int:
        return sum(w.runtime_bytes for w in self.weights)

    @property
    def mode(self) -> str:
        return "in_place" if self.in_place else "standard"

    def offsets(self) -> dict[str, int]:
        """Tensor key -> byte offset in the arena."""
        out: dict[str, int] = {}
        for a in self.allocations:
            for k in a.tensors:
                out[k] = a.offset
        return out

    def layer_live_bytes(self, graph: str, node_index: int) -> int | None:
        """Live activation bytes while the node runs (the most, for a node that calls
        subgraphs or runs several times); None for a node never executed."""
        span = self.lifetimes.node_spans.get((graph, node_index))
        if span is None:
            return None
        return max(self.timeline[span[0] : span[1] + 1])


def weight_groups(graph: Graph) -> tuple[WeightGroup, ...]:
    """Constant weight inputs read at inference, grouped by storage dtype."""
    from infercast.ops.registry import weight_inputs

    unique: dict[str, tuple[str, str, int, int]] = {}
    for gname, g in graph.all_graphs():
        for node in g.nodes:
            if node.folded:
                continue
            for t in weight_inputs(g, node):
                root = t.derived_from or t.name
                key = root if graph.format == "onnx" else f"{gname}/{root}"
                src = g.tensors.get(root) if t.derived_from else None
                stored = (src.dtype if src is not None else t.dtype).value
                unique[key] = (stored, t.dtype.value, t.storage_bytes, t.nbytes or 0)
    groups: dict[tuple[str, str], list[int]] = {}
    for stored, runtime, sb, rb in unique.values():
        acc = groups.setdefault((stored, runtime), [0, 0, 0])
        acc[0] += 1
        acc[1] += sb
        acc[2] += rb
    return tuple(
        WeightGroup(s, r, v[0], v[1], v[2])
        for (s, r), v in sorted(groups.items(), key=lambda kv: -kv[1][1])
    )


def _peak(graph: Graph, lt: Lifetimes, timeline: list[int]) -> Peak:
    """The first step with the most live bytes, and the buffers alive there."""
    lower = max(timeline, default=0)
    p = timeline.index(lower) if timeline else 0
    by_key = {t.key: t for t in lt.tensors}
    # per buffer alive at the peak, the tensor that sets its size there
    alive = sorted(
        (
            max(
                (by_key[k] for k in b.tensors if by_key[k].first <= p <= by_key[k].last),
                key=lambda t: (t.nbytes, -t.first),
            )
            for b in lt.buffers
            if b.first <= p <= b.last
        ),
        key=lambda t: (-t.nbytes, t.first, t.key),
    )
    step = lt.steps[p] if lt.steps else None
    return Peak(
        step=p,
        graph=step.graph if step else graph.name,
        node_index=step.node_index if step else -1,
        node_name=step.node_name if step else "",
        op=step.op if step else "",
        live_bytes=lower,
        tensors=tuple(alive),
    )


@paused_gc()
def plan_graph(graph: Graph, *, alignment: int = 16, in_place: bool = False) -> MemoryAnalysis:
    """Lifetimes, lower bound, arena plan and weights of a loaded graph."""
    if alignment < 1:
        raise InfercastError(
            f"the arena alignment must be a positive number of bytes, not {alignment}",
            "use --alignment 16 (TFLite Micro) or 1 for none",
        )
    lt = compute_lifetimes(graph, in_place=in_place)
    buffers = lt.buffers
    result = plan_offsets(
        [b.nbytes for b in buffers],
        [b.first for b in buffers],
        [b.last for b in buffers],
        alignment=alignment,
        segments=[b.segments for b in buffers],
    )
    allocations = tuple(
        Allocation(
            b.key,
            off,
            b.nbytes,
            align_up(b.nbytes, alignment),
            b.first,
            b.last,
            b.tensors,
            b.segments,
        )
        for b, off in zip(buffers, result.offsets, strict=True)
    )
    timeline = live_bytes_per_step(len(lt.steps), buffers)
    peak = _peak(graph, lt, timeline)
    persistent = sum(t.nbytes or 0 for t in lt.persistent)
    notes = list(lt.notes)
    if lt.unsized:
        shown = ", ".join(f"{t.tensor} ({t.reason.removeprefix('shape ')})" for t in lt.unsized[:3])
        more = f" and {len(lt.unsized) - 3} more" if len(lt.unsized) > 3 else ""
        notes.append(
            f"{len(lt.unsized)} tensor(s) of unknown size are not in the plan: {shown}{more}; "
            "the arena and the lower bound are lower bounds"
        )
    if lt.persistent:
        notes.append(
            f"{len(lt.persistent)} variable tensor(s), {persistent:,} B, persist across "
            "invocations outside the arena"
        )
    if in_place:
        notes.append(
            "in-place mode: elementwise and depthwise ops write over an input that dies "
            "there (not what TFLite Micro's default planner does)"
        )
    return MemoryAnalysis(
        graph=graph,
        lifetimes=lt,
        alignment=alignment,
        in_place=in_place,
        lower_bound_bytes=peak.live_bytes,
        aligned_lower_bound_bytes=result.lower_bound_bytes,
        peak=peak,
        allocations=allocations,
        arena_bytes=result.arena_bytes,
        strategy=result.strategy,
        strategies=result.tried,
        timeline=tuple(timeline),
        weights=weight_groups(graph),
        persistent_bytes=persistent,
        notes=tuple(notes),
    )
