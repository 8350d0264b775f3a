"""Renderers of a :class:`~infercast.estimate.calibrate.CalibrationResult`.

JSON: ``infercast.calibration/1`` -- the fitted numbers (efficiencies, per-op
and per-call overheads, bandwidths, channel multiple), the fit's RMSPE and one
entry per kernel (predicted and measured seconds). Text: a short summary.
"""

from __future__ import annotations

from typing import Any

from infercast.estimate.calibrate import (
    CalibrationResult,
    LatencyCalibration,
    loo_median,
    loo_worst,
)
from infercast.report.text import shown

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


def summary_text(result: CalibrationResult, written_to: str) -> str:
    """What was fitted, in four lines."""
    f = result.fit
    effs = ", ".join(f"{k} {v:.3g}" for k, v in sorted(f.efficiency.items()))
    bws = ", ".join(f"{k} {v / 1e9:.3g} GB/s" for k, v in f.bandwidth.items())
    threads = f", {result.threads} thread(s)" if result.threads else ""
    return shown(
        f"calibrated {result.base.name} ({result.runtime}{threads}) on {result.samples} "
        f"samples in {result.elapsed_s:.0f} s -> {written_to}"
    ) + (
        f"\n  unit {f.unit}: efficiency {effs}\n"
        f"  op_overhead_s {f.op_overhead_s:.3g}, channel_multiple {f.channel_multiple}, "
        f"invoke_overhead_s {f.invoke_overhead_s:.3g}"
        + (f", bandwidth {bws}" if bws else "")
        + f"\n  fit RMSPE on its own samples: {f.rmspe:.1%}"
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


def latency_text(res: LatencyCalibration, written_to: str) -> str:
    """The fitted values, each model's residual and leave-one-out error."""
    lines = [
        shown(f"calibrated {res.base.name} on {len(res.fit)} whole-model time(s) -> {written_to}"),
        "  fitted: " + ", ".join(f"{k} = {v:.4g}" for k, v in res.values.items()),
        f"  {'model':40s} {'measured':>10s} {'fit':>10s} {'residual':>9s} "
        f"{'leave-one-out':>13s} {'error':>7s}",
    ]
    for (name, f, m), (_, lf, _) in zip(res.fit, res.loo, strict=True):
        lines.append(
            f"  {shown(name[:40]):40s} {m * 1e3:8.3f}ms {f * 1e3:8.3f}ms {f / m - 1:+9.1%} "
            f"{lf * 1e3:11.3f}ms {lf / m - 1:+7.1%}"
        )
    lines.append(
        f"  leave-one-out: median |error| {loo_median(res.loo):.0%}, "
        f"worst {loo_worst(res.loo):.2f}x"
    )
    return "\n".join(lines)
