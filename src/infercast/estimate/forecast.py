"""Per-layer latency forecast of a model on a target: an analytical roofline per kernel.

Units: seconds; *ops* are arithmetic operations with one MAC = 2 ops (the
FLOPs of :mod:`infercast.analysis.cost`), compared against the target's
``peak_<dtype>_ops_per_s`` which counts the same way; bytes are bytes.

For every kernel (a fused group, :mod:`infercast.estimate.fusion`) on the
processor placement put it on (:func:`infercast.targets.place`):

* ``compute_s = ops_eff / (peak[dtype] x efficiency[op class])`` where
  ``ops_eff`` carries the shape effects real hardware has: output channels
  rounded up to the unit's ``channel_multiple`` (SIMD lanes / MAC-array
  columns; Arm Vela's 16 -> 17 channel trap), and maps narrower than
  ``efficient_width_px`` run at ``width / efficient_width_px`` of the
  efficiency (the K210 KPU below 64 px); a ``note`` check with a
  ``slowdown`` (per-channel weights on the i.MX 8M Plus NPU) multiplies it;
* ``memory_s = activation bytes / bandwidth of the memory holding
  activations (layer_io for accelerator layers) + weight bytes / bandwidth of
  the memory holding weights``; weights beyond a cache that streams
  (``on_overflow = "stream"``, the Edge TPU's parameter cache) are streamed
  over the crossing link at ``crossing.bytes_per_s``, every inference;
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
  bytes / crossing.bytes_per_s``), charged to the layer that receives the
  tensor (model outputs: to the layer that produces it);
* ``rewrite_s`` for a ``partial`` layer: one pass of the fallback processor
  over the output (Pad / Crop / StridedSlice steps the compiler adds).

``latency_s = max(compute_s, memory_s) + overhead_s + transfer_s + rewrite_s``
(compute and memory overlap, as in Arm Vela's per-layer max of cycle counts).
The layer's **bound** is the largest term: ``compute``, ``memory``,
``overhead``, ``transfer``; ``fallback`` for a layer on the fallback CPU of
a target that has an accelerator. Members of a fused group other than its
first op carry 0 s and bound ``fused``; a transpose the runtime cancels with
its inverse carries 0 s and bound ``elided``. ``one_time_s`` (first-run graph
compilation) is reported apart, and never added to the latency;
``invoke_s`` (the calibrated fixed cost of one inference call) is added once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from infercast.analysis.cost import Analysis, LayerCost, analyze_graph
from infercast.errors import InfercastError
from infercast.estimate.fusion import Kernel, elided_transposes, kernels
from infercast.ir.dtypes import DType
from infercast.ir.graph import Graph, Node, Tensor
from infercast.ir.labels import Bound, Placement
from infercast.ir.views import KernelDims, ShapeUnknownError, activation_dims, kernel_dims
from infercast.ops.registry import Handler, get_handler, relabels_input
from infercast.targets.placement import LayerPlacement, PlacementReport, device_graph, place
from infercast.targets.schema import EFFICIENCY_KEYS, Target

_FAMILY_CLASS = {
    "conv": "conv",
    "linalg": "linalg",
    "elementwise": "elementwise",
    "pool": "pool",
    "movement": "movement",
    "normalization": "normalization",
    "recurrent": "recurrent",
    "detection": "detection",
}
PARENT_CLASS = {"depthwise_conv_large": "depthwise_conv"}
LARGE_DEPTHWISE_TAPS = 25
"""Depthwise kernels with more taps than this (7x7 and up) are their own class: XNNPACK's
single-pass depthwise micro-kernels stop at 25 taps (5x5; google/XNNPACK src/f32-dwconv/,
``up*x25``), larger ones take the multi-pass path, and ONNX Runtime's are as slow; measured
here 5-9x below the 3x3 / 5x5 rate on both runtimes."""
_INT_KEYS = ("int8", "int16", "int4")
_FLOAT_KEYS = ("fp32", "fp16", "bf16")


class EstimateError(InfercastError):
    """The forecast cannot be made (no usable peak, bad parameters)."""


# --------------------------------------------------------------------------- #
# Parameters (what calibration fits)
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class Params:
    """The numbers the time model reads, taken from a target (calibration varies them)."""

    peak: Mapping[tuple[str, str], float]
    """(unit, dtype key) -> peak ops/s."""
    efficiency: Mapping[tuple[str, str], float]
    """(unit, efficiency key) -> fraction; ``default`` where a class is not stated."""
    overhead_s: Mapping[str, float]
    bandwidth: Mapping[str, float]
    """memory -> bytes/s."""
    crossing_fixed_s: float
    crossing_bytes_per_s: float
    invoke_s: float
    reduction_half: Mapping[str, float] = field(default_factory=dict)
    """unit -> ``reduction_half_depth`` (0: no short-dot-product effect)."""

    @staticmethod
    def of(target: Target) -> Params:
        peak: dict[tuple[str, str], float] = {}
        eff: dict[tuple[str, str], float] = {}
        over: dict[str, float] = {}
        for u in target.units.values():
            for k, v in u.peak_ops_per_s.items():
                peak[(u.name, k)] = v
            for k, v in u.efficiency.items():
                eff[(u.name, k)] = v
            over[u.name] = u.op_overhead_s
        return Params(
            peak=peak,
            efficiency=eff,
            overhead_s=over,
            bandwidth={m.name: m.bandwidth_bytes_per_s for m in target.memories.values()},
            crossing_fixed_s=target.crossing.fixed_s,
            crossing_bytes_per_s=target.crossing.bytes_per_s,
            invoke_s=target.calibration.invoke_overhead_s,
            reduction_half={u.name: u.reduction_half_depth for u in target.units.values()},
        )

    def eff(self, unit: str, op_class: str) -> float:
        """The class's efficiency, else its parent class's, else ``default``, else 1."""
        for cls in (op_class, PARENT_CLASS.get(op_class), "default"):
            if cls is not None and (unit, cls) in self.efficiency:
                return self.efficiency[(unit, cls)]
        return 1.0


# --------------------------------------------------------------------------- #
# What each kernel asks of its processor
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class Work:
    """Work of one kernel, independent of the parameters (input of :func:`kernel_time`)."""

    unit: str
    op_class: str
    dtype: str | None
    """Peak key used (``fp32``, ``int8``, …); None when the op does no arithmetic."""
    ops: float
    """Arithmetic ops as counted (1 MAC = 2 ops), all members of the kernel."""
    shape_factor: float
    """ops_eff / ops from channel padding, narrow maps and slowdown notes (>= 1)."""
    act_bytes: int
    weight_bytes: int
    streamed_bytes: int
    act_memory: str | None
    weight_memory: str | None
    reduction_depth: int = 0
    """Length K of the kernel's dot products (conv: input channels per group x taps; FC: input
    features); 0 where the op has none."""
    transfers: tuple[int, ...] = ()
    """Bytes of each crossing charged to this kernel."""
    rewrite_bytes: int | None = None
    """Output bytes of a ``partial`` layer (the fallback's extra pass); None if not partial."""
    fallback_unit: str = ""
    fallback_memory: str | None = None
    on_fallback: bool = False
    """Placed on the fallback processor of a target that has an accelerator."""
    known: bool = True
    """False when the ops are unknown (no cost rule, unknown shapes)."""
    elided: bool = False
    """A transpose the runtime removes (:func:`~infercast.estimate.fusion.elided_transposes`)."""

    @property
    def ops_eff(self) -> float:
        return self.ops * self.shape_factor


@dataclass(frozen=True)
class Times:
    compute_s: float
    memory_s: float
    overhead_s: float
    transfer_s: float
    rewrite_s: float

    @property
    def latency_s(self) -> float:
        return (
            max(self.compute_s, self.memory_s) + self.overhead_s + self.transfer_s + self.rewrite_s
        )


def kernel_time(w: Work, p: Params) -> Times:
    """Seconds of one kernel under parameters ``p`` (see the module docstring)."""
    if w.elided:
        return Times(0.0, 0.0, 0.0, 0.0, 0.0)
    compute = 0.0
    if w.ops > 0 and w.dtype is not None:
        peak = p.peak.get((w.unit, w.dtype))
        if peak is None:
            raise EstimateError(f"unit '{w.unit}' states no peak for {w.dtype}")
        compute = w.ops_eff / (peak * p.eff(w.unit, w.op_class))
        half = p.reduction_half.get(w.unit, 0.0)
        if half > 0 and w.reduction_depth > 0:
            compute *= (w.reduction_depth + half) / w.reduction_depth
    memory = 0.0
    if w.act_memory is not None:
        memory += w.act_bytes / p.bandwidth[w.act_memory]
    if w.weight_memory is not None:
        memory += w.weight_bytes / p.bandwidth[w.weight_memory]
    memory += w.streamed_bytes / p.crossing_bytes_per_s
    transfer = sum(p.crossing_fixed_s + b / p.crossing_bytes_per_s for b in w.transfers)
    rewrite = 0.0
    if w.rewrite_bytes is not None:
        rewrite = p.overhead_s.get(w.fallback_unit, 0.0)
        if w.fallback_memory is not None:
            rewrite += w.rewrite_bytes / p.bandwidth[w.fallback_memory]
    return Times(compute, memory, p.overhead_s.get(w.unit, 0.0), transfer, rewrite)


def bound_of(w: Work, t: Times) -> Bound:
    if w.elided:
        return "elided"
    if not w.known:
        return "unknown"
    terms: dict[Bound, float] = {
        "compute": t.compute_s,
        "memory": t.memory_s,
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

    @property
    def invoke_s(self) -> float:
        return self.params.invoke_s

    @property
    def latency_s(self) -> float:
        """Steady-state seconds per inference (one-time costs excluded)."""
        return sum(ly.latency_s for ly in self.layers) + self.invoke_s

    @property
    def one_time_s(self) -> float:
        """First-run costs (graph compilation), reported apart; an accelerator's graph
        compilation only when some layer runs on the accelerator."""
        if self.target.placement.accelerator is None:
            return self.target.graph_compile_s
        on_acc = any(ly.processor == "accelerator" for ly in self.placement.layers if not ly.folded)
        return self.target.graph_compile_s if on_acc else 0.0

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
            "compute_s": sum(ly.compute_s for ly in self.layers),
            "memory_s": sum(ly.memory_s for ly in self.layers),
            "overhead_s": sum(ly.overhead_s for ly in self.layers),
            "transfer_s": sum(ly.transfer_s for ly in self.layers),
            "ops": sum(ly.ops or 0 for ly in self.layers),
            "kernels": sum(1 for ly in self.layers if ly.bound not in ("fused", "elided")),
            "by_bound_s": self.by_bound(),
            "complete": self.complete,
        }


# --------------------------------------------------------------------------- #
# Building the work list
# --------------------------------------------------------------------------- #


def op_class(node: Node, graph: Graph | None = None) -> str:
    """The efficiency key of an op (``targets.schema.EFFICIENCY_KEYS``)."""
    if node.op == "depthwise_conv":
        ks = node.attrs.get("kernel_shape")
        taps = 0
        if isinstance(ks, tuple | list) and ks:
            taps = int(np.prod([int(k) for k in ks]))
        elif graph is not None:
            w_idx = int(node.attrs.get("weight_input", 1))
            if w_idx < len(node.inputs) and node.inputs[w_idx]:
                w = graph.tensors[node.inputs[w_idx]]
                try:
                    k = kernel_dims(w, str(node.attrs.get("weight_layout", "OIHW")))
                    taps = k.spatial_size
                except (ShapeUnknownError, ValueError, IndexError):
                    taps = 0
        return "depthwise_conv_large" if taps > LARGE_DEPTHWISE_TAPS else "depthwise_conv"
    h = get_handler(node.op)
    cls = _FAMILY_CLASS.get(h.family if h else "", "default")
    return cls if cls in EFFICIENCY_KEYS else "default"


def dtype_key(dt: DType) -> str:
    """The peak key a tensor of ``dt`` computes in."""
    if dt in (DType.INT8, DType.UINT8):
        return "int8"
    if dt in (DType.INT16, DType.UINT16):
        return "int16"
    if dt in (DType.INT4, DType.UINT4, DType.INT2):
        return "int4"
    if dt == DType.FLOAT16:
        return "fp16"
    if dt == DType.BFLOAT16:
        return "bf16"
    return "fp32"


def peak_key(target: Target, unit: str, want: str) -> tuple[str | None, bool]:
    """(key, exact): the unit's peak for ``want``, else the closest it states."""
    peaks = target.units[unit].peak_ops_per_s
    if want in peaks:
        return want, True
    family = _INT_KEYS if want in _INT_KEYS else _FLOAT_KEYS
    for k in family:
        if k in peaks:
            return k, False
    for k in (*_FLOAT_KEYS, *_INT_KEYS):
        if k in peaks:
            return k, False
    return None, False


def _compute_dtype(graph: Graph, node: Node) -> DType | None:
    ins = [t for t in graph.input_tensors(node) if t is not None]
    w_idx = node.attrs.get("weight_input")
    if isinstance(w_idx, int) and w_idx < len(node.inputs) and node.inputs[w_idx]:
        return graph.tensors[node.inputs[w_idx]].dtype
    acts = [t for t in ins if not t.is_constant]
    if acts:
        return acts[0].dtype
    outs = graph.output_tensors(node)
    return outs[0].dtype if outs else None


def _weight_tensors(graph: Graph, node: Node) -> list[Tensor]:
    h = get_handler(node.op)
    args = h.arg_inputs if h else frozenset()
    out: list[Tensor] = []
    for i, name in enumerate(node.inputs):
        if not name or i in args:
            continue
        t = graph.tensors[name]
        if t.is_constant and (t.dtype.is_float or t.dtype.is_integer):
            out.append(t)
    return out


def _ceil_to(n: int, m: int) -> int:
    return -(-n // m) * m


def shape_factor(graph: Graph, node: Node, target: Target, unit: str) -> float:
    """ops_eff / ops for the anchor ``node`` on ``unit`` (channel padding, narrow maps)."""
    u = target.units[unit]
    f = 1.0
    m = u.channel_multiple
    h = get_handler(node.op)
    try:
        if m > 1 and h is not None and h.conv_like:
            c = _kernel(graph, node, h).out_channels
            f *= _ceil_to(c, m) / c
        elif m > 1 and h is not None and h.fc_like:
            out = graph.output_tensors(node)[0]
            if out.is_static and out.shape:
                n = int(out.shape[-1] or 1)
                f *= _ceil_to(n, m) / n
        if u.efficient_width_px and op_class(node, graph) in (
            "conv",
            "depthwise_conv",
            "depthwise_conv_large",
            "pool",
        ):
            out = graph.output_tensors(node)[0]
            if out.rank == 4:
                d = activation_dims(out, graph.layout)
                width = d.spatial[-1] if d.spatial else 0
                if 0 < width < u.efficient_width_px:
                    f *= u.efficient_width_px / width
    except (ShapeUnknownError, ValueError, IndexError, KeyError):
        return f
    return f


def _kernel(graph: Graph, node: Node, h: Handler) -> KernelDims:
    """The kernel dimensions of a conv-like node (from its weight tensor)."""
    w_idx = int(node.attrs.get("weight_input", h.weight_input or 1))
    default = "IOHW" if node.op == "conv_transpose" else "OIHW"
    return kernel_dims(
        graph.tensors[node.inputs[w_idx]], str(node.attrs.get("weight_layout", default))
    )


def reduction_depth(graph: Graph, node: Node) -> int:
    """Length of the dot products of a conv / FC / MatMul (0 when not known).

    Depthwise convolutions have none: they are not GEMMs (one input channel per output
    channel), so the short-dot-product effect of a GEMM micro-kernel does not apply."""
    h = get_handler(node.op)
    if h is None:
        return 0
    try:
        if h.conv_like and node.op != "depthwise_conv":
            k = _kernel(graph, node, h)
            return k.in_channels * k.spatial_size
        if h.fc_like:
            x = graph.tensors[node.inputs[0]]
            if x.is_static and x.shape:
                k_dim = int(x.shape[-1] or 0)
                if node.op == "gemm" and node.attrs.get("transA"):
                    k_dim = int(x.shape[0] or 0)
                return k_dim
    except (ShapeUnknownError, ValueError, IndexError, KeyError):
        return 0
    return 0


def _slowdown(ly: LayerPlacement, target: Target) -> float:
    """Product of the ``slowdown`` parameters of the note checks that fired on ``ly``."""
    f = 1.0
    checks = list(target.support.generic)
    for rule in target.support.rules.values():
        checks.extend(rule.checks)
    for note in ly.notes:
        for c in checks:
            v = c.params.get("slowdown")
            if c.name == note.check and isinstance(v, int | float):
                f *= float(v)
                break
    return f


def memory_for(target: Target, holds: tuple[str, ...]) -> str | None:
    for kind in holds:
        for m in target.memories.values():
            if kind in m.holds:
                return m.name
    return None


def _build(
    graph: Graph,
    dev: Graph,
    analysis: Analysis,
    report: PlacementReport,
    target: Target,
    fuse: bool,
) -> tuple[list[tuple[Kernel, Work]], list[str]]:
    notes: list[str] = []
    cost: dict[int, LayerCost] = {ly.index: ly for ly in analysis.main_layers()}
    place_of: dict[int, LayerPlacement] = {ly.index: ly for ly in report.layers}
    proc = {i: ly.processor for i, ly in place_of.items() if not ly.folded}
    elided = elided_transposes(dev) if fuse else set()
    groups = (
        kernels(dev, proc, elided)
        if fuse
        else [Kernel(n.index, (n.index,)) for n in dev.nodes if not n.folded]
    )
    nodes = {n.index: n for n in dev.nodes}
    has_acc = target.placement.accelerator is not None
    fb_unit = target.placement.fallback
    fb_mem = memory_for(target, ("activations",))

    # Crossings: charged to the receiving layer, model outputs to their producer.
    member_of = {i: k.anchor for k in groups for i in k.members}
    transfers: dict[int, list[int]] = {}
    for c in report.crossings:
        at = min(c.consumers) if c.consumers else c.producer
        if at is None or at not in member_of:
            continue
        transfers.setdefault(member_of[at], []).append(c.bytes or 0)

    # Streaming weight caches: cumulative unique weights in execution order.
    stream_mems = {m.name: m for m in target.memories.values() if m.on_overflow == "stream"}
    used: dict[str, int] = {name: 0 for name in stream_mems}
    seen_weights: set[str] = set()

    missing_peak: set[str] = set()
    out: list[tuple[Kernel, Work]] = []
    for k in groups:
        anchor = nodes[k.anchor]
        lp = place_of[k.anchor]
        unit = lp.unit
        on_acc = lp.processor == "accelerator"
        members = [nodes[i] for i in k.members]
        inside = {o for n in members for o in n.outputs if o}
        # Activations read from outside the group, outputs read outside it (or model outputs).
        act_in: dict[str, int | None] = {}
        weights: dict[str, int] = {}
        for n in members:
            wts = _weight_tensors(dev, n)
            wnames = {t.name for t in wts}
            for t in wts:
                weights[t.derived_from or t.name] = t.nbytes or 0
            for name in n.inputs:
                if name and name not in inside and name not in wnames:
                    t = dev.tensors[name]
                    if not t.is_constant:
                        act_in[name] = t.nbytes
        last = members[-1]
        act_out: dict[str, int | None] = {o: dev.tensors[o].nbytes for o in last.outputs if o}
        for n in members[:-1]:
            for o in n.outputs:
                if o and (
                    o in dev.outputs or any(c not in k.members for c in dev.consumers.get(o, ()))
                ):
                    act_out[o] = dev.tensors[o].nbytes
        act_bytes = sum(v or 0 for v in act_in.values()) + sum(v or 0 for v in act_out.values())
        relabel = relabels_input(dev, anchor)  # no copy in ORT / TFLite: overhead only
        if relabel and len(members) == 1:
            act_bytes = 0
        # Weights: which memory, and what a streaming cache cannot hold.
        w_mem = memory_for(target, ("accelerator_weights", "weights") if on_acc else ("weights",))
        a_mem = memory_for(target, ("layer_io", "activations") if on_acc else ("activations",))
        streamed = 0
        w_bytes = 0
        for root, nb in weights.items():
            if root in seen_weights:
                continue  # a shared weight is read once per inference
            seen_weights.add(root)
            w_bytes += nb
            if w_mem in stream_mems:
                cap = stream_mems[w_mem].size_bytes
                fits = max(min(nb, cap - used[w_mem]), 0)
                used[w_mem] += nb
                streamed += nb - fits
        w_bytes -= streamed
        # Arithmetic.
        ops = 0.0
        known = True
        for n in members:
            lc = cost.get(n.index)
            # A layer whose output size is unknown (unknown_shape) has unknown bytes too,
            # even when its arithmetic (a Reshape's 0) does not depend on it.
            if lc is None or lc.flops is None or lc.status == "unknown_shape":
                known = False
            else:
                ops += lc.flops
        if any(t is None for t in (*act_in.values(), *act_out.values())):
            known = False
        cls = op_class(anchor, dev)
        if cls == "movement" and known and ops == 0 and not relabel:
            # A copy costs per element too (index arithmetic, narrow rows): one op per
            # element written, so that efficiency.movement is the copy throughput.
            ops = float(sum((dev.tensors[o].elements or 0) for o in anchor.outputs if o))
        dt = _compute_dtype(dev, anchor)
        key: str | None = None
        if ops > 0 and dt is not None:
            key, exact = peak_key(target, unit, dtype_key(dt))
            if key is None:
                raise EstimateError(
                    f"{target.name}: unit '{unit}' states no peak_<dtype>_ops_per_s",
                    "add one to the target file",
                )
            if not exact:
                missing_peak.add(f"{unit}: {dtype_key(dt)} computed at the {key} peak")
        factor = shape_factor(dev, anchor, target, unit) * _slowdown(lp, target)
        depth = reduction_depth(dev, anchor) if cls in ("conv", "linalg") else 0
        out.append(
            (
                k,
                Work(
                    unit=unit,
                    op_class=cls,
                    dtype=key,
                    ops=ops,
                    shape_factor=factor,
                    reduction_depth=depth,
                    act_bytes=act_bytes,
                    weight_bytes=w_bytes,
                    streamed_bytes=streamed,
                    act_memory=a_mem,
                    weight_memory=w_mem,
                    transfers=tuple(transfers.get(k.anchor, ())),
                    rewrite_bytes=sum(v or 0 for v in act_out.values())
                    if lp.placement == "partial"
                    else None,
                    fallback_unit=fb_unit,
                    fallback_memory=fb_mem,
                    on_fallback=has_acc and lp.processor == "cpu",
                    known=known,
                    elided=len(members) == 1 and k.anchor in elided,
                ),
            )
        )
    for m in sorted(missing_peak):
        notes.append(f"no peak stated for the dtype; {m}")
    for name, mem in stream_mems.items():
        if used[name] > mem.size_bytes:
            notes.append(
                f"{name}: {used[name] - mem.size_bytes} weight bytes beyond its "
                f"{mem.size_bytes} bytes are streamed over the link every inference"
            )
    return out, notes


def estimate(
    graph: Graph,
    target: Target,
    *,
    placement: PlacementReport | None = None,
    analysis: Analysis | None = None,
    fuse: bool = True,
    params: Params | None = None,
) -> Forecast:
    """Forecast per-layer latency of ``graph`` on ``target``.

    ``placement`` (``place(graph, target)``) and ``analysis`` (``analyze_graph(graph)``)
    are computed here when not given. ``params`` overrides the target's numbers
    (what calibration varies); ``fuse=False`` costs every op as its own kernel.
    """
    if placement is None:
        placement = place(graph, target)
    elif placement.graph is not graph or placement.target is not target:
        raise ValueError("estimate(): the placement is of another graph or target")
    if analysis is None:
        analysis = analyze_graph(graph)
    elif analysis.graph is not graph:
        raise ValueError("estimate(): the analysis is of another graph")
    dev = device_graph(graph, target)
    works, notes = _build(graph, dev, analysis, placement, target, fuse)
    p = params or Params.of(target)
    fc = assemble(target, str(graph.path or graph.name), placement, works, p, notes)
    t = analysis.totals
    return replace(fc, unknown_layers=t.unsupported_layers + t.unknown_shape_layers)


def assemble(
    target: Target,
    model: str,
    report: PlacementReport,
    works: list[tuple[Kernel, Work]],
    p: Params,
    notes: list[str],
) -> Forecast:
    """Turn kernels' work into per-layer results under parameters ``p``."""
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
                    memory_s=t.memory_s if first else 0.0,
                    overhead_s=t.overhead_s if first else 0.0,
                    transfer_s=t.transfer_s if first else 0.0,
                    rewrite_s=t.rewrite_s if first else 0.0,
                    latency_s=t.latency_s if first else 0.0,
                    bound=bound if first else "fused",
                )
            )
    layers.sort(key=lambda ly: ly.index)
    all_notes = list(notes)
    cal = target.calibration
    if not cal.calibrated:
        all_notes.append(
            f"{target.name} is not calibrated: peaks, efficiencies and overheads are datasheet "
            "figures or guesses (see `uncertain` in the target file); treat the forecast as an "
            "order of magnitude and calibrate (`infercast calibrate`) before trusting it"
        )
    else:
        band = f" (fit RMSPE {cal.fit_rmspe:.0%} on its own samples)" if cal.fit_rmspe else ""
        all_notes.append(
            f"calibrated for {cal.runtime or 'a runtime'}"
            f"{f' with {cal.threads} thread(s)' if cal.threads else ''}{band}: "
            "a different runtime version, thread count or clock changes the figures"
        )
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
    )
