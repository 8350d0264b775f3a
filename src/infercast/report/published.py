"""Renderers of the published-measurement check (``infercast validate --published``).

JSON: ``infercast.validate-published/1`` (:meth:`PublishedCheck.to_dict`): per device
the row counts, median |error| and worst ratio (in-sample and of the predictions:
leave-one-out for rows the target was fitted on), the NPU-vs-CPU pairs; per row the
forecast, the published figure, both errors and the share of the forecast outside the fitted
evidence (kernel kinds no fitted row of the target exercised). CSV: one row per published row.
Table: the per-device summary, then the rows. Rows marked ``fit = excluded`` (the
figure contradicts the model built for them) are listed with status ``excluded`` and
counted in no per-device figure.
"""

from __future__ import annotations

import csv
import io
from dataclasses import replace
from typing import Any

from infercast.estimate.published.check import PublishedCheck
from infercast.report.table import Col, FitTable, Grid, Row, TableOptions, entry

CSV_COLUMNS = (
    "row_id", "target", "model", "quant", "threads", "runtime", "published_s", "forecast_s",
    "error", "in_fit", "loo_forecast_s", "loo_error", "outside_evidence", "status", "source",
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


DEVICE_COLUMNS = [
    Col("target", "target", numeric=False, prio=0),
    Col("rows", "rows", prio=0),
    Col("in_fit", "in fit", prio=2),
    Col("excluded", "excluded", prio=2, short="excl."),
    Col("median", "median |error|", prio=1, short="med |err|"),
    Col("worst", "worst", prio=2),
    Col("pred_median", "prediction median |error|", prio=0, short="pred. med |err|"),
    Col("pred_worst", "prediction worst", prio=1, short="pred. worst"),
    Col("pairs", "NPU-vs-CPU right", prio=1, short="NPU>CPU ok"),
    Col("outside", "outside evidence", prio=2, short="outside"),
]
ROW_COLUMNS = [
    Col("row", "row", numeric=False, prio=0, min_width=12),
    Col("threads", "threads", prio=2, short="thr"),
    Col("published", "published", prio=0, short="publ."),
    Col("forecast", "forecast", prio=1, short="fcst"),
    Col("error", "error", prio=1),
    Col("loo", "leave-one-out", prio=2, short="LOO"),
    Col("loo_error", "loo error", prio=0, short="LOO err"),
    Col("outside", "outside evidence", prio=2, short="outside"),
    Col("status", "status", numeric=False, prio=1, min_width=9),
]


def device_grid(check: PublishedCheck) -> Grid:
    rows: list[Row] = []
    for d in check.devices:
        pairs = f"{d.pairs_right}/{d.pairs_total}" if d.pairs_total else ""
        rows.append(
            {
                "target": entry(d.target, d.target),
                "rows": entry(d.rows, d.rows),
                "in_fit": entry(d.rows_in_fit, d.rows_in_fit),
                "excluded": entry(d.rows_excluded, d.rows_excluded),
                "median": entry(_abs_pct(d.median_abs_error), d.median_abs_error),
                "worst": entry(_x(d.worst_ratio), d.worst_ratio),
                "pred_median": entry(
                    _abs_pct(d.prediction_median_abs_error), d.prediction_median_abs_error
                ),
                "pred_worst": entry(_x(d.prediction_worst_ratio), d.prediction_worst_ratio),
                "pairs": entry(pairs, d.pairs_right if d.pairs_total else None),
                "outside": entry(d.rows_outside or "", d.rows_outside),
            }
        )
    title = (
        "Forecast vs published measurements, per device (prediction = leave-one-out for "
        "rows the target was fitted on)"
    )
    return Grid(list(DEVICE_COLUMNS), rows, title=title, noun="devices", more="--format csv")


def rows_grid(check: PublishedCheck) -> Grid:
    rows: list[Row] = []
    for r in check.results:
        rec = r.to_dict()
        rows.append(
            {
                "row": entry(r.row.row_id, r.row.row_id),
                "threads": entry(r.row.threads, r.row.threads),
                "published": entry(_ms(r.row.latency_s), r.row.latency_s),
                "forecast": entry(_ms(r.forecast_s), r.forecast_s),
                "error": entry(_pct(rec["error"]), rec["error"]),
                "loo": entry(_ms(r.loo_s), r.loo_s),
                "loo_error": entry(_pct(rec["loo_error"]), rec["loo_error"]),
                "outside": entry(_abs_pct(r.outside_share), r.outside_share),
                "status": entry(r.status, r.status),
            }
        )
    title = (
        "Rows (ms; error = forecast / published - 1; outside evidence = share of the forecast "
        "in kernel kinds no fitted row exercised)"
    )
    # a row id is read whole: other columns go before it folds
    longest = max((len(r.row.row_id) for r in check.results), default=12)
    cols = [replace(c, min_width=min(longest, 40)) if c.key == "row" else c for c in ROW_COLUMNS]
    return Grid(cols, rows, title=title, noun="rows", more="--format csv")


def render_table(check: PublishedCheck, opts: TableOptions | None = None) -> Any:
    """The per-device summary, then the rows: tables that fit the terminal's width."""
    from rich.console import Group

    return Group(FitTable(device_grid(check)), FitTable(rows_grid(check), opts))
