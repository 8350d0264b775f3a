"""Renderers of a :class:`~infercast.analysis.memory.MemoryAnalysis`: the arena plan as
JSON, CSV and a terminal table (``infercast analyze --memory-plan``), and the memory
fields the analysis report adds (totals, per-layer ``live_bytes``).

JSON schema ``infercast.memory_plan/1``: ``arena_bytes`` (the plan's size),
``lower_bound_bytes`` (raw sizes) and ``aligned_lower_bound_bytes`` (sizes
rounded up to ``alignment``: the floor for any aligned plan), ``peak`` (where
the lower bound occurs and which tensors make it), ``buffers`` (offset, largest
size, first and last step, the tensors sharing it, and ``segments``: its size
over time as [bytes, first, last] pieces), ``tensors`` (one row each, with
its offset), ``steps`` (the execution order with live bytes), ``weights``.
Steps are positions in the flattened execution order (see
``infercast.analysis.lifetimes``); offsets and sizes are bytes.
"""

from __future__ import annotations

from typing import Any

from infercast.analysis.memory import MemoryAnalysis
from infercast.analysis.planner import align_up
from infercast.report.text import cell, csv_text, shown
from infercast.report.units import human_bytes, short_name

PLAN_SCHEMA = "infercast.memory_plan/1"

MEMORY_CONVENTIONS = {
    "peak_activation_bytes": "size of the activation arena plan: every non-constant tensor "
    "(inputs, outputs, intermediates, subgraphs) at a byte offset, sizes rounded up to the "
    "alignment; weights, variable tensors and kernel scratch buffers not included",
    "activation_lower_bound_bytes": "largest total size of tensors alive at the same step "
    "(raw sizes); no arena can be smaller",
    "live_bytes": "activation bytes alive while the layer runs (its inputs, outputs and "
    "every tensor still needed later)",
}


def _step_info(m: MemoryAnalysis, step: int) -> dict[str, Any]:
    s = m.lifetimes.steps[step]
    return {
        "step": step,
        "subgraph": s.graph,
        "node_index": s.node_index,
        "node": s.node_name,
        "op": s.op,
    }


def summary_dict(m: MemoryAnalysis) -> dict[str, Any]:
    """The ``memory`` section of the analysis JSON."""
    peak = m.peak
    return {
        "mode": m.mode,
        "alignment_bytes": m.alignment,
        "arena_bytes": m.arena_bytes,
        "strategy": m.strategy,
        "strategies": dict(m.strategies),
        "lower_bound_bytes": m.lower_bound_bytes,
        "aligned_lower_bound_bytes": m.aligned_lower_bound_bytes,
        "peak": {
            "step": peak.step,
            "subgraph": peak.graph,
            "node_index": peak.node_index,
            "node": peak.node_name,
            "op": peak.op,
            "live_bytes": peak.live_bytes,
            "tensors": [
                {
                    "name": t.tensor,
                    "subgraph": t.graph,
                    "shape": list(t.shape),
                    "dtype": t.dtype,
                    "bytes": t.nbytes,
                    "first_step": t.first,
                    "last_step": t.last,
                }
                for t in peak.tensors
            ],
        },
        "weights_by_dtype": [
            {
                "dtype": w.dtype,
                "runtime_dtype": w.runtime_dtype,
                "tensors": w.tensors,
                "stored_bytes": w.stored_bytes,
                "runtime_bytes": w.runtime_bytes,
            }
            for w in m.weights
        ],
        "weight_bytes": m.weight_bytes,
        "runtime_weight_bytes": m.runtime_weight_bytes,
        "persistent_bytes": m.persistent_bytes,
        "persistent": [
            {"name": t.tensor, "subgraph": t.graph, "bytes": t.nbytes, "reason": t.reason}
            for t in m.lifetimes.persistent
        ],
        "complete": m.complete,
        "unsized_tensors": [
            {"name": t.tensor, "subgraph": t.graph, "reason": t.reason} for t in m.lifetimes.unsized
        ],
        "notes": list(m.notes),
    }


def plan_dict(m: MemoryAnalysis) -> dict[str, Any]:
    """The whole plan: every buffer and tensor with its offset, and the steps."""
    g = m.graph
    offsets = m.offsets()
    steps = [
        {**_step_info(m, s.index), "depth": s.depth, "live_bytes": m.timeline[s.index]}
        for s in m.lifetimes.steps
    ]
    return {
        "schema": PLAN_SCHEMA,
        "model": {"path": g.path, "format": g.format, "name": g.name},
        **summary_dict(m),
        "buffers": [
            {
                "offset": a.offset,
                "bytes": a.nbytes,
                "aligned_bytes": a.aligned_bytes,
                "end": a.end,
                "first_step": a.first,
                "last_step": a.last,
                "tensors": list(a.tensors),
                "segments": [list(seg) for seg in a.segments],
            }
            for a in sorted(m.allocations, key=lambda a: (a.offset, a.first))
        ],
        "tensors": [
            {
                "name": t.tensor,
                "subgraph": t.graph,
                "key": t.key,
                "offset": offsets[t.key],
                "bytes": t.nbytes,
                "shape": list(t.shape),
                "dtype": t.dtype,
                "kind": t.kind,
                "first_step": t.first,
                "last_step": t.last,
                "buffer": t.buffer,
                "shares": t.shares,
            }
            for t in m.lifetimes.tensors
        ],
        "steps": steps,
    }


