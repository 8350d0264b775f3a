"""The target description: dataclasses, and validation of a resolved TOML table.

A target file (``targets/data/<name>.toml`` or a user's own file) states the
device's compute units with their peak ops/s per dtype, its memories, which
ops its accelerator runs and under which constraints, the processor that takes
the rest, and what a switch between processors costs. Units are in key names:
``*_ops_per_s`` counts operations, where one MAC is 2 ops (DESIGN.md);
``*_bytes``, ``*_bytes_per_s``, ``*_s``, ``*_hz``.

:func:`build_target` checks every key and value and raises :class:`TargetError`
naming the file and the dotted key ("k210-kpu.toml: memories.kpu_ram.size_bytes
must be a positive integer, got '2MB'").
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from infercast.errors import InfercastError
from infercast.targets.constraints import REGISTRY, check_param, param_type_name


class TargetError(InfercastError):
    """A target name is unknown, or a target file is malformed."""


PEAK_KEY = re.compile(r"^peak_(int4|int8|int16|fp16|bf16|fp32)_ops_per_s$")
UNIT_KINDS = ("cpu", "gpu", "npu", "tpu", "kpu", "dsp")
HOLDS = ("weights", "accelerator_weights", "activations", "layer_io")
EFFICIENCY_KEYS = (
    "default",
    "conv",
    "depthwise_conv",
    "depthwise_conv_large",  # more than 25 taps (7x7 ...): falls back to depthwise_conv
    "pointwise_conv",  # 1x1 / stride-1 / one-group conv (a plain GEMM): falls back to conv
    "linalg",
    "elementwise",
    "pool",
    "movement",
    "normalization",
    "recurrent",
    "detection",
)
ON_FAIL = ("cpu", "partial", "note")
CHECK_KEYS = ("check", "on_fail", "rewrite", "unit")


@dataclass(frozen=True)
class ComputeUnit:
    """A processor: peak throughput per dtype (ops/s, 1 MAC = 2 ops) and efficiencies."""

    name: str
    kind: str
    description: str
    clock_hz: float | None
    cores: int
    macs_per_cycle: int | None
    peak_ops_per_s: Mapping[str, float]
    efficiency: Mapping[str, float]
    op_overhead_s: float
    channel_multiple: int = 1
    """Channels are processed in groups of this many (SIMD lanes, MAC-array columns): a
    conv / FC with C channels costs as if it had C rounded up to a multiple (the forecast)."""
    efficient_width_px: int = 0
    """Line width of a unit that lays feature maps out in fixed lines (the K210 KPU: 64 px):
    narrow rows share a line with other channels' rows, wide ones take several lines, and
    the compute runs over the lines' pixel slots (nncase's ``get_kpu_row_layout``); 0: none."""
    reduction_half_depth: float = 0.0
    """A conv / FC whose dot products are K long (input channels per group x kernel taps)
    runs at K / (K + this) of the efficiency (short dot products leave a GEMM kernel's
    accumulators idle); 0: no such effect."""
    window_taps: int = 0
    """A unit whose MAC array computes a fixed kernel window per pixel (the K210 KPU: 3x3 =
    9 taps) runs a conv with fewer taps as if it had this many (a 1x1 conv uses one of
    nine); 0: no such effect."""
    thread_efficiency: float = 0.0
    """CPU units: each thread beyond the first adds this fraction of one thread's speed to the
    kernels the runtime parallelises; 0: not stated (the forecast assumes 0.8)."""
    broadcast_read_factor: float = 0.0
    """An element-wise op whose other operand is a constant smaller than its output (a
    per-channel scale) reads that constant again for every output element, this many
    times its element size (Arm Vela charges Ethos-U such reads from flash per output
    element); 0: the constant is read once."""
    ifm_refetch_depth: int = 0
    """A conv / FC reads its whole input feature map again for every block of this many
    output channels (Arm Vela's Ethos-U model: IFM reads = IFM block x OFM blocks, depth
    included); 0: the input is read once."""
    thread_sync_s: float = 0.0
    """CPU units: what splitting one kernel across threads costs (waking the pool, the
    barrier at its end), once per parallel kernel when threads > 1."""
    per_channel_slowdown: float = 1.0
    """Compute time of weights quantised per channel over per-tensor ones (1: no effect)."""
    cache_bytes: int = 0
    """CPU units: the core's own cache (L2). A kernel whose bytes (activations in and out,
    weights) exceed it moves the excess from the next level at ``spill_bandwidth_bytes_per_s``,
    a stall on top of the kernel's time; 0: no such effect."""
    spill_bandwidth_bytes_per_s: float = 0.0
    """Bandwidth of the bytes beyond ``cache_bytes`` (calibration fits it); 0: no effect."""
    gemm_block_rows: int = 0
    """CPU units: rows of the output (pixels of a conv, rows of an FC) a GEMM micro-kernel
    computes per pass over the packed weights. Weights larger than ``cache_bytes`` are
    streamed again from the next level once per such block of rows (XNNPACK: its micro-kernel
    tile ``mr``); 0: weights are read once."""

    def peak(self, dtype: str) -> float | None:
        """Peak ops/s for ``dtype`` (``int8``, ``fp16``, ``fp32``, …), None if not stated."""
        return self.peak_ops_per_s.get(dtype)


