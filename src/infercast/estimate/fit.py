"""Fit a target's efficiencies, overheads and bandwidths to measured kernels.

The model is :func:`infercast.estimate.forecast.kernel_time`; its free
parameters for one processor are

* ``efficiency[class]`` for every op class the samples exercise (a fraction
  in (0, 1] of the stated peak ops/s),
* ``op_overhead_s`` (per kernel), the bandwidth of each memory the samples
  touch, and ``invoke_overhead_s`` (per inference call; only when the
  samples are whole-model timings, not per-op profiles),
* ``reduction_half_depth`` (the dot-product length at which a conv / FC
  reaches half its efficiency) when the samples hold convs or FCs;
* ``channel_multiple``: a discrete choice among a few candidates (1, 4, 8,
  16 by default), fitted by trying each.

Least squares on ``log(predicted / measured)`` (every kernel counts by its
relative error, so a 20 us op weighs as much as a 20 ms one), parameters in
log space with bounds (``scipy.optimize.least_squares``, trust-region
reflective, soft-L1 loss so a single outlier kernel does not drag its
class), plus a weak pull towards the target's stated values so a class
with few samples stays near its prior instead of running off. The prior
weight is small (0.05 per parameter, against one unit per sample).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from infercast.errors import InfercastError
from infercast.estimate.forecast import Params, Work, kernel_time
from infercast.targets.schema import Target

PRIOR_WEIGHT = 0.05
ROBUST_SCALE = 0.2
"""Residuals (log ratios) beyond about 0.2 (~20%) count linearly, not squared (soft-L1 loss):
one runtime quirk (TFLite's PAD of a 3-channel image runs 15x slower per byte than of a
64-channel one) must not drag a whole class."""
CLASSES = (
    "conv",
    "depthwise_conv",
    "linalg",
    "elementwise",
    "pool",
    "movement",
    "normalization",
    "recurrent",
    "detection",
    "default",
)


@dataclass(frozen=True)
class Sample:
    """One measured model (or profiled op): its kernels' work and the measured seconds."""

    name: str
    works: tuple[Work, ...]
    measured_s: float
    whole_model: bool = True
    """True when the time covers a whole inference call (the invoke cost applies)."""


@dataclass(frozen=True)
class FitResult:
    unit: str
    params: Params
    channel_multiple: int
    efficiency: dict[str, float]
    reduction_half_depth: float
    op_overhead_s: float
    bandwidth: dict[str, float]
    invoke_overhead_s: float
    rmspe: float
    """Root-mean-square relative error on the samples (fraction)."""
    residuals: tuple[tuple[str, float, float], ...]
    """(sample, predicted s, measured s)."""
    fitted_classes: tuple[str, ...]


def predict(sample: Sample, p: Params) -> float:
    t = sum(kernel_time(w, p).latency_s for w in sample.works)
    return t + (p.invoke_s if sample.whole_model else 0.0)


def rmspe(pairs: Sequence[tuple[float, float]]) -> float:
    """Root-mean-square percentage error (a fraction) of (predicted, measured) pairs."""
    if not pairs:
        return 0.0
    return math.sqrt(sum(((p - m) / m) ** 2 for p, m in pairs) / len(pairs))