PLAN_CSV_COLUMNS = [
    "name",
    "subgraph",
    "offset",
    "end",
    "bytes",
    "aligned_bytes",
    "shape",
    "dtype",
    "kind",
    "first_step",
    "last_step",
    "first_node",
    "last_node",
    "buffer",
    "shares",
]


def plan_records(m: MemoryAnalysis) -> list[dict[str, Any]]:
    """One row per arena tensor, by offset then first step: ``end`` is the offset plus
    the tensor's aligned size; tensors of one ``buffer`` share bytes on purpose."""
    offsets = m.offsets()
    steps = m.lifetimes.steps
    rows = []
    for t in sorted(m.lifetimes.tensors, key=lambda t: (offsets[t.key], t.first, t.key)):
        aligned = align_up(t.nbytes, m.alignment)
        rows.append(
            {
                "name": t.tensor,
                "subgraph": t.graph,
                "offset": offsets[t.key],
                "end": offsets[t.key] + aligned,
                "bytes": t.nbytes,
                "aligned_bytes": aligned,
                "shape": "x".join(map(str, t.shape)),
                "dtype": t.dtype,
                "kind": t.kind,
                "first_step": t.first,
                "last_step": t.last,
                "first_node": steps[t.first].node_name,
                "last_node": steps[t.last].node_name,
                "buffer": t.buffer,
                "shares": t.shares,
            }
        )
    return rows


def plan_csv(m: MemoryAnalysis) -> str:
    """:func:`plan_records` as CSV."""
    return csv_text(PLAN_CSV_COLUMNS, plan_records(m))


def _shape(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape)) or "scalar"


def _short(name: str, n: int = 60) -> str:
    return shown(short_name(name, n))


def peak_lines(m: MemoryAnalysis) -> list[str]:
    """Plain-text lines saying how big the arena is, where the peak is and what makes it."""
    p = m.peak
    where = f"step {p.step}, layer #{p.node_index} {_short(p.node_name)} ({p.op})"
    if p.graph != m.graph.name:
        where += f" in subgraph {p.graph}"
    at_least = "" if m.complete else "at least "
    lines = [
        f"activation arena {at_least}{m.arena_bytes:,} B ({human_bytes(m.arena_bytes)}; plan "
        f"{m.strategy}, {m.alignment}-byte alignment, {m.mode} mode)   lower bound "
        f"{m.lower_bound_bytes:,} B at {where}",
        "  alive at the peak: "
        + "; ".join(
            f"{_short(t.tensor)} {_shape(t.shape)} {t.dtype} {t.nbytes:,} B" for t in p.tensors
        ),
        "  weights: "
        + (
            ", ".join(
                f"{w.dtype} {w.stored_bytes:,} B stored"
                + (
                    f" -> {w.runtime_dtype} {w.runtime_bytes:,} B at run time"
                    if (w.runtime_dtype, w.runtime_bytes) != (w.dtype, w.stored_bytes)
                    else ""
                )
                for w in m.weights
            )
            or "none"
        ),
    ]
    if m.persistent_bytes:
        lines.append(f"  persistent (variables, outside the arena): {m.persistent_bytes:,} B")
    return lines


def render_plan(m: MemoryAnalysis, max_name: int = 60) -> Any:
    """A rich renderable: the buffers by offset (fitted to the width), then the peak."""
    from rich.console import Group

    from infercast.report.table import Col, FitTable, Grid, Row, entry
    from infercast.report.text import shown

    g = m.graph
    cols = [
        Col("offset", "offset", prio=0),
        Col("end", "end", prio=2),
        Col("bytes", "bytes", prio=0),
        Col("steps", "steps", prio=1),
        Col("tensors", "tensor(s)", numeric=False, prio=0, min_width=16),
        Col("shape", "shape", numeric=False, prio=3, min_width=10),
    ]
    by_key = {t.key: t for t in m.lifetimes.tensors}
    peak_keys = {t.buffer for t in m.peak.tensors}
    rows: list[Row] = []
    styles: list[str] = []
    for a in sorted(m.allocations, key=lambda a: (a.offset, a.first)):
        names = [by_key[k].tensor for k in a.tensors]
        owner = by_key[a.buffer]
        rows.append(
            {
                "offset": entry(f"{a.offset:,}", a.offset),
                "end": entry(f"{a.end:,}", a.end),
                "bytes": entry(f"{a.nbytes:,}", a.nbytes),
                "steps": entry(f"{a.first}-{a.last}", a.first),
                "tensors": entry(", ".join(_short(n, max_name) for n in names)),
                "shape": entry(f"{_shape(owner.shape)} {owner.dtype}"),
            }
        )
        styles.append("bold" if a.buffer in peak_keys else "")
    title = f"{shown(g.path or g.name)}  activation arena plan ({len(m.allocations)} buffers)"
    grid = Grid(cols, rows, title=title, row_styles=styles, noun="buffers")
    lines: list[Any] = [FitTable(grid)]
    lines.extend(cell(line) for line in peak_lines(m))
    lines.append(cell("bold rows: the buffers alive at the peak", style="dim"))
    lines.extend(cell(f"note: {note}", style="dim") for note in m.notes)
    return Group(*lines)