@dataclass(frozen=True)
class Memory:
    name: str
    description: str
    size_bytes: int
    bandwidth_bytes_per_s: float
    holds: tuple[str, ...]
    on_overflow: str
    """``fail``: the model does not fit; ``stream``: the excess is streamed from host memory."""
    efficiency: float = 1.0
    """The fraction of ``bandwidth_bytes_per_s`` the accelerator's transfers achieve (bursts,
    re-reads); 1 when absent."""
    burst_bytes: int = 0
    """Longest burst the accelerator issues to this memory (Arm Vela's ``<Mem>_burst_length``
    in vela.ini): a read narrower than this still costs a whole burst; 0: not modelled."""
    port: int = 0
    """The bus port the accelerator reaches this memory through: transfers to memories on
    different ports overlap (Arm Vela: vela.ini ``axi0_port`` / ``axi1_port``, each op's
    cycles the maximum over its memories' access cycles); on one port they add up."""
    caches: tuple[str, ...] = ()
    """Kinds (``activations``) this memory caches without being a capacity limit: a kernel
    whose feature maps and weights fit in ``size_bytes`` reads and writes them here (Vela's
    Dedicated_Sram arena cache)."""


@dataclass(frozen=True)
class Check:
    """One constraint applied to an op, with its parameters from the target file."""

    name: str
    params: Mapping[str, Any]
    on_fail: str = "cpu"
    rewrite: str = ""
    unit: str = ""


@dataclass(frozen=True)
class OpRule:
    checks: tuple[Check, ...] = ()
    skip_generic: tuple[str, ...] = ()


@dataclass(frozen=True)
class Support:
    ops: tuple[str, ...]
    """Op names the accelerator runs (``*`` = every op); names per ``op_names``."""
    known_unsupported: tuple[str, ...]
    generic: tuple[Check, ...]
    rules: Mapping[str, OpRule]

    @property
    def all_ops(self) -> bool:
        return "*" in self.ops


@dataclass(frozen=True)
class Placement:
    accelerator: str | None
    fallback: str
    segments: str
    """``multi``: every supported run is its own accelerator segment; ``single``: one only."""
    op_names: str
    """``canonical`` (infercast's op names) or ``tflite`` (TFLite builtin names)."""


@dataclass(frozen=True)
class Crossing:
    """Cost of moving a tensor between the accelerator and the fallback processor."""

    fixed_s: float
    bytes_per_s: float

    def seconds(self, nbytes: int) -> float:
        return self.fixed_s + nbytes / self.bytes_per_s


