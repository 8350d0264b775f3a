"""Fit a target's parameters to measured times: micro-kernels, profiled ops, or whole models.

The model is :func:`infercast.estimate.forecast.kernel_time`; the free parameters are
named by their dotted keys in a target file (``units.cpu.efficiency.conv``,
``units.npu.op_overhead_s``, ``memories.dram.bandwidth_bytes_per_s``,
``calibration.invoke_overhead_s`` ... -- :meth:`Params.get`). A sample is one measured
model or op: its kernels' work, the measured seconds, the thread count and clock it ran at.

Least squares on ``log(predicted / measured)`` (every sample counts by its relative
error, so a 20 us op weighs as much as a 20 ms model), parameters in log space with
bounds (``scipy.optimize.least_squares``, trust-region reflective, soft-L1 loss so a
single outlier does not drag a class), plus a weak pull towards the target's stated
values so a parameter the samples barely see stays near its prior instead of running
off. The prior weight is small (0.05 per parameter, against one unit per sample).

The samples' kernels are compiled once into arrays (:class:`Batch`) so that one
evaluation of every sample under a parameter vector is a few numpy operations; it
reproduces :func:`predict` (the per-kernel reference) to rounding.

:func:`leave_one_out` refits without each sample in turn and forecasts it: the error a
user should expect on a model the fit never saw.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from infercast.errors import InfercastError
from infercast.estimate.forecast import (
    DEFAULT_THREAD_EFFICIENCY,
    Params,
    cached_bytes,
    kernel_time,
    spill_bytes,
)
from infercast.estimate.work import PARENT_CLASS, Work
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
    threads: int = 1
    peak_scale: Mapping[str, float] = field(default_factory=dict)
    """unit -> measured clock over the target file's clock."""
    device_only: bool = False
    """The time is the accelerator's own (a micro-benchmark, a driver log, a simulator's
    cycle count): no CPU <-> accelerator transfers in it (nor a per-call cost)."""


def sample_params(s: Sample, p: Params) -> Params:
    """``p`` under the sample's conditions (threads, clock)."""
    return replace(p, threads=s.threads, peak_scale={**p.peak_scale, **s.peak_scale})


def predict(sample: Sample, p: Params) -> float:
    """Forecast seconds of ``sample`` under ``p`` (the per-kernel reference)."""
    q = sample_params(sample, p)
    t = 0.0
    for w in sample.works:
        k = kernel_time(w, q)
        t += k.latency_s - (k.transfer_s if sample.device_only else 0.0)
    return t + (p.invoke_s if sample.whole_model and not sample.device_only else 0.0)


def rmspe(pairs: Sequence[tuple[float, float]]) -> float:
    """Root-mean-square percentage error (a fraction) of (predicted, measured) pairs."""
    if not pairs:
        return 0.0
    return math.sqrt(sum(((p - m) / m) ** 2 for p, m in pairs) / len(pairs))


# --------------------------------------------------------------------------- #
# Vectorised evaluation
# --------------------------------------------------------------------------- #


def _eff_key(p: Params, unit: str, cls: str, free: set[str]) -> str | None:
    """The efficiency key a kernel of ``cls`` on ``unit`` reads (None: efficiency 1)."""
    for c in (cls, PARENT_CLASS.get(cls), "default"):
        if c is None:
            continue
        key = f"units.{unit}.efficiency.{c}"
        if key in free or (unit, c) in p.efficiency:
            return key
    return None


