"""Renderers of the published-measurement check (``infercast validate --published``).

JSON: ``infercast.validate-published/1`` (:meth:`PublishedCheck.to_dict`): per device
the row counts, median |error| and worst ratio (in-sample and of the predictions:
leave-one-out for rows the target was fitted on), the NPU-vs-CPU pairs; per row the
forecast, the published figure and both errors. CSV: one row per published row.
Table: the per-device summary, then the rows.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from infercast.estimate.published.check import PublishedCheck

CSV_COLUMNS = (
    "row_id", "target", "model", "quant", "threads", "runtime", "published_s", "forecast_s",
    "error", "in_fit", "loo_forecast_s", "loo_error", "status", "source",
)  # fmt: skip


def to_csv(check: PublishedCheck) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for r in check.results:
        d = r.to_dict()
        w.writerow(["" if d.get(c) is None else d[c] for c in CSV_COLUMNS])
    return buf.getvalue()


def _pct(v: float | None) -> str:
    return "" if v is None else f"{v:+.0%}"


def _abs_pct(v: float | None) -> str:
    return "" if v is None else f"{v:.0%}"


def _x(v: float | None) -> str:
    return "" if v is None else f"{v:.2f}x"


def _ms(v: float | None) -> str:
    return "" if v is None else f"{v * 1e3:.3g}"


def render_table(check: PublishedCheck) -> Any:
    from rich.console import Group
    from rich.table import Table

    dev = Table(
        title="Forecast vs published measurements, per device (prediction = leave-one-out "
        "for rows the target was fitted on)",
        header_style="bold",
    )
    for col in ("target", "rows", "in fit", "median |error|", "worst", "prediction median |error|",
                "prediction worst", "NPU-vs-CPU right"):  # fmt: skip
        dev.add_column(col, justify="left" if col == "target" else "right")
    for d in check.devices:
        dev.add_row(
            d.target, str(d.rows), str(d.rows_in_fit), _abs_pct(d.median_abs_error),
            _x(d.worst_ratio), _abs_pct(d.prediction_median_abs_error),
            _x(d.prediction_worst_ratio),
            f"{d.pairs_right}/{d.pairs_total}" if d.pairs_total else "",
        )  # fmt: skip
    rows = Table(title="Rows (ms; error = forecast / published - 1)", header_style="bold")
    for col in ("row", "threads", "published", "forecast", "error", "leave-one-out", "loo error",
                "status"):  # fmt: skip
        rows.add_column(col, justify="left" if col in ("row", "status") else "right")
    for r in check.results:
        rec = r.to_dict()
        rows.add_row(
            r.row.row_id, str(r.row.threads), _ms(r.row.latency_s), _ms(r.forecast_s),
            _pct(rec["error"]), _ms(r.loo_s), _pct(rec["loo_error"]), r.status,
        )  # fmt: skip
    return Group(dev, rows)
