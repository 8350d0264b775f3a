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

from infercast.estimate.forecast import Forecast, LayerForecast
from infercast.report.text import cell, csv_text
from infercast.report.units import human_bytes, human_count, human_seconds

SCHEMA = "infercast.estimate/1"
CSV_COLUMNS = (
    "index", "name", "op", "native_op", "placement", "unit", "kernel", "op_class", "dtype",
    "ops", "ops_eff", "bytes", "compute_s", "memory_s", "overhead_s", "transfer_s",
    "rewrite_s", "latency_s", "bound",
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
        "calibration": {
            "calibrated": cal.calibrated,
            "source": cal.source,
            "runtime": cal.runtime,
            "threads": cal.threads,
            "fit_rmspe": cal.fit_rmspe,
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
    return [
        {c: {**layer_dict(ly), "kernel": ly.kernel}.get(c) for c in CSV_COLUMNS} for ly in fc.layers
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


_COLUMNS = (
    ("#", "right"), ("layer", "left"), ("op", "left"), ("on", "left"), ("ops", "right"),
    ("bytes", "right"), ("compute", "right"), ("memory", "right"), ("overhead", "right"),
    ("transfer", "right"), ("latency", "right"), ("share", "right"), ("bound", "left"),
)  # fmt: skip


def _layer_row(ly: LayerForecast, total_s: float, max_name: int) -> list[Any]:
    name = ly.name if len(ly.name) <= max_name else "…" + ly.name[-(max_name - 1) :]
    merged = ly.bound in ("fused", "elided")
    note = f"→ #{ly.kernel}" if ly.bound == "fused" else ""

    def sec(v: float) -> str:
        return "" if merged else human_seconds(v)

    return [
        str(ly.index),
        cell(name),
        cell(ly.op),
        cell(f"{ly.unit} (partial)" if ly.placement == "partial" else ly.unit),
        "" if merged else ("?" if ly.ops is None else human_count(ly.ops)),
        "" if merged else human_bytes(ly.bytes),
        sec(ly.compute_s),
        sec(ly.memory_s),
        sec(ly.overhead_s),
        "" if not ly.transfer_s else sec(ly.transfer_s),
        sec(ly.latency_s),
        "" if merged else f"{ly.latency_s / total_s:.1%}",
        cell(f"{ly.bound} {note}".strip(), style=BOUND_STYLE.get(ly.bound, "")),
    ]


def _summary(fc: Forecast, total_s: float) -> list[Any]:
    t = fc.totals()
    head = cell(f"latency: {human_seconds(fc.latency_s)} per inference", style="bold")
    if not fc.complete:
        head.append(f" ({incomplete(fc)}: their arithmetic is not counted)", style="bold yellow")
    head.append(
        f"  ({t['kernels']} kernels; compute {human_seconds(t['compute_s'])}, memory "
        f"{human_seconds(t['memory_s'])}, overhead {human_seconds(t['overhead_s'])}, transfer "
        f"{human_seconds(t['transfer_s'])}, call {human_seconds(t['invoke_s'])})"
    )
    by = ", ".join(
        f"{k} {human_seconds(v)} ({v / total_s:.0%})"
        for k, v in sorted(t["by_bound_s"].items(), key=lambda kv: -kv[1])
    )
    return [
        head,
        cell(f"time by bound: {by}"),
        cell(f"one-time (first run, reported apart): {human_seconds(fc.one_time_s)}"),
        *(cell(f"note: {n}") for n in fc.notes),
    ]


def render_table(fc: Forecast, max_name: int = 40, show_fused: bool = True) -> Any:
    """Per-layer forecast, the totals by bound, and the notes."""
    from rich.console import Group
    from rich.table import Table

    headline = f"{human_seconds(fc.latency_s)} per inference"
    if not fc.complete:
        headline = f"{incomplete(fc)}; {headline} (known layers only)"
    table = Table(title=cell(f"{fc.model} on {fc.target.name}: {headline}"), header_style="bold")
    for col, just in _COLUMNS:
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    total_s = fc.latency_s or 1.0
    for ly in fc.layers:
        if show_fused or ly.bound not in ("fused", "elided"):
            table.add_row(*_layer_row(ly, total_s, max_name))
    return Group(table, *_summary(fc, total_s))