@dataclass(frozen=True)
class Calibration:
    calibrated: bool
    source: str
    date: str
    runtime: str = ""
    """Runtime the parameters were fitted for (``ort``, ``litert``, ``profile``)."""
    threads: int = 0
    """Threads the runtime ran with when measured (0: not stated)."""
    invoke_overhead_s: float = 0.0
    """Fixed cost of one inference call (runtime entry, input/output copies), seconds."""
    samples: int = 0
    """Number of measured micro-kernels (or profiled ops) the fit used."""
    fit_rmspe: float = 0.0
    """Root-mean-square percentage error of the fit on its own samples (a fraction)."""
    rows: tuple[str, ...] = ()
    """Published rows (``row_id``) or latency files the whole-model fit used."""
    parameters: tuple[str, ...] = ()
    """Dotted keys a whole-model fit may vary (``units.npu.efficiency.conv`` ...)."""
    loo_median_abs_error: float = 0.0
    """Median |error| of leave-one-out forecasts of ``rows`` (a fraction)."""
    loo_worst_ratio: float = 0.0
    """Worst leave-one-out forecast / measured ratio, folded >= 1 (0: not computed)."""
    values_from: str = ""
    """A built-in target whose fitted values this one reads first (its own ``values`` then
    override them): two delegates of one NPU share the NPU's fitted numbers."""
    values: Mapping[str, float] = field(default_factory=dict)
    """Fitted values by dotted key (``"units.npu.efficiency.conv" = 0.31``); the forecast
    reads them over the tables' stated values, which stay as the fit's prior."""


@dataclass(frozen=True)
class Target:
    name: str
    description: str
    path: str
    chain: tuple[str, ...]
    """Files this target was resolved from, the target's own first."""
    units: Mapping[str, ComputeUnit]
    memories: Mapping[str, Memory]
    placement: Placement
    support: Support
    crossing: Crossing
    graph_compile_s: float
    quantize_float_to: str
    calibration: Calibration
    uncertain: tuple[str, ...]
    sources: tuple[str, ...]
    abstract: bool = False
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)
    """The resolved TOML table (what ``infercast targets show`` prints)."""
    graph_compile_s_per_weight_byte: float = 0.0
    """First-run compile seconds per byte of weights placed on the accelerator, over
    ``graph_compile_s`` (a compiler that re-lays out and compresses every weight)."""

    @property
    def accelerator(self) -> ComputeUnit | None:
        a = self.placement.accelerator
        return self.units[a] if a else None

    @property
    def fallback(self) -> ComputeUnit:
        return self.units[self.placement.fallback]


# --------------------------------------------------------------------------- #
# Validation
# --------------------------------------------------------------------------- #


class _Errors:
    def __init__(self, file: str) -> None:
        self.file = file
        self.items: list[str] = []

    def add(self, key: str, problem: str) -> None:
        self.items.append(f"{key} {problem}" if key else problem)

    def raise_if_any(self) -> None:
        if self.items:
            shown = "; ".join(self.items[:6])
            more = f" (+{len(self.items) - 6} more)" if len(self.items) > 6 else ""
            raise TargetError(
                f"{self.file}: {shown}{more}",
                "fix the target file; `infercast targets show NAME` prints a valid one",
            )


def _show(v: Any) -> str:
    return repr(v) if isinstance(v, str) else str(v)


def _unknown(
    errs: _Errors, table: Mapping[str, Any], prefix: str, allowed: tuple[str, ...]
) -> None:
    for k in table:
        if k not in allowed:
            close = difflib.get_close_matches(k, allowed, n=1)
            hint = (
                f" (did you mean '{close[0]}'?)" if close else f" (allowed: {', '.join(allowed)})"
            )
            errs.add(f"{prefix}{k}", f"is not a known key{hint}")


def _table(errs: _Errors, raw: Mapping[str, Any], key: str, prefix: str = "") -> Mapping[str, Any]:
    v = raw.get(key, {})
    if not isinstance(v, dict):
        errs.add(f"{prefix}{key}", f"must be a table, got {_show(v)}")
        return {}
    return v


