"""Renderers of a :class:`~infercast.targets.placement.PlacementReport` (``infercast check``).

JSON: ``infercast.check/1`` -- ``summary`` (layers per placement, ``fits``,
``exit_code``), one entry per layer with its ``reasons``, the ``segments``,
the ``crossings`` between accelerator and CPU and the ``fit`` of every memory
the target declares. Table: a rich renderable.
"""

from __future__ import annotations

from typing import Any

from infercast.report.names import graph_labels
from infercast.report.summaries import group_reasons, split_line
from infercast.report.table import Col, FitTable, Grid, Row, TableOptions, entry
from infercast.report.text import cell, shown
from infercast.report.units import human_bytes
from infercast.targets.placement import (
    CrossingItem,
    LayerPlacement,
    MemoryFit,
    PlacementReport,
    Reason,
    Segment,
)

SCHEMA = "infercast.check/1"


def reason_dict(r: Reason) -> dict[str, Any]:
    d = {"check": r.check, "outcome": r.outcome, "reason": r.text, "detail": r.detail}
    if r.rewrite:
        d["rewrite"] = r.rewrite
    return d


def reason_line(r: Reason) -> str:
    s = f"{r.text}: {r.detail}" if r.detail else r.text
    return f"{s} -> {r.rewrite}" if r.rewrite else s


def layer_dict(ly: LayerPlacement) -> dict[str, Any]:
    d: dict[str, Any] = {
        "index": ly.index,
        "name": ly.name,
        "op": ly.op,
        "native_op": ly.native_op,
        "placement": ly.placement,
        "unit": ly.unit,
        "reasons": [reason_dict(r) for r in ly.reasons],
    }
    if ly.notes:
        d["notes"] = [reason_dict(r) for r in ly.notes]
    if ly.folded:
        d["folded"] = True
    d["input_bytes"] = ly.input_bytes
    d["output_bytes"] = ly.output_bytes
    return d


def segment_dict(s: Segment) -> dict[str, Any]:
    return {
        "index": s.index,
        "processor": s.processor,
        "unit": s.unit,
        "first_layer": s.first_layer,
        "last_layer": s.last_layer,
        "layers": s.layers,
    }


def crossing_dict(c: CrossingItem) -> dict[str, Any]:
    return {
        "tensor": c.tensor,
        "bytes": c.bytes,
        "from": c.source,
        "to": c.destination,
        "producer": c.producer,
        "consumers": list(c.consumers),
        "boundary": c.boundary,
    }


def incomplete_message(report: PlacementReport) -> str | None:
    """``incomplete: ...`` naming the memories whether the model fits is unknown in;
    None when that is known (check's exit 4 says why on one stderr line)."""
    unknown = [f for f in report.fit.values() if not f.known]
    if not unknown:
        return None
    what = "; ".join(
        f"{f.memory} needs at least {human_bytes(f.required_bytes)} of its "
        f"{human_bytes(f.capacity_bytes)}; {', '.join(f.unknown_parts)} not known statically"
        for f in unknown
    )
    return f"incomplete: whether the model fits is unknown ({what})"


def fit_dict(f: MemoryFit) -> dict[str, Any]:
    d: dict[str, Any] = {
        "required_bytes": f.required_bytes,
        "capacity_bytes": f.capacity_bytes,
        "fits": f.fits if f.known else None,
        "over_by_bytes": f.over_by_bytes,
        "on_overflow": f.on_overflow,
        "parts": dict(f.parts),
    }
    if f.on_overflow == "stream":
        d["streamed_bytes"] = f.over_by_bytes
    if f.worst_layer is not None:
        d["worst_layer"] = f.worst_layer
    if f.unknown_parts:
        d["lower_bound_parts"] = list(f.unknown_parts)
    return d


def crossings_dict(report: PlacementReport) -> dict[str, Any]:
    """Accelerator <-> CPU transfers: count, bytes, switches, the link's estimated time."""
    internal = report.internal_crossings()
    boundary = [c for c in report.crossings if c.boundary]
    cost = report.target.crossing
    return {
        "count": len(internal),
        "bytes": sum(c.bytes or 0 for c in internal),
        "switches": max(len(report.segments) - 1, 0),
        "boundary_count": len(boundary),
        "boundary_bytes": sum(c.bytes or 0 for c in boundary),
        "estimated_s": sum(cost.seconds(c.bytes or 0) for c in internal),
        "items": [crossing_dict(c) for c in report.crossings],
    }