class Batch:
    """Every kernel of ``samples`` as arrays indexed into a vector of named parameters."""

    def __init__(self, samples: Sequence[Sample], base: Params, free: Sequence[str]) -> None:
        self.samples = list(samples)
        self.base = base
        self.names: list[str] = list(dict.fromkeys(free))
        self._index: dict[str, int] = {n: i for i, n in enumerate(self.names)}
        cols: dict[str, list[float]] = {k: [] for k in _COLUMNS}
        fset = set(self.names)
        for si, s in enumerate(self.samples):
            for w in s.works:
                if not w.elided:
                    self._add(cols, si, s, w, fset)
        self.cols = {k: np.asarray(v) for k, v in cols.items()}
        for k in _INDEX_COLUMNS:
            self.cols[k] = self.cols[k].astype(np.int64)
        self.theta0 = np.array([base.get(n) for n in self.names], dtype=float)
        self.whole = np.array(
            [1.0 if s.whole_model and not s.device_only else 0.0 for s in self.samples]
        )
        self.measured = np.array([s.measured_s for s in self.samples])

    def _param(self, key: str | None) -> int:
        """Index of ``key`` in the parameter vector (added as a constant when new); -1: none."""
        if key is None:
            return -1
        if key not in self._index:
            self._index[key] = len(self.names)
            self.names.append(key)
        return self._index[key]

    def _add(
        self, cols: dict[str, list[float]], si: int, s: Sample, w: Work, free: set[str]
    ) -> None:
        p = sample_params(s, self.base)
        u = w.unit
        by_insns = w.instructions > 0 and p.clock.get(u, 0.0) > 0
        computes = w.ops > 0 and w.dtype is not None and not by_insns
        cpu = u in p.cores
        n = p.kernel_threads(u, w.max_threads)
        scale = p.peak_scale.get(u, 1.0) / (p.cores[u] if cpu else 1)
        half = p.reduction_half.get(u, 0.0)
        cols["sample"].append(si)
        cols["ops"].append(w.ops_eff if computes else 0.0)
        cols["peak"].append(self._param(f"units.{u}.peak_{w.dtype}_ops_per_s") if computes else -1)
        cols["scale"].append(scale)
        cols["eff"].append(
            self._param(_eff_key(p, u, w.efficiency_class, free)) if computes else -1
        )
        cols["ins"].append(w.instructions if by_insns else 0.0)
        cols["ins_clk"].append(p.clock.get(u, 0.0) * p.peak_scale.get(u, 1.0) if by_insns else 1.0)
        cols["ipc"].append(self._param(f"units.{u}.instructions_per_cycle") if by_insns else -1)
        par = (computes or by_insns) and cpu and w.parallel and n > 1
        cols["threads_m1"].append(float(n - 1) if par else 0.0)
        cols["teff"].append(self._param(f"units.{u}.thread_efficiency") if par else -1)
        cols["pc"].append(self._param(f"units.{u}.per_channel_slowdown") if w.per_channel else -1)
        pkey = f"units.{u}.per_channel_pass_s_per_element"
        passes = w.per_channel_out_elements > 0
        passes = passes and (pkey in free or p.per_channel_pass_s.get(u, 0.0) > 0)
        cols["pce"].append(float(w.per_channel_out_elements) if passes else 0.0)
        cols["pce_p"].append(self._param(pkey) if passes else -1)
        ikey = f"units.{u}.im2col_s_per_byte"
        im2col = w.im2col_bytes > 0 and (ikey in free or p.im2col_s.get(u, 0.0) > 0)
        im2col = im2col and not by_insns
        cols["i2c"].append(float(w.im2col_bytes) if im2col else 0.0)
        cols["i2c_p"].append(self._param(ikey) if im2col else -1)
        depth = w.reduction_depth if (half > 0 or f"units.{u}.reduction_half_depth" in free) else 0
        cols["depth"].append(float(depth))
        cols["half"].append(self._param(f"units.{u}.reduction_half_depth") if depth else -1)
        skey = f"units.{u}.spill_bandwidth_bytes_per_s"
        spills = skey in free or p.spill_bandwidth.get(u, 0.0) > 0
        sb = spill_bytes(w, p.cache_bytes.get(u, 0), p.gemm_block_rows.get(u, 0)) if spills else 0.0
        act_b, weight_b = cached_bytes(w, sb)
        cols["act"].append(act_b)
        cols["act_bw"].append(self._mem(w.act_memory))
        cols["wb"].append(weight_b + (w.arena_bytes if w.weight_memory is not None else 0))
        bkey = f"units.{u}.broadcast_read_factor"
        uses = w.broadcast_bytes and w.weight_memory is not None
        uses = uses and (bkey in free or p.broadcast_read_factor.get(u, 0.0) > 0)
        cols["bb"].append(float(w.broadcast_bytes) if uses else 0.0)
        cols["bf"].append(self._param(bkey) if uses else -1)
        cols["w_bw"].append(self._mem(w.weight_memory))
        cols["ports"].append(1.0 if w.separate_ports else 0.0)
        cols["streamed"].append(float(w.streamed_bytes))
        cols["ov"].append(self._param(f"units.{u}.op_overhead_s"))
        cols["sync"].append(self._param(f"units.{u}.thread_sync_s") if par else -1)
        cols["ntr"].append(0.0 if s.device_only else float(len(w.transfers) + len(w.readbacks)))
        cols["trb"].append(0.0 if s.device_only else float(sum(w.transfers)))
        cols["rbb"].append(0.0 if s.device_only else float(sum(w.readbacks)))
        rw = w.rewrite_bytes is not None
        cols["rw"].append(1.0 if rw else 0.0)
        cols["rwb"].append(float(w.rewrite_bytes or 0))
        cols["rw_ov"].append(self._param(f"units.{w.fallback_unit}.op_overhead_s") if rw else -1)
        cols["rw_bw"].append(self._mem(w.fallback_memory) if rw else -1)
        cols["spill"].append(sb)
        cols["sp_bw"].append(self._param(skey) if sb > 0 else -1)
        cols["stalls"].append(1.0 if u in p.memory_stalls else 0.0)
        cols["inv"].append(0.0 if s.device_only else float(w.invokes))
        for x in w.permutes:  # a kernel of its own, charged to this one (Work.permutes)
            self._add(cols, si, s, x, free)

    def _mem(self, m: str | None) -> int:
        return -1 if m is None else self._param(f"memories.{m}.bandwidth_bytes_per_s")

    def full(self, x_free: np.ndarray | None = None, n_free: int = 0) -> np.ndarray:
        """The whole parameter vector: ``x_free`` for the first ``n_free`` names, else the base."""
        theta = np.array([self._base_value(n) for n in self.names], dtype=float)
        if x_free is not None:
            theta[:n_free] = x_free
        return theta

    def _base_value(self, name: str) -> float:
        if name.endswith(".thread_sync_s"):
            return self.base.thread_sync_s.get(name.split(".")[1], 0.0)
        if name.endswith(".broadcast_read_factor"):
            return self.base.broadcast_read_factor.get(name.split(".")[1], 0.0)
        if name.endswith(".thread_efficiency"):
            return self.base.thread_efficiency.get(name.split(".")[1], DEFAULT_THREAD_EFFICIENCY)
        if name.endswith(".spill_bandwidth_bytes_per_s"):
            return self.base.spill_bandwidth.get(name.split(".")[1], 0.0)
        return self.base.get(name)

    def latencies(self, theta: np.ndarray) -> np.ndarray:
        """Forecast seconds of every sample under the full parameter vector ``theta``."""
        c = self.cols
        t1 = np.append(theta, 1.0)  # index -1 reads 1.0
        t0 = np.append(theta, 0.0)  # index -1 reads 0.0
        speed = 1.0 + c["threads_m1"] * t0[c["teff"]]
        rate = t1[c["peak"]] * c["scale"] * t1[c["eff"]] * speed
        halfterm = np.where(
            c["depth"] > 0, (c["depth"] + t0[c["half"]]) / np.maximum(c["depth"], 1), 1.0
        )
        compute = c["ops"] * halfterm * t1[c["pc"]] / rate + c["i2c"] * t0[c["i2c_p"]]
        compute = compute + c["ins"] / (c["ins_clk"] * t1[c["ipc"]] * speed)
        with np.errstate(divide="ignore"):  # a 0 parameter that is no bandwidth
            inv_bw = np.append(1.0 / theta, 0.0)
        xbw = (
            theta[self._index["crossing.bytes_per_s"]]
            if "crossing.bytes_per_s" in self._index
            else self.base.crossing_bytes_per_s
        )
        xfix = (
            theta[self._index["crossing.fixed_s"]]
            if "crossing.fixed_s" in self._index
            else self.base.crossing_fixed_s
        )
        if "crossing.stream_bytes_per_s" in self._index:
            sbw = theta[self._index["crossing.stream_bytes_per_s"]]
        elif self.base.crossing_stream_bytes_per_s > 0:
            sbw = self.base.crossing_stream_bytes_per_s
        else:  # the stream runs at the link's rate, fitted or not
            sbw = xbw
        if "crossing.readback_bytes_per_s" in self._index:
            rbw = theta[self._index["crossing.readback_bytes_per_s"]]
        elif self.base.crossing_readback_bytes_per_s > 0:
            rbw = self.base.crossing_readback_bytes_per_s
        else:  # read back at the link's rate, fitted or not
            rbw = xbw
        weights = c["wb"] + c["bb"] * t0[c["bf"]]
        act_s, w_s = c["act"] * inv_bw[c["act_bw"]], weights * inv_bw[c["w_bw"]]
        both = np.where(c["ports"] > 0, np.maximum(act_s, w_s), act_s + w_s)
        memory = both + c["streamed"] / sbw
        transfer = c["ntr"] * xfix + c["trb"] / xbw + c["rbb"] / rbw
        rewrite = c["rw"] * (t0[c["rw_ov"]] + c["rwb"] * inv_bw[c["rw_bw"]])
        overhead = t0[c["ov"]] + t0[c["sync"]]
        spill = c["spill"] * inv_bw[c["sp_bw"]]
        passes = c["pce"] * t0[c["pce_p"]]
        invoke = (
            theta[self._index["calibration.invoke_overhead_s"]]
            if "calibration.invoke_overhead_s" in self._index
            else self.base.invoke_s
        )
        both = np.where(c["stalls"] > 0, compute + memory, np.maximum(compute, memory))
        # an accelerator call a kernel opens beyond the first pays the invoke cost again
        per_kernel = both + overhead + transfer + rewrite + spill + passes + c["inv"] * invoke
        out = np.bincount(c["sample"], weights=per_kernel, minlength=len(self.samples))
        return out + invoke * self.whole


