"""Forecast vs the published measurements: per row, per device, with leave-one-out error.

For every row of the published data (:mod:`.data`) whose model is built
(:mod:`.build`), the row's model is forecast on its target under the row's
conditions (thread count, clock). Rows the built-in target was fitted on
(``fit = yes`` and named in the target's ``calibration.rows``) are also forecast
**leave-one-out**: the target's free parameters (``calibration.parameters``) are
refitted from their prior (the values its tables state) on the other fitted rows,
and that fit forecasts the row. A row's *prediction* is its leave-one-out forecast
when it was fitted on, its plain forecast otherwise: only predictions count in the
per-device error figures.

NPU-vs-CPU pairs: rows of one board and one model (recipe and quantisation) timed
on an accelerator target and on a CPU-only target; the pair is right when the
predictions rank the two the way the measurements do.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infercast.estimate.fit import Sample, fit_values, leave_one_out, predict, target_bounds
from infercast.estimate.forecast import Params, estimate
from infercast.estimate.published.data import PublishedRow, load_rows
from infercast.ir.graph import Graph
from infercast.targets.loader import load_target
from infercast.targets.schema import Target

SCHEMA = "infercast.validate-published/1"


def ratio(forecast: float, measured: float) -> float:
    """forecast / measured folded to >= 1 (2.0: off by 2x either way)."""
    r = forecast / measured
    return max(r, 1 / r)


@dataclass
class RowResult:
    row: PublishedRow
    forecast_s: float | None = None
    """Forecast with the target as shipped (in-sample for a fitted row)."""
    loo_s: float | None = None
    """Leave-one-out forecast (fitted rows only)."""
    status: str = "ok"
    """``ok``, ``not built`` (the model file is missing) or an error line."""

    @property
    def in_fit(self) -> bool:
        return self.loo_s is not None

    @property
    def prediction_s(self) -> float | None:
        return self.loo_s if self.loo_s is not None else self.forecast_s

    @property
    def error(self) -> float | None:
        return None if self.forecast_s is None else self.forecast_s / self.row.latency_s - 1

    @property
    def prediction_error(self) -> float | None:
        p = self.prediction_s
        return None if p is None else p / self.row.latency_s - 1

    def to_dict(self) -> dict[str, Any]:
        r = self.row
        return {
            "row_id": r.row_id,
            "board": r.board,
            "target": r.target,
            "model": r.model,
            "recipe": r.recipe,
            "quant": r.quant,
            "threads": r.threads,
            "runtime": r.runtime,
            "published_s": r.latency_s,
            "forecast_s": self.forecast_s,
            "error": self.error,
            "in_fit": self.in_fit,
            "loo_forecast_s": self.loo_s,
            "loo_error": None if self.loo_s is None else self.loo_s / r.latency_s - 1,
            "prediction_error": self.prediction_error,
            "status": self.status,
            "source": r.source,
        }


@dataclass
class DeviceSummary:
    target: str
    rows: int
    rows_in_fit: int
    median_abs_error: float | None
    """Over every forecast row (fitted rows in-sample)."""
    worst_ratio: float | None
    prediction_median_abs_error: float | None
    """Over predictions: leave-one-out for fitted rows, plain for the others."""
    prediction_worst_ratio: float | None
    pairs_right: int = 0
    pairs_total: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class PublishedCheck:
    results: list[RowResult]
    devices: list[DeviceSummary]
    pairs: list[tuple[RowResult, RowResult, bool]] = field(default_factory=list)
    """(accelerator row, CPU row, ranked right)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "units": {"time": "s", "error": "forecast / published - 1"},
            "devices": [d.to_dict() for d in self.devices],
            "pairs": [
                {"accelerator": a.row.row_id, "cpu": c.row.row_id, "right": ok}
                for a, c, ok in self.pairs
            ],
            "rows": [r.to_dict() for r in self.results],
        }


class _Graphs:
    """Loaded models, by path (one model serves several rows and targets)."""

    def __init__(self) -> None:
        self._cache: dict[Path, Graph] = {}

    def __call__(self, path: Path) -> Graph:
        if path not in self._cache:
            from infercast.frontends import load

            self._cache[path] = load(path)
        return self._cache[path]


def row_sample(row: PublishedRow, target: Target, graph: Graph) -> Sample:
    """The row as a fit sample: its model's kernels on ``target``, its conditions."""
    fc = estimate(graph, target, threads=row.threads, clock_hz=row.clock_hz)
    return Sample(
        name=row.row_id,
        works=tuple(w for _, w in fc.works),
        measured_s=row.latency_s,
        threads=row.threads,
        peak_scale=dict(fc.params.peak_scale),
        device_only=row.timed == "device",
    )


def _summary(target: str, results: list[RowResult]) -> DeviceSummary:
    done = [r for r in results if r.forecast_s is not None]
    errs = [abs(r.error) for r in done if r.error is not None]
    preds = [r for r in done if r.prediction_s is not None]
    perr = [abs(r.prediction_error) for r in preds if r.prediction_error is not None]
    return DeviceSummary(
        target=target,
        rows=len(results),
        rows_in_fit=sum(1 for r in results if r.in_fit),
        median_abs_error=statistics.median(errs) if errs else None,
        worst_ratio=max(
            (ratio(r.forecast_s, r.row.latency_s) for r in done if r.forecast_s), default=None
        ),
        prediction_median_abs_error=statistics.median(perr) if perr else None,
        prediction_worst_ratio=max(
            (ratio(r.prediction_s, r.row.latency_s) for r in preds if r.prediction_s), default=None
        ),
    )


