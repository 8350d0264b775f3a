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
from infercast.report.units import human_bytes, human_count

CSV_COLUMNS = (
    "index", "name", "op", "native_op", "placement", "unit", "kernel", "op_class", "dtype",
    "ops", "ops_eff", "bytes", "compute_s", "memory_s", "overhead_s", "transfer_s",
    "rewrite_s", "latency_s", "bound", "threads",
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
        d["threads"] = fc.threads
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


def render_table(fc: Forecast, max_name: int = 40, show_fused: bool = True) -> Any:
    """Per-layer forecast, the totals by bound, and the notes."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    t = fc.totals()
    title = (
        f"{fc.model} on {fc.target.name}: {human_seconds(fc.latency_s)} per inference "
        f"({fc.threads} CPU thread{'s' if fc.threads != 1 else ''})"
    )
    table = Table(title=title, header_style="bold")
    for col, just in (
        ("#", "right"), ("layer", "left"), ("op", "left"), ("on", "left"), ("ops", "right"),
        ("bytes", "right"), ("compute", "right"), ("memory", "right"), ("overhead", "right"),
        ("transfer", "right"), ("latency", "right"), ("share", "right"), ("bound", "left"),
    ):  # fmt: skip
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    total = fc.latency_s or 1.0
    for ly in fc.layers:
        if not show_fused and ly.bound in ("fused", "elided"):
            continue
        name = ly.name if len(ly.name) <= max_name else "…" + ly.name[-(max_name - 1) :]
        merged = ly.bound in ("fused", "elided")
        note = f"→ #{ly.kernel}" if ly.bound == "fused" else ""
        table.add_row(
            str(ly.index),
            name,
            ly.op,
            f"{ly.unit} (partial)" if ly.placement == "partial" else ly.unit,
            "" if merged else ("?" if ly.ops is None else human_count(ly.ops)),
            "" if merged else human_bytes(ly.bytes),
            "" if merged else human_seconds(ly.compute_s),
            "" if merged else human_seconds(ly.memory_s),
            "" if merged else human_seconds(ly.overhead_s),
            "" if merged or not ly.transfer_s else human_seconds(ly.transfer_s),
            "" if merged else human_seconds(ly.latency_s),
            "" if merged else f"{ly.latency_s / total:.1%}",
            Text(f"{ly.bound} {note}".strip(), style=BOUND_STYLE.get(ly.bound, "")),
        )
    summary = Text()
    summary.append(f"latency: {human_seconds(fc.latency_s)} per inference", style="bold")
    summary.append(
        f"  ({t['kernels']} kernels; compute {human_seconds(t['compute_s'])}, memory "
        f"{human_seconds(t['memory_s'])}, overhead {human_seconds(t['overhead_s'])}, transfer "
        f"{human_seconds(t['transfer_s'])}, call {human_seconds(t['invoke_s'])})\n"
    )
    by = ", ".join(
        f"{k} {human_seconds(v)} ({v / total:.0%})"
        for k, v in sorted(t["by_bound_s"].items(), key=lambda kv: -kv[1])
    )
    summary.append(f"time by bound: {by}\n")
    summary.append(f"one-time (first run, reported apart): {human_seconds(fc.one_time_s)}\n")
    notes = Text("\n".join(f"note: {n}" for n in fc.notes))
    return Group(table, summary, notes)


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