def to_dict(report: PlacementReport) -> dict[str, Any]:
    """The ``infercast.check/1`` document."""
    t = report.target
    return {
        "schema": SCHEMA,
        "target": t.name,
        "target_file": t.path,
        "model": report.model,
        "accelerator": t.placement.accelerator,
        "fallback": t.placement.fallback,
        "summary": {
            **report.counts(),
            "all_on_accelerator": report.all_on_accelerator,
            "fits": report.fits if report.fit_known else None,
            "exit_code": report.exit_code,
            "graph_compile_s": t.graph_compile_s,
            "graph_compile_s_per_weight_byte": t.graph_compile_s_per_weight_byte,
        },
        "layers": [layer_dict(ly) for ly in report.layers],
        "segments": [segment_dict(s) for s in report.segments],
        "crossings": crossings_dict(report),
        "fit": {name: fit_dict(f) for name, f in report.fit.items()},
        "notes": list(report.notes),
    }


def records(report: PlacementReport) -> list[dict[str, Any]]:
    """One flat dict per layer: where it runs and why (reasons joined with ``; ``)."""
    return [
        {
            "index": ly.index,
            "name": ly.name,
            "op": ly.op,
            "native_op": ly.native_op,
            "placement": ly.placement,
            "unit": ly.unit,
            "folded": ly.folded,
            "reasons": "; ".join(reason_line(r) for r in ly.reasons),
            "notes": "; ".join(reason_line(r) for r in ly.notes),
            "input_bytes": ly.input_bytes,
            "output_bytes": ly.output_bytes,
        }
        for ly in report.layers
    ]


_STYLE = {"accelerator": "green", "partial": "yellow", "cpu": "red"}
_RANK = {"cpu": 0, "partial": 1, "accelerator": 2}
"""Sort order of ``--sort placement`` (and ``--top`` alone): what falls back first."""

CHECK_COLUMNS = [
    Col("index", "#", prio=0),
    Col("name", "layer", numeric=False, prio=0, min_width=20),
    Col("op", "op", numeric=False, prio=2, min_width=8),
    Col("placement", "placement", numeric=False, prio=0, short="on"),
    Col("unit", "unit", numeric=False, prio=3),
    Col("why", "reasons (see below)", numeric=False, prio=1, short="why", min_width=6),
]


def layer_grid(report: PlacementReport) -> tuple[Grid, list[Any]]:
    """The per-layer rows, and the reason groups they refer to ([1], [2], ...)."""
    labels = graph_labels(report.graph)
    main = report.graph.name
    groups = group_reasons(report)
    ref: dict[tuple[int, str, str, str], int] = {}
    for n, g in enumerate(groups, 1):
        for i in g.layers:
            ref[(i, g.check, g.text, g.detail)] = n
    rows: list[Row] = []
    for ly in report.layers:
        nums: list[int] = []
        for r in (*ly.reasons, *ly.notes):
            for key in ((ly.index, r.check, r.text, r.detail), (ly.index, r.check, r.text, "")):
                if key in ref and ref[key] not in nums:
                    nums.append(ref[key])
                    break
        why = " ".join(f"[{n}]" for n in nums)
        if ly.folded:
            why = "folded at load"
        rows.append(
            {
                "index": entry(ly.index, ly.index),
                "name": entry(labels.get((main, ly.index), ly.name), ly.name),
                "op": entry(ly.native_op, ly.native_op),
                "placement": entry(ly.placement, _RANK[ly.placement], _STYLE[ly.placement]),
                "unit": entry(ly.unit, ly.unit),
                "why": entry(why, why),
            }
        )
    t = report.target
    title = f"{shown(report.model)} on {shown(t.name)}: {split_line(report)}"
    grid = Grid(list(CHECK_COLUMNS), rows, title=title, default_sort="placement", noun="layers")
    return grid, list(groups)


