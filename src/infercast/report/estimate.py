"""Renderers of a latency :class:`~infercast.estimate.forecast.Forecast`.

JSON: ``infercast.estimate/1``, with ``totals`` (``latency_s``, ``one_time_s``,
the breakdown, ``complete``, ``unknown_layers`` and ``incomplete``: the headline
``incomplete: N layers unknown``, null when every layer's cost is known) and one
entry per layer (``index``, ``name``, ``op``, ``placement``, ``latency_s``,
``bound`` and the terms that made it). CSV: one row per layer. Table: a rich
renderable whose title says ``incomplete: N layers unknown`` when it is.
Times are seconds in JSON / CSV, humanised (ms / µs) only in the table.
"""

from __future__ import annotations

from typing import Any

from infercast.estimate.forecast import Forecast, LayerForecast, uncertainty
from infercast.report.names import graph_labels
from infercast.report.summaries import op_summary, split_line
from infercast.report.table import Cell, Col, FitTable, Grid, Row, TableOptions, by_op_grid, entry
from infercast.report.text import cell, csv_text, shown
from infercast.report.units import human_bytes, human_count, human_seconds

SCHEMA = "infercast.estimate/1"
CSV_COLUMNS = (
    "index", "name", "op", "native_op", "placement", "unit", "kernel", "op_class", "dtype",
    "ops", "ops_eff", "bytes", "compute_s", "memory_s", "overhead_s", "transfer_s",
    "rewrite_s", "layout_s", "latency_s", "bound", "threads",
)  # fmt: skip

BOUND_STYLE = {
    "compute": "cyan",
    "memory": "magenta",
    "overhead": "yellow",
    "transfer": "red",
    "fallback": "red",
    "fused": "dim",
    "elided": "dim",
    "unknown": "bold red",
}


def incomplete(fc: Forecast) -> str | None:
    """``incomplete: N layers unknown`` when some layer's cost is unknown, else None."""
    if fc.complete:
        return None
    n = fc.unknown_layers or sum(1 for ly in fc.layers if ly.bound == "unknown")
    return f"incomplete: {n} layer{'s' if n != 1 else ''} unknown"


def layer_dict(ly: LayerForecast) -> dict[str, Any]:
    d: dict[str, Any] = {
        "index": ly.index,
        "name": ly.name,
        "op": ly.op,
        "native_op": ly.native_op,
        "placement": ly.placement,
        "unit": ly.unit,
        "latency_s": ly.latency_s,
        "bound": ly.bound,
        "op_class": ly.op_class,
        "dtype": ly.dtype,
        "ops": ly.ops,
        "ops_eff": ly.ops_eff,
        "bytes": ly.bytes,
        "compute_s": ly.compute_s,
        "memory_s": ly.memory_s,
        "overhead_s": ly.overhead_s,
        "transfer_s": ly.transfer_s,
        "rewrite_s": ly.rewrite_s,
        "layout_s": ly.layout_s,
    }
    if ly.fused_into is not None:
        d["fused_into"] = ly.fused_into
    return d


def to_dict(fc: Forecast) -> dict[str, Any]:
    """The ``infercast.estimate/1`` document."""
    cal = fc.target.calibration
    return {
        "schema": SCHEMA,
        "target": fc.target.name,
        "target_file": fc.target.path,
        "model": fc.model,
        "threads": fc.threads,
        "calibration": {
            "calibrated": cal.calibrated,
            "source": cal.source,
            "runtime": cal.runtime,
            "threads": cal.threads,
            "fit_rmspe": cal.fit_rmspe,
            "rows": len(cal.rows),
            "loo_median_abs_error": cal.loo_median_abs_error,
            "loo_worst_ratio": cal.loo_worst_ratio,
            "uncertainty": uncertainty(fc.target),
            "outside_evidence": None if (ev := fc.outside) is None else ev.to_dict(),
        },
        "units": {"time": "s", "ops": "arithmetic ops, 1 MAC = 2 ops", "bytes": "bytes"},
        "totals": {
            **fc.totals(),
            "unknown_layers": fc.unknown_layers,
            "incomplete": incomplete(fc),
        },
        "layers": [layer_dict(ly) for ly in fc.layers],
        "notes": list(fc.notes),
    }


def records(fc: Forecast) -> list[dict[str, Any]]:
    """One flat dict per layer (the CSV's rows)."""
    extra = {"threads": fc.threads}
    return [
        {c: {**layer_dict(ly), "kernel": ly.kernel, **extra}.get(c) for c in CSV_COLUMNS}
        for ly in fc.layers
    ]


def to_csv(fc: Forecast) -> str:
    return csv_text(CSV_COLUMNS, records(fc))


FORECAST_COLUMNS = ("forecast_latency_s", "forecast_bound")


def with_forecast(rows: list[dict[str, Any]], fc: Forecast) -> list[dict[str, Any]]:
    """Analysis records (``report.analysis.records``) with ``forecast_latency_s`` and
    ``forecast_bound`` added: main-graph layers only; subgraph layers and folded
    constants are left empty."""
    by_index = {ly.index: ly for ly in fc.layers}
    main = fc.placement.graph.name
    out = []
    for row in rows:
        ly = by_index.get(row["index"]) if row["subgraph"] == main else None
        out.append(
            {
                **row,
                "forecast_latency_s": None if ly is None else ly.latency_s,
                "forecast_bound": None if ly is None else ly.bound,
            }
        )
    return out


