"""Renderers of a :class:`~infercast.estimate.validate.Validation` (``infercast validate``).

JSON: ``infercast.validate/1`` -- one row per model (forecast, measured, error)
and the metrics (share within ±10%, RMSPE, mean |error|, Spearman ρ). CSV: one
row per model. Table: a rich renderable.
"""

from __future__ import annotations

from typing import Any

from infercast.estimate.validate import Metrics, Row, Validation
from infercast.report.text import cell, csv_text
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


def render_table(v: Validation) -> Any:
    from rich.console import Group
    from rich.table import Table

    title = cell(f"forecast vs measurement on this machine, target {v.target.name}")
    table = Table(title=title)
    for col, just in (
        ("model", "left"), ("runtime", "left"), ("threads", "right"), ("forecast", "right"),
        ("measured", "right"), ("error", "right"),
    ):  # fmt: skip
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    for r in v.rows:
        table.add_row(
            cell(r.model.rsplit("/", 1)[-1]),
            r.runtime,
            str(r.threads),
            human_seconds(r.forecast_s),
            human_seconds(r.measured_s),
            f"{r.error:+.1%}",
            style="" if abs(r.error) <= 0.10 else "red",
        )
    m = v.metrics
    rho = "n/a (fewer than 3 models)" if m.spearman_rho is None else f"{m.spearman_rho:.3f}"
    lines: list[Any] = [
        table,
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
