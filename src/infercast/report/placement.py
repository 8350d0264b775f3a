"""Renderers of a :class:`~infercast.targets.placement.PlacementReport` (``infercast check``).

JSON: ``infercast.check/1`` -- ``summary`` (layers per placement, ``fits``,
``exit_code``), one entry per layer with its ``reasons``, the ``segments``,
the ``crossings`` between accelerator and CPU and the ``fit`` of every memory
the target declares. Table: a rich renderable.
"""

from __future__ import annotations

from typing import Any

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


def fit_dict(f: MemoryFit) -> dict[str, Any]:
    d: dict[str, Any] = {
        "required_bytes": f.required_bytes,
        "capacity_bytes": f.capacity_bytes,
        "fits": f.fits,
        "over_by_bytes": f.over_by_bytes,
        "on_overflow": f.on_overflow,
        "parts": dict(f.parts),
    }
    if f.on_overflow == "stream":
        d["streamed_bytes"] = f.over_by_bytes
    if f.worst_layer is not None:
        d["worst_layer"] = f.worst_layer
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
            "fits": report.fits,
            "exit_code": report.exit_code,
            "graph_compile_s": t.graph_compile_s,
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


def _layers_table(report: PlacementReport) -> Any:
    from rich.table import Table

    table = Table(show_lines=False, expand=False)
    for col in ("#", "layer", "op", "placement", "unit", "reasons"):
        table.add_column(col, overflow="fold")
    for ly in () if report.format_mismatch else report.layers:
        why = "; ".join(reason_line(r) for r in (*ly.reasons, *ly.notes))
        name = ly.name if len(ly.name) <= 48 else "…" + ly.name[-47:]
        table.add_row(
            str(ly.index),
            cell(name),
            cell(ly.native_op),
            cell(ly.placement, style=_STYLE[ly.placement]),
            cell(ly.unit),
            cell(why),
        )
    return table


def _fit_table(report: PlacementReport) -> Any:
    from rich.table import Table

    table = Table(title="memory fit")
    for col in ("memory", "required", "capacity", "fits", "note"):
        table.add_column(col)
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
        table.add_row(
            cell(f.memory),
            human_bytes(f.required_bytes),
            human_bytes(f.capacity_bytes),
            cell("yes" if f.fits else "no", style="green" if f.fits else "red"),
            cell(note),
        )
    return table


def _verdict(report: PlacementReport) -> Any:
    if report.exit_code != 0:
        return cell("NOT OK: something falls back to the CPU or does not fit", style="bold red")
    if not report.has_accelerator:
        return cell("OK: fits (a CPU-only target: nothing to fall back from)", style="bold green")
    return cell("OK: everything runs on the accelerator and fits", style="bold green")


def render_table(report: PlacementReport) -> Any:
    """A rich renderable: per-layer placement, then segments, crossings and memory fit."""
    from rich.console import Group

    t = report.target
    c = report.counts()
    head = cell(f"{report.model} on {t.name}", style="bold")
    head.append(
        "\n"
        + shown(
            f"accelerator: {t.placement.accelerator or 'none'}, fallback: "
            f"{t.placement.fallback}; {c['accelerator']} on the accelerator, "
            f"{c['partial']} partial, {c['cpu']} on the CPU"
        )
    )
    segs = ", ".join(f"{s.processor}[{s.first_layer}-{s.last_layer}]" for s in report.segments)
    cr = crossings_dict(report)
    tail = [
        cell(f"segments: {len(report.segments)} ({segs})"),
        cell(
            f"crossings: {cr['count']} accelerator<->CPU transfer(s), {human_bytes(cr['bytes'])}; "
            f"model inputs/outputs: {cr['boundary_count']}, {human_bytes(cr['boundary_bytes'])}"
        ),
    ]
    notes = [cell(f"note: {n}") for n in report.notes]
    return Group(head, _layers_table(report), *tail, _fit_table(report), *notes, _verdict(report))