def _str(
    errs: _Errors,
    t: Mapping[str, Any],
    key: str,
    dotted: str,
    default: str | None = None,
    choices: tuple[str, ...] | None = None,
) -> str:
    if key not in t:
        if default is None:
            errs.add(dotted, "is required")
            return ""
        return default
    v = t[key]
    if not isinstance(v, str):
        errs.add(dotted, f"must be a string, got {_show(v)}")
        return default or ""
    if choices is not None and v not in choices:
        errs.add(dotted, f"must be one of {', '.join(choices)}, got {_show(v)}")
    return v


def _pos_float(
    errs: _Errors,
    t: Mapping[str, Any],
    key: str,
    dotted: str,
    default: float | None = None,
    allow_zero: bool = False,
) -> float:
    if key not in t:
        if default is None:
            errs.add(dotted, "is required")
            return 0.0
        return default
    v = t[key]
    ok = (
        isinstance(v, int | float) and not isinstance(v, bool) and (v >= 0 if allow_zero else v > 0)
    )
    if not ok:
        what = "a non-negative number" if allow_zero else "a positive number"
        errs.add(dotted, f"must be {what}, got {_show(v)}")
        return default or 0.0
    return float(v)


def _pos_int(
    errs: _Errors, t: Mapping[str, Any], key: str, dotted: str, default: int | None = None
) -> int:
    if key not in t:
        if default is None:
            errs.add(dotted, "is required")
            return 0
        return default
    v = t[key]
    if not (isinstance(v, int) and not isinstance(v, bool) and v > 0):
        errs.add(dotted, f"must be a positive integer, got {_show(v)}")
        return default or 0
    return int(v)


def _count(errs: _Errors, t: Mapping[str, Any], key: str, dotted: str) -> int:
    """A non-negative integer (0 when absent)."""
    v = t.get(key, 0)
    if not (isinstance(v, int) and not isinstance(v, bool) and v >= 0):
        errs.add(dotted, f"must be a non-negative integer, got {_show(v)}")
        return 0
    return int(v)


def _str_list(
    errs: _Errors,
    t: Mapping[str, Any],
    key: str,
    dotted: str,
    choices: tuple[str, ...] | None = None,
) -> tuple[str, ...]:
    v = t.get(key, [])
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        errs.add(dotted, f"must be a list of strings, got {_show(v)}")
        return ()
    if choices is not None:
        for x in v:
            if x not in choices:
                errs.add(dotted, f"has {_show(x)}; allowed: {', '.join(choices)}")
    return tuple(v)


