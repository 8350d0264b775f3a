"""Renderers of a latency :class:`~infercast.estimate.forecast.Forecast` and of a validation.

JSON: ``infercast.estimate/1`` (``Forecast.to_dict``), with ``totals``
(``latency_s``, ``one_time_s`` and the breakdown) and one entry per layer
(``index``, ``name``, ``op``, ``placement``, ``latency_s``, ``bound`` and the
terms that made it). CSV: one row per layer. Table: a rich renderable.
Times are seconds in JSON / CSV, humanised (ms / µs) only in the table.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from infercast.estimate.forecast import Forecast
from infercast.estimate.validate import Validation
from infercast.report.names import graph_labels
from infercast.report.summaries import op_summary, split_line
from infercast.report.table import Cell, Col, FitTable, Grid, Row, TableOptions, by_op_grid, cell
from infercast.report.text import shown
from infercast.report.units import human_bytes, human_count

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


def human_seconds(s: float) -> str:
    """0.0123 -> '12.30 ms' (seconds stay seconds in machine output)."""
    if s >= 1:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    if s >= 1e-6:
        return f"{s * 1e6:.1f} µs"
    if s == 0:
        return "0"
    return f"{s * 1e9:.0f} ns"


def to_dict(fc: Forecast) -> dict[str, Any]:
    return fc.to_dict()


def to_csv(fc: Forecast) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for ly in fc.layers:
        d = ly.to_dict()
        d["kernel"] = ly.kernel
        w.writerow(["" if d.get(c) is None else d.get(c) for c in CSV_COLUMNS])
    return buf.getvalue()


def join_csv(analysis_csv: str, fc: Forecast) -> str:
    """The analysis CSV with ``forecast_latency_s`` and ``forecast_bound`` columns added
    (main-graph layers; subgraph layers and folded constants are left empty)."""
    by_index = {ly.index: ly for ly in fc.layers}
    rows = list(csv.reader(io.StringIO(analysis_csv)))
    if not rows:
        return analysis_csv
    head = rows[0]
    i_idx = head.index("index")
    i_sub = head.index("subgraph") if "subgraph" in head else None
    main = fc.placement.graph.name
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*head, "forecast_latency_s", "forecast_bound"])
    for row in rows[1:]:
        ly = by_index.get(int(row[i_idx])) if row[i_idx].isdigit() else None
        if ly is None or (i_sub is not None and row[i_sub] != main):
            w.writerow([*row, "", ""])
        else:
            w.writerow([*row, ly.latency_s, ly.bound])
    return buf.getvalue()


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
            return cell("" if merged or blank else human_seconds(v), None if merged else v)

        rows.append(
            {
                "index": cell(ly.index, ly.index),
                "name": cell(labels.get((main, ly.index), ly.name), ly.name),
                "op": cell(ly.op, ly.op),
                "unit": cell(f"{ly.unit} (partial)" if ly.placement == "partial" else ly.unit),
                "ops": cell(
                    "" if merged else ("?" if ly.ops is None else human_count(ly.ops)),
                    None if merged else ly.ops,
                ),
                "bytes": cell(
                    "" if merged else human_bytes(ly.bytes), None if merged else ly.bytes
                ),
                "compute": t(ly.compute_s),
                "memory": t(ly.memory_s),
                "overhead": t(ly.overhead_s),
                "transfer": t(ly.transfer_s, blank=not ly.transfer_s),
                "latency": t(ly.latency_s),
                "share": cell(
                    "" if merged else f"{ly.latency_s / total:.1%}",
                    None if merged else ly.latency_s,
                ),
                "bound": cell(
                    f"{ly.bound} {note}".strip(), ly.bound, BOUND_STYLE.get(ly.bound, "")
                ),
            }
        )
    title = (
        f"{shown(fc.model)} on {shown(fc.target.name)}: {human_seconds(fc.latency_s)} per inference"
    )
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


def render_table(
    fc: Forecast,
    opts: TableOptions | None = None,
    by_op: bool = False,
    show_fused: bool = True,
) -> Any:
    """Per-layer (or per-op) forecast fitted to the width, the totals by bound, the notes."""
    from rich.console import Group
    from rich.text import Text

    t = fc.totals()
    grid = op_grid(fc) if by_op else layer_grid(fc, show_fused)
    total = fc.latency_s or 1.0
    summary = Text()
    summary.append(f"latency: {human_seconds(fc.latency_s)} per inference", style="bold")
    summary.append(
        f"  ({t['kernels']} kernels; compute {human_seconds(t['compute_s'])}, memory "
        f"{human_seconds(t['memory_s'])}, overhead {human_seconds(t['overhead_s'])}, transfer "
        f"{human_seconds(t['transfer_s'])}, call {human_seconds(t['invoke_s'])})\n"
    )
    summary.append(f"placement: {split_line(fc.placement)}\n")
    by = ", ".join(
        f"{k} {human_seconds(v)} ({v / total:.0%})"
        for k, v in sorted(t["by_bound_s"].items(), key=lambda kv: -kv[1])
    )
    summary.append(f"time by bound: {by}\n")
    summary.append(f"one-time (first run, reported apart): {human_seconds(fc.one_time_s)}\n")
    notes = Text("\n".join(f"note: {shown(n)}" for n in fc.notes))
    return Group(FitTable(grid, opts), summary, notes)


def summary_line(fc: Forecast) -> str:
    """One line for ``analyze --target``."""
    by = ", ".join(
        f"{k} {v / (fc.latency_s or 1):.0%}"
        for k, v in sorted(fc.by_bound().items(), key=lambda kv: -kv[1])
    )
    cal = "calibrated" if fc.target.calibration.calibrated else "NOT calibrated"
    return (
        f"forecast on {fc.target.name} ({cal}): {human_seconds(fc.latency_s)} per inference "
        f"({by}); one-time {human_seconds(fc.one_time_s)}"
    )


# --------------------------------------------------------------------------- #
# Validation
# --------------------------------------------------------------------------- #


def validation_csv(v: Validation) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    cols = ("model", "runtime", "threads", "forecast_s", "measured_s", "measured_median_s",
            "runs", "error")  # fmt: skip
    w.writerow(cols)
    for r in v.rows:
        d = r.to_dict()
        w.writerow([d[c] for c in cols])
    return buf.getvalue()


def render_validation(v: Validation) -> Any:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    table = Table(title=f"forecast vs measurement on this machine, target {v.target.name}")
    for col, just in (
        ("model", "left"), ("runtime", "left"), ("threads", "right"), ("forecast", "right"),
        ("measured", "right"), ("error", "right"),
    ):  # fmt: skip
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    for r in v.rows:
        style = "" if abs(r.error) <= 0.10 else "red"
        table.add_row(
            r.model.rsplit("/", 1)[-1],
            r.runtime,
            str(r.threads),
            human_seconds(r.forecast_s),
            human_seconds(r.measured_s),
            f"{r.error:+.1%}",
            style=style,
        )
    m = v.metrics
    rho = "n/a (fewer than 3 models)" if m.spearman_rho is None else f"{m.spearman_rho:.3f}"
    text = Text(
        f"models: {m.n}; within ±10%: {m.within_10:.0%}; RMSPE: {m.rmspe:.1%}; "
        f"mean |error|: {m.mean_abs_error:.1%}; Spearman ρ: {rho}\n"
        "measured: minimum over repeated runs, models interleaved in rounds"
    )
    if not v.target.calibration.calibrated:
        text.append(
            f"\nnote: {v.target.name} is not calibrated; run `infercast calibrate` first",
            style="yellow",
        )
    return Group(table, text)