_INDEX_COLUMNS = ("sample", "peak", "eff", "teff", "pc", "half", "act_bw", "w_bw", "ov",
                  "sync", "rw_ov", "rw_bw", "bf", "sp_bw", "pce_p", "i2c_p", "ipc")  # fmt: skip
_COLUMNS = (*_INDEX_COLUMNS, "ops", "scale", "threads_m1", "depth", "act", "wb", "bb", "streamed",
            "ntr", "trb", "rbb", "rw", "rwb", "ports", "spill", "pce", "i2c", "stalls",
            "inv", "ins", "ins_clk")  # fmt: skip


# --------------------------------------------------------------------------- #
# Least squares
# --------------------------------------------------------------------------- #


def target_bounds(target: Target, keys: Sequence[str]) -> dict[str, tuple[float, float]]:
    """The fit's range of each of ``keys`` on ``target``: :func:`bounds_of`, its high end
    lowered to the target's ``calibration.upper_bounds`` where it states one."""
    caps = target.calibration.upper_bounds
    out: dict[str, tuple[float, float]] = {}
    for k in keys:
        lo, hi = bounds_of(k)
        out[k] = (lo, min(hi, float(caps[k]))) if k in caps else (lo, hi)
    return out


def bounds_of(key: str) -> tuple[float, float]:
    """(low, high) of a parameter: what is physically possible, in its own unit."""
    if ".efficiency." in key or key.endswith(".thread_efficiency"):
        return (1e-4, 1.0)
    if key.endswith("per_channel_slowdown"):
        return (1.0, 100.0)
    if key.endswith("per_channel_pass_s_per_element") or key.endswith("im2col_s_per_byte"):
        return (1e-12, 1e-6)
    if key.endswith("broadcast_read_factor"):
        return (1e-3, 1e3)
    if key.endswith("op_overhead_s") or key.endswith("thread_sync_s"):
        return (1e-8, 1e-2)
    if key == "calibration.invoke_overhead_s":
        return (1e-7, 1e-1)
    if key == "crossing.fixed_s":
        return (1e-8, 1e-1)
    if key.endswith("bytes_per_s"):
        return (1e6, 1e13)
    if key.endswith("reduction_half_depth"):
        return (0.01, 1e4)
    if key.endswith("instructions_per_cycle"):
        return (0.05, 4.0)  # an in-order dual-issue core retires at most 2; wide cores 4
    if key.endswith("_ops_per_s"):
        return (1e6, 1e16)
    return (1e-12, 1e12)