def _unit(errs: _Errors, name: str, t: Mapping[str, Any]) -> ComputeUnit:
    p = f"units.{name}."
    allowed = (
        "kind",
        "description",
        "clock_hz",
        "cores",
        "macs_per_cycle",
        "op_overhead_s",
        "efficiency",
        "channel_multiple",
        "efficient_width_px",
        "reduction_half_depth",
        "thread_efficiency",
        "per_channel_slowdown",
        "window_taps",
        "thread_sync_s",
        "broadcast_read_factor",
        "ifm_refetch_depth",
        "cache_bytes",
        "spill_bandwidth_bytes_per_s",
        "gemm_block_rows",
    )
    for k in t:
        if k not in allowed and not PEAK_KEY.match(k):
            close = difflib.get_close_matches(
                k, [*allowed, "peak_int8_ops_per_s", "peak_fp32_ops_per_s"], n=1
            )
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            errs.add(
                p + k,
                f"is not a known key{hint}; peak keys are "
                "peak_<int8|int16|fp16|bf16|fp32>_ops_per_s",
            )
    peaks = {}
    for k in t:
        m = PEAK_KEY.match(k)
        if m:
            peaks[m.group(1)] = _pos_float(errs, t, k, p + k)
    if not peaks:
        errs.add(p + "peak_<dtype>_ops_per_s", "is required (at least one dtype)")
    eff_t = _table(errs, t, "efficiency", p)
    _unknown(errs, eff_t, p + "efficiency.", EFFICIENCY_KEYS)
    eff = {}
    for k, v in eff_t.items():
        if not (isinstance(v, int | float) and not isinstance(v, bool) and 0 < v <= 1):
            errs.add(f"{p}efficiency.{k}", f"must be a fraction in (0, 1], got {_show(v)}")
        else:
            eff[k] = float(v)
    mpc = t.get("macs_per_cycle")
    return ComputeUnit(
        name=name,
        kind=_str(errs, t, "kind", p + "kind", choices=UNIT_KINDS),
        description=_str(errs, t, "description", p + "description", default=""),
        clock_hz=_pos_float(errs, t, "clock_hz", p + "clock_hz") if "clock_hz" in t else None,
        cores=_pos_int(errs, t, "cores", p + "cores", default=1),
        macs_per_cycle=_pos_int(errs, t, "macs_per_cycle", p + "macs_per_cycle")
        if mpc is not None
        else None,
        peak_ops_per_s=peaks,
        efficiency=eff,
        op_overhead_s=_pos_float(
            errs, t, "op_overhead_s", p + "op_overhead_s", 0.0, allow_zero=True
        ),
        channel_multiple=_pos_int(errs, t, "channel_multiple", p + "channel_multiple", 1),
        efficient_width_px=_count(errs, t, "efficient_width_px", p + "efficient_width_px"),
        reduction_half_depth=_pos_float(
            errs, t, "reduction_half_depth", p + "reduction_half_depth", 0.0, allow_zero=True
        ),
        thread_efficiency=_fraction(errs, t, "thread_efficiency", p + "thread_efficiency"),
        window_taps=_count(errs, t, "window_taps", p + "window_taps"),
        broadcast_read_factor=_pos_float(
            errs, t, "broadcast_read_factor", p + "broadcast_read_factor", 0.0, allow_zero=True
        ),
        thread_sync_s=_pos_float(
            errs, t, "thread_sync_s", p + "thread_sync_s", 0.0, allow_zero=True
        ),
        ifm_refetch_depth=_count(errs, t, "ifm_refetch_depth", p + "ifm_refetch_depth"),
        per_channel_slowdown=_pos_float(
            errs, t, "per_channel_slowdown", p + "per_channel_slowdown", 1.0
        ),
        cache_bytes=_count(errs, t, "cache_bytes", p + "cache_bytes"),
        spill_bandwidth_bytes_per_s=_pos_float(
            errs,
            t,
            "spill_bandwidth_bytes_per_s",
            p + "spill_bandwidth_bytes_per_s",
            0.0,
            allow_zero=True,
        ),
        gemm_block_rows=_count(errs, t, "gemm_block_rows", p + "gemm_block_rows"),
    )


def _number_table(errs: _Errors, t: Mapping[str, Any], key: str, dotted: str) -> dict[str, float]:
    """A table of positive numbers (empty when absent)."""
    out: dict[str, float] = {}
    for k, v in _table(errs, t, key).items():
        if isinstance(v, int | float) and not isinstance(v, bool) and v > 0:
            out[k] = float(v)
        else:
            errs.add(f"{dotted}.{k}", f"must be a positive number, got {_show(v)}")
    return out


def _fraction(errs: _Errors, t: Mapping[str, Any], key: str, dotted: str) -> float:
    """A number in [0, 1] (0 when absent)."""
    v = t.get(key, 0.0)
    if not (isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v <= 1):
        errs.add(dotted, f"must be a fraction in [0, 1], got {_show(v)}")
        return 0.0
    return float(v)


