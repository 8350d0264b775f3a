"""Renderers of a :class:`~infercast.estimate.calibrate.CalibrationResult`.

JSON: ``infercast.calibration/1`` -- the fitted numbers (efficiencies, per-op
and per-call overheads, bandwidths, channel multiple), the fit's RMSPE and one
entry per kernel (predicted and measured seconds). Table: the fitted values and the
samples the fit explains worst.
"""

from __future__ import annotations

from typing import Any

from infercast.estimate.calibrate import (
    CalibrationResult,
    LatencyCalibration,
    loo_median,
    loo_worst,
)
from infercast.report.table import Col, FitTable, Grid, Row, entry
from infercast.report.text import cell, shown
from infercast.report.units import human_seconds

SCHEMA = "infercast.calibration/1"


def to_dict(result: CalibrationResult) -> dict[str, Any]:
    """The ``infercast.calibration/1`` document."""
    f = result.fit
    return {
        "schema": SCHEMA,
        "target": result.base.name,
        "runtime": result.runtime,
        "threads": result.threads,
        "samples": result.samples,
        "elapsed_s": result.elapsed_s,
        "unit": f.unit,
        "channel_multiple": f.channel_multiple,
        "reduction_half_depth": f.reduction_half_depth,
        "efficiency": f.efficiency,
        "op_overhead_s": f.op_overhead_s,
        "bandwidth_bytes_per_s": f.bandwidth,
        "invoke_overhead_s": f.invoke_overhead_s,
        "fit_rmspe": f.rmspe,
        "kernels": records(result),
    }


def records(result: CalibrationResult) -> list[dict[str, Any]]:
    """One flat dict per fitted sample: its name, predicted and measured seconds."""
    return [{"name": n, "predicted_s": p, "measured_s": m} for n, p, m in result.fit.residuals]


MAX_KERNELS = 12
"""Kernels the terminal summary lists (the worst fitted first); JSON has them all."""


def fitted_grid(result: CalibrationResult) -> Grid:
    """The numbers written, one row each, keyed as in the target file; efficiencies of op
    classes without a sample are kept from the target, and say so."""
    f = result.fit
    u = shown(f.unit)
    rows: list[Row] = []

    def add(key: str, text: str, value: float, how: str = "fitted") -> None:
        rows.append({"key": entry(key, key), "value": entry(text, value), "how": entry(how)})

    for k, v in sorted(f.efficiency.items()):
        how = "fitted" if k in f.fitted_classes else "kept (no sample of this class)"
        add(f"units.{u}.efficiency.{shown(k)}", f"{v:.4g}", v, how)
    add(f"units.{u}.op_overhead_s", human_seconds(f.op_overhead_s), f.op_overhead_s)
    add(f"units.{u}.channel_multiple", str(f.channel_multiple), f.channel_multiple)
    add(f"units.{u}.reduction_half_depth", f"{f.reduction_half_depth:.4g}", f.reduction_half_depth)
    add("calibration.invoke_overhead_s", human_seconds(f.invoke_overhead_s), f.invoke_overhead_s)
    for k, v in f.bandwidth.items():
        add(f"memories.{shown(k)}.bandwidth_bytes_per_s", f"{v / 1e9:.3g} GB/s", v)
    cols = [
        Col("key", "key in the file", numeric=False, prio=0, min_width=16, short="key"),
        Col("value", "value", prio=0),
        Col("how", "", numeric=False, prio=2, min_width=8),
    ]
    return Grid(cols, rows, title="values written", noun="values", more="--format json")


