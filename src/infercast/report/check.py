"""The ``check`` table: where each layer runs, the reasons counted once, segments, memory fit.

A per-layer list repeats the same reason on every layer ("Feature maps must be
int8" on 65 layers); as Vela and the Edge TPU compiler do, each reason is
printed once with how many layers it applies to ("13 layers: ... HARD_SWISH"),
and the layer rows refer to it by number.
"""

from __future__ import annotations

from typing import Any

from infercast.report.names import graph_labels
from infercast.report.summaries import group_reasons, split_line
from infercast.report.table import Col, FitTable, Grid, Row, TableOptions, cell
from infercast.report.text import shown
from infercast.report.units import human_bytes
from infercast.targets.placement import PlacementReport

STYLE = {"accelerator": "green", "partial": "yellow", "cpu": "red"}

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
                "index": cell(ly.index, ly.index),
                "name": cell(labels.get((main, ly.index), ly.name), ly.name),
                "op": cell(ly.native_op, ly.native_op),
                "placement": cell(ly.placement, ly.placement, STYLE[ly.placement]),
                "unit": cell(ly.unit, ly.unit),
                "why": cell(why, why),
            }
        )
    t = report.target
    title = f"{shown(report.model)} on {shown(t.name)}: {split_line(report)}"
    return Grid(list(CHECK_COLUMNS), rows, title=title, noun="layers"), list(groups)


def fit_grid(report: PlacementReport) -> Grid:
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
            note = (note + "; " if note else "") + f"largest layer: {f.worst_layer}"
        rows.append(
            {
                "memory": cell(f.memory),
                "required": cell(human_bytes(f.required_bytes), f.required_bytes),
                "capacity": cell(human_bytes(f.capacity_bytes), f.capacity_bytes),
                "fits": cell("yes" if f.fits else "no", None, "green" if f.fits else "red"),
                "note": cell(note),
            }
        )
    return Grid(cols, rows, title="memory fit", noun="memories")


def render_table(report: PlacementReport, opts: TableOptions | None = None) -> Any:
    """A rich renderable: per-layer placement, the reasons counted once, segments,
    crossings, memory fit and the verdict; every table fits the width it is printed at."""
    from rich.console import Group
    from rich.text import Text

    grid, groups = layer_grid(report)
    parts: list[Any] = [FitTable(grid, opts)]
    if groups:
        reasons = Text()
        reasons.append("reasons, each counted once:\n", style="bold")
        for n, g in enumerate(groups, 1):
            style = {"cpu": "red", "partial": "yellow"}.get(g.outcome, "")
            reasons.append(f"[{n}] ", style=style)
            reasons.append(f"{shown(g.line())} ({g.outcome})")
            if g.examples:
                reasons.append(f"\n    e.g. {shown(g.examples[0])}", style="dim")
            reasons.append("\n")
        parts.append(reasons)
    segs = ", ".join(f"{s.processor}[{s.first_layer}-{s.last_layer}]" for s in report.segments)
    cr = report.crossings_dict()
    parts.append(
        Text(
            f"segments: {len(report.segments)} ({segs})\n"
            f"crossings: {cr['count']} accelerator<->CPU transfer(s), "
            f"{human_bytes(cr['bytes'])}; model inputs/outputs: {cr['boundary_count']}, "
            f"{human_bytes(cr['boundary_bytes'])}"
        )
    )
    parts.append(FitTable(fit_grid(report)))
    if report.notes:
        parts.append(Text("\n".join(f"note: {shown(n)}" for n in report.notes)))
    if not report.has_accelerator:
        ok_text = "OK: fits (a CPU-only target: nothing to fall back from)"
    else:
        ok_text = "OK: everything runs on the accelerator and fits"
    parts.append(
        Text(
            ok_text
            if report.exit_code == 0
            else "NOT OK: something falls back to the CPU or does not fit",
            style="bold green" if report.exit_code == 0 else "bold red",
        )
    )
    return Group(*parts)
