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

Paired targets (``calibration.paired``: NNAPI over VX on one NPU): the target's own
parameters are fitted on the difference between each of its rows and the same
measurement on its ``values_from`` target (:class:`Pairing`), and a leave-one-out
forecast drops the whole pair, from the ``values_from`` target's fit as well.

NPU-vs-CPU pairs: rows of one board and one model (recipe and quantisation) timed
on an accelerator target and on a CPU-only target; the pair is right when the
predictions rank the two the way the measurements do.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from infercast.estimate.fit import Sample, fit_values, leave_one_out, predict, target_bounds
from infercast.estimate.forecast import (
    OUTSIDE_SHARE,
    Forecast,
    Params,
    coverage,
    covered_kinds,
    estimate,
)
from infercast.estimate.published.data import PublishedRow, load_rows, paired_row
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
    """``ok``, ``not built`` (the model file is missing), ``excluded`` (the published
    figure contradicts the model built for it: :attr:`PublishedRow.excluded`) or an error
    line."""
    outside_share: float | None = None
    """Fraction of the forecast in kernel kinds no fitted row exercised (None: the target
    records no coverage; :func:`~infercast.estimate.forecast.outside_evidence`)."""

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
            "outside_evidence": self.outside_share,
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
    rows_excluded: int = 0
    """Rows whose figure contradicts the model built for them: in ``rows``, in no figure."""
    rows_outside: int = 0
    """Rows with at least ``OUTSIDE_SHARE`` of the forecast outside the fitted evidence."""

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


def row_forecast(row: PublishedRow, target: Target, graph: Graph) -> Forecast:
    """The forecast of the row's model on ``target`` under its conditions."""
    return estimate(graph, target, threads=row.threads, clock_hz=row.clock_hz)


def row_sample(row: PublishedRow, target: Target, graph: Graph) -> Sample:
    """The row as a fit sample: its model's kernels on ``target``, its conditions."""
    return sample_of(row, row_forecast(row, target, graph))


def sample_of(row: PublishedRow, fc: Forecast) -> Sample:
    """The row as a fit sample from its forecast ``fc``."""
    return Sample(
        name=row.row_id,
        works=tuple(w for _, w in fc.works),
        measured_s=row.latency_s,
        threads=row.threads,
        peak_scale=dict(fc.params.peak_scale),
        device_only=row.timed == "device",
    )


# --------------------------------------------------------------------------- #
# Paired rows (calibration.paired)
# --------------------------------------------------------------------------- #

MIN_PAIRED = 0.05
"""A paired sample's adjusted time is at least this fraction of its published time (the
shared model's forecast plus a negative published difference can fall below zero)."""


@dataclass
class Pairing:
    """What a paired fit needs of the ``values_from`` (baseline) target.

    A row R of the paired target and its partner B (the same measurement on the baseline)
    give R's adjusted time ``forecast_baseline(B) + published(R) - published(B)``: what R
    would take if the baseline's model were exact on this model. The paired target's own
    terms (what it adds over the baseline) are fitted on adjusted times, so the baseline's
    error on the model cancels; its forecast of a new model stays the baseline's numbers
    plus those terms."""

    baseline: Target
    keys: list[str]
    """The baseline's ``calibration.parameters``."""
    fit_samples: list[Sample]
    """The baseline's fitted rows (a leave-one-out refits it without the pair's row)."""
    partner: dict[str, Sample]
    """Row id of the paired target -> its partner row's sample on the baseline."""

    def params(self, without: str | None = None) -> Params:
        """The baseline's numbers: as shipped, or refitted without the row ``without``."""
        if without is None or not self.keys or all(s.name != without for s in self.fit_samples):
            return Params.of(self.baseline)
        rest = [s for s in self.fit_samples if s.name != without]
        prior = Params.of(self.baseline, prior_for=self.keys)
        bounds = target_bounds(self.baseline, self.keys)
        return fit_values(rest, prior, self.keys, bounds=bounds).params if rest else prior

    def shared(self, base: Params) -> dict[str, float]:
        """The values the paired target reads from the baseline, taken from ``base``."""
        from infercast.estimate.forecast import fitted_values

        return {k: base.get(k) for k in fitted_values(self.baseline)}

    def adjusted(self, s: Sample, base: Params) -> Sample:
        """``s`` with its adjusted time under the baseline's numbers ``base``."""
        b = self.partner.get(s.name)
        if b is None:
            return s
        m = predict(b, base) + s.measured_s - b.measured_s
        return replace(s, measured_s=max(m, MIN_PAIRED * s.measured_s))