def fit_params(
    target: Target, samples: Sequence[Sample], unit: str, *, fit_invoke: bool = True
) -> tuple[Params, dict[str, float], float]:
    """Fit the continuous parameters of ``unit``; returns (params, named values, rmspe)."""
    if not samples:
        raise InfercastError("no measured samples to fit", "measure some kernels first")
    base = Params.of(target)
    classes = sorted({w.op_class for s in samples for w in s.works if w.unit == unit and w.ops})
    memories = sorted(
        {m for s in samples for w in s.works for m in (w.act_memory, w.weight_memory) if m}
    )
    names: list[str] = [f"eff:{c}" for c in classes] + ["overhead"]
    if any(w.reduction_depth for s in samples for w in s.works if w.unit == unit):
        names.append("half")
    names += [f"bw:{m}" for m in memories]
    if fit_invoke and any(s.whole_model for s in samples):
        names.append("invoke")
    x0, lo, hi = [], [], []
    for n in names:
        if n.startswith("eff:"):
            v = base.eff(unit, n[4:])
            x0.append(math.log(min(max(v, 1e-4), 1.0)))
            lo.append(math.log(1e-4))
            hi.append(0.0)
        elif n == "overhead":
            x0.append(math.log(max(base.overhead_s.get(unit, 0.0), 1e-6)))
            lo.append(math.log(1e-8))
            hi.append(math.log(1e-2))
        elif n.startswith("bw:"):
            x0.append(math.log(base.bandwidth[n[3:]]))
            lo.append(math.log(1e7))
            hi.append(math.log(1e13))
        elif n == "half":
            x0.append(math.log(max(base.reduction_half.get(unit, 0.0), 0.1)))
            lo.append(math.log(0.01))
            hi.append(math.log(1e4))
        else:
            x0.append(math.log(max(base.invoke_s, 1e-5)))
            lo.append(math.log(1e-7))
            hi.append(math.log(1e-1))
    x0_arr = np.clip(np.array(x0), np.array(lo) + 1e-9, np.array(hi) - 1e-9)
    prior = x0_arr.copy()

    def params_of(x: np.ndarray) -> Params:
        eff = dict(base.efficiency)
        over = dict(base.overhead_s)
        bw = dict(base.bandwidth)
        invoke = base.invoke_s
        half = dict(base.reduction_half)
        for n, v in zip(names, x, strict=True):
            if n.startswith("eff:"):
                eff[(unit, n[4:])] = float(math.exp(v))
            elif n == "overhead":
                over[unit] = float(math.exp(v))
            elif n.startswith("bw:"):
                bw[n[3:]] = float(math.exp(v))
            elif n == "half":
                half[unit] = float(math.exp(v))
            else:
                invoke = float(math.exp(v))
        return replace(
            base,
            efficiency=eff,
            overhead_s=over,
            bandwidth=bw,
            invoke_s=invoke,
            reduction_half=half,
        )

    meas = np.array([s.measured_s for s in samples])

    def residuals(x: np.ndarray) -> np.ndarray:
        p = params_of(x)
        pred = np.array([predict(s, p) for s in samples])
        r = np.log(pred / meas)
        return np.concatenate([r, PRIOR_WEIGHT * (x - prior)])

    from scipy.optimize import least_squares

    # Two starts: the target's stated values, and one read off the data (each class's
    # efficiency as if its samples were compute-bound, the bandwidth as if the
    # cheapest-per-byte samples were memory-bound). Under max(compute, memory) a term
    # that is inactive at the start has no gradient; the second start activates it.
    starts = [x0_arr, _data_start(names, x0_arr, samples, base, unit)]
    lo_a, hi_a = np.array(lo), np.array(hi)
    best = None
    for start in starts:
        start = np.clip(start, lo_a + 1e-9, hi_a - 1e-9)
        res = least_squares(
            residuals,
            start,
            bounds=(lo_a, hi_a),
            method="trf",
            loss="soft_l1",
            f_scale=ROBUST_SCALE,
        )
        if best is None or res.cost < best.cost:
            best = res
    assert best is not None
    res = best
    p = params_of(res.x)
    values = {n: float(math.exp(v)) for n, v in zip(names, res.x, strict=True)}
    err = rmspe([(predict(s, p), s.measured_s) for s in samples])
    return p, values, err


def _data_start(
    names: list[str], x0: np.ndarray, samples: Sequence[Sample], base: Params, unit: str
) -> np.ndarray:
    """A start point read off the samples (see :func:`fit_params`)."""
    x = x0.copy()
    for i, n in enumerate(names):
        if n.startswith("eff:"):
            cls = n[4:]
            ratios = []
            for s in samples:
                ws = [w for w in s.works if w.unit == unit and w.op_class == cls and w.ops]
                if len(ws) == len(s.works) and ws and ws[0].dtype is not None:
                    peak = base.peak.get((unit, ws[0].dtype))
                    if peak:
                        ratios.append(sum(w.ops_eff for w in ws) / (peak * s.measured_s))
            if ratios:
                x[i] = math.log(min(max(float(np.median(ratios)), 1e-4), 1.0))
        elif n.startswith("bw:"):
            mem = n[3:]
            rates = [
                sum(w.act_bytes + w.weight_bytes for w in s.works) / s.measured_s
                for s in samples
                if all(w.act_memory == mem for w in s.works)
            ]
            if rates:
                x[i] = math.log(float(np.percentile(rates, 90)))
        elif n == "half":
            x[i] = math.log(16.0)
        elif n in ("overhead", "invoke"):
            x[i] = math.log(max(min(s.measured_s for s in samples) / 4, 1e-7))
    return x


def fit(
    target: Target,
    build_samples: Callable[[Target], Sequence[Sample]],
    unit: str,
    *,
    channel_multiples: Sequence[int] = (1, 4, 8, 16),
    fit_invoke: bool = True,
) -> tuple[FitResult, Target]:
    """Fit ``unit`` of ``target``; ``build_samples`` re-derives the kernels' work for a
    candidate target (the channel multiple changes the work). Returns the best fit and
    the candidate target it was made on."""
    best: tuple[FitResult, Target] | None = None
    for m in channel_multiples:
        u = replace(target.units[unit], channel_multiple=m)
        cand = replace(target, units={**target.units, unit: u})
        samples = build_samples(cand)
        p, values, err = fit_params(cand, samples, unit, fit_invoke=fit_invoke)
        result = FitResult(
            unit=unit,
            params=p,
            channel_multiple=m,
            efficiency={k[4:]: v for k, v in values.items() if k.startswith("eff:")},
            reduction_half_depth=values.get("half", p.reduction_half.get(unit, 0.0)),
            op_overhead_s=values.get("overhead", p.overhead_s.get(unit, 0.0)),
            bandwidth={k[3:]: v for k, v in values.items() if k.startswith("bw:")},
            invoke_overhead_s=values.get("invoke", p.invoke_s),
            rmspe=err,
            residuals=tuple((s.name, predict(s, p), s.measured_s) for s in samples),
            fitted_classes=tuple(k[4:] for k in values if k.startswith("eff:")),
        )
        if best is None or result.rmspe < best[0].rmspe - 1e-4:
            best = (result, cand)
    assert best is not None
    return best