ESTIMATE_COLUMNS = [
    Col("index", "#", prio=0),
    Col("name", "layer", numeric=False, prio=0, min_width=20),
    Col("op", "op", numeric=False, prio=2, min_width=10),
    Col("unit", "on", numeric=False, prio=1),
    Col("ops", "ops", prio=3),
    Col("bytes", "bytes", prio=4),
    Col("compute", "compute", prio=4, short="comp"),
    Col("memory", "memory", prio=4, short="mem"),
    Col("overhead", "overhead", prio=5, short="ovh"),
    Col("transfer", "transfer", prio=5, short="xfer"),
    Col("latency", "latency", prio=0),
    Col("share", "share", prio=1),
    Col("bound", "bound", numeric=False, prio=0, min_width=8),
]


def layer_grid(fc: Forecast, show_fused: bool = True) -> Grid:
    """The per-layer forecast as data (one short unique name per layer: report.names)."""
    labels = graph_labels(fc.placement.graph)
    main = fc.placement.graph.name
    total = fc.latency_s or 1.0
    rows: list[Row] = []
    for ly in fc.layers:
        if not show_fused and ly.bound in ("fused", "elided"):
            continue
        merged = ly.bound in ("fused", "elided")
        note = f"→ #{ly.kernel}" if ly.bound == "fused" else ""

        def t(v: float, blank: bool = False, merged: bool = merged) -> Cell:
            return entry("" if merged or blank else human_seconds(v), None if merged else v)

        rows.append(
            {
                "index": entry(ly.index, ly.index),
                "name": entry(labels.get((main, ly.index), ly.name), ly.name),
                "op": entry(ly.op, ly.op),
                "unit": entry(f"{ly.unit} (partial)" if ly.placement == "partial" else ly.unit),
                "ops": entry(
                    "" if merged else ("?" if ly.ops is None else human_count(ly.ops)),
                    None if merged else ly.ops,
                ),
                "bytes": entry(
                    "" if merged else human_bytes(ly.bytes), None if merged else ly.bytes
                ),
                "compute": t(ly.compute_s),
                "memory": t(ly.memory_s),
                "overhead": t(ly.overhead_s),
                "transfer": t(ly.transfer_s, blank=not ly.transfer_s),
                "latency": t(ly.latency_s),
                "share": entry(
                    "" if merged else f"{ly.latency_s / total:.1%}",
                    None if merged else ly.latency_s,
                ),
                "bound": entry(
                    f"{ly.bound} {note}".strip(), ly.bound, BOUND_STYLE.get(ly.bound, "")
                ),
            }
        )
    headline = (
        f"{human_seconds(fc.latency_s)} per inference "
        f"({fc.threads} CPU thread{'s' if fc.threads != 1 else ''})"
    )
    if not fc.complete:
        headline = f"{incomplete(fc)}; {headline} (known layers only)"
    title = f"{shown(fc.model)} on {shown(fc.target.name)}: {headline}"
    return Grid(list(ESTIMATE_COLUMNS), rows, title=title, default_sort="latency", noun="layers")


def op_grid(fc: Forecast) -> Grid:
    """``--by op``: kernels, where they run, and the time per op type."""
    acc = fc.target.placement.accelerator
    items = [ly for ly in fc.layers if ly.bound not in ("fused", "elided")]
    rows = op_summary(
        items,
        lambda ly: ly.op,
        [
            ("latency", lambda ly: ly.latency_s),
            ("on_acc", lambda ly: 1.0 if ly.placement != "cpu" and acc else 0.0),
            ("on_cpu", lambda ly: 1.0 if ly.placement == "cpu" or not acc else 0.0),
        ],
    )
    total = fc.latency_s or 1.0
    fields: list[tuple[str, str, Any]] = [
        ("latency", "latency", human_seconds),
        ("share", "share", lambda v: f"{v:.1%}"),
    ]
    if acc:
        fields += [
            ("on_acc", f"on {acc}", lambda v: f"{v:.0f}"),
            ("on_cpu", f"on {fc.target.placement.fallback}", lambda v: f"{v:.0f}"),
        ]
    return by_op_grid(
        f"{shown(fc.model)} on {shown(fc.target.name)} by op: "
        f"{human_seconds(fc.latency_s)} per inference",
        [(r.op, r.count, {**r.values, "share": r.values["latency"] / total}) for r in rows],
        fields,
        count_header="kernels",
    )


def _summary(fc: Forecast, total_s: float) -> list[Any]:
    t = fc.totals()
    head = cell(f"latency: {human_seconds(fc.latency_s)} per inference", style="bold")
    if not fc.complete:
        head.append(f" ({incomplete(fc)}: their arithmetic is not counted)", style="bold yellow")
    head.append(
        f"  ({t['kernels']} kernels; compute {human_seconds(t['compute_s'])}, memory "
        f"{human_seconds(t['memory_s'])}, overhead {human_seconds(t['overhead_s'])}, transfer "
        f"{human_seconds(t['transfer_s'])}"
        + (f", layout {human_seconds(t['layout_s'])}" if t["layout_s"] else "")
        + f", call {human_seconds(t['invoke_s'])})"
    )
    by = ", ".join(
        f"{k} {human_seconds(v)} ({v / total_s:.0%})"
        for k, v in sorted(t["by_bound_s"].items(), key=lambda kv: -kv[1])
    )
    return [
        head,
        cell(f"placement: {split_line(fc.placement)}"),
        cell(f"time by bound: {by}"),
        cell(f"one-time (first run, reported apart): {human_seconds(fc.one_time_s)}"),
        *(cell(f"note: {n}") for n in fc.notes),
    ]


def render_table(
    fc: Forecast,
    opts: TableOptions | None = None,
    by_op: bool = False,
    show_fused: bool = True,
) -> Any:
    """Per-layer (or per-op) forecast fitted to the width, the totals by bound, the notes."""
    from rich.console import Group

    grid = op_grid(fc) if by_op else layer_grid(fc, show_fused)
    return Group(FitTable(grid, opts), *_summary(fc, fc.latency_s or 1.0))