@dataclass(frozen=True)
class Fit:
    """The fitted values of the free parameters and the fit's residuals."""

    keys: tuple[str, ...]
    values: dict[str, float]
    params: Params
    residuals: tuple[tuple[str, float, float], ...]
    """(sample, predicted s, measured s)."""
    rmspe: float


def fit_values(
    samples: Sequence[Sample],
    base: Params,
    keys: Sequence[str],
    *,
    prior_weight: float = PRIOR_WEIGHT,
    extra_starts: Sequence[Mapping[str, float]] = (),
    bounds: Mapping[str, tuple[float, float]] | None = None,
) -> Fit:
    """Least-squares fit of the dotted ``keys`` to ``samples`` (see the module docstring).

    The prior is ``base``'s value of each key; ``extra_starts`` are further start points
    (the best local minimum wins); ``bounds`` narrows a key's physical range (``bounds_of``)."""
    if not samples:
        raise InfercastError("no measured samples to fit", "measure some models first")
    keys = list(dict.fromkeys(keys))
    batch = Batch(samples, base, keys)
    lim = [(bounds or {}).get(k, bounds_of(k)) for k in keys]
    lo = np.log([b[0] for b in lim])
    hi = np.log([b[1] for b in lim])
    stated = batch.theta0[: len(keys)]
    prior = np.clip(np.log(np.maximum(stated, 1e-300)), lo + 1e-9, hi - 1e-9)
    # A value the target does not state (0: no per-call cost, say) is no prior to pull to.
    weights = np.where(stated > np.exp(lo), prior_weight, 0.0)
    meas = np.log(batch.measured)
    nk = len(keys)

    def residuals(x: np.ndarray) -> np.ndarray:
        theta = batch.full(np.exp(x), nk)
        r = np.log(np.maximum(batch.latencies(theta), 1e-300)) - meas
        return np.concatenate([r, weights * (x - prior)])

    from scipy.optimize import least_squares

    starts = [prior]
    for st in extra_starts:
        starts.append(np.array([math.log(max(st.get(k, math.exp(prior[i])), 1e-300))
                                for i, k in enumerate(keys)]))  # fmt: skip
    best = None
    if nk:
        for x0 in starts:
            res = least_squares(residuals, np.clip(x0, lo + 1e-9, hi - 1e-9), bounds=(lo, hi),
                                method="trf", loss="soft_l1", f_scale=ROBUST_SCALE)  # fmt: skip
            if best is None or res.cost < best.cost:
                best = res
    x = best.x if best is not None else prior
    values = {k: float(math.exp(v)) for k, v in zip(keys, x, strict=True)}
    params = base.with_values(values)
    pred = batch.latencies(batch.full(np.exp(x), nk))
    resid = tuple((s.name, float(pp), s.measured_s) for s, pp in zip(samples, pred, strict=True))
    return Fit(tuple(keys), values, params, resid, rmspe([(pp, m) for _, pp, m in resid]))


