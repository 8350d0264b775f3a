"""Renderers of a :class:`~infercast.estimate.validate.Validation` (``infercast validate``).

JSON: ``infercast.validate/1`` -- one row per model (forecast, measured, error)
and the metrics (share within ±10%, RMSPE, mean |error|, Spearman ρ). CSV: one
row per model. Table: a rich renderable.
"""

from __future__ import annotations

from typing import Any

from infercast.estimate.validate import Metrics, Row, Validation
from infercast.report.table import Col, FitTable, Grid, TableOptions, entry
from infercast.report.table import Row as GridRow
from infercast.report.text import cell, csv_text, shown
from infercast.report.units import human_seconds

SCHEMA = "infercast.validate/1"
CSV_COLUMNS = (
    "model", "runtime", "threads", "forecast_s", "measured_s", "measured_median_s", "runs",
    "error",
)  # fmt: skip


def metrics_dict(m: Metrics) -> dict[str, Any]:
    return {
        "models": m.n,
        "within_10": m.within_10,
        "rmspe": m.rmspe,
        "mean_abs_error": m.mean_abs_error,
        "spearman_rho": m.spearman_rho,
    }


def row_dict(r: Row) -> dict[str, Any]:
    return {
        "model": r.model,
        "runtime": r.runtime,
        "threads": r.threads,
        "forecast_s": r.forecast_s,
        "measured_s": r.measured_s,
        "measured_median_s": r.measured_median_s,
        "runs": r.runs,
        "error": r.error,
    }


def to_dict(v: Validation) -> dict[str, Any]:
    """The ``infercast.validate/1`` document."""
    cal = v.target.calibration
    return {
        "schema": SCHEMA,
        "target": v.target.name,
        "target_file": v.target.path,
        "calibrated": cal.calibrated,
        "calibration_runtime": cal.runtime,
        "measured": "minimum over repeated runs, models interleaved in rounds",
        "rows": [row_dict(r) for r in v.rows],
        "metrics": metrics_dict(v.metrics),
    }


def records(v: Validation) -> list[dict[str, Any]]:
    """One flat dict per model."""
    return [row_dict(r) for r in v.rows]


def to_csv(v: Validation) -> str:
    return csv_text(CSV_COLUMNS, records(v))


VALIDATE_COLUMNS = [
    Col("model", "model", numeric=False, prio=0, min_width=12),
    Col("runtime", "runtime", numeric=False, prio=2),
    Col("threads", "threads", prio=2, short="thr"),
    Col("forecast", "forecast", prio=0),
    Col("measured", "measured", prio=0),
    Col("runs", "runs", prio=4),
    Col("error", "error", prio=0),
]


def validation_grid(v: Validation) -> Grid:
    """One row per model: forecast, measured (minimum over runs) and the relative error."""
    rows: list[GridRow] = []
    styles: list[str] = []
    for r in v.rows:
        rows.append(
            {
                "model": entry(r.model.replace("\\", "/").rsplit("/", 1)[-1], r.model),
                "runtime": entry(r.runtime, r.runtime),
                "threads": entry(r.threads, r.threads),
                "forecast": entry(human_seconds(r.forecast_s), r.forecast_s),
                "measured": entry(human_seconds(r.measured_s), r.measured_s),
                "runs": entry(r.runs, r.runs),
                "error": entry(f"{r.error:+.1%}", r.error),
            }
        )
        styles.append("" if abs(r.error) <= 0.10 else "red")
    title = f"forecast vs measurement on this machine, target {shown(v.target.name)}"
    return Grid(
        list(VALIDATE_COLUMNS),
        rows,
        title=title,
        row_styles=styles,
        noun="models",
        more="--format csv for every figure",
    )


def render_table(v: Validation, opts: TableOptions | None = None) -> Any:
    """A rich renderable: the per-model table (fits the width it is printed at), the
    metrics, how the measurement was taken, and whether the target was calibrated."""
    from rich.console import Group

    m = v.metrics
    rho = "n/a (fewer than 3 models)" if m.spearman_rho is None else f"{m.spearman_rho:.3f}"
    lines: list[Any] = [
        FitTable(validation_grid(v), opts),
        cell(
            f"models: {m.n}; within ±10%: {m.within_10:.0%}; RMSPE: {m.rmspe:.1%}; "
            f"mean |error|: {m.mean_abs_error:.1%}; Spearman ρ: {rho}"
        ),
        cell("measured: minimum over repeated runs, models interleaved in rounds"),
    ]
    if not v.target.calibration.calibrated:
        lines.append(
            cell(
                f"note: {v.target.name} is not calibrated; run `infercast calibrate` first",
                style="yellow",
            )
        )
    return Group(*lines)