def kernels_grid(result: CalibrationResult, limit: int = MAX_KERNELS) -> Grid:
    """The samples the fit explains worst (|predicted / measured - 1|), at most ``limit``."""
    res = sorted(result.fit.residuals, key=lambda r: -abs(r[1] / r[2] - 1) if r[2] else 0.0)
    rows: list[Row] = []
    for name, pred, meas in res[:limit]:
        err = pred / meas - 1 if meas else float("nan")
        rows.append(
            {
                "name": entry(name, name),
                "predicted": entry(human_seconds(pred), pred),
                "measured": entry(human_seconds(meas), meas),
                "error": entry(f"{err:+.1%}", err),
            }
        )
    cols = [
        Col("name", "kernel", numeric=False, prio=0, min_width=16),
        Col("predicted", "fit", prio=0),
        Col("measured", "measured", prio=0),
        Col("error", "error", prio=0),
    ]
    n = len(res)
    which = f"the {len(rows)} the fit explains worst of {n}" if n > len(rows) else f"all {n}"
    title = f"samples: {which} (--format json lists every one)"
    return Grid(cols, rows, title=title, noun="samples", more="--format json")


def render_summary(result: CalibrationResult, written_to: str) -> Any:
    """A rich renderable: what was fitted (a table that fits the terminal), how well it
    explains its samples, and the samples it explains worst."""
    from rich.console import Group

    f = result.fit
    threads = f", {result.threads} thread(s)" if result.threads else ""
    return Group(
        cell(
            f"calibrated {result.base.name} ({result.runtime}{threads}) on {result.samples} "
            f"samples in {result.elapsed_s:.0f} s -> {written_to}",
            style="bold",
        ),
        FitTable(fitted_grid(result)),
        cell(f"fit RMSPE on its own samples: {f.rmspe:.1%}"),
        FitTable(kernels_grid(result)),
    )


def latency_dict(res: LatencyCalibration) -> dict[str, Any]:
    """The ``infercast.calibration/1`` document of a whole-model fit."""
    return {
        "schema": SCHEMA,
        "target": res.base.name,
        "source": "whole-model latencies",
        "parameters": res.values,
        "rows": [
            {"model": n, "measured_s": m, "fit_s": f, "loo_s": lf}
            for (n, f, m), (_, lf, _) in zip(res.fit, res.loo, strict=True)
        ],
        "loo_median_abs_error": loo_median(res.loo),
        "loo_worst_ratio": loo_worst(res.loo),
    }


def latency_grid(res: LatencyCalibration) -> Grid:
    """One row per model: measured, the fit's time, its residual, the leave-one-out
    forecast (the model left out of the fit) and its error."""
    rows: list[Row] = []
    for (name, f, m), (_, lf, _) in zip(res.fit, res.loo, strict=True):
        rows.append(
            {
                "model": entry(name, name),
                "measured": entry(human_seconds(m), m),
                "fit": entry(human_seconds(f), f),
                "residual": entry(f"{f / m - 1:+.1%}", f / m - 1),
                "loo": entry(human_seconds(lf), lf),
                "loo_error": entry(f"{lf / m - 1:+.1%}", lf / m - 1),
            }
        )
    cols = [
        Col("model", "model", numeric=False, prio=0, min_width=12),
        Col("measured", "measured", prio=0),
        Col("fit", "fit", prio=1),
        Col("residual", "residual", prio=2, short="resid."),
        Col("loo", "leave-one-out", prio=1, short="LOO"),
        Col("loo_error", "LOO error", prio=0, short="LOO err"),
    ]
    return Grid(cols, rows, noun="models", more="--format json")


def render_latency(res: LatencyCalibration, written_to: str) -> Any:
    """A rich renderable of a whole-model fit: the fitted values, each model's residual and
    leave-one-out error (a table that fits the terminal), the leave-one-out summary."""
    from rich.console import Group

    values = Grid(
        [
            Col("key", "fitted value", numeric=False, prio=0, min_width=16, short="key"),
            Col("value", "value", prio=0),
        ],
        [{"key": entry(k, k), "value": entry(f"{v:.4g}", v)} for k, v in res.values.items()],
        noun="values",
        more="--format json",
    )
    return Group(
        cell(
            f"calibrated {res.base.name} on {len(res.fit)} whole-model time(s) -> {written_to}",
            style="bold",
        ),
        FitTable(values),
        FitTable(latency_grid(res)),
        cell(
            f"leave-one-out: median |error| {loo_median(res.loo):.0%}, "
            f"worst {loo_worst(res.loo):.2f}x"
        ),
    )