def leave_one_out(
    samples: Sequence[Sample],
    base: Params,
    keys: Sequence[str],
    *,
    prior_weight: float = PRIOR_WEIGHT,
    bounds: Mapping[str, tuple[float, float]] | None = None,
) -> list[tuple[str, float, float]]:
    """(sample, forecast s, measured s) of each sample by a fit on all the others
    (``bounds`` as :func:`fit_values` takes them).

    With a single sample there is nothing to fit on: its forecast is the prior's."""
    out: list[tuple[str, float, float]] = []
    for i, s in enumerate(samples):
        rest = [t for j, t in enumerate(samples) if j != i]
        p = base
        if rest:
            p = fit_values(rest, base, keys, prior_weight=prior_weight, bounds=bounds).params
        out.append((s.name, predict(s, p), s.measured_s))
    return out


# --------------------------------------------------------------------------- #
# Micro-kernel and profile calibration (one processor, classes the samples exercise)
# --------------------------------------------------------------------------- #


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
    spill_bandwidth: float = 0.0
    """Fitted bytes/s beyond the unit's cache (0: not fitted: no cache stated)."""
    gemm_block_rows: int = 0
    """GEMM rows per pass over weights beyond the cache the fit chose (0: one pass)."""
    peak_scale: float = 1.0
    """The unit's peaks were multiplied by this (``fit(free_peak=True)``); 1: as stated."""