def _memory(errs: _Errors, name: str, t: Mapping[str, Any]) -> Memory:
    p = f"memories.{name}."
    _unknown(
        errs,
        t,
        p,
        (
            "description",
            "size_bytes",
            "bandwidth_bytes_per_s",
            "holds",
            "on_overflow",
            "efficiency",
            "burst_bytes",
            "port",
            "caches",
        ),
    )
    efficiency = _fraction(errs, t, "efficiency", p + "efficiency") if "efficiency" in t else 1.0
    if "efficiency" in t and efficiency == 0:
        errs.add(p + "efficiency", "must be above 0")
    return Memory(
        name=name,
        description=_str(errs, t, "description", p + "description", default=""),
        size_bytes=_pos_int(errs, t, "size_bytes", p + "size_bytes"),
        bandwidth_bytes_per_s=_pos_float(
            errs, t, "bandwidth_bytes_per_s", p + "bandwidth_bytes_per_s"
        ),
        holds=_str_list(errs, t, "holds", p + "holds", HOLDS),
        on_overflow=_str(
            errs, t, "on_overflow", p + "on_overflow", default="fail", choices=("fail", "stream")
        ),
        efficiency=efficiency or 1.0,
        burst_bytes=_count(errs, t, "burst_bytes", p + "burst_bytes"),
        port=_count(errs, t, "port", p + "port"),
        caches=_str_list(errs, t, "caches", p + "caches", ("activations",)),
    )