def pairing_of(
    target: Target,
    rows: Sequence[PublishedRow],
    all_rows: Sequence[PublishedRow],
    paths: dict[tuple[str, str], Path],
    graphs: Callable[[Path], Graph],
) -> Pairing | None:
    """The :class:`Pairing` of a ``calibration.paired`` target's ``rows`` (None: not paired)."""
    cal = target.calibration
    if not cal.paired or not cal.values_from:
        return None
    base = load_target(cal.values_from)
    mine = [r for r in all_rows if r.target == base.name]

    def sample(r: PublishedRow) -> Sample | None:
        p = paths.get((r.recipe, r.quant))
        return row_sample(r, base, graphs(p)) if p is not None and p.exists() else None

    fitted = set(base.calibration.rows)
    fit_samples = [s for r in mine if r.row_id in fitted and (s := sample(r)) is not None]
    by_name = {s.name: s for s in fit_samples}
    partner: dict[str, Sample] = {}
    for r in rows:
        b = paired_row(r, mine, base.name)
        if b is not None and (s := by_name.get(b.row_id) or sample(b)) is not None:
            partner[r.row_id] = s
    return Pairing(base, list(base.calibration.parameters), fit_samples, partner)


def wanted_rows(
    rows: Sequence[PublishedRow], all_rows: Sequence[PublishedRow]
) -> list[PublishedRow]:
    """``rows`` and the rows a paired fit of their targets reads (the baselines' rows)."""
    out = list(rows)
    for name in dict.fromkeys(r.target for r in rows):
        cal = load_target(name).calibration
        if cal.paired and cal.values_from:
            out += [r for r in all_rows if r.target == cal.values_from and r not in out]
    return out


def paired_leave_one_out(
    samples: Sequence[Sample],
    prior: Params,
    keys: Sequence[str],
    pairing: Pairing,
    bounds: dict[str, tuple[float, float]] | None = None,
) -> list[tuple[str, float, float]]:
    """(sample, forecast s, measured s) of each sample by a paired fit on the other pairs,
    with the baseline refitted without the left-out sample's partner."""
    out: list[tuple[str, float, float]] = []
    for i, s in enumerate(samples):
        b = pairing.partner.get(s.name)
        base = pairing.params(without=b.name if b is not None else None)
        p0 = prior.with_values(pairing.shared(base))
        rest = [pairing.adjusted(t, base) for j, t in enumerate(samples) if j != i]
        p = fit_values(rest, p0, keys, bounds=bounds).params if rest else p0
        out.append((s.name, predict(s, p), s.measured_s))
    return out


def loo_of(
    samples: Sequence[Sample],
    prior: Params,
    keys: Sequence[str],
    pairing: Pairing | None,
    bounds: dict[str, tuple[float, float]] | None = None,
) -> list[tuple[str, float, float]]:
    """Leave-one-out forecasts of ``samples`` (within ``bounds``: the target's
    :func:`~infercast.estimate.fit.target_bounds`): paired when ``pairing`` is given."""
    if pairing is None:
        return leave_one_out(samples, prior, keys, bounds=bounds)
    return paired_leave_one_out(samples, prior, keys, pairing, bounds)


def _summary(target: str, results: list[RowResult]) -> DeviceSummary:
    done = [r for r in results if r.forecast_s is not None and not r.row.excluded]
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
        rows_excluded=sum(1 for r in results if r.row.excluded),
        rows_outside=sum(1 for r in done if (r.outside_share or 0.0) >= OUTSIDE_SHARE),
    )