def fit_grid(report: PlacementReport) -> Grid:
    labels, main = graph_labels(report.graph), report.graph.name
    index: dict[str, int] = {}
    for ly in reversed(report.layers):
        index[ly.name] = ly.index
    cols = [
        Col("memory", "memory", numeric=False, prio=0),
        Col("required", "required", prio=0),
        Col("capacity", "capacity", prio=0),
        Col("fits", "fits", numeric=False, prio=0),
        Col("note", "note", numeric=False, prio=1, min_width=12),
    ]
    rows: list[Row] = []
    for f in report.fit.values():
        note = ""
        if not f.fits:
            note = (
                f"streamed: {human_bytes(f.over_by_bytes)}"
                if f.on_overflow == "stream"
                else f"over by {human_bytes(f.over_by_bytes)}"
            )
        if f.worst_layer:
            i = index.get(f.worst_layer)
            who = f.worst_layer if i is None else f"#{i} " + labels.get((main, i), f.worst_layer)
            note = (note + "; " if note else "") + f"largest layer: {who}"
        if f.unknown_parts:
            note = (note + "; " if note else "") + "some sizes unknown: required is a lower bound"
        fits = entry("yes" if f.fits else "no", None, "green" if f.fits else "red")
        if not f.known:
            fits = entry("unknown", None, "yellow")
        at_least = "at least " if f.unknown_parts else ""
        rows.append(
            {
                "memory": entry(f.memory),
                "required": entry(at_least + human_bytes(f.required_bytes), f.required_bytes),
                "capacity": entry(human_bytes(f.capacity_bytes), f.capacity_bytes),
                "fits": fits,
                "note": entry(note),
            }
        )
    return Grid(cols, rows, title="memory fit", noun="memories")


def _verdict(report: PlacementReport) -> Any:
    if report.exit_code == 4:
        return cell(
            "UNKNOWN: nothing falls back, but some tensor sizes are not known statically, "
            "so whether it fits is not known",
            style="bold yellow",
        )
    if report.exit_code != 0:
        return cell("NOT OK: something falls back to the CPU or does not fit", style="bold red")
    if not report.has_accelerator:
        return cell("OK: fits (a CPU-only target: nothing to fall back from)", style="bold green")
    return cell("OK: everything runs on the accelerator and fits", style="bold green")


def render_table(report: PlacementReport, opts: TableOptions | None = None) -> Any:
    """A rich renderable: per-layer placement, the reasons counted once, segments,
    crossings, memory fit and the verdict; every table fits the width it is printed at."""
    from rich.console import Group

    grid, groups = layer_grid(report)
    parts: list[Any] = []
    if report.format_mismatch:  # one statement for the whole model (the notes), no rows
        parts.append(cell(grid.title, style="bold"))
    else:
        parts.append(FitTable(grid, opts))
    if groups and not report.format_mismatch:
        reasons = cell("reasons, each counted once:", style="bold")
        reasons.append("\n")
        for n, g in enumerate(groups, 1):
            style = {"cpu": "red", "partial": "yellow"}.get(g.outcome, "")
            reasons.append(f"[{n}] ", style=style)
            reasons.append(f"{shown(g.line())} ({g.outcome})")
            if g.examples:
                reasons.append(f"\n    e.g. {shown('; '.join(g.examples))}", style="dim")
            reasons.append("\n")
        parts.append(reasons)
    segs = ", ".join(f"{s.processor}[{s.first_layer}-{s.last_layer}]" for s in report.segments)
    cr = crossings_dict(report)
    parts.append(cell(f"segments: {len(report.segments)} ({segs})"))
    parts.append(
        cell(
            f"crossings: {cr['count']} accelerator<->CPU transfer(s), {human_bytes(cr['bytes'])}; "
            f"model inputs/outputs: {cr['boundary_count']}, {human_bytes(cr['boundary_bytes'])}"
        )
    )
    parts.append(FitTable(fit_grid(report)))
    parts.extend(cell(f"note: {n}") for n in report.notes)
    parts.append(_verdict(report))
    return Group(*parts)
