"""Per-layer latency forecast of a model on a target: an analytical roofline per kernel.

Units: seconds; *ops* are arithmetic operations with one MAC = 2 ops (the
FLOPs of :mod:`infercast.analysis.cost`), compared against the target's
``peak_<dtype>_ops_per_s`` which counts the same way; bytes are bytes.

For every kernel (a fused group, :mod:`infercast.estimate.fusion`) on the
processor placement put it on (:func:`infercast.targets.place`), with the work
:func:`infercast.estimate.work.build_works` lists:

* ``compute_s = ops_eff / (rate x efficiency[op class])`` where ``ops_eff``
  carries the shape effects real hardware has: output channels rounded up to
  the unit's ``channel_multiple`` (SIMD lanes / MAC-array columns; Arm Vela's
  16 -> 17 channel trap), and maps narrower than ``efficient_width_px`` run at
  ``width / efficient_width_px`` of the efficiency (the K210 KPU below 64 px);
  a ``note`` check with a ``slowdown`` multiplies it. The **rate** is the
  unit's ``peak[dtype]`` (scaled by the clock a measurement ran at, when it
  differs from the file's); on a CPU unit the peak covers all its ``cores``,
  and a kernel runs at ``peak / cores x (1 + (threads - 1) x thread_efficiency)``
  when the runtime splits it across threads (``work.PARALLEL_CLASSES``), at
  ``peak / cores`` otherwise; a split kernel also pays ``thread_sync_s`` (the pool's
  wake-up and end barrier) in its overhead. Weights quantised per channel multiply the
  compute time by the unit's ``per_channel_slowdown`` (1: no effect);
  On a CPU unit running TFLite's built-in int8 kernels that states its Arm ``isa``, a
  kernel's ``compute_s`` is instead its instructions (:mod:`infercast.estimate.aarch64`,
  counted for that ISA level) over ``clock x instructions_per_cycle``, split across the
  threads as above;
* ``pass_s`` = a per-channel conv's output elements x the unit's
  ``per_channel_pass_s_per_element`` (0: none): the extra pass a driver adds to apply
  per-channel scales the unit's MAC array cannot (VeriSilicon NN cores);
* ``memory_s = activation bytes / bandwidth of the memory holding
  activations (layer_io for accelerator layers) + weight bytes / bandwidth of
  the memory holding weights``; weights beyond a cache that streams
  (``on_overflow = "stream"``, the Edge TPU's parameter cache) are streamed
  over the crossing link at ``crossing.stream_bytes_per_s`` (the sustained rate of that
  long stream; unstated: the link's ``crossing.bytes_per_s``), every inference;
  Data-movement ops (transpose, pad, concat, …) do no arithmetic; the forecast
  counts one op per element they write, so ``efficiency.movement`` is their
  copy throughput (pure re-labels -- reshape, squeeze, flatten -- cost only
  the overhead);
  A conv / FC whose dot products are ``K`` long (input channels per group x
  kernel taps; FC input features) computes at ``K / (K + reduction_half_depth)``
  of the efficiency: short dot products leave a GEMM micro-kernel's
  accumulators idle (0, the default, turns the effect off; calibration fits it);
* ``overhead_s`` = the unit's ``op_overhead_s`` (once per kernel);
* ``transfer_s`` = each accelerator <-> CPU crossing (``crossing.fixed_s +
  bytes / crossing.bytes_per_s``; an accelerator -> CPU one at
  ``crossing.readback_bytes_per_s`` where stated), charged to the layer that receives
  the tensor (model outputs: to the layer that produces it);
* ``rewrite_s`` for a ``partial`` layer: one pass of the fallback processor
  over the output (Pad / Crop / StridedSlice steps the compiler adds).

``latency_s = max(compute_s, memory_s) + overhead_s + transfer_s + rewrite_s + pass_s``
(compute and memory overlap, as in Arm Vela's per-layer max of cycle counts; on a CPU unit
with ``memory_stalls``, an in-order core, they add: ``compute_s + memory_s``).
The layer's **bound** is the largest term: ``compute``, ``memory``,
``overhead``, ``transfer``; ``fallback`` for a layer on the fallback CPU of
a target that has an accelerator. Members of a fused group other than its
first op carry 0 s and bound ``fused``; a transpose the runtime cancels with
its inverse carries 0 s and bound ``elided``. ``one_time_s`` (first-run graph
compilation) is reported apart, never added to the latency, and charged only
when the accelerator runs at least one layer; ``invoke_s`` (the calibrated
fixed cost of one inference call) is added once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from infercast.analysis.cost import Analysis, analyze_graph
from infercast.estimate.fusion import Kernel
from infercast.estimate.work import (
    LARGE_DEPTHWISE_TAPS,
    PARALLEL_CLASSES,
    PARENT_CLASS,
    EstimateError,
    Work,
    build_works,
    dtype_key,
    op_class,
    peak_key,
    weight_magnitude_gini,
)
from infercast.ir.graph import Graph, Node
from infercast.ir.labels import BOUNDS, Bound, Placement
from infercast.targets.placement import (
    MemoryFit,
    PlacementReport,
    compiled_note,
    device_graph,
    is_compiled_for,
    place,
)
from infercast.targets.schema import Calibration, Target

__all__ = [
    "BOUNDS",
    "LARGE_DEPTHWISE_TAPS",
    "PARALLEL_CLASSES",
    "EstimateError",
    "Forecast",
    "LayerForecast",
    "Params",
    "Times",
    "Work",
    "dtype_key",
    "estimate",
    "kernel_time",
    "op_class",
    "peak_key",
]

DEFAULT_THREAD_EFFICIENCY = 0.8
"""Speed-up of each extra CPU thread when a target states none (U: calibrate it)."""


# --------------------------------------------------------------------------- #
# Parameters (what calibration fits)
# --------------------------------------------------------------------------- #


SCALAR_FLOPS_PER_CYCLE = 1.0
"""Detection post-processing (TFLite's ``TFLite_Detection_PostProcess``, NMS) is scalar C++:
box decoding, sorts and IoU loops with no SIMD (``tensorflow/lite/kernels/
detection_postprocess.cc``). Where a CPU unit states no ``efficiency.detection``, its rate is
one FLOP a cycle on one core (U). Checked on this project's x86 host by
``bench/bench_detection_postprocess.py`` (LiteRT, one thread, the op's own profiled time):
SSD MobileNet v1's post-processing (521 k FLOPs counted, most of them the worst-case IoU
loop) ran at 1.1 FLOPs a cycle, the one-class face SSD's (372 k) at 1.9."""


@dataclass(frozen=True)
class Params:
    """The numbers the time model reads, taken from a target (calibration varies them).

    Every fittable number has a dotted key, the same as its key in a target file
    (``units.npu.efficiency.conv``, ``memories.dram.bandwidth_bytes_per_s``,
    ``crossing.bytes_per_s``, ``calibration.invoke_overhead_s`` ...): :meth:`get`
    and :meth:`with_values` read and set them.
    """

    peak: Mapping[tuple[str, str], float]
    """(unit, dtype key) -> peak ops/s of the whole unit (every core)."""
    efficiency: Mapping[tuple[str, str], float]
    """(unit, efficiency key) -> fraction; ``default`` where a class is not stated."""
    overhead_s: Mapping[str, float]
    bandwidth: Mapping[str, float]
    """memory -> bytes/s."""
    crossing_fixed_s: float
    crossing_bytes_per_s: float
    invoke_s: float
    crossing_stream_bytes_per_s: float = 0.0
    """Bytes/s of weights streamed beyond a streaming cache (0: ``crossing_bytes_per_s``)."""
    crossing_readback_bytes_per_s: float = 0.0
    """Bytes/s of an accelerator -> CPU crossing (0: ``crossing_bytes_per_s``)."""
    reduction_half: Mapping[str, float] = field(default_factory=dict)
    """unit -> ``reduction_half_depth`` (0: no short-dot-product effect)."""
    cores: Mapping[str, int] = field(default_factory=dict)
    """CPU unit -> cores its peak covers (other kinds are absent: no thread scaling)."""
    thread_efficiency: Mapping[str, float] = field(default_factory=dict)
    thread_sync_s: Mapping[str, float] = field(default_factory=dict)
    """CPU unit -> seconds of thread-pool hand-off per parallel kernel when threads > 1."""
    per_channel_slowdown: Mapping[str, float] = field(default_factory=dict)
    per_channel_pass_s: Mapping[str, float] = field(default_factory=dict)
    """unit -> seconds per output element of a per-channel conv's extra pass (0: none)."""
    im2col_s: Mapping[str, float] = field(default_factory=dict)
    """unit -> seconds per byte of a built-in int8 conv's one-thread im2col (0: none)."""
    broadcast_read_factor: Mapping[str, float] = field(default_factory=dict)
    peak_scale: Mapping[str, float] = field(default_factory=dict)
    """unit -> clock of the forecast over the file's clock (1 when absent)."""
    threads: int = 1
    cache_bytes: Mapping[str, int] = field(default_factory=dict)
    """unit -> its own cache's bytes (``spill_s``; absent or 0: no spill)."""
    spill_bandwidth: Mapping[str, float] = field(default_factory=dict)
    """unit -> bytes/s of the traffic beyond its cache (absent or 0: no spill)."""
    gemm_block_rows: Mapping[str, int] = field(default_factory=dict)
    """unit -> GEMM rows per pass over weights beyond its cache (absent or 0: one pass)."""
    memory_stalls: frozenset[str] = frozenset()
    """CPU units whose kernels take compute + memory, not the longer (``memory_stalls``)."""
    ipc: Mapping[str, float] = field(default_factory=dict)
    """CPU unit with an ``isa`` -> instructions per cycle on TFLite's built-in int8 kernels."""
    clock: Mapping[str, float] = field(default_factory=dict)
    """CPU unit -> clock (Hz) the file states (``peak_scale`` scales it like the peak)."""

    @staticmethod
    def of(target: Target, threads: int = 1, *, prior_for: Sequence[str] = ()) -> Params:
        """The target's numbers: its tables, then its ``calibration.values`` over them except
        for the keys in ``prior_for``, which keep the tables' (the fit's prior) values."""
        p = Params.stated(target, threads)
        fitted = {k: v for k, v in fitted_values(target).items() if k not in prior_for}
        if target.calibration.values_from:
            from infercast.targets.loader import load_target

            inherited = fitted_values(load_target(target.calibration.values_from))
            for k in prior_for:  # the prior of a key this target fits: the shared value
                if k in inherited:
                    fitted[k] = inherited[k]
        return p.with_values(fitted) if fitted else p

    @staticmethod
    def stated(target: Target, threads: int = 1) -> Params:
        """The numbers the target's tables state (no calibration values applied)."""
        peak: dict[tuple[str, str], float] = {}
        eff: dict[tuple[str, str], float] = {}
        for u in target.units.values():
            for k, v in u.peak_ops_per_s.items():
                peak[(u.name, k)] = v
            for k, v in u.efficiency.items():
                eff[(u.name, k)] = v
        cpus = [u for u in target.units.values() if u.kind == "cpu"]
        for u in cpus:
            fp32 = u.peak_ops_per_s.get("fp32", 0.0)
            if "detection" not in u.efficiency and u.clock_hz and fp32 > 0:
                scalar = SCALAR_FLOPS_PER_CYCLE * u.clock_hz * u.cores / fp32
                eff[(u.name, "detection")] = min(scalar, 1.0)
        return Params(
            peak=peak,
            efficiency=eff,
            overhead_s={u.name: u.op_overhead_s for u in target.units.values()},
            bandwidth={
                m.name: m.bandwidth_bytes_per_s * m.efficiency for m in target.memories.values()
            },
            crossing_fixed_s=target.crossing.fixed_s,
            crossing_bytes_per_s=target.crossing.bytes_per_s,
            crossing_stream_bytes_per_s=target.crossing.stream_bytes_per_s,
            crossing_readback_bytes_per_s=target.crossing.readback_bytes_per_s,
            invoke_s=target.calibration.invoke_overhead_s,
            reduction_half={u.name: u.reduction_half_depth for u in target.units.values()},
            cores={u.name: u.cores for u in cpus},
            thread_efficiency={
                u.name: u.thread_efficiency or DEFAULT_THREAD_EFFICIENCY for u in cpus
            },
            thread_sync_s={u.name: u.thread_sync_s for u in cpus},
            per_channel_slowdown={u.name: u.per_channel_slowdown for u in target.units.values()},
            per_channel_pass_s={
                u.name: u.per_channel_pass_s_per_element for u in target.units.values()
            },
            broadcast_read_factor={u.name: u.broadcast_read_factor for u in target.units.values()},
            im2col_s={u.name: u.im2col_s_per_byte for u in cpus if u.im2col_s_per_byte},
            threads=threads,
            cache_bytes={u.name: u.cache_bytes for u in cpus if u.cache_bytes},
            spill_bandwidth={
                u.name: u.spill_bandwidth_bytes_per_s for u in cpus if u.spill_bandwidth_bytes_per_s
            },
            gemm_block_rows={u.name: u.gemm_block_rows for u in cpus if u.gemm_block_rows},
            memory_stalls=frozenset(u.name for u in cpus if u.memory_stalls),
            ipc={u.name: u.instructions_per_cycle or 1.0 for u in cpus if u.isa},
            clock={u.name: u.clock_hz for u in cpus if u.clock_hz},
        )

    def eff(self, unit: str, op_class: str) -> float:
        """The class's efficiency, else its parent class's, else ``default``, else 1."""
        for cls in (op_class, PARENT_CLASS.get(op_class), "default"):
            if cls is not None and (unit, cls) in self.efficiency:
                return self.efficiency[(unit, cls)]
        return 1.0

    def kernel_threads(self, unit: str, max_threads: int = 0) -> int:
        """Threads a parallel kernel on CPU ``unit`` runs on: the runtime's count, at most the
        unit's cores and the kernel's own limit (``max_threads``, 0: none)."""
        n = min(self.threads, self.cores.get(unit, 1))
        return min(n, max_threads) if max_threads > 0 else n

    def speedup(self, unit: str, max_threads: int = 0) -> float:
        """How much faster than one thread a parallel kernel runs on ``unit``."""
        if unit not in self.cores:
            return 1.0
        n = self.kernel_threads(unit, max_threads)
        return 1.0 + (n - 1) * self.thread_efficiency.get(unit, DEFAULT_THREAD_EFFICIENCY)

    def sync_s(self, unit: str, parallel: bool, max_threads: int = 0) -> float:
        """Thread hand-off seconds of one kernel on ``unit`` (0 on one thread)."""
        if not parallel or unit not in self.cores or self.kernel_threads(unit, max_threads) < 2:
            return 0.0
        return self.thread_sync_s.get(unit, 0.0)

    def rate(self, unit: str, dtype: str, parallel: bool, max_threads: int = 0) -> float:
        """Ops/s of ``unit`` at efficiency 1 for a kernel computing in ``dtype``."""
        peak = self.peak.get((unit, dtype))
        if peak is None:
            raise EstimateError(f"unit '{unit}' states no peak for {dtype}")
        peak *= self.peak_scale.get(unit, 1.0)
        if unit in self.cores:
            peak /= self.cores[unit]
            if parallel:
                peak *= self.speedup(unit, max_threads)
        return peak

    @property
    def stream_rate(self) -> float:
        """Bytes/s of the weights streamed beyond a streaming cache."""
        return self.crossing_stream_bytes_per_s or self.crossing_bytes_per_s

    @property
    def readback_rate(self) -> float:
        """Bytes/s of an accelerator -> CPU crossing."""
        return self.crossing_readback_bytes_per_s or self.crossing_bytes_per_s

    # -- dotted keys ---------------------------------------------------------- #

    def get(self, key: str) -> float:
        """The value of a dotted parameter key (see the class docstring)."""
        slot, sub = _slot(key)
        if slot == "crossing_stream_bytes_per_s":
            return self.stream_rate
        if slot == "crossing_readback_bytes_per_s":
            return self.readback_rate
        if slot in ("crossing_fixed_s", "crossing_bytes_per_s", "invoke_s"):
            return float(getattr(self, slot))
        table = getattr(self, slot)
        if slot == "efficiency":
            return self.eff(*sub)
        if slot == "thread_efficiency":
            return float(table.get(sub, DEFAULT_THREAD_EFFICIENCY))
        if slot in ("per_channel_slowdown", "ipc"):
            return float(table.get(sub, 1.0))
        if slot in ("thread_sync_s", "broadcast_read_factor", "spill_bandwidth",
                    "per_channel_pass_s", "im2col_s"):  # fmt: skip
            return float(table.get(sub, 0.0))
        if sub not in table:
            raise EstimateError(f"the target has no parameter '{key}'")
        return float(table[sub])

    def with_values(self, values: Mapping[str, float]) -> Params:
        """A copy with the dotted keys in ``values`` set."""
        changes: dict[str, Any] = {}
        for key, v in values.items():
            slot, sub = _slot(key)
            if slot in (
                "crossing_fixed_s",
                "crossing_bytes_per_s",
                "crossing_stream_bytes_per_s",
                "crossing_readback_bytes_per_s",
                "invoke_s",
            ):
                changes[slot] = float(v)
                continue
            table = dict(changes.get(slot, getattr(self, slot)))
            table[sub] = float(v)
            changes[slot] = table
        return dataclasses.replace(self, **changes)


_UNIT_SLOTS = {
    "op_overhead_s": "overhead_s",
    "reduction_half_depth": "reduction_half",
    "thread_efficiency": "thread_efficiency",
    "per_channel_slowdown": "per_channel_slowdown",
    "per_channel_pass_s_per_element": "per_channel_pass_s",
    "thread_sync_s": "thread_sync_s",
    "broadcast_read_factor": "broadcast_read_factor",
    "spill_bandwidth_bytes_per_s": "spill_bandwidth",
    "im2col_s_per_byte": "im2col_s",
    "instructions_per_cycle": "ipc",
}


def _slot(key: str) -> tuple[str, Any]:
    """(Params field, key within it) of a dotted parameter key."""
    parts = key.split(".")
    if key == "crossing.fixed_s":
        return "crossing_fixed_s", None
    if key == "crossing.bytes_per_s":
        return "crossing_bytes_per_s", None
    if key == "crossing.stream_bytes_per_s":
        return "crossing_stream_bytes_per_s", None
    if key == "crossing.readback_bytes_per_s":
        return "crossing_readback_bytes_per_s", None
    if key == "calibration.invoke_overhead_s":
        return "invoke_s", None
    if len(parts) == 3 and parts[0] == "memories" and parts[2] == "bandwidth_bytes_per_s":
        return "bandwidth", parts[1]
    if len(parts) == 4 and parts[0] == "units" and parts[2] == "efficiency":
        return "efficiency", (parts[1], parts[3])
    if len(parts) == 3 and parts[0] == "units" and parts[2] in _UNIT_SLOTS:
        return _UNIT_SLOTS[parts[2]], parts[1]
    if len(parts) == 3 and parts[0] == "units" and parts[2].startswith("peak_"):
        dt = parts[2].removeprefix("peak_").removesuffix("_ops_per_s")
        return "peak", (parts[1], dt)
    raise EstimateError(
        f"'{key}' is not a fittable parameter",
        "use units.U.efficiency.CLASS, units.U.op_overhead_s, units.U.thread_efficiency, "
        "units.U.per_channel_slowdown, units.U.thread_sync_s, units.U.peak_<dtype>_ops_per_s, "
        "units.U.spill_bandwidth_bytes_per_s, units.U.instructions_per_cycle, "
        "memories.M.bandwidth_bytes_per_s, crossing.fixed_s, crossing.bytes_per_s, "
        "crossing.stream_bytes_per_s, crossing.readback_bytes_per_s or "
        "calibration.invoke_overhead_s",
    )


def calibration_chain(target: Target) -> list[Calibration]:
    """The ``calibration`` tables a target reads: its ``values_from`` target's chain first,
    its own last (what a later one states wins)."""
    cal = target.calibration
    if not cal.values_from:
        return [cal]
    from infercast.targets.loader import load_target

    return [*calibration_chain(load_target(cal.values_from)), cal]


def fitted_values(target: Target) -> dict[str, float]:
    """The target's ``calibration.values``, over those of ``calibration.values_from``."""
    return {k: v for cal in calibration_chain(target) for k, v in cal.values.items()}


# --------------------------------------------------------------------------- #
# The time of one kernel
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class Times:
    compute_s: float
    memory_s: float
    overhead_s: float
    transfer_s: float
    rewrite_s: float
    spill_s: float = 0.0
    """Stall on the kernel's bytes beyond its unit's cache (:func:`spill_bytes`)."""
    pass_s: float = 0.0
    """The extra pass over a per-channel conv's output (:func:`per_channel_pass_time`)."""
    stalls: bool = False
    """The unit waits on the memory traffic: compute and memory add (``memory_stalls``)."""
    layout_s: float = 0.0
    """The layout permutes the runtime inserts for the kernel (:attr:`Work.permutes`)."""

    @property
    def latency_s(self) -> float:
        both = self.compute_s + self.memory_s if self.stalls else max(self.compute_s, self.memory_s)
        return (
            both
            + self.overhead_s
            + self.transfer_s
            + self.rewrite_s
            + self.spill_s
            + self.pass_s
            + self.layout_s
        )


def weight_passes(w: Work, cache_bytes: float, block_rows: int) -> int:
    """Times kernel ``w`` streams its weights: once when they fit the unit's cache (or no
    cache / block is stated); ``ceil(M / block_rows)`` when they do not, ``M`` the GEMM's
    rows (:attr:`Work.gemm_rows`). With one thread XNNPACK runs a GEMM as
    ``pthreadpool_parallelize_2d_tile_2d`` over (M in tiles of ``mr``, N whole), the M
    tiles outermost (google/pthreadpool ``src/portable-api.c``), so each ``mr``-row strip of
    the output reads all of the packed ``K x N`` weights: from L2 when they fit, from the
    next level once per strip when they do not."""
    if cache_bytes <= 0 or block_rows <= 0 or w.gemm_rows <= 0 or w.weight_bytes <= cache_bytes:
        return 1
    return -(-w.gemm_rows // block_rows)


def spill_bytes(w: Work, cache_bytes: float, block_rows: int = 0) -> float:
    """Bytes of kernel ``w`` beyond a cache of ``cache_bytes`` (0: no cache stated).

    A CPU core streams a kernel's activations and weights through its own cache (L2); what
    fits is reused at the ``memories`` bandwidth the rest of the model uses, what does not
    comes from the next level (a shared L3, DRAM) and stalls the core beyond the overlap of
    compute and memory. Measured on micro-kernels timed with a cold L2 (LiteRT + XNNPACK,
    one thread, this host's 2 MB L2): a 512x512 3x3 conv on a 7x7 map (9.4 MB of weights)
    takes 3.0 ms where its arithmetic at the rate of the small convs takes 1.75 ms, a
    2048x1000 FC (8 MB) 0.60 ms against 0.30 ms at the bandwidth of the small ops; kernels
    whose bytes fit in 2 MB sit on the fitted rates (``units.U.cache_bytes``).

    With ``block_rows`` (``units.U.gemm_block_rows``) a GEMM's weights larger than the cache
    count once per pass (:func:`weight_passes`): the 512x512 conv above on a 7x7 map, in
    strips of 7 rows, moves 7 x 9.4 MB."""
    if cache_bytes <= 0 or w.act_memory is None:
        return 0.0
    passes = weight_passes(w, cache_bytes, block_rows)
    return max(float(w.act_bytes + w.weight_bytes * passes) - cache_bytes, 0.0)


def cached_bytes(w: Work, spilled: float) -> tuple[float, float]:
    """(activation, weight) bytes of kernel ``w`` that its ``memory_s`` term moves, when
    ``spilled`` bytes of it are the spill's (:func:`spill_bytes`): the spilled bytes are
    taken off the weights first, then off the activations. A CPU overlaps the traffic that
    its cache serves with the arithmetic (``max(compute, memory)``), not the stream of
    weights beyond it: measured per op (LiteRT + XNNPACK, one thread, ResNet50 at 128 px),
    the convs of the 4x4 stage (M = 16 output pixels, 4-9 MiB of weights) take their
    arithmetic's time *plus* their weights at 20-30 GB/s (0.35 ms for 4 MiB where the
    arithmetic takes 0.18 ms), and a 2048x1000 FC (8 MB, arithmetic negligible) its weights
    at the same rate: one stall, not a second copy of the weights in ``memory_s``."""
    act = float(w.act_bytes + w.refetch_bytes)
    weights = float(w.weight_bytes)
    if spilled <= 0:
        return act, weights
    from_weights = min(spilled, weights)
    return max(act - (spilled - from_weights), 0.0), weights - from_weights


def compute_time(w: Work, p: Params) -> float:
    """Seconds of arithmetic of kernel ``w`` (the module docstring's ``compute_s``)."""
    if w.instructions > 0 and p.clock.get(w.unit, 0.0) > 0:
        rate = p.clock[w.unit] * p.peak_scale.get(w.unit, 1.0) * p.ipc.get(w.unit, 1.0)
        if w.parallel:
            rate *= p.speedup(w.unit, w.max_threads)
        return w.instructions / rate
    if w.ops <= 0 or w.dtype is None:
        return 0.0
    rate = p.rate(w.unit, w.dtype, w.parallel, w.max_threads)
    t = w.ops_eff / (rate * p.eff(w.unit, w.efficiency_class))
    half = p.reduction_half.get(w.unit, 0.0)
    if half > 0 and w.reduction_depth > 0:
        t *= (w.reduction_depth + half) / w.reduction_depth
    if w.per_channel:
        t *= p.per_channel_slowdown.get(w.unit, 1.0)
    return t + w.im2col_bytes * p.im2col_s.get(w.unit, 0.0)


def kernel_time(w: Work, p: Params) -> Times:
    """Seconds of one kernel under parameters ``p`` (see the module docstring)."""
    if w.elided:
        return Times(0.0, 0.0, 0.0, 0.0, 0.0)
    spill = spilled = 0.0
    bw = p.spill_bandwidth.get(w.unit, 0.0)
    if bw > 0:
        spilled = spill_bytes(w, p.cache_bytes.get(w.unit, 0), p.gemm_block_rows.get(w.unit, 0))
        spill = spilled / bw
    act_b, weight_b = cached_bytes(w, spilled)
    act = weights = 0.0
    if w.act_memory is not None:
        act = act_b / p.bandwidth[w.act_memory]
    if w.weight_memory is not None:
        weights = (weight_b + w.arena_bytes) / p.bandwidth[w.weight_memory]
        factor = p.broadcast_read_factor.get(w.unit, 0.0)
        if factor and w.broadcast_bytes:
            weights += factor * w.broadcast_bytes / p.bandwidth[w.weight_memory]
    memory = max(act, weights) if w.separate_ports else act + weights
    memory += w.streamed_bytes / p.stream_rate
    transfer = sum(p.crossing_fixed_s + b / p.crossing_bytes_per_s for b in w.transfers)
    transfer += sum(p.crossing_fixed_s + b / p.readback_rate for b in w.readbacks)
    transfer += w.invokes * p.invoke_s
    rewrite = 0.0
    if w.rewrite_bytes is not None:
        rewrite = p.overhead_s.get(w.fallback_unit, 0.0)
        if w.fallback_memory is not None:
            rewrite += w.rewrite_bytes / p.bandwidth[w.fallback_memory]
    split = w.parallel and w.ops > 0 and w.dtype is not None
    overhead = p.overhead_s.get(w.unit, 0.0) + p.sync_s(w.unit, split, w.max_threads)
    return Times(
        compute_time(w, p),
        memory,
        overhead,
        transfer,
        rewrite,
        spill,
        per_channel_pass_time(w, p),
        stalls=w.unit in p.memory_stalls,
        layout_s=sum((kernel_time(x, p).latency_s for x in w.permutes), 0.0),
    )


def per_channel_pass_time(w: Work, p: Params) -> float:
    """Seconds of the extra pass over the output of a conv with per-channel weights on a
    unit whose ``per_channel_pass_s_per_element`` states one (0 otherwise)."""
    return w.per_channel_out_elements * p.per_channel_pass_s.get(w.unit, 0.0)


def bound_of(w: Work, t: Times) -> Bound:
    if w.elided:
        return "elided"
    if not w.known:
        return "unknown"
    terms: dict[Bound, float] = {
        "compute": t.compute_s,
        "memory": t.memory_s + t.spill_s + t.pass_s + t.layout_s,
        "overhead": t.overhead_s,
        "transfer": t.transfer_s,
        "fallback": t.rewrite_s,
    }
    top = max(terms, key=lambda k: terms[k])
    if top != "transfer" and w.on_fallback:
        return "fallback"
    return top


# --------------------------------------------------------------------------- #
# Results
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class LayerForecast:
    index: int
    name: str
    op: str
    native_op: str
    placement: Placement
    unit: str
    kernel: int
    """Index of the first op of this layer's fused group (its own index if alone)."""
    op_class: str
    dtype: str | None
    ops: float | None
    ops_eff: float | None
    bytes: int
    compute_s: float
    memory_s: float
    overhead_s: float
    transfer_s: float
    rewrite_s: float
    latency_s: float
    bound: Bound
    layout_s: float = 0.0
    """Of ``latency_s``, the layout permutes the accelerator's runtime inserts for this
    layer (:mod:`infercast.estimate.layout`): data movement, in the ``memory`` bound."""

    @property
    def fused_into(self) -> int | None:
        return self.kernel if self.kernel != self.index else None


@dataclass(frozen=True)
class Forecast:
    target: Target
    model: str
    layers: tuple[LayerForecast, ...]
    works: tuple[tuple[Kernel, Work], ...] = field(repr=False)
    params: Params = field(repr=False)
    placement: PlacementReport = field(repr=False)
    notes: tuple[str, ...] = ()
    unknown_layers: int = 0
    """Layers of the model (subgraphs included) whose cost is unknown (no cost rule, a
    shape not known statically): the forecast leaves their arithmetic out."""
    outside: OutsideEvidence | None = None
    """The part of the forecast in kernel kinds no fitted row of the target exercised
    (:func:`outside_evidence`, computed once with the layers)."""

    @property
    def invoke_s(self) -> float:
        return self.params.invoke_s

    @property
    def threads(self) -> int:
        """CPU threads the forecast assumes (the runtime's thread count)."""
        return self.params.threads

    @property
    def latency_s(self) -> float:
        """Steady-state seconds per inference (one-time costs excluded)."""
        return sum(ly.latency_s for ly in self.layers) + self.invoke_s

    @property
    def one_time_s(self) -> float:
        """First-run costs (graph compilation), reported apart; an accelerator's graph
        compilation only when some layer runs on the accelerator: ``graph_compile_s`` plus
        ``graph_compile_s_per_weight_byte`` x the weight bytes placed on it."""
        t = self.target
        if t.placement.accelerator is None:
            return t.graph_compile_s
        on_acc = any(ly.processor == "accelerator" for ly in self.placement.layers if not ly.folded)
        if not on_acc:
            return 0.0
        acc_weights = sum(w.weight_bytes for _, w in self.works if not w.on_fallback)
        return t.graph_compile_s + t.graph_compile_s_per_weight_byte * acc_weights

    @property
    def complete(self) -> bool:
        return self.unknown_layers == 0 and all(ly.bound != "unknown" for ly in self.layers)

    def by_bound(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for ly in self.layers:
            if ly.bound not in ("fused", "elided"):
                out[ly.bound] = out.get(ly.bound, 0.0) + ly.latency_s
        return out

    def totals(self) -> dict[str, Any]:
        return {
            "latency_s": self.latency_s,
            "one_time_s": self.one_time_s,
            "invoke_s": self.invoke_s,
            "threads": self.threads,
            "compute_s": sum(ly.compute_s for ly in self.layers),
            "memory_s": sum(ly.memory_s for ly in self.layers),
            "overhead_s": sum(ly.overhead_s for ly in self.layers),
            "transfer_s": sum(ly.transfer_s for ly in self.layers),
            "layout_s": sum(ly.layout_s for ly in self.layers),
            "ops": sum(ly.ops or 0 for ly in self.layers),
            "kernels": sum(1 for ly in self.layers if ly.bound not in ("fused", "elided")),
            "by_bound_s": self.by_bound(),
            "complete": self.complete,
        }


COVERED_SHARE = 0.05
"""A kernel kind counts as exercised by a fitted row when it takes at least this fraction of
the row's forecast: a kind below it in every row could be 2x off and move no row by more
than 5%, so the rows are no evidence for it (``calibration.covered``)."""
OUTSIDE_SHARE = 0.2
"""A forecast with at least this fraction of its time in kinds no fitted row exercised says
so (:func:`outside_evidence`)."""


def kind_of(graph: Graph, node: Node, unit: str) -> str:
    """The kernel kind of ``node`` run on ``unit``: ``OP on UNIT``, ``OP batch>1 on UNIT``
    when its output has a batch above 1 (what a rank-4 tensor's first dimension holds in
    both NHWC and NCHW). OP is the canonical op name (``conv``, ``depthwise_conv``,
    ``space_to_batch``...), the same for a TFLite and an ONNX model of the same layer, so a
    target fitted on TFLite rows covers an ONNX model's kernels of those kinds too."""
    outs = graph.output_tensors(node)
    shape = outs[0].shape if outs else None
    batched = shape is not None and len(shape) == 4 and (shape[0] or 1) > 1
    return f"{node.op}{' batch>1' if batched else ''} on {unit}"


def time_by_kind(graph: Graph, layers: Sequence[LayerForecast]) -> dict[str, float]:
    """Forecast seconds per kernel kind (:func:`kind_of` of each kernel's first op)."""
    nodes = {n.index: n for n in graph.nodes}
    out: dict[str, float] = {}
    for ly in layers:
        if ly.bound in ("fused", "elided") or ly.latency_s <= 0 or ly.index not in nodes:
            continue
        k = kind_of(graph, nodes[ly.index], ly.unit)
        out[k] = out.get(k, 0.0) + ly.latency_s
    return out


def coverage(forecasts: Sequence[Forecast]) -> tuple[str, ...]:
    """The kernel kinds that take at least ``COVERED_SHARE`` of some forecast's time: what
    rows of these forecasts, fitted on, are evidence for (``calibration.covered``)."""
    kinds: set[str] = set()
    for fc in forecasts:
        total = fc.latency_s
        for k, t in time_by_kind(fc.placement.graph, fc.layers).items():
            if total > 0 and t >= COVERED_SHARE * total:
                kinds.add(k)
    return tuple(sorted(kinds))


def covered_kinds(target: Target) -> frozenset[str] | None:
    """The kinds the target's fitted rows (and its ``values_from`` target's) exercised;
    None when no target of the chain records them."""
    chain = calibration_chain(target)
    if not any(cal.covered for cal in chain):
        return None
    return frozenset(k for cal in chain for k in cal.covered)


def outside_rows(target: Target) -> dict[str, float]:
    """Checked-only rows outside the evidence, the ``values_from`` target's first."""
    return {k: v for cal in calibration_chain(target) for k, v in cal.outside_rows.items()}


@dataclass(frozen=True)
class OutsideEvidence:
    """The part of a forecast in kernel kinds no fitted row of the target exercised."""

    share: float
    """Fraction of the forecast's latency (per-call cost included in the whole)."""
    kinds: Mapping[str, float]
    """Kind -> forecast seconds, largest first."""

    def to_dict(self) -> dict[str, Any]:
        return {"share": self.share, "kinds_s": dict(self.kinds)}


def outside_evidence(
    target: Target, graph: Graph, layers: Sequence[LayerForecast], latency_s: float
) -> OutsideEvidence | None:
    """What of a forecast lies in kinds the target's fitted rows did not exercise (None:
    the target records no coverage, or nothing lies outside it)."""
    covered = covered_kinds(target)
    if covered is None or latency_s <= 0:
        return None
    kinds = {k: t for k, t in time_by_kind(graph, layers).items() if k not in covered}
    if not kinds:
        return None
    ordered = dict(sorted(kinds.items(), key=lambda kv: -kv[1]))
    return OutsideEvidence(sum(ordered.values()) / latency_s, ordered)


def _outside_note(target: Target, ev: OutsideEvidence, latency_s: float) -> str:
    shown = list(ev.kinds.items())[:4]
    parts = ", ".join(f"{k} {t / latency_s:.0%}" for k, t in shown)
    more = f", +{len(ev.kinds) - len(shown)} more" if len(ev.kinds) > len(shown) else ""
    note = (
        f"{ev.share:.0%} of the forecast time is in kernels no calibration row exercised "
        f"({parts}{more}): outside the fitted evidence, the stated uncertainty does not cover it"
    )
    seen = outside_rows(target)
    if seen:
        rows = ", ".join(f"{r} took {x:.3g}x its forecast" for r, x in seen.items())
        note += f"; published rows of this device outside it: {rows}"
    return note


def uncertainty(target: Target) -> str | None:
    """ "±25% (median), worst 1.8x, on 14 rows" from a target's leave-one-out figures."""
    cal = target.calibration
    if not cal.calibrated or not cal.rows or not cal.loo_worst_ratio:
        return None
    return (
        f"±{cal.loo_median_abs_error:.0%} (median), worst {cal.loo_worst_ratio:.1f}x, "
        f"on {len(cal.rows)} rows (leave-one-out)"
    )


def cpu_threads(target: Target, threads: int | None) -> int:
    """The CPU thread count a forecast assumes: ``threads``, else 1 (what TFLite's
    ``benchmark_model`` and ``infercast bench`` use by default); 1..cores of the fallback CPU."""
    n = 1 if threads is None else threads
    cores = target.fallback.cores if target.fallback.kind == "cpu" else 1
    if not 1 <= n <= max(cores, 1):
        raise EstimateError(
            f"--threads must be between 1 and {cores} (the cores of {target.name}'s "
            f"{target.fallback.name}), not {n}"
        )
    return n


def estimate(
    graph: Graph,
    target: Target,
    *,
    placement: PlacementReport | None = None,
    analysis: Analysis | None = None,
    fuse: bool = True,
    params: Params | None = None,
    threads: int | None = None,
    clock_hz: float | None = None,
) -> Forecast:
    """Forecast per-layer latency of ``graph`` on ``target``.

    ``placement`` (``place(graph, target)``) and ``analysis`` (``analyze_graph(graph)``)
    are computed here when not given. ``params`` overrides the target's numbers
    (what calibration varies); ``fuse=False`` costs every op as its own kernel;
    ``threads``: the CPU runtime's thread count (default 1); ``clock_hz``: the clock
    of the target's main unit (its accelerator, else its CPU) when it differs from the
    file's.
    """
    if placement is None:
        placement = place(graph, target)
    elif placement.graph is not graph or placement.target is not target:
        raise ValueError("estimate(): the placement is of another graph or target")
    if analysis is None:
        analysis = analyze_graph(graph)
    elif analysis.graph is not graph:
        raise ValueError("estimate(): the analysis is of another graph")
    n = cpu_threads(target, threads if params is None or threads is not None else params.threads)
    works, notes = build_works(device_graph(graph, target), analysis, placement, target, fuse)
    if is_compiled_for(placement):
        notes = [compiled_note(target), *notes]
    p = dataclasses.replace(params or Params.of(target), threads=n)
    if clock_hz is not None:
        p = with_clock(target, p, clock_hz)
    fc = assemble(target, str(graph.path or graph.name), placement, works, p, notes)
    t = analysis.totals
    return dataclasses.replace(fc, unknown_layers=t.unsupported_layers + t.unknown_shape_layers)


def with_clock(target: Target, p: Params, clock_hz: float) -> Params:
    """``p`` with the main unit's peaks scaled from the file's clock to ``clock_hz``."""
    unit = target.accelerator or target.fallback
    if not unit.clock_hz:
        raise EstimateError(f"{target.name}: unit '{unit.name}' states no clock_hz to scale")
    return dataclasses.replace(p, peak_scale={**p.peak_scale, unit.name: clock_hz / unit.clock_hz})


def _layers(
    report: PlacementReport, works: list[tuple[Kernel, Work]], p: Params
) -> list[LayerForecast]:
    place_of = {ly.index: ly for ly in report.layers}
    nodes = {n.index: n for n in report.graph.nodes}
    layers: list[LayerForecast] = []
    for k, w in works:
        t = kernel_time(w, p)
        bound = bound_of(w, t)
        for i in k.members:
            n = nodes[i]
            lp = place_of[i]
            first = i == k.anchor
            layers.append(
                LayerForecast(
                    index=i,
                    name=n.name,
                    op=n.op,
                    native_op=n.native_op,
                    placement=lp.placement,
                    unit=lp.unit,
                    kernel=k.anchor,
                    op_class=w.op_class if first else op_class(n, report.graph),
                    dtype=w.dtype if first else None,
                    ops=(w.ops if w.known else None) if first else 0.0,
                    ops_eff=(w.ops_eff if w.known else None) if first else 0.0,
                    bytes=(w.act_bytes + w.weight_bytes + w.streamed_bytes) if first else 0,
                    compute_s=t.compute_s if first else 0.0,
                    memory_s=t.memory_s + t.spill_s + t.pass_s if first else 0.0,
                    overhead_s=t.overhead_s if first else 0.0,
                    transfer_s=t.transfer_s if first else 0.0,
                    rewrite_s=t.rewrite_s if first else 0.0,
                    latency_s=t.latency_s if first else 0.0,
                    bound=bound if first else "fused",
                    layout_s=t.layout_s if first else 0.0,
                )
            )
    layers.sort(key=lambda ly: ly.index)
    return layers


def _calibration_note(target: Target, p: Params) -> str:
    cal = target.calibration
    cores = target.fallback.cores if target.fallback.kind == "cpu" else 0
    threads = f"; CPU: {p.threads} thread(s) of {cores} cores" if cores else ""
    fb = target.fallback
    if cores and fb.isa and fb.int8_kernels == "builtin":
        ipc = p.ipc.get(fb.name, 1.0)
        threads += (
            f" (TFLite built-in int8 kernels priced by their {fb.isa} instructions at "
            f"{ipc:.3g} a cycle)"
        )
    if not cal.calibrated:
        return (
            f"{target.name} is not calibrated: peaks, efficiencies and overheads are datasheet "
            "figures or guesses (see `uncertain` in the target file); treat the forecast as an "
            f"order of magnitude and calibrate (`infercast calibrate`) before trusting it{threads}"
        )
    band = uncertainty(target)
    if band is None and cal.fit_rmspe:
        band = f"fit RMSPE {cal.fit_rmspe:.0%} on its own samples"
    return (
        f"calibrated for {cal.runtime or 'a runtime'}"
        f"{f' with {cal.threads} thread(s)' if cal.threads else ''}"
        f"{f': {band}' if band else ''}; a different runtime version, thread count or clock "
        f"changes the figures{threads}"
    )


STREAM_CAUTION_FRACTION = 0.5
"""A streaming memory the device sizes per model (``size_varies``) gets a note when the
model fills more than this fraction of its stated size. The Edge TPU compiler's parameter
cache is not a fixed size: used + remaining in published compile logs run from 7.96, 7.16
and 7.04 MiB for 160-224 px classifiers down to 1.92, 1.73 and 1.1 MiB for others
(google-coral/edgetpu #173, #518, #427, #572). The forecast takes the largest layer's
activations off it (up to 3 MiB, ``_edgetpu.toml``), which Coral's compiled files support,
but not the smallest of those sizes."""


def _fit_notes(report: PlacementReport) -> list[str]:
    """A note per memory the model does not fit and the device cannot stream from: the
    forecast is then the time of a model that cannot load there as it is; and per streaming
    memory sized per model (``size_varies``) that the model fills beyond
    :data:`STREAM_CAUTION_FRACTION`."""
    mib = 1 << 20
    uncertain = report.target.uncertain

    def assumed(memory: str) -> str:
        keys = (f"memories.{memory}.size_bytes", f"memories.{memory}", "memories")
        return (
            " (a size the target assumes: see its `uncertain`)"
            if set(keys) & set(uncertain)
            else ""
        )

    def varies(memory: str) -> bool:
        m = report.target.memories.get(memory)
        return m is not None and m.size_varies

    blocking = [
        f"does not fit: {f.memory} needs {f.required_bytes / mib:.1f} MiB "
        f"({f.required_bytes} bytes), holds {f.capacity_bytes / mib:.1f} MiB"
        f"{assumed(f.memory)}; the model cannot load there as it is and this latency assumes "
        "it could (`infercast check` shows what takes the space)"
        for f in report.fit.values()
        if f.blocking
    ]

    def what(f: MemoryFit) -> str:
        kinds = {
            "accelerator_weights_bytes": "weights",
            "weights_bytes": "weights",
            "layer_io_bytes": "its largest layer's activations",
        }
        named = [f"{v / mib:.1f} MiB {kinds.get(k, k)}" for k, v in f.parts.items() if v]
        return f" ({', '.join(named)})" if len(named) > 1 else ""

    near = [
        f"{f.memory}: this model's {f.required_bytes / mib:.1f} MiB{what(f)} fill "
        f"{f.required_bytes / f.capacity_bytes:.0%} of its {f.capacity_bytes / mib:.1f} MiB, "
        "a size the device's compiler sets per model; where it is smaller for this model, the "
        "excess is streamed every inference, which this latency does not include (state the "
        f"size your compiler reports as memories.{f.memory}.size_bytes, with size_varies = "
        "false, in a target file that extends this one)"
        for f in report.fit.values()
        if f.fits and f.on_overflow == "stream" and varies(f.memory)
        and f.required_bytes > f.capacity_bytes * STREAM_CAUTION_FRACTION
    ]  # fmt: skip
    return blocking + near


def _per_channel_pass_notes(
    target: Target, graph: Graph, works: list[tuple[Kernel, Work]], p: Params
) -> list[str]:
    """What the per-channel pass costs per unit, and how many of the model's convs the
    unit's driver rule would keep per channel (``per_channel_requant_gini``)."""
    nodes = {n.index: n for n in graph.nodes}
    out: list[str] = []
    for unit in dict.fromkeys(w.unit for _, w in works):
        mine = [(k, w) for k, w in works if w.unit == unit and per_channel_pass_time(w, p) > 0]
        if not mine:
            continue
        secs = sum(per_channel_pass_time(w, p) for _, w in mine)
        elems = sum(w.per_channel_out_elements for _, w in mine)
        text = (
            f"{len(mine)} conv(s) with per-channel weights on {unit}: an extra pass over their "
            f"{elems} output elements, {secs * 1e3:.3g} ms "
            f"(units.{unit}.per_channel_pass_s_per_element, the average the published rows fit)"
        )
        rule = target.units[unit].per_channel_requant_gini
        if len(rule) == 2:
            kept = judged = 0
            for k, _w in mine:
                node = nodes[k.anchor]
                g = weight_magnitude_gini(graph, node)
                if g is None:
                    continue
                judged += 1
                kept += g > (rule[1] if node.op == "depthwise_conv" else rule[0])
            text += (
                f"; the driver keeps per-channel scales (the pass) only where the Gini "
                f"coefficient of a conv's |weights| exceeds {rule[0]:g} ({rule[1]:g} depthwise) "
                f"and re-quantises the others per tensor: {kept} of {judged} here exceed it"
                if judged
                else "; the weights' values are not in the file: which convs the driver "
                "re-quantises per tensor is not known"
            )
        out.append(text)
    return out


def assemble(
    target: Target,
    model: str,
    report: PlacementReport,
    works: list[tuple[Kernel, Work]],
    p: Params,
    notes: list[str],
) -> Forecast:
    """Turn kernels' work into per-layer results under parameters ``p``."""
    layers = _layers(report, works, p)
    all_notes = [*_fit_notes(report), *notes, _calibration_note(target, p)]
    latency = sum(ly.latency_s for ly in layers) + p.invoke_s
    ev = outside_evidence(target, report.graph, layers, latency)
    if ev is not None and ev.share >= OUTSIDE_SHARE:
        all_notes.append(_outside_note(target, ev, latency))
    per_channel: dict[str, int] = {}
    for _k, w in works:
        if w.per_channel and p.per_channel_slowdown.get(w.unit, 1.0) != 1.0:
            per_channel[w.unit] = per_channel.get(w.unit, 0) + 1
    for unit, n in per_channel.items():
        all_notes.append(
            f"{n} kernel(s) with per-channel weights on {unit}: their compute x"
            f"{p.per_channel_slowdown[unit]:.3g} (units.{unit}.per_channel_slowdown)"
        )
    all_notes.extend(_per_channel_pass_notes(target, report.graph, works, p))
    unknown = [ly.name for ly in layers if ly.bound == "unknown"]
    if unknown:
        all_notes.append(
            f"{len(unknown)} layer(s) have no known arithmetic (no cost rule or unknown shapes); "
            "only their memory traffic and overhead are counted"
        )
    if report.graph.subgraphs:
        all_notes.append(
            "loop / branch bodies are costed through their calling op's arithmetic only"
        )
    permutes = [x for _k, w in works for x in w.permutes]
    if permutes:
        secs = sum(ly.layout_s for ly in layers)
        elems = sum(x.ops for x in permutes)
        all_notes.append(
            f"layout: the runtime inserts {len(permutes)} permute(s) between channels-last "
            f"and channels-first maps ({elems:.0f} elements), {secs * 1e3:.3g} ms, in the "
            "latency of the layers that need them (layout_s; infercast.estimate.layout)"
        )
    nfused = sum(1 for ly in layers if ly.bound == "fused")
    if nfused:
        all_notes.append(
            f"{nfused} op(s) fused into the preceding conv / FC kernel and costed with it"
        )
    return Forecast(
        target=target,
        model=model,
        layers=tuple(layers),
        works=tuple(works),
        params=p,
        placement=report,
        notes=tuple(all_notes),
        outside=ev,
    )