def unit_keys(
    samples: Sequence[Sample],
    unit: str,
    *,
    fit_invoke: bool,
    cache_bytes: int = 0,
    pointwise: bool = True,
    block_rows: int = 0,
) -> list[str]:
    """The free parameters of a one-processor fit: the efficiency of every class the samples
    exercise, the per-op overhead, the dot-product half depth (when they hold convs / FCs),
    the bandwidth of every memory they touch, the bandwidth beyond the unit's cache (when it
    states one, ``cache_bytes``, and some sample exceeds it) and the per-call cost (whole
    models only). ``pointwise`` False: pointwise convs share the ``conv`` efficiency."""
    classes = sorted(
        {
            w.efficiency_class if pointwise else w.op_class
            for s in samples
            for w in s.works
            if w.unit == unit and w.ops
        }
    )
    memories = sorted(
        {m for s in samples for w in s.works for m in (w.act_memory, w.weight_memory) if m}
    )
    keys = [f"units.{unit}.efficiency.{c}" for c in classes] + [f"units.{unit}.op_overhead_s"]
    if any(w.reduction_depth for s in samples for w in s.works if w.unit == unit):
        keys.append(f"units.{unit}.reduction_half_depth")
    keys += [f"memories.{m}.bandwidth_bytes_per_s" for m in memories]
    if cache_bytes and any(
        spill_bytes(w, cache_bytes, block_rows) for s in samples for w in s.works if w.unit == unit
    ):
        keys.append(f"units.{unit}.spill_bandwidth_bytes_per_s")
    if fit_invoke and any(s.whole_model for s in samples):
        keys.append("calibration.invoke_overhead_s")
    return keys


def fit_params(
    target: Target,
    samples: Sequence[Sample],
    unit: str,
    *,
    fit_invoke: bool = True,
    pointwise: bool = True,
    free_peak: bool = False,
) -> tuple[Params, dict[str, float], float]:
    """Fit the continuous parameters of ``unit``; returns (params, named values, rmspe)."""
    if not samples:
        raise InfercastError("no measured samples to fit", "measure some kernels first")
    base = Params.of(target)
    if not base.reduction_half.get(unit):
        # No stated depth penalty: the prior is a negligible one (0.1 of a MAC), so a
        # penalty that the samples' depths cannot separate from the efficiency stays small.
        base = replace(base, reduction_half={**base.reduction_half, unit: 0.1})
    cache = target.units[unit].cache_bytes
    keys = unit_keys(
        samples,
        unit,
        fit_invoke=fit_invoke,
        cache_bytes=cache,
        pointwise=pointwise,
        block_rows=target.units[unit].gemm_block_rows,
    )
    # Two starts: the target's stated values, and one read off the data (each class's
    # efficiency as if its samples were compute-bound, the bandwidth as if the
    # cheapest-per-byte samples were memory-bound). Under max(compute, memory) a term
    # that is inactive at the start has no gradient; the second start activates it.
    # free_peak: efficiencies may exceed 1 during the fit (the stated peak is only a guess);
    # fit() then moves the excess into the peak (see there).
    bounds = {k: (1e-4, MAX_FREE_EFFICIENCY) for k in keys if ".efficiency." in k}
    f = fit_values(
        samples,
        base,
        keys,
        extra_starts=[_data_start(keys, samples, base, unit)],
        bounds=bounds if free_peak else None,
    )
    return f.params, f.values, f.rmspe


MAX_FREE_EFFICIENCY = 8.0
"""Upper bound of an efficiency while the peak is free (``fit(free_peak=True)``)."""


def renormalised(
    p: Params, values: Mapping[str, float], unit: str
) -> tuple[Params, dict[str, float], float]:
    """``p`` with ``unit``'s peaks times the largest fitted efficiency ``s`` (when above 1)
    and every efficiency of the unit divided by ``s``: the same forecasts, efficiencies back
    in (0, 1]. Returns (params, values, s)."""
    prefix = f"units.{unit}.efficiency."
    s = max([v for k, v in values.items() if k.startswith(prefix)] + [1.0])
    if s <= 1.0:
        return p, dict(values), 1.0
    peak = {k: (v * s if k[0] == unit else v) for k, v in p.peak.items()}
    eff = {k: (v / s if k[0] == unit else v) for k, v in p.efficiency.items()}
    out = {k: (v / s if k.startswith(prefix) else v) for k, v in values.items()}
    return replace(p, peak=peak, efficiency=eff), out, s