def _check(errs: _Errors, t: Any, dotted: str, units: Mapping[str, Any]) -> Check | None:
    if not isinstance(t, dict):
        errs.add(
            dotted, f'must be a table like {{check = "stride_in", lo = 1, hi = 3}}, got {_show(t)}'
        )
        return None
    name = t.get("check")
    if not isinstance(name, str):
        errs.add(dotted + ".check", "is required (the name of a constraint)")
        return None
    c = REGISTRY.get(name)
    if c is None:
        close = difflib.get_close_matches(name, list(REGISTRY), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        errs.add(dotted + ".check", f"names no known constraint: {_show(name)}{hint}")
        return None
    params = {k: v for k, v in t.items() if k not in CHECK_KEYS}
    for k in params:
        if k not in c.params:
            allowed = ", ".join(c.params) or "none"
            errs.add(f"{dotted}.{k}", f"is not a parameter of {name} (parameters: {allowed})")
    for k, tp in c.params.items():
        if k not in params:
            errs.add(f"{dotted}.{k}", f"is required by {name} ({param_type_name(tp)})")
        elif not check_param(tp, params[k]):
            errs.add(f"{dotted}.{k}", f"must be {param_type_name(tp)}, got {_show(params[k])}")
    on_fail = _str(errs, t, "on_fail", dotted + ".on_fail", default="cpu", choices=ON_FAIL)
    rewrite = _str(errs, t, "rewrite", dotted + ".rewrite", default="")
    if on_fail == "partial" and not rewrite:
        errs.add(
            dotted + ".rewrite",
            'is required when on_fail = "partial" (what the compiler turns the op into)',
        )
    unit = _str(errs, t, "unit", dotted + ".unit", default="")
    if unit and unit not in units:
        errs.add(
            dotted + ".unit",
            f"names no unit of this target: {_show(unit)} (units: {', '.join(units)})",
        )
    return Check(name, params, on_fail, rewrite, unit)


def _checks(errs: _Errors, v: Any, dotted: str, units: Mapping[str, Any]) -> tuple[Check, ...]:
    if not isinstance(v, list):
        errs.add(dotted, f"must be a list of check tables, got {_show(v)}")
        return ()
    out = []
    for i, item in enumerate(v):
        c = _check(errs, item, f"{dotted}[{i}]", units)
        if c is not None:
            out.append(c)
    return tuple(out)


def _lookup(raw: Mapping[str, Any], dotted: str) -> bool:
    cur: Any = raw
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return False
        cur = cur[part]
    return True


CALIBRATION_KEYS = (
    "calibrated",
    "source",
    "date",
    "runtime",
    "threads",
    "invoke_overhead_s",
    "samples",
    "fit_rmspe",
    "rows",
    "parameters",
    "loo_median_abs_error",
    "loo_worst_ratio",
    "values",
    "values_from",
)

TOP_KEYS = (
    "name",
    "description",
    "abstract",
    "sources",
    "uncertain",
    "calibration",
    "units",
    "memories",
    "placement",
    "support",
    "crossing",
    "one_time",
    "compile",
    "detect",
    "toolchain",
)


def build_target(raw: Mapping[str, Any], file: str, path: str, chain: tuple[str, ...]) -> Target:
    """Validate a resolved (``extends`` already merged) table and build the :class:`Target`."""
    errs = _Errors(file)
    _unknown(errs, raw, "", TOP_KEYS)
    name = _str(errs, raw, "name", "name")
    abstract = bool(raw.get("abstract", False))
    if "abstract" in raw and not isinstance(raw["abstract"], bool):
        errs.add("abstract", f"must be true or false, got {_show(raw['abstract'])}")

    units_t = _table(errs, raw, "units")
    units = {}
    for uname, ut in units_t.items():
        if not isinstance(ut, dict):
            errs.add(f"units.{uname}", f"must be a table, got {_show(ut)}")
            continue
        units[uname] = _unit(errs, uname, ut)
    if not units and not abstract:
        errs.add("units", "must define at least one compute unit")

    mem_t = _table(errs, raw, "memories")
    memories = {}
    for mname, mt in mem_t.items():
        if not isinstance(mt, dict):
            errs.add(f"memories.{mname}", f"must be a table, got {_show(mt)}")
            continue
        memories[mname] = _memory(errs, mname, mt)

    pl_t = _table(errs, raw, "placement")
    _unknown(errs, pl_t, "placement.", ("accelerator", "fallback", "segments", "op_names"))
    accel = pl_t.get("accelerator")
    if accel is not None and (not isinstance(accel, str) or (units and accel not in units)):
        errs.add(
            "placement.accelerator",
            f"must name a unit of this target ({', '.join(units)}), got {_show(accel)}",
        )
        accel = None
    fallback = _str(errs, pl_t, "fallback", "placement.fallback", default="" if abstract else None)
    if fallback and units and fallback not in units:
        errs.add(
            "placement.fallback",
            f"must name a unit of this target ({', '.join(units)}), got {_show(fallback)}",
        )
    placement = Placement(
        accelerator=accel,
        fallback=fallback,
        segments=_str(
            errs,
            pl_t,
            "segments",
            "placement.segments",
            default="multi",
            choices=("multi", "single"),
        ),
        op_names=_str(
            errs,
            pl_t,
            "op_names",
            "placement.op_names",
            default="canonical",
            choices=("canonical", "tflite"),
        ),
    )

    sup_t = _table(errs, raw, "support")
    _unknown(errs, sup_t, "support.", ("ops", "known_unsupported", "generic", "rules"))
    rules_t = _table(errs, sup_t, "rules", "support.")
    rules = {}
    for op, rt in rules_t.items():
        p = f"support.rules.{op}"
        if not isinstance(rt, dict):
            errs.add(p, f"must be a table, got {_show(rt)}")
            continue
        _unknown(errs, rt, p + ".", ("checks", "skip_generic"))
        skip = _str_list(errs, rt, "skip_generic", p + ".skip_generic", tuple(REGISTRY))
        rules[op] = OpRule(_checks(errs, rt.get("checks", []), p + ".checks", units), skip)
    ops = _str_list(errs, sup_t, "ops", "support.ops")
    for op in rules:
        if ops and "*" not in ops and op not in ops:
            errs.add(f"support.rules.{op}", "has rules but the op is not in support.ops")
    support = Support(
        ops=ops,
        known_unsupported=_str_list(errs, sup_t, "known_unsupported", "support.known_unsupported"),
        generic=_checks(errs, sup_t.get("generic", []), "support.generic", units),
        rules=rules,
    )
    if accel and not ops:
        errs.add("support.ops", "is required when placement.accelerator is set")

    cr_t = _table(errs, raw, "crossing")
    _unknown(errs, cr_t, "crossing.", ("fixed_s", "bytes_per_s"))
    crossing = Crossing(
        fixed_s=_pos_float(errs, cr_t, "fixed_s", "crossing.fixed_s", 0.0, allow_zero=True),
        bytes_per_s=_pos_float(errs, cr_t, "bytes_per_s", "crossing.bytes_per_s", 1e12),
    )
    ot_t = _table(errs, raw, "one_time")
    _unknown(errs, ot_t, "one_time.", ("graph_compile_s", "graph_compile_s_per_weight_byte"))
    comp_t = _table(errs, raw, "compile")
    _unknown(errs, comp_t, "compile.", ("quantize_float_to",))
    cal_t = _table(errs, raw, "calibration")
    _unknown(errs, cal_t, "calibration.", CALIBRATION_KEYS)
    if "calibrated" in cal_t and not isinstance(cal_t["calibrated"], bool):
        errs.add(
            "calibration.calibrated", f"must be true or false, got {_show(cal_t['calibrated'])}"
        )

    if "detect" in raw and not isinstance(raw["detect"], bool):
        errs.add("detect", f"must be true or false, got {_show(raw['detect'])}")
    tool_t = _table(errs, raw, "toolchain")
    for k, v in tool_t.items():
        if not isinstance(v, str):
            errs.add(f"toolchain.{k}", f"must be a string, got {_show(v)}")
    uncertain = _str_list(errs, raw, "uncertain", "uncertain")
    for key in uncertain:
        if not _lookup(raw, key):
            errs.add("uncertain", f"lists {_show(key)}, which is not a key of this target")
    calibration = Calibration(
        calibrated=bool(cal_t.get("calibrated", False)),
        source=str(cal_t.get("source", "")),
        date=str(cal_t.get("date", "")),
        runtime=_str(errs, cal_t, "runtime", "calibration.runtime", default=""),
        threads=_count(errs, cal_t, "threads", "calibration.threads"),
        invoke_overhead_s=_pos_float(
            errs, cal_t, "invoke_overhead_s", "calibration.invoke_overhead_s", 0.0, allow_zero=True
        ),
        samples=_count(errs, cal_t, "samples", "calibration.samples"),
        fit_rmspe=_pos_float(
            errs, cal_t, "fit_rmspe", "calibration.fit_rmspe", 0.0, allow_zero=True
        ),
        rows=_str_list(errs, cal_t, "rows", "calibration.rows"),
        parameters=_str_list(errs, cal_t, "parameters", "calibration.parameters"),
        loo_median_abs_error=_pos_float(
            errs,
            cal_t,
            "loo_median_abs_error",
            "calibration.loo_median_abs_error",
            0.0,
            allow_zero=True,
        ),
        loo_worst_ratio=_pos_float(
            errs, cal_t, "loo_worst_ratio", "calibration.loo_worst_ratio", 0.0, allow_zero=True
        ),
        values=_number_table(errs, cal_t, "values", "calibration.values"),
        values_from=_str(errs, cal_t, "values_from", "calibration.values_from", default=""),
    )
    errs.raise_if_any()
    return Target(
        name=name,
        description=str(raw.get("description", "")),
        path=path,
        chain=chain,
        units=units,
        memories=memories,
        placement=placement,
        support=support,
        crossing=crossing,
        graph_compile_s=_pos_float(
            errs, ot_t, "graph_compile_s", "one_time.graph_compile_s", 0.0, allow_zero=True
        ),
        graph_compile_s_per_weight_byte=_pos_float(
            errs,
            ot_t,
            "graph_compile_s_per_weight_byte",
            "one_time.graph_compile_s_per_weight_byte",
            0.0,
            allow_zero=True,
        ),
        quantize_float_to=_str(
            errs,
            comp_t,
            "quantize_float_to",
            "compile.quantize_float_to",
            default="none",
            choices=("none", "uint8", "int8"),
        ),
        calibration=calibration,
        uncertain=uncertain,
        sources=_str_list(errs, raw, "sources", "sources"),
        abstract=abstract,
        raw=raw,
    )
