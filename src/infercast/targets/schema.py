"""The target description: dataclasses whose field types are the file's schema.

A target file (``targets/data/<name>.toml`` or a user's own file) states the
device's compute units with their peak ops/s per dtype, its memories, which
ops its accelerator runs and under which constraints, the processor that takes
the rest, and what a switch between processors costs. Units are in key names:
``*_ops_per_s`` counts operations, where one MAC is 2 ops (DESIGN.md);
``*_bytes``, ``*_bytes_per_s``, ``*_s``, ``*_hz``.

Every key of a table is a field of a dataclass below, and its type says what
the file may hold there (:mod:`infercast.targets.validate` reads them): adding
a key is adding one field, e.g. ``warmup_s: Seconds = 0.0``. The numeric types
carry their range (:class:`Bound`): rates are finite and at least 1, times and
counts are not negative, efficiencies are fractions. :func:`build_target`
checks the whole resolved table at once and raises one :class:`TargetError`
listing every problem with the file and the dotted key ("k210-kpu.toml:
memories.kpu_ram.size_bytes must be a positive integer, got '2MB'; ...").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, get_args

from infercast.errors import InfercastError


class TargetError(InfercastError):
    """A target name is unknown, or a target file is malformed."""

    def __init__(self, message: str, hint: str = "", problems: tuple[str, ...] = ()) -> None:
        super().__init__(message, hint)
        self.problems = problems
        """Every problem found (the message shows the first ones)."""


@dataclass(frozen=True)
class Bound:
    """The range a number of a target file must lie in.

    ``what`` is said when the value is of the wrong type or sign; ``lo`` / ``hi``
    keep figures in a range where the forecast's arithmetic stays finite (a peak
    of 5e-324 ops/s or 1e308 bytes/s is no device, and overflows downstream).
    """

    what: str
    positive: bool
    """True: the value must be > 0; False: >= 0."""
    lo: float
    hi: float
    integer: bool = False


_INT_MAX = 10**15

Rate = Annotated[float, Bound("a positive number", True, 1.0, 1e21)]
"""Ops/s, bytes/s, Hz."""
Seconds = Annotated[float, Bound("a non-negative number", False, 0.0, 1e6)]
Fraction = Annotated[float, Bound("a fraction in (0, 1]", True, 1e-6, 1.0)]
Ratio = Annotated[float, Bound("a non-negative number", False, 0.0, 1e9)]
RateOrZero = Annotated[float, Bound("a non-negative number", False, 0.0, 1e21)]
"""Bytes/s where 0 means 'no such effect'."""
UnitInterval = Annotated[float, Bound("a fraction in [0, 1]", False, 0.0, 1.0)]
Factor = Annotated[float, Bound("a positive number", True, 1e-6, 1e6)]
"""A multiplier of a time or a rate (1: no effect)."""
Positive = Annotated[float, Bound("a positive number", True, 1e-15, 1e21)]
PositiveInt = Annotated[int, Bound("a positive integer", True, 1, _INT_MAX, integer=True)]
Count = Annotated[int, Bound("a non-negative integer", False, 0, _INT_MAX, integer=True)]

FROM_KEY = {"from_key": True}
"""Field metadata: the value is the key of the table in its parent (a unit's name)."""
DERIVED = {"derived": True}
"""Field metadata: not read from the file (set by the loader)."""

PEAK_KEY = re.compile(r"^peak_(int4|int8|int16|fp16|bf16|fp32)_ops_per_s$")
UnitKind = Literal["cpu", "gpu", "npu", "tpu", "kpu", "dsp"]
UNIT_KINDS: tuple[str, ...] = get_args(UnitKind)
Holds = Literal["weights", "accelerator_weights", "activations", "layer_io"]
HOLDS: tuple[str, ...] = get_args(Holds)
EfficiencyKey = Literal[
    "default",
    "conv",
    "depthwise_conv",
    "depthwise_conv_large",  # more than 25 taps (7x7 ...): falls back to depthwise_conv
    "pointwise_conv",  # 1x1 / stride-1 / one-group conv (a plain GEMM): falls back to conv
    "linalg",
    "elementwise",
    "serial_elementwise",  # an element-wise op in the unit's serial_ops: falls back to elementwise
    "elementwise_cycles",  # an element-wise op at Vela 3.7's cycles (vela_fork): else default
    "pool",
    "movement",
    "resample",  # resize / grid sample: falls back to movement
    "normalization",
    "recurrent",
    "detection",
]
EFFICIENCY_KEYS: tuple[str, ...] = get_args(EfficiencyKey)
OnFail = Literal["cpu", "partial", "note"]
ON_FAIL: tuple[str, ...] = get_args(OnFail)


@dataclass(frozen=True, kw_only=True)
class ComputeUnit:
    """A processor: peak throughput per dtype (ops/s, 1 MAC = 2 ops) and efficiencies."""

    name: str = field(metadata=FROM_KEY)
    kind: UnitKind
    description: str = ""
    clock_hz: Rate | None = None
    cores: PositiveInt = 1
    macs_per_cycle: PositiveInt | None = None
    peak_ops_per_s: Mapping[str, Rate] = field(
        default_factory=dict,
        metadata={"pattern": PEAK_KEY, "keys": "peak_<int8|int16|fp16|bf16|fp32>_ops_per_s"},
    )
    efficiency: Mapping[EfficiencyKey, Fraction] = field(default_factory=dict)
    op_overhead_s: Seconds = 0.0
    channel_multiple: PositiveInt = 1
    """Channels are processed in groups of this many (SIMD lanes, MAC-array columns): a
    conv / FC with C channels costs as if it had C rounded up to a multiple (the forecast)."""
    efficient_width_px: Count = 0
    """Line width of a unit that lays feature maps out in fixed lines (the K210 KPU: 64 px):
    narrow rows share a line with other channels' rows, wide ones take several lines, and
    the compute runs over the lines' pixel slots (nncase's ``get_kpu_row_layout``); 0: none."""
    nn_tile_width_px: Count = 0
    """VeriSilicon NN core: output tiles at most this many pixels wide (Mesa etnaviv_ml_nn.c,
    MAX_TILE_WIDTH = 64), narrow tiles interleaving 2 / 4 / 8 rows by the kernel height
    (calc_interleave_mode): a conv costs as if over the tiles' pixel slots; 0: no such effect."""
    nn_strided_lowering: bool = False
    """VeriSilicon NN core without native strides (Mesa etnaviv_ml_nn.c): a stride-2 depthwise
    or 1x1 conv runs at stride 1 and keeps the first pixel of each 2x2 (4x the MACs), another
    stride-2 conv runs space-to-depth (a ceil(k/2)^2 kernel over 4x the channels)."""
    reduction_half_depth: Ratio = 0.0
    """A conv / FC whose dot products are K long (input channels per group x kernel taps)
    runs at K / (K + this) of the efficiency (short dot products leave a GEMM kernel's
    accumulators idle); 0: no such effect."""
    window_taps: Count = 0
    """A unit whose MAC array computes a fixed kernel window per pixel (the K210 KPU: 3x3 =
    9 taps) runs a conv with fewer taps as if it had this many (a 1x1 conv uses one of
    nine); 0: no such effect."""
    thread_efficiency: UnitInterval = 0.0
    """CPU units: each thread beyond the first adds this fraction of one thread's speed to the
    kernels the runtime parallelises; 0: not stated (the forecast assumes 0.8)."""
    broadcast_read_factor: Ratio = 0.0
    """An element-wise op whose other operand is a constant smaller than its output (a
    per-channel scale) reads that constant again for every output element, this many
    times its element size (Arm Vela charges Ethos-U such reads from flash per output
    element); 0: the constant is read once."""
    ifm_refetch_depth: Count = 0
    """A conv / FC reads its whole input feature map again for every block of this many
    output channels (Arm Vela's Ethos-U model: IFM reads = IFM block x OFM blocks, depth
    included); 0: the input is read once."""
    thread_sync_s: Seconds = 0.0
    """CPU units: what splitting one kernel across threads costs (waking the pool, the
    barrier at its end), once per parallel kernel when threads > 1."""
    per_channel_slowdown: Factor = 1.0
    """Compute time of weights quantised per channel over per-tensor ones (1: no effect)."""
    per_channel_pass_s_per_element: Seconds = 0.0
    """Seconds per output element that a conv with per-channel weights costs beyond its
    per-tensor self: an extra pass over its output (VeriSilicon's OpenVX driver on NN cores
    without per-channel quantisation splits such a conv into a uint8 conv writing float16 and
    a per-channel scale pass, ``vxoGraphOptimization_pcq_splitPerChannel``); 0: no pass."""
    per_channel_requant_gini: tuple[UnitInterval, ...] = ()
    """(conv, depthwise) thresholds of the driver rule that re-quantises a per-channel conv's
    weights per tensor when the Gini coefficient of their magnitudes is at most the threshold
    (VeriSilicon OpenVX driver ``vxoGraphOptimization_pcq``: 0.5 and 0.6); the forecast reports
    how many of a model's layers exceed it. Empty: no such rule."""
    cache_bytes: Count = 0
    """CPU units: the core's own cache (L2). A kernel whose bytes (activations in and out,
    weights) exceed it moves the excess from the next level at ``spill_bandwidth_bytes_per_s``,
    a stall on top of the kernel's time; 0: no such effect."""
    spill_bandwidth_bytes_per_s: RateOrZero = 0.0
    """Bandwidth of the bytes beyond ``cache_bytes`` (calibration fits it); 0: no effect."""
    gemm_block_rows: Count = 0
    """CPU units: rows of the output (pixels of a conv, rows of an FC) a GEMM micro-kernel
    computes per pass over the packed weights. Weights larger than ``cache_bytes`` are
    streamed again from the next level once per such block of rows (XNNPACK: its micro-kernel
    tile ``mr``); 0: weights are read once."""
    serial_ops: tuple[str, ...] = ()
    """CPU units: ops (infercast op names, ``op`` or ``op:dtype`` with a peak dtype key such
    as ``leaky_relu:int8``) the runtime runs outside its thread pool and does not fuse into
    the kernel before them: TFLite built-in kernels the XNNPACK delegate does not take.
    Each is its own kernel, on one thread whatever the thread count; empty: none."""
    im2col_s_per_byte: Seconds = 0.0
    """CPU units running ``int8_kernels = "builtin"``: seconds per byte of the im2col buffer
    TFLite's int8 CONV_2D fills on the calling thread before its GEMM, for every conv but a
    1x1 / stride-1 one (``optimized_integer_ops/conv.h`` ``ConvPerChannel``: ``Im2col`` /
    ``DilatedIm2col``, then ``cpu_backend_gemm::Gemm`` on the thread pool): output pixels x
    input channels x kernel taps bytes, at one thread whatever the thread count; 0: none."""
    memory_stalls: bool = False
    """CPU units: the core waits on a kernel's memory traffic instead of overlapping it with
    the kernel's arithmetic, so a kernel takes ``compute + memory``, not the longer of the
    two. An in-order core (Arm Cortex-A53 / A55: in-order pipelines, Arm's technical
    reference manuals) has no out-of-order window to run arithmetic past a load that
    missed its caches; False: the roofline's overlap (``max(compute, memory)``)."""
    int8_kernels: Literal["xnnpack", "builtin"] = "xnnpack"
    """CPU units: what runs the int8 operators of a TFLite model. ``xnnpack``: XNNPACK's
    int8 operators, each split across the threads (``work.PARALLEL_CLASSES``). ``builtin``:
    TFLite's built-in int8 kernels (a TFLite built without XNNPACK's QS8 operators, as NXP's
    BSPs build it): conv, depthwise conv, fully-connected and transposed conv on the CPU
    back-end's thread pool (ruy's GEMM, the optimized depthwise kernel), every other int8
    operator on one thread, an element-wise one costing what its kernel does per element
    (``work.BUILTIN_INT8_ELEMENT_COST``, in int8 ADD elements) at ``efficiency.elementwise``."""

    isa: Literal["", "armv8.0", "armv8.2-dotprod"] = ""
    """CPU units running ``int8_kernels = "builtin"``: the Arm ISA level of the cores. Where
    stated, a built-in int8 kernel costs the instructions TFLite's aarch64 code executes for
    it (:mod:`infercast.estimate.aarch64`, measured under QEMU for each level) over
    ``instructions_per_cycle`` x ``clock_hz`` (which it needs), not its MACs over the peak;
    ``armv8.2-dotprod``: SDOT / UDOT (Cortex-A55, A76), ``armv8.0``: without (Cortex-A53,
    A72). Empty: the MAC roofline."""
    instructions_per_cycle: Ratio = 0.0
    """CPU units with an ``isa``: instructions a core retires per cycle on TFLite's built-in
    int8 kernels (calibration fits it); 0: not stated (the forecast assumes 1)."""

    def peak(self, dtype: str) -> float | None:
        """Peak ops/s for ``dtype`` (``int8``, ``fp16``, ``fp32``, …), None if not stated."""
        return self.peak_ops_per_s.get(dtype)


@dataclass(frozen=True, kw_only=True)
class Memory:
    name: str = field(metadata=FROM_KEY)
    description: str = ""
    size_bytes: PositiveInt
    bandwidth_bytes_per_s: Rate
    holds: tuple[Holds, ...] = ()
    on_overflow: Literal["fail", "stream"] = "fail"
    """``fail``: the model does not fit; ``stream``: the excess is streamed from host memory."""
    size_varies: bool = False
    """The device (its compiler) sizes this memory per model, so ``size_bytes`` is only a
    typical figure: a forecast of a model filling more than half of it says that the real
    size may be smaller (the Edge TPU's parameter cache). A target file that states the size
    a compiler reported for its model sets it false."""
    layer_io_max_bytes: Count = 0
    """Most of a layer's activations (the ``layer_io`` part: its inputs and outputs) the
    device keeps in this memory; the rest goes to host memory (the Edge TPU compiler keeps
    at most 192 KiB per tile in its 16 tiles, spilling beyond to a host scratch buffer:
    ``_edgetpu.toml``). 0: no limit. On a streaming memory of a stated size
    (``size_varies`` false: the room a compiler reported for weights), ``layer_io`` takes
    no room."""
    efficiency: Fraction = 1.0
    """The fraction of ``bandwidth_bytes_per_s`` the accelerator's transfers achieve (bursts,
    re-reads); 1 when absent."""
    burst_bytes: Count = 0
    """Longest burst the accelerator issues to this memory (Arm Vela's ``<Mem>_burst_length``
    in vela.ini): a read narrower than this still costs a whole burst; 0: not modelled."""
    device_burst_bytes: Count = 0
    """The smallest access the device's own memory serves (an LPDDR4X 16-beat burst on a
    16-bit bus: 32 bytes), where it is smaller than ``burst_bytes``: forecasts charge a
    narrow transfer this many bytes; a comparison with Vela's own estimate keeps Vela's
    ``burst_bytes`` (:func:`infercast.estimate.work.vela_view`). 0: ``burst_bytes``."""
    port: Count = 0
    """The bus port the accelerator reaches this memory through: transfers to memories on
    different ports overlap (Arm Vela: vela.ini ``axi0_port`` / ``axi1_port``, each op's
    cycles the maximum over its memories' access cycles); on one port they add up."""
    caches: tuple[Literal["activations"], ...] = ()
    """Kinds (``activations``) this memory caches without being a capacity limit: a kernel
    whose feature maps and weights fit in ``size_bytes`` reads and writes them here (Vela's
    Dedicated_Sram arena cache)."""


@dataclass(frozen=True)
class Check:
    """One constraint applied to an op, with its parameters from the target file.

    In the file: a table ``{check = "stride_in", lo = 1, hi = 3}`` whose other keys are
    the constraint's parameters (``targets/constraints.py``) and ``on_fail``,
    ``rewrite``, ``unit``; read by :func:`infercast.targets.validate.parse_check`.
    """

    name: str
    params: Mapping[str, Any]
    on_fail: str = "cpu"
    rewrite: str = ""
    unit: str = ""


@dataclass(frozen=True)
class OpRule:
    checks: tuple[Check, ...] = ()
    skip_generic: tuple[str, ...] = ()
    """Generic checks (by constraint name) that do not apply to this op."""


@dataclass(frozen=True)
class Support:
    ops: tuple[str, ...] = ()
    """Op names the accelerator runs (``*`` = every op); names per ``op_names``."""
    known_unsupported: tuple[str, ...] = ()
    generic: tuple[Check, ...] = ()
    rules: Mapping[str, OpRule] = field(default_factory=dict)

    @property
    def all_ops(self) -> bool:
        return "*" in self.ops


@dataclass(frozen=True)
class Placement:
    accelerator: str | None = None
    fallback: str = ""
    segments: Literal["multi", "single"] = "multi"
    """``multi``: every supported run is its own accelerator segment; ``single``: one only."""
    op_names: Literal["canonical", "tflite"] = "canonical"
    """``canonical`` (infercast's op names) or ``tflite`` (TFLite builtin names)."""
    accelerator_fuses_residual: bool = True
    """The accelerator's compiler folds a residual ``add`` of two feature maps into the conv
    before it (one kernel); False: it runs the add as its own operation (Arm Vela on
    Ethos-U: an elementwise NPU operation with its own cycles in ``--verbose-performance``)."""
    accelerator_activations: tuple[str, ...] = ()
    """The standalone activations (infercast op names) the accelerator's compiler merges into
    the conv or fully-connected layer before them; any other stays a kernel of its own on the
    accelerator. Empty: every activation merges (the default). The VeriSilicon NN cores of
    the i.MX 8M Plus merge ReLU, ReLU1 and ReLU6 only: no leaky ReLU or PReLU in the NN job
    on that chip (``_imx8mp-npu.toml``)."""
    channels_first_ops: tuple[str, ...] = ()
    """Ops (infercast names) the accelerator runs on channels-first feature maps, so that
    its runtime permutes a TFLite graph's channels-last input before them
    (:mod:`infercast.estimate.layout`); empty: the runtime inserts no permutes."""
    layout_reset_ops: tuple[str, ...] = ()
    """Ops the runtime's layout pass has no rule for: a channels-first input is permuted
    back to channels-last before them (:mod:`infercast.estimate.layout`)."""
    compiled_op: str = ""
    """The op a model already compiled for this accelerator carries in place of the layers
    the toolchain mapped (the Edge TPU: ``custom:edgetpu-custom-op``). In such a model that
    op runs on the accelerator and every other op where the toolchain left it, the fallback;
    empty: none."""
    gated_activation: Literal["by_format", "fused"] = "by_format"
    """How the runtime runs a gated activation ``x * sigmoid(x)`` (swish / SiLU).
    ``by_format``: one kernel in an ONNX graph (ONNX Runtime's QuickGelu fusion), two in a
    TFLite graph (LOGISTIC and MUL, which the TFLite runtimes and delegates run apart);
    ``fused``: one kernel whatever the file (ncnn: onnx2ncnn's ``fuse_swish`` makes one
    Swish layer)."""


@dataclass(frozen=True)
class Crossing:
    """Cost of moving a tensor between the accelerator and the fallback processor."""

    fixed_s: Seconds = 0.0
    bytes_per_s: Rate = 1e12
    stream_bytes_per_s: RateOrZero = 0.0
    """Sustained rate of the weights a streaming cache cannot hold (``on_overflow =
    "stream"``), sent every inference as one long run of back-to-back transfers that
    overlap the accelerator's work; 0: the link's ``bytes_per_s``."""
    readback_bytes_per_s: RateOrZero = 0.0
    """Rate at which the fallback CPU copies a tensor the accelerator wrote (an accelerator
    -> CPU crossing, a model output included) out of the accelerator's buffer, where that
    differs from the other direction: a driver buffer the CPU maps uncached is written at
    write-combining speed but read a load at a time; 0: ``bytes_per_s``."""

    def seconds(self, nbytes: int) -> float:
        return self.fixed_s + nbytes / self.bytes_per_s


@dataclass(frozen=True)
class OneTime:
    """Costs paid once, before the first inference."""

    graph_compile_s: Seconds = 0.0
    graph_compile_s_per_weight_byte: Seconds = 0.0
    """First-run compile seconds per byte of weights placed on the accelerator, over
    ``graph_compile_s`` (a compiler that re-lays out and compresses every weight)."""


@dataclass(frozen=True)
class Compile:
    """What the target's compiler does to every model."""

    quantize_float_to: Literal["none", "uint8", "int8"] = "none"


@dataclass(frozen=True)
class Calibration:
    calibrated: bool = False
    source: str = ""
    date: str = ""
    runtime: str = ""
    """Runtime the parameters were fitted for (``ort``, ``litert``, ``profile``)."""
    threads: Count = 0
    """Threads the runtime ran with when measured (0: not stated)."""
    invoke_overhead_s: Seconds = 0.0
    """Fixed cost of one inference call (runtime entry, input/output copies), seconds."""
    samples: Count = 0
    """Number of measured micro-kernels (or profiled ops) the fit used."""
    fit_rmspe: Ratio = 0.0
    """Root-mean-square percentage error of the fit on its own samples (a fraction)."""
    rows: tuple[str, ...] = ()
    """Published rows (``row_id``) or latency files the whole-model fit used."""
    parameters: tuple[str, ...] = ()
    """Dotted keys a whole-model fit may vary (``units.npu.efficiency.conv`` ...)."""
    upper_bounds: Mapping[str, Positive] = field(default_factory=dict)
    """The highest value a fitted key may take on this device, by dotted key (a bandwidth
    the device's memory cannot exceed); the fit's range is otherwise ``fit.bounds_of``."""
    loo_median_abs_error: Ratio = 0.0
    """Median |error| of leave-one-out forecasts of ``rows`` (a fraction)."""
    loo_worst_ratio: Ratio = 0.0
    """Worst leave-one-out forecast / measured ratio, folded >= 1 (0: not computed)."""
    values_from: str = ""
    """A built-in target whose fitted values this one reads first (its own ``values`` then
    override them): two delegates of one NPU share the NPU's fitted numbers."""
    paired: bool = False
    """Fit ``parameters`` on pairs (needs ``values_from``): each published row against the
    same measurement (board, model, quantisation, threads, timing, source) on the
    ``values_from`` target, on the difference of the two published figures, so the shared
    model's error on that model cancels; leave-one-out drops the whole pair (the
    ``values_from`` target is refitted without the pair's other row too)."""
    paired_rows: tuple[str, ...] = ()
    """The ``values_from`` target's row paired with each of ``rows`` (``""``: none)."""
    covered: tuple[str, ...] = ()
    """Kernel kinds the fitted rows exercised (generated): ``OP on UNIT`` or ``OP batch>1 on
    UNIT`` (native op of a kernel's first op, its output's batch, the unit that runs it)
    that took at least 5% of some fitted row's forecast. A forecast whose time lies largely
    in other kinds says it is outside the fitted evidence. Empty: not recorded (no such
    note). A ``values_from`` target's kinds count too."""
    outside_rows: Mapping[str, Positive] = field(default_factory=dict)
    """Checked-only published rows of this target whose forecast lies largely outside
    ``covered`` (generated): row id -> published / forecast."""
    values: Mapping[str, Positive] = field(default_factory=dict)
    """Fitted values by dotted key (``"units.npu.efficiency.conv" = 0.31``); the forecast
    reads them over the tables' stated values, which stay as the fit's prior."""


@dataclass(frozen=True, kw_only=True)
class Target:
    name: str
    description: str = ""
    abstract: bool = False
    """A shared base (``_*.toml``): other files extend it; it is not a device."""
    detect: bool = False
    """Fill the CPU and memory figures from this machine (the ``host`` target)."""
    sources: tuple[str, ...] = ()
    uncertain: tuple[str, ...] = ()
    """Dotted keys whose values are assumed, not sourced."""
    notes: tuple[str, ...] = ()
    """Findings about this target's model in words (a mechanism tried against its published
    rows and why the model stands as it does); the target's document lists them."""
    calibration: Calibration = field(default_factory=Calibration)
    units: Mapping[str, ComputeUnit] = field(default_factory=dict)
    memories: Mapping[str, Memory] = field(default_factory=dict)
    placement: Placement = field(default_factory=Placement)
    support: Support = field(default_factory=Support)
    crossing: Crossing = field(default_factory=Crossing)
    one_time: OneTime = field(default_factory=OneTime)
    compile: Compile = field(default_factory=Compile)
    toolchain: Mapping[str, str] = field(default_factory=dict)
    """Settings of the vendor's own tools (Vela's system config, …), for reference."""
    path: str = field(default="", metadata=DERIVED)
    chain: tuple[str, ...] = field(default=(), metadata=DERIVED)
    """Files this target was resolved from, the target's own first."""
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, metadata=DERIVED)
    """The resolved TOML table (what ``infercast targets show`` prints)."""

    @property
    def accelerator(self) -> ComputeUnit | None:
        a = self.placement.accelerator
        return self.units[a] if a else None

    @property
    def fallback(self) -> ComputeUnit:
        return self.units[self.placement.fallback]

    @property
    def graph_compile_s(self) -> float:
        return self.one_time.graph_compile_s

    @property
    def graph_compile_s_per_weight_byte(self) -> float:
        return self.one_time.graph_compile_s_per_weight_byte

    @property
    def quantize_float_to(self) -> str:
        return self.compile.quantize_float_to


def build_target(raw: Mapping[str, Any], file: str, path: str, chain: tuple[str, ...]) -> Target:
    """Validate a resolved (``extends`` already merged) table and build the :class:`Target`.

    Raises :class:`TargetError` listing every problem of the table at once.
    """
    from infercast.targets.validate import build

    return build(raw, file, path, chain)