def check_target(
    target: Target,
    rows: Sequence[PublishedRow],
    paths: dict[tuple[str, str], Path],
    graphs: Callable[[Path], Graph] | None = None,
    all_rows: Sequence[PublishedRow] = (),
) -> list[RowResult]:
    """Forecast (and leave-one-out) every row of one target (``all_rows``: where a paired
    target finds its partner rows)."""
    load = graphs or _Graphs()
    results: list[RowResult] = []
    samples: dict[str, Sample] = {}
    for row in rows:
        res = RowResult(row)
        path = paths.get((row.recipe, row.quant))
        if path is None or not path.exists():
            res.status = "not built"
        else:
            fc = row_forecast(row, target, load(path))
            samples[row.row_id] = sample_of(row, fc)
            if covered_kinds(target) is not None:
                ev = fc.outside
                res.outside_share = 0.0 if ev is None else ev.share
            if row.excluded:
                res.status = "excluded"
        results.append(res)
    shipped = Params.of(target)
    for res in results:
        s = samples.get(res.row.row_id)
        if s is not None:
            res.forecast_s = predict(s, shipped)
    fitted = set(target.calibration.rows)
    keys = list(target.calibration.parameters)
    fit_samples = [
        samples[r.row_id]
        for r in rows
        if r.row_id in fitted and r.row_id in samples and not r.excluded
    ]
    if keys and fit_samples:
        prior = Params.of(target, prior_for=keys)
        pairing = pairing_of(target, rows, all_rows, paths, load)
        bounds = target_bounds(target, keys)
        loo = {name: f for name, f, _ in loo_of(fit_samples, prior, keys, pairing, bounds)}
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
        if not accel[a.row.target] or a.row.excluded:
            continue
        for c in results:
            if accel[c.row.target] or c.row.excluded or c.row.board != a.row.board:
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
    wanted = sorted({(r.recipe, r.quant) for r in wanted_rows(chosen, all_rows)})
    root = models_dir or cache_root()
    paths = ensure(wanted, root) if build else {w: root / file_name(*w) for w in wanted}
    graphs = _Graphs()
    results: list[RowResult] = []
    devices: list[DeviceSummary] = []
    for name in dict.fromkeys(r.target for r in chosen):
        res = check_target(
            load_target(name), [r for r in chosen if r.target == name], paths, graphs, all_rows
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
    paired_rows: tuple[str, ...] = ()
    """The partner row of each of ``rows`` on the ``values_from`` target (paired fits)."""
    covered: tuple[str, ...] = ()
    """Kernel kinds that took at least ``COVERED_SHARE`` of some fitted row's forecast."""
    outside_rows: dict[str, float] = field(default_factory=dict)
    """Checked-only rows whose forecast lies largely outside the covered kinds (and those
    of the ``values_from`` target): row id -> published / forecast under the fit."""
    baseline: str = ""
    """The ``values_from`` target of a paired fit."""

    @property
    def loo_median_abs_error(self) -> float:
        return statistics.median(abs(f / m - 1) for _, f, m in self.loo) if self.loo else 0.0

    @property
    def loo_worst_ratio(self) -> float:
        return max((ratio(f, m) for _, f, m in self.loo), default=0.0)


def _outside_rows(
    target: Target,
    rows: Sequence[PublishedRow],
    paths: dict[tuple[str, str], Path],
    load: Callable[[Path], Graph],
    covered: Sequence[str],
    fitted: Params,
) -> dict[str, float]:
    """Checked-only rows (``fit = no``) of ``target`` with at least ``OUTSIDE_SHARE`` of their
    forecast outside ``covered`` (and the ``values_from`` target's kinds): published over the
    forecast under the ``fitted`` numbers."""
    cal = target.calibration
    t = replace(target, calibration=replace(cal, covered=tuple(covered) or ("",)))
    out: dict[str, float] = {}
    for r in rows:
        path = paths.get((r.recipe, r.quant))
        if r.fit or path is None or not path.exists():
            continue
        fc = row_forecast(r, t, load(path))
        ev = fc.outside
        if ev is not None and ev.share >= OUTSIDE_SHARE:
            out[r.row_id] = r.latency_s / predict(sample_of(r, fc), fitted)
    return out


def calibrate_on_rows(
    target: Target,
    rows: Sequence[PublishedRow],
    paths: dict[tuple[str, str], Path],
    keys: Sequence[str] | None = None,
    graphs: Callable[[Path], Graph] | None = None,
    all_rows: Sequence[PublishedRow] = (),
) -> TargetCalibration:
    """Fit ``keys`` (default: the target's ``calibration.parameters``) on the target's
    ``fit = yes`` rows, from the prior (the target's stated values for those keys); a
    ``calibration.paired`` target on the differences to its partner rows in ``all_rows``
    (:class:`Pairing`)."""
    load = graphs or _Graphs()
    keys = list(keys if keys is not None else target.calibration.parameters)
    fit_rows = [
        r
        for r in rows
        if r.fit and (r.recipe, r.quant) in paths and paths[(r.recipe, r.quant)].exists()
    ]
    forecasts = [row_forecast(r, target, load(paths[(r.recipe, r.quant)])) for r in fit_rows]
    samples = [sample_of(r, fc) for r, fc in zip(fit_rows, forecasts, strict=True)]
    prior = Params.of(target, prior_for=keys)
    pairing = pairing_of(target, fit_rows, all_rows, paths, load)
    bounds = target_bounds(target, keys)
    if pairing is None:
        f = fit_values(samples, prior, keys, bounds=bounds)
        resid = list(f.residuals)
        partners: tuple[str, ...] = ()
    else:
        base = pairing.params()
        f = fit_values([pairing.adjusted(s, base) for s in samples], prior, keys, bounds=bounds)
        resid = [(s.name, predict(s, f.params), s.measured_s) for s in samples]
        partners = tuple(
            b.name if (b := pairing.partner.get(r.row_id)) is not None else "" for r in fit_rows
        )
    covered = coverage(forecasts)
    return TargetCalibration(
        target=target.name,
        keys=tuple(keys),
        values=f.values,
        covered=covered,
        outside_rows=_outside_rows(target, rows, paths, load, covered, f.params),
        rows=tuple(r.row_id for r in fit_rows),
        fit=resid,
        loo=loo_of(samples, prior, keys, pairing, bounds),
        paired_rows=partners,
        baseline=pairing.baseline.name if pairing is not None else "",
    )