def check_target(
    target: Target,
    rows: Sequence[PublishedRow],
    paths: dict[tuple[str, str], Path],
    graphs: Callable[[Path], Graph] | None = None,
) -> list[RowResult]:
    """Forecast (and leave-one-out) every row of one target."""
    load = graphs or _Graphs()
    results: list[RowResult] = []
    samples: dict[str, Sample] = {}
    for row in rows:
        res = RowResult(row)
        path = paths.get((row.recipe, row.quant))
        if path is None or not path.exists():
            res.status = "not built"
        else:
            samples[row.row_id] = row_sample(row, target, load(path))
        results.append(res)
    shipped = Params.of(target)
    for res in results:
        s = samples.get(res.row.row_id)
        if s is not None:
            res.forecast_s = predict(s, shipped)
    fitted = set(target.calibration.rows)
    keys = list(target.calibration.parameters)
    fit_samples = [samples[r.row_id] for r in rows if r.row_id in fitted and r.row_id in samples]
    if keys and fit_samples:
        prior = Params.of(target, prior_for=keys)
        bounds = target_bounds(target, keys)
        loo = {name: f for name, f, _ in leave_one_out(fit_samples, prior, keys, bounds=bounds)}
        for res in results:
            res.loo_s = loo.get(res.row.row_id)
    return results


def pairs_of(results: Sequence[RowResult]) -> list[tuple[RowResult, RowResult, bool]]:
    """NPU-vs-CPU pairs of ``results`` and whether the predictions rank them right."""
    accel = {
        t: load_target(t).placement.accelerator is not None for t in {r.row.target for r in results}
    }
    out = []
    for a in results:
        if not accel[a.row.target]:
            continue
        for c in results:
            if accel[c.row.target] or c.row.board != a.row.board:
                continue
            if (c.row.recipe, c.row.quant) != (a.row.recipe, a.row.quant):
                continue
            pa, pc = a.prediction_s, c.prediction_s
            if pa is None or pc is None:
                continue
            out.append((a, c, (pa < pc) == (a.row.latency_s < c.row.latency_s)))
    return out


def check_published(
    targets: Sequence[str] | None = None,
    *,
    build: bool = False,
    rows: Sequence[PublishedRow] | None = None,
    models_dir: Path | None = None,
) -> PublishedCheck:
    """Forecast every published row (of ``targets``; default all) against its figure."""
    from infercast.estimate.published.build import cache_root, ensure
    from infercast.estimate.published.recipes import file_name

    all_rows = list(rows) if rows is not None else load_rows()
    chosen = [r for r in all_rows if targets is None or r.target in targets]
    wanted = sorted({(r.recipe, r.quant) for r in chosen})
    root = models_dir or cache_root()
    paths = ensure(wanted, root) if build else {w: root / file_name(*w) for w in wanted}
    graphs = _Graphs()
    results: list[RowResult] = []
    devices: list[DeviceSummary] = []
    for name in dict.fromkeys(r.target for r in chosen):
        res = check_target(
            load_target(name), [r for r in chosen if r.target == name], paths, graphs
        )
        results.extend(res)
        devices.append(_summary(name, res))
    pairs = pairs_of(results)
    for d in devices:
        mine = [p for p in pairs if d.target in (p[0].row.target, p[1].row.target)]
        d.pairs_total = len(mine)
        d.pairs_right = sum(1 for p in mine if p[2])
    return PublishedCheck(results, devices, pairs)


# --------------------------------------------------------------------------- #
# Calibrating a built-in target on its rows
# --------------------------------------------------------------------------- #


@dataclass
class TargetCalibration:
    target: str
    keys: tuple[str, ...]
    values: dict[str, float]
    rows: tuple[str, ...]
    fit: list[tuple[str, float, float]]
    loo: list[tuple[str, float, float]]

    @property
    def loo_median_abs_error(self) -> float:
        return statistics.median(abs(f / m - 1) for _, f, m in self.loo) if self.loo else 0.0

    @property
    def loo_worst_ratio(self) -> float:
        return max((ratio(f, m) for _, f, m in self.loo), default=0.0)


def calibrate_on_rows(
    target: Target,
    rows: Sequence[PublishedRow],
    paths: dict[tuple[str, str], Path],
    keys: Sequence[str] | None = None,
    graphs: Callable[[Path], Graph] | None = None,
) -> TargetCalibration:
    """Fit ``keys`` (default: the target's ``calibration.parameters``) on the target's
    ``fit = yes`` rows, from the prior (the target's stated values for those keys)."""
    load = graphs or _Graphs()
    keys = list(keys if keys is not None else target.calibration.parameters)
    fit_rows = [
        r
        for r in rows
        if r.fit and (r.recipe, r.quant) in paths and paths[(r.recipe, r.quant)].exists()
    ]
    samples = [row_sample(r, target, load(paths[(r.recipe, r.quant)])) for r in fit_rows]
    prior = Params.of(target, prior_for=keys)
    bounds = target_bounds(target, keys)
    f = fit_values(samples, prior, keys, bounds=bounds)
    loo = leave_one_out(samples, prior, keys, bounds=bounds)
    return TargetCalibration(
        target=target.name,
        keys=tuple(keys),
        values=f.values,
        rows=tuple(r.row_id for r in fit_rows),
        fit=list(f.residuals),
        loo=loo,
    )
