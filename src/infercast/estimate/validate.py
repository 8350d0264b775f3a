"""Forecast vs measurement on whole models, and the accuracy metrics forecasters report.

Metrics (latency.md; nn-Meter, LitePred, HELP report these):

* ``within_10``: share of models whose ``|forecast - measured| / measured <= 0.10``
  (nn-Meter's "±10% accuracy");
* ``rmspe``: root-mean-square percentage error, a fraction;
* ``spearman_rho``: rank correlation between forecasts and measurements (what
  a designer choosing between variants needs); computed with average ranks
  for ties, as ``scipy.stats.spearmanr`` does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from infercast.estimate.forecast import estimate
from infercast.estimate.measure import check_clock, measure
from infercast.ir.graph import Graph
from infercast.targets.schema import Target


def _ranks(x: Sequence[float]) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    order = np.argsort(a, kind="mergesort")
    ranks = np.empty(len(a))
    ranks[order] = np.arange(1, len(a) + 1)
    # Average ranks over ties.
    for v in np.unique(a):
        idx = np.where(a == v)[0]
        if len(idx) > 1:
            ranks[idx] = ranks[idx].mean()
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rank correlation; None with fewer than 3 pairs or a constant side."""
    if len(x) < 3 or len(x) != len(y):
        return None
    rx, ry = _ranks(x), _ranks(y)
    if np.std(rx) == 0 or np.std(ry) == 0:
        return None
    return float(np.corrcoef(rx, ry)[0, 1])


@dataclass(frozen=True)
class Metrics:
    n: int
    within_10: float
    rmspe: float
    mean_abs_error: float
    spearman_rho: float | None


def metrics(pairs: Sequence[tuple[float, float]]) -> Metrics:
    """Metrics of (forecast, measured) pairs, seconds."""
    errs = [(f - m) / m for f, m in pairs]
    n = len(errs)
    return Metrics(
        n=n,
        within_10=sum(1 for e in errs if abs(e) <= 0.10 + 1e-12) / n if n else 0.0,
        rmspe=math.sqrt(sum(e * e for e in errs) / n) if n else 0.0,
        mean_abs_error=sum(abs(e) for e in errs) / n if n else 0.0,
        spearman_rho=spearman([f for f, _ in pairs], [m for _, m in pairs]),
    )


@dataclass(frozen=True)
class Row:
    model: str
    runtime: str
    threads: int
    forecast_s: float
    measured_s: float
    measured_median_s: float
    runs: int

    @property
    def error(self) -> float:
        return (self.forecast_s - self.measured_s) / self.measured_s


@dataclass(frozen=True)
class Validation:
    target: Target
    rows: tuple[Row, ...]

    @property
    def metrics(self) -> Metrics:
        return metrics([(r.forecast_s, r.measured_s) for r in self.rows])


def runtime_for(path: str | Path) -> str:
    return "ort" if str(path).endswith(".onnx") else "litert"


def validate(
    target: Target,
    models: Sequence[tuple[str | Path, Graph]],
    *,
    threads: int | None = None,
    budget_s: float = 60.0,
    progress: Callable[[str], None] | None = None,
    clock: str = "wall",
) -> Validation:
    """Forecast each model on ``target`` and measure it on this machine.

    ``models`` are (file, its loaded graph) pairs: the file is what the runtime
    runs. ONNX models run with ONNX Runtime, TFLite models with LiteRT, each
    with ``threads`` (default: the calibration's thread count, else 1). ``clock``: the
    measured figure is the minimum wall-clock time (``wall``) or the minimum CPU time of
    the calling thread (``cpu``, one thread only; :mod:`infercast.estimate.measure`).
    """
    th = threads or target.calibration.threads or 1
    check_clock(clock, th)
    forecasts = [estimate(g, target, threads=th).latency_s for _, g in models]
    files = [m for m, _ in models]
    rows: list[Row] = []
    for rt in ("ort", "litert"):
        idx = [i for i, m in enumerate(files) if runtime_for(m) == rt]
        if not idx:
            continue
        share = budget_s * len(idx) / len(files)
        timings = measure([files[i] for i in idx], rt, th, budget_s=share, progress=progress)
        for i, t in zip(idx, timings, strict=True):
            median = t.cpu_median_s if clock == "cpu" and t.cpu_median_s else t.median_s
            rows.append(Row(str(files[i]), rt, th, forecasts[i], t.min_of(clock), median, t.runs))
    order = {str(m): i for i, m in enumerate(files)}
    rows.sort(key=lambda r: order[r.model])
    return Validation(target, tuple(rows))