def _data_start(
    keys: list[str], samples: Sequence[Sample], base: Params, unit: str
) -> dict[str, float]:
    """A start point read off the samples (see :func:`fit_params`)."""
    x: dict[str, float] = {}
    for k in keys:
        if ".efficiency." in k:
            cls = k.rsplit(".", 1)[1]
            ratios = []
            for s in samples:
                ws = [w for w in s.works if w.unit == unit and w.efficiency_class == cls and w.ops]
                if len(ws) == len(s.works) and ws and ws[0].dtype is not None:
                    rate = sample_params(s, base).rate(unit, ws[0].dtype, ws[0].parallel)
                    ratios.append(sum(w.ops_eff for w in ws) / (rate * s.measured_s))
            if ratios:
                x[k] = min(max(float(np.median(ratios)), 1e-4), 1.0)
        elif k.startswith("memories."):
            mem = k.split(".")[1]
            rates = [
                sum(w.act_bytes + w.weight_bytes for w in s.works) / s.measured_s
                for s in samples
                if all(w.act_memory == mem for w in s.works)
            ]
            if rates:
                x[k] = float(np.percentile(rates, 90))
        elif k.endswith("reduction_half_depth"):
            x[k] = 16.0
        elif k.endswith("spill_bandwidth_bytes_per_s"):
            x[k] = 2e10
        elif k.endswith("op_overhead_s") or k == "calibration.invoke_overhead_s":
            x[k] = max(min(s.measured_s for s in samples) / 4, 1e-7)
    return x


def fit(
    target: Target,
    build_samples: Callable[[Target], Sequence[Sample]],
    unit: str,
    *,
    channel_multiples: Sequence[int] = (1, 4, 8, 16),
    fit_invoke: bool = True,
    pointwise: bool = True,
    free_peak: bool = False,
    gemm_block_rows: Sequence[int] = (),
) -> tuple[FitResult, Target]:
    """Fit ``unit`` of ``target``; ``build_samples`` re-derives the kernels' work for a
    candidate target (the channel multiple changes the work). Returns the best fit and
    the candidate target it was made on.

    ``free_peak``: the unit's stated peak is a guess (a detected host: nominal clock from
    /proc/cpuinfo x the SIMD width), so efficiencies may exceed 1 in the fit and the
    excess moves into the peak (:func:`renormalised`). Measured here: ONNX Runtime runs
    ResNet50 (8.2 GFLOP) in 45 ms of one core's CPU time, 182 GFLOP/s, above the 166 the
    nominal 2.6 GHz x 64 FLOP/cycle allows (the core runs above its nominal clock); with
    the peak fixed the conv efficiency sat at its bound of 1 and every conv forecast was
    slow.

    ``gemm_block_rows``: candidates for the unit's ``gemm_block_rows`` (weights beyond the
    cache streamed once per block of GEMM rows, :func:`~infercast.estimate.forecast.
    weight_passes`), tried like the channel multiples; empty: the target's value."""
    best: tuple[FitResult, Target] | None = None
    rows = tuple(gemm_block_rows) or (target.units[unit].gemm_block_rows,)
    for m, r in itertools.product(channel_multiples, rows):
        u = dataclasses.replace(target.units[unit], channel_multiple=m, gemm_block_rows=r)
        cand = dataclasses.replace(target, units={**target.units, unit: u})
        samples = build_samples(cand)
        p, values, err = fit_params(
            cand, samples, unit, fit_invoke=fit_invoke, pointwise=pointwise, free_peak=free_peak
        )
        p, values, scale = renormalised(p, values, unit)
        eff_prefix = f"units.{unit}.efficiency."
        effs = {k[len(eff_prefix) :]: v for k, v in values.items() if k.startswith(eff_prefix)}
        if scale > 1.0:  # every efficiency of the unit moved: state them all
            effs = {c: v for (u2, c), v in p.efficiency.items() if u2 == unit} | effs
        result = FitResult(
            unit=unit,
            params=p,
            channel_multiple=m,
            efficiency=effs,
            reduction_half_depth=values.get(
                f"units.{unit}.reduction_half_depth", p.reduction_half.get(unit, 0.0)
            ),
            op_overhead_s=values.get(f"units.{unit}.op_overhead_s", p.overhead_s.get(unit, 0.0)),
            bandwidth={k.split(".")[1]: v for k, v in values.items() if k.startswith("memories.")},
            invoke_overhead_s=values.get("calibration.invoke_overhead_s", p.invoke_s),
            rmspe=err,
            residuals=tuple((s.name, predict(s, p), s.measured_s) for s in samples),
            fitted_classes=tuple(k[len(eff_prefix) :] for k in values if k.startswith(eff_prefix)),
            spill_bandwidth=values.get(f"units.{unit}.spill_bandwidth_bytes_per_s", 0.0),
            gemm_block_rows=r,
            peak_scale=scale,
        )
        if best is None or result.rmspe < best[0].rmspe - 1e-4:
            best = (result, cand)
    assert best is not None
    return best
