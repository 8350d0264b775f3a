"""What each kernel asks of its processor: the work list the time model costs.

:func:`build_works` turns a placed graph into one :class:`Work` per kernel (a
fused group, :mod:`infercast.estimate.fusion`): its arithmetic (ops as counted,
1 MAC = 2 ops, and the shape effects real hardware has), the activation and
weight bytes it moves and where they live, the weight bytes a streaming cache
cannot hold, the accelerator <-> CPU crossings charged to it, and the flags the
device models read (per-channel weights, parallel on a multi-core CPU). None of
it depends on the target's fitted numbers, so calibration builds it once and
re-costs it under many parameter sets (:func:`infercast.estimate.forecast.kernel_time`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from infercast.analysis.cost import Analysis, LayerCost
from infercast.errors import InfercastError
from infercast.estimate.aarch64 import op_shape, table
from infercast.estimate.ethos_blocks import (
    ACCEL_CONFIGS,
    Block,
    elementwise_block,
    find_block,
    ifm_read_elements,
    mac_op_cycles,
    memory_transfer_factor,
)
from infercast.estimate.fusion import Kernel, elided_transposes, kernels
from infercast.estimate.layout import layout_permutes
from infercast.ir.dtypes import DType
from infercast.ir.graph import Graph, Node, Tensor
from infercast.ir.views import ShapeUnknownError, activation_dims, kernel_dims, static_shape
from infercast.ops.registry import argument_inputs, get_handler, relabels_input
from infercast.targets.placement import LayerPlacement, PlacementReport
from infercast.targets.schema import EFFICIENCY_KEYS, Memory, Target

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
PARENT_CLASS = {
    "depthwise_conv_large": "depthwise_conv",
    "pointwise_conv": "conv",
    "serial_elementwise": "elementwise",
    "resample": "movement",
}
RESAMPLE_OPS = frozenset({"resize", "grid_sample"})
"""Movement-family ops that interpolate rather than copy: their own efficiency class
(``resample``, falling back to ``movement``), since an accelerator may run them on another
engine than its copies (the VeriSilicon NPU: copies on the tensor processor, TIM-VX's
resize on its shader kernels)."""
LARGE_DEPTHWISE_TAPS = 25
"""Depthwise kernels with more taps than this (7x7 and up) are their own class: XNNPACK's
single-pass depthwise micro-kernels stop at 25 taps (5x5; google/XNNPACK src/f32-dwconv/,
``up*x25``), larger ones take the multi-pass path, and ONNX Runtime's are as slow; measured
here 5-9x below the 3x3 / 5x5 rate on both runtimes."""
PARALLEL_CLASSES = frozenset(
    {"conv", "depthwise_conv", "depthwise_conv_large", "linalg", "elementwise", "pool"}
)
"""Op classes a multi-threaded CPU runtime splits across its threads: XNNPACK (TFLite's
CPU delegate) runs convolutions, fully-connected, element-wise and pooling operators on a
pthreadpool (google/XNNPACK ``src/operators/*.c``, ``pthreadpool_parallelize_*``), as
ncnn's OpenMP kernels do. The rest (TFLite's built-in TRANSPOSE, CONCATENATION, GATHER,
STRIDED_SLICE, detection post-processing ...) runs on one thread whatever the count."""
BUILTIN_INT8_THREADED = frozenset({"conv", "depthwise_conv", "fully_connected", "conv_transpose"})
"""The int8 operators TFLite's built-in kernels split across threads (a unit's
``int8_kernels = "builtin"``): CONV_2D, FULLY_CONNECTED and TRANSPOSE_CONV multiply on ruy
through ``cpu_backend_gemm`` with the interpreter's thread count, DEPTHWISE_CONV_2D splits
its output rows over ``cpu_backend_threadpool`` (``tensorflow/lite/kernels/internal/
optimized/depthwiseconv_multithread.h``). The other int8 kernels (ADD, MUL, HARD_SWISH,
LOGISTIC, the pools, PAD, CONCATENATION, RESIZE_*) loop on the calling thread."""
BUILTIN_INT8_ELEMENT_COST: Mapping[str, float] = {
    "add": 1.0,
    "sub": 2.05,
    "mul": 0.48,
    "maximum": 0.02,
    "minimum": 0.02,
    "hard_swish": 2.38,
    "sigmoid": 0.16,
    "tanh": 0.16,
    "leaky_relu": 6.2,
    "quantize": 0.08,
    "dequantize": 0.10,
}
"""Cost per output element of TFLite's built-in int8 element-wise kernels, in int8 ADD
elements (an ADD rescales both inputs and its output in fixed point,
``optimized_integer_ops/add.h``; a MUL rescales once; LOGISTIC and TANH read a lookup
table; HARD_SWISH works in int16 fixed point; LEAKY_RELU is the scalar reference kernel;
QUANTIZE (from float) and DEQUANTIZE are the float <-> int8 conversions at a model's edges).
Measured here on LiteRT's built-in kernels, one thread, each op alone on 262,144 elements
(``bench/bench_builtin_int8.py``; TFLite compiles the same NEON code for x86 through
NEON_2_SSE, so the ratios, not the host's rates, are used). An element-wise op not listed
costs one ADD element."""
WEIGHTED_OPS = frozenset(
    {"conv", "depthwise_conv", "conv_transpose", "fully_connected", "matmul", "gemm",
     "conv_integer", "qlinear_conv", "matmul_integer", "qlinear_matmul"}
)  # fmt: skip
_INT_KEYS = ("int8", "int16", "int4")
_FLOAT_KEYS = ("fp32", "fp16", "bf16")


class EstimateError(InfercastError):
    """The forecast cannot be made (no usable peak, bad parameters)."""


@dataclass(frozen=True)
class Work:
    """Work of one kernel, independent of the parameters (input of ``kernel_time``)."""

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
    """Bytes of each crossing charged to this kernel, but those in ``readbacks``."""
    readbacks: tuple[int, ...] = ()
    """Bytes of each accelerator -> CPU crossing charged to this kernel (the CPU copies the
    tensor out of the accelerator's buffer: ``crossing.readback_bytes_per_s``)."""
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
    per_channel: bool = False
    """The anchor's weights are quantised per channel (one scale per output channel)."""
    per_channel_out_elements: int = 0
    """Output elements of a conv / depthwise conv anchor with per-channel weights (what a
    unit's ``per_channel_pass_s_per_element`` charges); 0 for any other kernel."""
    parallel: bool = False
    """A multi-threaded CPU runtime splits this kernel across its threads (PARALLEL_CLASSES)."""
    broadcast_bytes: int = 0
    """Output elements x element size of the constant operand of an element-wise op whose
    constant is smaller than its output (what a unit that re-reads broadcast constants
    reads, times its ``broadcast_read_factor``)."""
    separate_ports: bool = False
    """Activations and weights come through different bus ports, so their transfers overlap
    (the memory time is the longer of the two, not their sum; ``Memory.port``)."""
    refetch_bytes: int = 0
    """Input feature-map bytes read beyond the first read, from ``act_memory``: once more per
    block of the unit's ``ifm_refetch_depth`` output channels, and narrow reads of an NHWC
    model input charged whole bursts (:func:`ifm_refetch_bytes`)."""
    arena_bytes: int = 0
    """Feature-map bytes of a kernel whose other maps ``act_memory`` caches that go through
    the weights' memory (the arena) instead, their narrow-burst charge included: its NPU
    partition's inputs and outputs under NXP's Vela schedule (:func:`cpu_exchanged_maps`)."""
    pointwise: bool = False
    """A 1x1, stride-1, ungrouped conv (:func:`is_pointwise`): a plain GEMM on the CPU."""
    gemm_rows: int = 0
    """Rows ``M`` of the GEMM a conv / FC is on the CPU (output pixels of a conv, batch
    rows of an FC; :func:`gemm_rows`); 0: not a GEMM or not known."""
    instructions: float = 0.0
    """Instructions TFLite's built-in int8 kernels execute for this kernel on the unit's
    Arm ISA level (:mod:`infercast.estimate.aarch64`), which ``compute_s`` then uses; 0:
    the unit states no ``isa``, or a member's kind or shapes are not in the table."""
    npu_cycles: bool = False
    """``shape_factor`` carries the NPU cycles of an element-wise op from Vela's per-element
    output cycles (:func:`nxp_elementwise_cycles`): its efficiency is
    ``elementwise_cycles``, not the element-wise rate fitted for other ops."""
    im2col_bytes: int = 0
    """Bytes of the im2col buffer a built-in int8 conv fills on one thread before its GEMM
    (``units.U.im2col_s_per_byte``); 0 for any other kernel."""
    serial: bool = False
    """One of the unit's ``serial_ops``: a kernel the runtime runs outside its thread pool
    (TFLite's built-in kernels the XNNPACK delegate does not take; :func:`is_serial`)."""
    max_threads: int = 0
    """The most threads the runtime splits this kernel over, whatever the count asked for
    (0: no limit): TFLite's built-in int8 GEMMs and depthwise convs size their thread count
    to the work (:func:`builtin_int8_threads`)."""
    permutes: tuple[Work, ...] = ()
    """The layout permutes the accelerator's runtime inserts for this kernel (before its
    inputs, or after an output the graph returns or the CPU reads), each a movement
    kernel of its own on the accelerator (:func:`permute_works`)."""
    invokes: int = 0
    """Accelerator calls this kernel opens beyond the inference's first, each at the
    calibrated per-inference cost (``calibration.invoke_overhead_s``): the first kernel of
    every NPU partition after the first under NXP's Vela schedule (:func:`nxp_partitions`)."""

    @property
    def ops_eff(self) -> float:
        return self.ops * self.shape_factor

    @property
    def efficiency_class(self) -> str:
        """The efficiency key the kernel reads first: ``pointwise_conv`` for a pointwise
        conv (falling back to ``conv`` where a target states none), ``serial_elementwise``
        for an element-wise op the runtime runs outside its thread pool (falling back to
        ``elementwise``: a scalar built-in kernel is not the vectorised one), else its class."""
        if self.pointwise and self.op_class == "conv":
            return "pointwise_conv"
        if self.npu_cycles and self.op_class == "elementwise":
            return "elementwise_cycles"
        if self.serial and self.op_class == "elementwise":
            return "serial_elementwise"
        return self.op_class


# --------------------------------------------------------------------------- #
# Classification of one op
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
    if node.op in RESAMPLE_OPS:
        return "resample"
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


def compute_dtype(graph: Graph, node: Node) -> DType | None:
    """The dtype ``node`` computes in: its weights', else its first activation's."""
    ins = [t for t in graph.input_tensors(node) if t is not None]
    w_idx = node.attrs.get("weight_input")
    if isinstance(w_idx, int) and w_idx < len(node.inputs) and node.inputs[w_idx]:
        return graph.tensors[node.inputs[w_idx]].dtype
    acts = [t for t in ins if not t.is_constant]
    if acts:
        return acts[0].dtype
    outs = graph.output_tensors(node)
    return outs[0].dtype if outs else None


def weight_tensors(graph: Graph, node: Node) -> list[Tensor]:
    """Constant numeric inputs of ``node`` other than its argument inputs (axes, shapes)."""
    args = argument_inputs(node, get_handler(node.op))
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


def _conv_weight(graph: Graph, node: Node) -> Tensor:
    h = get_handler(node.op)
    w_idx = int(node.attrs.get("weight_input", (h.weight_input if h else None) or 1))
    return graph.tensors[node.inputs[w_idx]]


def _weight_layout(node: Node) -> str:
    default = "IOHW" if node.op == "conv_transpose" else "OIHW"
    return str(node.attrs.get("weight_layout", default))


def _channel_factor(graph: Graph, node: Node, m: int) -> float:
    """Output channels (conv) / features (FC) rounded up to a multiple of ``m``, over the count."""
    h = get_handler(node.op)
    if h is not None and h.conv_like:
        c = kernel_dims(_conv_weight(graph, node), _weight_layout(node)).out_channels
        return _ceil_to(c, m) / c
    if h is not None and h.fc_like:
        out = graph.output_tensors(node)[0]
        if out.is_static and out.shape:
            n = int(out.shape[-1] or 1)
            return _ceil_to(n, m) / n
    return 1.0


def kpu_line_factor(width: int, channels: int, line: int) -> float:
    """Pixel slots over pixels of a map laid out in ``line``-pixel lines as nncase lays out
    K210 KPU feature maps (``get_kpu_row_layout``, kendryte/nncase ``runtime/k210``): a row
    at most line/4 wide shares its line with 3 other channels' rows (16 px apart), at most
    line/2 wide with one other (32 px apart), wider rows take ceil(width / line) lines."""
    if width <= line // 4:
        groups, row_len = 4, 1
    elif width <= line // 2:
        groups, row_len = 2, 1
    else:
        groups, row_len = 1, -(-width // line)
    return (-(-channels // groups)) * row_len * line / (channels * width)


def nn_interleave(tile_width: int, kernel_height: int, max_tile: int = 64) -> int:
    """Rows a VeriSilicon NN core interleaves in one output tile (Mesa etnaviv_ml_nn.c
    calc_interleave_mode): 8 / 4 / 2 for tiles at most 1/8, 1/4, 1/2 of ``max_tile`` wide,
    capped at 2 unless the kernel's rows plus the tile pass (max_tile + 8) / 4."""
    if kernel_height - 1 + tile_width > (max_tile + 8) // 2:
        return 1
    mode = 8
    if tile_width > max_tile // 2:
        mode = 1
    elif tile_width > max_tile // 4:
        mode = 2
    elif tile_width > max_tile // 8:
        mode = 4
    if kernel_height - 1 + tile_width > (max_tile + 8) // 4:
        return min(mode, 4)
    return min(mode, 2)


def nn_width_factor(width: int, kernel_height: int, max_tile: int) -> float:
    """Pixel slots over pixels of an output row on a NN core with ``max_tile``-wide tiles:
    a row wider than a tile takes ceil(width / max_tile) whole tiles, a narrower one fills
    width x interleave of the tile's slots."""
    if width <= 0:
        return 1.0
    if width > max_tile:
        return -(-width // max_tile) * max_tile / width
    used = width * nn_interleave(width, kernel_height, max_tile)
    return max_tile / min(used, max_tile)


def nn_core_factor(graph: Graph, node: Node, max_tile: int, strided: bool) -> float:
    """ops_eff / ops of a conv / depthwise conv on a VeriSilicon NN core (tiles, strides).

    Axes as the NN job sees a TFLite tensor: Mesa's teflon copies the NHWC dims unchanged
    and etnaviv_ml_nn.c reads dims[1] (H) as the image's x size and the OHWI kernel's
    dims[2] (KW) as its "weight_height", so the tiles run along the output's H."""
    k = kernel_dims(_conv_weight(graph, node), _weight_layout(node))
    kh = k.spatial[0] if k.spatial else 1
    kw = k.spatial[-1] if k.spatial else 1
    sy, sx = _pair(node.attrs.get("strides"))
    out = graph.output_tensors(node)[0]
    rows = activation_dims(out, graph.layout).spatial[0]
    f = 1.0
    first_pixel = False
    if strided and max(sx, sy) > 1:
        pointwise = kh == 1 and kw == 1
        in_rows = activation_dims(graph.tensors[node.inputs[0]], graph.layout).spatial[0]
        if pointwise or (node.op == "depthwise_conv" and not 2 < in_rows < 8):
            first_pixel = True
            f *= sx * sy
        else:
            f *= (-(-kh // sy)) * (-(-kw // sx)) * sx * sy / (kh * kw)
    if max_tile:
        f *= nn_width_factor(rows * (sy if first_pixel else 1), kw, max_tile)
    return f


def shape_factor(graph: Graph, node: Node, target: Target, unit: str) -> float:
    """ops_eff / ops for the anchor ``node`` on ``unit`` (channel padding, line layout)."""
    u = target.units[unit]
    f = 1.0
    try:
        if u.channel_multiple > 1:
            f *= _channel_factor(graph, node, u.channel_multiple)
        if u.window_taps and node.op in ("conv", "depthwise_conv"):
            taps = kernel_dims(_conv_weight(graph, node), _weight_layout(node)).spatial_size
            if 0 < taps < u.window_taps:
                f *= u.window_taps / taps
        spatial = ("conv", "depthwise_conv", "depthwise_conv_large", "pool")
        if u.efficient_width_px and op_class(node, graph) in spatial:
            out = graph.output_tensors(node)[0]
            if out.rank == 4:
                d = activation_dims(out, graph.layout)
                width = d.spatial[-1] if d.spatial else 0
                if width > 0 and d.channels:
                    f *= kpu_line_factor(width, d.channels, u.efficient_width_px)
        if (u.nn_tile_width_px or u.nn_strided_lowering) and node.op in (
            "conv",
            "depthwise_conv",
        ):
            f *= nn_core_factor(graph, node, u.nn_tile_width_px, u.nn_strided_lowering)
    except (ShapeUnknownError, ValueError, IndexError, KeyError):
        return f
    return f


def reduction_depth(graph: Graph, node: Node) -> int:
    """Length of the dot products of a conv / FC / MatMul (0 when not known).

    Depthwise convolutions have none: they are not GEMMs (one input channel per output
    channel), so the short-dot-product effect of a GEMM micro-kernel does not apply."""
    h = get_handler(node.op)
    if h is None:
        return 0
    try:
        if h.conv_like and node.op != "depthwise_conv":
            k = kernel_dims(_conv_weight(graph, node), _weight_layout(node))
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


def gemm_rows(graph: Graph, node: Node) -> int:
    """Rows ``M`` of the GEMM that a conv / FC / constant-weight MatMul is on a CPU: output
    elements over output channels (conv: batch x output pixels; FC: batch rows), the
    ``M`` of an ``M x K`` by ``K x N`` product whose ``K x N`` matrix is the weights
    (XNNPACK's GEMM and indirect-GEMM convolutions, google/XNNPACK
    ``src/operators/convolution-nhwc.c``). 0 for depthwise convs (not GEMMs) and unknowns."""
    h = get_handler(node.op)
    if h is None or node.op == "depthwise_conv" or not (h.conv_like or h.fc_like):
        return 0
    try:
        out = graph.output_tensors(node)[0]
        if not (out.is_static and out.shape):
            return 0
        elems = 1
        for d in out.shape:
            elems *= int(d or 0)
        if h.conv_like:
            n = kernel_dims(_conv_weight(graph, node), _weight_layout(node)).out_channels
        else:
            n = int(out.shape[-1] or 0)
    except (ShapeUnknownError, ValueError, IndexError, KeyError):
        return 0
    return elems // n if n > 0 and elems > 0 else 0


def is_pointwise(graph: Graph, node: Node) -> bool:
    """A 1x1 conv with stride 1 and one group: CPU runtimes run it as a plain GEMM over the
    input map (XNNPACK picks its GEMM micro-kernels for a 1x1 / stride-1 / unpadded
    convolution and its indirect-GEMM ones otherwise, google/XNNPACK
    ``src/operators/convolution-nhwc.c``; ONNX Runtime's MLAS skips im2col for it,
    ``onnxruntime/core/mlas/lib/convolve.cpp``), a path with its own throughput: measured
    here, 1x1 micro-kernels run 20-50% faster per MAC than 3x3 ones on both runtimes."""
    if node.op != "conv" or int(node.attrs.get("group", 1) or 1) != 1:
        return False
    strides = node.attrs.get("strides")
    if isinstance(strides, tuple | list) and any(int(x) != 1 for x in strides):
        return False
    try:
        k = kernel_dims(_conv_weight(graph, node), _weight_layout(node))
    except (ShapeUnknownError, ValueError, IndexError, KeyError):
        return False
    return k.spatial_size == 1


def note_slowdown(ly: LayerPlacement, target: Target) -> float:
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


def broadcast_bytes(graph: Graph, node: Node) -> int:
    """Output elements x the constant's element size, for an element-wise op with a
    constant operand smaller than its output; 0 otherwise."""
    h = get_handler(node.op)
    if h is None or h.family != "elementwise" or not node.outputs:
        return 0
    out = graph.tensors[node.outputs[0]]
    for t in weight_tensors(graph, node):
        if out.elements and t.elements and t.elements < out.elements:
            return t.dtype.nbytes(out.elements)
    return 0


def _reads_model_input(graph: Graph, x: Tensor) -> bool:
    """``x`` is a model input, or a PAD of one: Vela merges a PAD into the convolution that
    follows it, which then reads the model input itself (NHWC, in the arena)."""
    if x.name in graph.inputs:
        return True
    i = graph.producers.get(x.name)
    prod = graph.nodes[i] if i is not None and i < len(graph.nodes) else None
    if prod is None or prod.index != i or prod.op != "pad":
        return False
    acts = [t for t in graph.input_tensors(prod) if t is not None and not t.is_constant]
    return bool(acts) and acts[0].name in graph.inputs


def _ifm_burst_factor(graph: Graph, x: Tensor, burst_bytes: int) -> float:
    """Bytes charged per byte of a model-input feature map read in NHWC.

    Arm Vela (ethos-u-vela 5.2.0, regor ``architecture/ethosu55/ethos_u55_performance.cpp``
    ``EstimateMemoryTransfer``): an NHWC read whose pixel depth differs from the IFM block's
    depth is issued in bursts of one block depth, each charged ``burst_length`` bytes. The IFM
    block is min(depth, 32) deep rounded up to 8 (``ethos_u55.cpp`` ``ifmBlockDepth``,
    ``ifmUBlock`` 8 deep). Model inputs are NHWC; interior maps are 16-channel bricks."""
    if burst_bytes <= 0 or not _reads_model_input(graph, x) or x.rank != 4:
        return 1.0
    d = activation_dims(x, graph.layout)
    depth_bytes = x.dtype.nbytes(d.channels or 1)
    block = _ceil_to(min(depth_bytes, 32), 8)
    if depth_bytes == block:
        return 1.0
    return burst_bytes / min(burst_bytes, block)


def _pair(v: object, default: int = 1) -> tuple[int, int]:
    if isinstance(v, tuple | list) and len(v) >= 2:
        return int(v[-2]), int(v[-1])
    return default, default


def vela_block(
    graph: Graph, node: Node, accel: str
) -> tuple[str, Block, tuple[int, int, int], tuple[int, int, int], tuple[int, int]] | None:
    """(kind, block, IFM, OFM, kernel) of the OFM block Vela picks for this int8 conv, FC,
    depthwise conv or pool (:func:`infercast.estimate.ethos_blocks.find_block`), or None
    when the op is none of these or a shape is not known."""
    h = get_handler(node.op)
    if h is None or accel not in ACCEL_CONFIGS or graph.layout != "NHWC":
        return None
    kind = (
        "depthwise"
        if node.op == "depthwise_conv"
        else ("conv" if (h.conv_like or h.fc_like) else ("pool" if h.family == "pool" else ""))
    )
    acts = [t for t in graph.input_tensors(node) if t is not None and not t.is_constant]
    outs = graph.output_tensors(node)
    if not kind or not acts or not outs:
        return None
    try:
        x, y = static_shape(acts[0]), static_shape(outs[0])
    except ShapeUnknownError:
        return None
    if len(x) == 4 and len(y) == 4 and (h.conv_like or h.family == "pool"):
        ifm, ofm = (x[1], x[2], x[3]), (y[1], y[2], y[3])
        if h.conv_like:
            try:
                kd = kernel_dims(_conv_weight(graph, node), _weight_layout(node))
            except (ShapeUnknownError, ValueError, IndexError, KeyError):
                return None
            kernel = (kd.spatial[0], kd.spatial[1]) if len(kd.spatial) == 2 else (1, 1)
        else:
            kernel = _pair(node.attrs.get("kernel_shape"))
    elif h.fc_like and x and y:
        ifm, ofm, kernel = (1, 1, x[-1]), (1, 1, y[-1]), (1, 1)
    else:
        return None
    if min(ifm + ofm + kernel) <= 0:
        return None
    stride, dilation = _pair(node.attrs.get("strides")), _pair(node.attrs.get("dilations"))
    block = find_block(accel, kind, ifm, ofm, kernel, stride, dilation)
    return None if block is None else (kind, block, ifm, ofm, kernel)


def _burst_bytes(mem: Memory) -> int:
    """The bytes a narrow transfer to ``mem`` is charged: the device's own smallest access
    where the target states one (``device_burst_bytes``), else Vela's burst length."""
    return mem.device_burst_bytes or mem.burst_bytes


def vela_view(target: Target) -> Target:
    """``target`` as Arm Vela models it: every memory charges Vela's burst length
    (``burst_bytes``), not the device's own (``device_burst_bytes``); for comparisons with
    Vela's estimate (bench/bench_vela.py). Arm's Vela: a ``vela_fork`` (NXP's schedule,
    :func:`nxp_vela_schedule`) is dropped, and with it the operator support the target's own
    file states on top of the files it extends (the fork's rules: NXP's pool strides and
    rescaled MEANs)."""
    from infercast.targets.loader import base_support

    mems = {k: replace(m, device_burst_bytes=0) for k, m in target.memories.items()}
    if "vela_fork" not in target.toolchain:
        return replace(target, memories=mems)
    tc = {k: v for k, v in target.toolchain.items() if k != "vela_fork"}
    return replace(target, memories=mems, toolchain=tc, support=base_support(target))


def _vela_accel(target: Target) -> str:
    """The Vela accelerator config the target names (``[toolchain] vela_accelerator_config``)
    when :mod:`infercast.estimate.ethos_blocks` knows it, else ''."""
    tc = target.raw.get("toolchain", {})
    accel = str(tc.get("vela_accelerator_config", "")) if isinstance(tc, Mapping) else ""
    return accel if accel in ACCEL_CONFIGS else ""


def nxp_vela_schedule(target: Target) -> bool:
    """The target's command streams come from NXP's Vela fork (``[toolchain] vela_fork =
    "nxp-3.7"``: nxp-imx/ethos-u-vela 3.7-3.10, what the i.MX 93's BSP compiles with) rather
    than Arm's Vela 5.2 this module otherwise reproduces; see :func:`nxp_resize_cycles`,
    :func:`cpu_exchanged_maps` and :func:`vela_linear_maps`."""
    return target.toolchain.get("vela_fork", "") == "nxp-3.7"


def nxp_resize_cycles(graph: Graph, node: Node, accel: str) -> int | None:
    """NPU cycles of a 2x half-pixel-centre RESIZE_BILINEAR as NXP's Vela 3.7 runs it
    (nxp-imx/ethos-u-vela 3.7.0 ``tflite_graph_optimiser.py`` ``fixup_resize`` ->
    ``convert_resizebilinear_to_depthwise_convolutions``): a 1x1 average pool copies the IFM
    to an intermediate map, then four 2x2 depthwise convolutions (one per output phase, TILE
    padding) each read that map and write one quarter of the OFM (``write_shape`` = the IFM's
    shape, the OFM strides doubled). Each is costed as :func:`mac_op_cycles` on the block
    :func:`find_block` picks. NXP's Vela 3.7 estimate charges far more: each convolution on
    the whole OFM (its ``ofm_shape``; the command stream computes one quarter), 115288
    cycles each for the selfie segmenter's 16x16x128 -> 32x32x128 resize where this gives
    8576. None for another resize, an unknown shape or an accelerator this module does not
    know."""
    if accel not in ACCEL_CONFIGS or node.op != "resize" or graph.layout != "NHWC":
        return None
    if not node.attrs.get("half_pixel_centers") or node.attrs.get("mode") != "linear":
        return None
    acts = [t for t in graph.input_tensors(node) if t is not None and not t.is_constant]
    outs = graph.output_tensors(node)
    if not acts or not outs:
        return None
    try:
        x, y = static_shape(acts[0]), static_shape(outs[0])
    except ShapeUnknownError:
        return None
    if len(x) != 4 or len(y) != 4 or min(x[1:]) <= 0 or (y[1], y[2]) != (2 * x[1], 2 * x[2]):
        return None
    ifm = (x[1], x[2], x[3])
    pool = find_block(accel, "pool", ifm, ifm, (1, 1))
    dw = find_block(accel, "depthwise", ifm, ifm, (2, 2))
    if pool is None or dw is None:
        return None
    cycles = mac_op_cycles(accel, "pool", pool, ifm, ifm, (1, 1))
    return cycles + 4 * mac_op_cycles(accel, "depthwise", dw, ifm, ifm, (2, 2))


def nxp_mean_cycles(graph: Graph, node: Node, accel: str) -> tuple[int, str] | None:
    """(NPU cycles, op class) of a spatial MEAN as NXP's Vela 3.7 runs it (nxp-imx/ethos-u-vela
    lf-6.1.22_2.0.0 ``tflite_graph_optimiser.py`` ``convert_mean_to_depthwise_conv_or_avgpool``):
    one average pool with an H x W kernel when the input and output are quantised alike,
    else one depthwise convolution with an H x W kernel of ones (an IFM taller than 64 read
    as one row of H x W pixels), each costed as :func:`mac_op_cycles` on the block
    :func:`find_block` picks (Arm's 5.2 lowers a MEAN to a chain of smaller depthwise ops,
    which ``efficiency.normalization`` prices). None for another reduction, an unknown shape
    or an accelerator this module does not know."""
    if accel not in ACCEL_CONFIGS or node.op != "reduce_mean" or graph.layout != "NHWC":
        return None
    acts = [t for t in graph.input_tensors(node) if t is not None and not t.is_constant]
    outs = graph.output_tensors(node)
    axes_t = graph.tensors.get(node.inputs[1]) if len(node.inputs) > 1 and node.inputs[1] else None
    values = graph.constant_value(axes_t.name) if axes_t is not None else None
    if not acts or not outs or values is None:
        return None
    try:
        x = static_shape(acts[0])
    except ShapeUnknownError:
        return None
    if len(x) != 4 or min(x) <= 0:
        return None
    axes = sorted({int(a) % 4 for a in values.reshape(-1).tolist()})
    if axes == [1, 2]:
        h, w = x[1], x[2]
    elif axes in ([1], [2]):
        h, w = (x[1], 1) if axes == [1] else (1, x[2])
    else:
        return None
    xq, yq = acts[0].quant, outs[0].quant
    pool = xq is not None and xq == yq
    kind = "pool" if pool else "depthwise"
    ifm = (h, w, x[3])
    if (h > 64 and not pool) or h > 256:
        ifm, kernel = (1, h * w, x[3]), (1, h * w)
    else:
        kernel = (h, w)
    ofm = (1, 1, x[3])
    block = find_block(accel, kind, ifm, ofm, kernel)
    if block is None:
        return None
    return mac_op_cycles(accel, kind, block, ifm, ofm, kernel), (
        "pool" if pool else "depthwise_conv"
    )


_LUT_ACTIVATIONS = {"sigmoid", "tanh", "hard_swish", "hard_sigmoid", "swish", "gelu", "elu"}
_RELU_ACTIVATIONS = {"relu", "relu6", "clip", "leaky_relu"}


def _activation_kind(members: list[Node]) -> str:
    """Vela's output-stage class of a kernel's activation: ``lut`` (table), ``relu`` or
    ``none`` (``EstimateAOCyclesPerElement``'s activationPerfIndex)."""
    act = str(members[0].attrs.get("fused_activation") or "").lower()
    ops = {m.op for m in members[1:]} | ({act} if act else set())
    if ops & _LUT_ACTIVATIONS or act == "relu_n1_to_1":
        return "lut"
    if ops & _RELU_ACTIVATIONS:
        return "relu"
    return "none"


# nxp-imx/ethos-u-vela 3.7.0 architecture_features.py _generate_output_perf_tables, Ethos-U55-256 /
# U65-256: output cycles per element by output_perf_index (npu_performance.py
# _estimate_output_cycles_per_element: 3 = MUL, 5 = "advanced" ADD / SUB, 7 = other ops)
_NXP_EW_OUTPUT_CYCLES = {"mul": 0.375, "add": 0.75, "sub": 0.75}
_NXP_EW_OTHER_CYCLES = 0.25
_NXP_ACTIVATION_CYCLES = {"lut": 1.0, "relu": 0.25, "none": 0.0}


def nxp_elementwise_cycles(graph: Graph, members: list[Node], accel: str) -> int | None:
    """NPU cycles NXP's Vela 3.7 gives an int8 element-wise op on the U65-256 when its maps
    are in SRAM (``npu_performance.py`` ``measure_cycle_cost``): the output stage's cycles
    per element (the larger of the op's and its fused activation's) times the OFM elements,
    the depth rounded up to 16 (NHCWB16 storage). None for another op or accelerator."""
    node = members[0]
    if accel != "ethos-u65-256" or get_handler(node.op) is None:
        return None
    if op_class(node, graph) != "elementwise" or not node.outputs:
        return None
    try:
        y = static_shape(graph.tensors[node.outputs[0]])
    except ShapeUnknownError:
        return None
    if not y:
        return None
    elements = int(np.prod(y[:-1], dtype=np.int64)) * _ceil_to(int(y[-1]), 16)
    # a standalone sigmoid / tanh / hard-swish runs as a table lookup (Vela's LUT activation)
    act = "lut" if node.op in _LUT_ACTIVATIONS else _activation_kind(members)
    cpe = max(_NXP_EW_OUTPUT_CYCLES.get(node.op, _NXP_EW_OTHER_CYCLES), _NXP_ACTIVATION_CYCLES[act])
    return int(np.ceil(cpe * elements))


# nxp-imx/ethos-u-vela 3.7.0 softmax.py get_graph_8bit: of its 31 passes, 25 (PASS 4-28:
# CLZ, shifts and the Newton-Raphson reciprocal) run on the per-row sums, one channel deep;
# six (PASS 0-3, 29, 30: max, subtract with the exp table, shift, sum, scale, shift) on
# the whole map. All but the table lookup are int32 passes at the output stage's 0.625
# cycles per element of a 32-bit binary op (_generate_output_perf_tables index 0, U65-256);
# the subtract takes the table activation's 1.0.
_NXP_SOFTMAX_ROW_PASSES = 25
_NXP_SOFTMAX_MAP_PASSES = 5
_NXP_INT32_CYCLES = 0.625


def nxp_softmax_cycles(graph: Graph, node: Node, accel: str) -> int | None:
    """NPU cycles of an int8 SOFTMAX as NXP's Vela 3.7 lowers it (``softmax.py``
    ``get_graph_8bit``, 31 element-wise passes): rows x 16 elements (one channel, the depth
    rounded up to 16) for each of the 25 row passes at 0.625 cycles, rows x the depth
    rounded up to 16 for each of the five map passes at 0.625 and for the exp-table
    subtract at 1.0. The max and sum passes are pooling and reduce-sum blocks in 3.7, which
    it charges more for thin maps; they count as element-wise passes here. None for another
    op, dtype or accelerator."""
    if accel != "ethos-u65-256" or node.op != "softmax" or not node.inputs:
        return None
    x = graph.tensors.get(node.inputs[0]) if node.inputs[0] else None
    if x is None or x.dtype not in (DType.INT8, DType.UINT8):
        return None
    try:
        shape = static_shape(x)
    except ShapeUnknownError:
        return None
    if not shape:
        return None
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    depth = _ceil_to(int(shape[-1]), 16)
    row_cycles = _NXP_SOFTMAX_ROW_PASSES * rows * 16 * _NXP_INT32_CYCLES
    map_cycles = rows * depth * (_NXP_SOFTMAX_MAP_PASSES * _NXP_INT32_CYCLES + 1.0)
    return int(np.ceil(row_cycles + map_cycles))


def vela_cycle_factor(graph: Graph, members: list[Node], accel: str) -> float | None:
    """ops_eff / ops for a convolution or fully-connected kernel on an Ethos-U: Vela's NPU
    cycles for the layer (:func:`infercast.estimate.ethos_blocks.mac_op_cycles`, on the
    block Vela's search picks) over its MACs at the full MAC rate. None for other ops, or
    when ``accel`` is not a Vela config this module knows."""
    if not accel:
        return None
    found = vela_block(graph, members[0], accel)
    if found is None or found[0] != "conv":
        return None
    kind, block, ifm, ofm, kernel = found
    macs = kernel[0] * kernel[1] * ifm[2] * ofm[0] * ofm[1] * ofm[2]
    cycles = mac_op_cycles(accel, kind, block, ifm, ofm, kernel, _activation_kind(members))
    return cycles * ACCEL_CONFIGS[accel].macs / macs if macs > 0 else None


def vela_npu_cycles(graph: Graph, members: list[Node], accel: str) -> int | None:
    """Vela's NPU cycles for a convolution, FC, depthwise convolution or pool kernel on an
    Ethos-U (:func:`infercast.estimate.ethos_blocks.mac_op_cycles` on the block Vela's own
    search picks); None for other ops, unknown shapes or an accelerator this module does
    not know."""
    if not accel:
        return None
    found = vela_block(graph, members[0], accel)
    if found is None:
        return None
    kind, block, ifm, ofm, kernel = found
    max_pool = members[0].op == "max_pool"
    return mac_op_cycles(
        accel, kind, block, ifm, ofm, kernel, _activation_kind(members), max_pool=max_pool
    )


def ifm_refetch_bytes(
    graph: Graph, node: Node, block_depth: int, burst_bytes: int, accel: str = ""
) -> int:
    """Input feature-map bytes a conv / FC reads beyond reading its input once.

    Arm Vela's Ethos-U model (ethos-u-vela 5.2.0, regor ``ethos_u55_performance.cpp``
    ``MeasureElementAccess``): ``ifmRead = ifmFetch x subkernels x ofmBlockCount``, the OFM
    blocks counted in depth too, so the whole IFM is read once per block of output channels,
    and each block's IFM area includes its halo. With ``accel`` (a Vela accelerator config
    :data:`~infercast.estimate.ethos_blocks.ACCEL_CONFIGS` knows) the block is the one Vela's
    own search picks for the layer (:func:`vela_block`); otherwise the whole IFM is read once
    per ``block_depth`` output channels (depthwise and pooling read it once). A model input
    is also charged whole bursts (:func:`_ifm_burst_factor`)."""
    h = get_handler(node.op)
    if block_depth <= 0 or h is None or node.op == "depthwise_conv":
        return 0
    if not (h.conv_like or h.fc_like):
        return 0
    acts = [t for t in graph.input_tensors(node) if t is not None and not t.is_constant]
    ifm_bytes = acts[0].nbytes if acts else None
    if ifm_bytes is None:
        return 0
    x = acts[0]
    try:
        burst = _ifm_burst_factor(graph, x, burst_bytes)
    except (ShapeUnknownError, ValueError, IndexError, KeyError):
        return 0
    found = vela_block(graph, node, accel) if accel else None
    if found is not None:
        kind, block, ifm, ofm, kernel = found
        brick = 1 if _reads_model_input(graph, x) else 16
        read = x.dtype.nbytes(ifm_read_elements(kind, block, ifm, ofm, kernel, brick))
        return max(0, int(read * burst - ifm_bytes))
    try:
        if h.conv_like:
            c_out = kernel_dims(_conv_weight(graph, node), _weight_layout(node)).out_channels
        else:
            out = graph.output_tensors(node)[0]
            c_out = int(out.shape[-1] or 0) if out.is_static and out.shape else 0
    except (ShapeUnknownError, ValueError, IndexError, KeyError):
        return 0
    reads = -(-c_out // block_depth) if c_out > 0 else 1
    return int(ifm_bytes * (reads * burst - 1))


def vela_linear_maps(
    dev: Graph,
    groups: list[Kernel],
    cpu_nodes: frozenset[int] | None = None,
    part: dict[int, int] | None = None,
) -> frozenset[str]:
    """Feature maps Vela keeps in linear NHWC format instead of 16-channel bricks
    (ethos-u-vela 5.2.0 regor ``scheduler.cpp`` ``UpdateSchedulerTensor``): a concatenation
    whose parts start at a depth offset that is not a multiple of 16
    (``CheckLinearFormatForConcatSplit``, ``CanAliasDepthOffset``), and a map written or read
    with another width or depth than the whole (``Brick format can only be used if both shapes
    have equal W and C``): the output of a PAD Vela runs as a memory copy into the padded
    map (one not merged into the convolution or pool after it), and the input and output of a
    slice (Vela reads the slice in place).

    With ``cpu_nodes`` (the nodes placed on the CPU, given for NXP's Vela 3.7 schedule,
    :func:`nxp_vela_schedule`) a map an NPU op exchanges with a CPU op is linear as well, and
    so is one it exchanges with another NPU partition (:func:`nxp_partitions`: one
    ``ethos-u`` call's output and another's input) and a model output the NPU writes: 3.7's
    ``graph_optimiser_util.check_format_restrictions`` keeps NHCWB16 only for a map whose
    producers and consumers all run on the NPU; it also keeps the OFM of a half-pixel
    RESIZE_BILINEAR linear (its four depthwise convolutions write it with doubled strides).
    ``part``: :func:`nxp_partitions` when computed already."""
    out: set[str] = set()
    if cpu_nodes is not None:
        if part is None:
            part = nxp_partitions(dev, cpu_nodes)
        for n in dev.nodes:
            if n.folded or n.index in cpu_nodes:
                continue
            for o in n.outputs:
                if not o:
                    continue
                away = any(_crosses(part, cpu_nodes, n.index, c) for c in dev.consumers.get(o, ()))
                strided = n.op == "resize" and bool(n.attrs.get("half_pixel_centers"))
                if o in dev.outputs or away or strided:
                    out.add(o)
            for i in n.inputs:
                p = dev.producers.get(i) if i else None
                crossed = p is not None and _crosses(part, cpu_nodes, n.index, p)
                if crossed and not dev.tensors[i].is_constant:
                    out.add(i)
    for k in groups:
        nodes = [dev.nodes[i] for i in k.members]
        if len(nodes) == 1 and nodes[0].op == "pad":
            out.update(o for o in nodes[0].outputs if o)
    for n in dev.nodes:
        if n.op in ("strided_slice", "slice"):
            out.update(o for o in (*n.inputs[:1], *n.outputs) if o)
        elif n.op == "concat":
            acts = [t for t in dev.input_tensors(n) if t is not None and not t.is_constant]
            offset, aligned = 0, True
            for t in acts:
                if offset % 16:
                    aligned = False
                shape = t.shape or ()
                c = shape[-1] if shape else None
                if not isinstance(c, int):
                    aligned = False
                    break
                offset += c
            axis = n.attrs.get("axis", -1)
            rank = len(acts[0].shape or ()) if acts else 0
            if not aligned and axis in (-1, rank - 1):
                out.update(o for o in n.outputs if o)
    return frozenset(out)


def linear_transfer_bytes(
    dev: Graph,
    members: list[Node],
    linear: frozenset[str],
    burst_bytes: int,
    accel: str,
    nxp: bool = False,
) -> int:
    """Feature-map bytes Vela charges beyond the bytes moved when a kernel reads or writes a
    linear (NHWC) map (:func:`vela_linear_maps`): ``EstimateMemoryTransfer`` issues such a
    transfer in bursts of one block depth and charges each burst the memory's maximum burst
    length (:func:`infercast.estimate.ethos_blocks.memory_transfer_factor`). The block is
    the one Vela's search picks (:func:`vela_block`; :func:`elementwise_block` for other
    ops). 0 without ``accel`` or linear maps."""
    if not accel or not linear or burst_bytes <= 0:
        return 0
    node = members[0]
    if node.op in ("strided_slice", "slice"):
        return 0  # Vela reads the slice in place: the op that reads it pays
    acts = [t for t in dev.input_tensors(node) if t is not None and not t.is_constant]
    outs = [t for t in dev.output_tensors(members[-1]) if t is not None]
    if not any(t.name in linear for t in (*acts, *outs)):
        return 0
    found = vela_block(dev, node, accel)
    block: Block | None = found[1] if found is not None else None
    if block is None:
        try:
            y = static_shape(outs[0]) if outs else ()
        except ShapeUnknownError:
            return 0
        if len(y) != 4:
            return 0
        block = elementwise_block(accel, (y[1], y[2], y[3]), binary=len(acts) > 1)
        if block is None:
            return 0
    extra = 0.0
    pairs = [(a, True) for a in acts[:2]] + [(o, False) for o in outs[:1]]
    for t, is_read in pairs:
        if t.name not in linear or not t.nbytes or t.rank != 4:
            continue
        try:
            shape = static_shape(t)
        except ShapeUnknownError:
            continue
        f = memory_transfer_factor(
            is_read, True, t.dtype.nbytes(shape[3]), shape[2], block, burst_bytes, nxp
        )
        extra += t.nbytes * (f - 1.0)
    return int(extra)


def cpu_exchanged_maps(
    dev: Graph,
    members: list[Node],
    cpu_nodes: frozenset[int],
    part: dict[int, int] | None = None,
) -> set[str]:
    """The feature maps kernel ``members`` reads from, or writes for, an op on the CPU: its
    NPU partition's inputs and outputs. NXP's Vela 3.7 leaves them in the arena (DRAM in
    Dedicated_Sram mode): ``scheduler.py`` ``Scheduler.use_fast_storage_for_feature_maps``
    moves to the SRAM only OFMs the partition itself consumes, and the partition's inputs
    are the runtime's arena tensors. A map exchanged with another NPU partition
    (:func:`nxp_partitions`, ``part`` when computed already) is such an input or output
    too."""
    if part is None:
        part = nxp_partitions(dev, cpu_nodes)
    first, last = members[0].index, members[-1].index
    out: set[str] = set()
    for name in members[0].inputs:
        p = dev.producers.get(name) if name else None
        crossed = p is not None and _crosses(part, cpu_nodes, first, p)
        if crossed and not dev.tensors[name].is_constant:
            out.add(name)
    for o in members[-1].outputs:
        if o and any(_crosses(part, cpu_nodes, last, c) for c in dev.consumers.get(o, ())):
            out.add(o)
    return out


def nxp_pass_order(dev: Graph, cpu_nodes: frozenset[int]) -> list[int]:
    """The order NXP's Vela 3.7 runs the nodes of ``dev`` in (indices; folded nodes left
    out), one pass per node. ``pass_packing.py`` ``pack_into_passes`` builds the passes by a
    depth-first search from the model outputs (a node is packed once every reader of each of
    its outputs has been, then its non-constant inputs are searched in turn, and the list is
    reversed); it then moves a CPU pass that reads only model inputs to the top (by operator
    index), and, from the bottom up, moves each CPU pass down to the next CPU pass (or to the
    end) unless an NPU pass between them reads its output, to cut CPU / NPU switches."""
    nodes = {n.index: n for n in dev.nodes if not n.folded}
    graph_outputs = set(dev.outputs)

    def live(t: str) -> bool:
        return bool(t) and not dev.tensors[t].is_constant and dev.producers.get(t) in nodes

    def readers(t: str) -> int:
        own = sum(1 for c in dev.consumers.get(t, ()) if c in nodes)
        return own + (1 if t in graph_outputs else 0)

    seen_t: dict[str, int] = {}
    seen_n: dict[int, int] = {}
    reverse: list[int] = []
    stack: list[Iterator[str]] = []

    def visit(t: str) -> None:
        seen_t[t] = seen_t.get(t, 0) + 1
        if seen_t[t] != readers(t):
            return
        n = nodes[dev.producers[t]]
        outs = [o for o in n.outputs if o]
        if n.index not in seen_n:  # an output nothing reads counts as visited
            seen_n[n.index] = sum(1 for o in outs if readers(o) == 0)
        seen_n[n.index] += 1
        if seen_n[n.index] == len(outs):
            reverse.append(n.index)
            stack.append(iter([i for i in dict.fromkeys(n.inputs) if live(i)]))

    for t in dev.outputs:
        if not live(t):
            continue
        visit(t)
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                stack.pop()
            else:
                visit(nxt)

    def ifms(i: int) -> tuple[str | None, str | None]:
        ins = nodes[i].inputs
        a = ins[0] if ins and ins[0] else None
        b = ins[1] if len(ins) > 1 and ins[1] and not dev.tensors[ins[1]].is_constant else None
        return a, b

    model_inputs = set(dev.inputs)
    top: list[int] = []
    rest: list[int] = []
    for i in reversed(reverse):
        a, b = ifms(i)
        if i in cpu_nodes and a in model_inputs and (b is None or b in model_inputs):
            top.append(i)
        else:
            rest.append(i)
    for c in [i for i in reversed(rest) if i in cpu_nodes]:
        written = {o for o in nodes[c].outputs if o}
        for nxt_i in rest[rest.index(c) + 1 :]:
            if nxt_i in cpu_nodes:
                rest.remove(c)
                rest.insert(rest.index(nxt_i), c)
                break
            if written & set(ifms(nxt_i)):
                break
            if nxt_i == rest[-1]:
                rest.remove(c)
                rest.append(c)
                break
    return sorted(top) + rest


def nxp_partitions(dev: Graph, cpu_nodes: frozenset[int]) -> dict[int, int]:
    """The NPU partition (one ``ethos-u`` operation) of every node not on the CPU, by node
    index. NXP's Vela 3.7 makes each run of NPU passes between CPU passes in its pass order
    one NPU subgraph (``extract_npu_subgraphs.py`` ``extract_subgraph``; the order:
    :func:`nxp_pass_order`): the selfie segmenter's ten CPU pools in a chain give eleven
    ``ethos-u`` calls as in 3.7's output file, CenterNet's CPU dequantizes at its outputs
    one, MoveNet's decode, whose CPU ops the search meets between NPU ops, seven. A map
    one partition writes and another reads is an output of the one and an input of the
    other: it goes through the arena (DRAM), linear. CPU nodes are left out."""
    out: dict[int, int] = {}
    part = -1
    after_cpu = True
    for i in nxp_pass_order(dev, cpu_nodes):
        on_cpu = i in cpu_nodes
        if not on_cpu:
            if after_cpu:
                part += 1
            out[i] = part
        after_cpu = on_cpu
    return out


def nxp_partition_copies(
    dev: Graph,
    groups: list[Kernel],
    cpu_nodes: frozenset[int],
    part: dict[int, int] | None = None,
) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """(copies in, copies out): bytes per kernel anchor of the maps one NPU partition
    (:func:`nxp_partitions`) writes and another reads, which the placement's crossings (NPU
    <-> CPU) leave out. On the i.MX 93 each ``ethos-u`` call is its own delegate kernel, and
    its Eval (nxp-imx/tflite-ethosu-delegate-imx ``ethosu_delegate.cc``, likewise
    tensorflow-imx ``kernels/ethos_u/ethosu.cc``) memcpy's every input tensor into the
    driver's arena buffer before the call and every output tensor out of it after: such a
    map is copied out once after the partition that writes it (charged to the kernel that
    writes it; not again where a CPU op or the model's output also takes it, a crossing the
    placement states) and in again before each partition that reads it (charged to the
    first kernel there that reads it). ``part``: :func:`nxp_partitions` when computed
    already."""
    if part is None:
        part = nxp_partitions(dev, cpu_nodes)
    member_of = {i: k.anchor for k in groups for i in k.members}
    copy_in: dict[int, list[int]] = {}
    copy_out: dict[int, list[int]] = {}
    for n in dev.nodes:
        if n.index not in part:
            continue
        for o in n.outputs:
            t = dev.tensors.get(o) if o else None
            if t is None or t.is_constant or not t.nbytes:
                continue
            readers: dict[int, int] = {}
            for c in sorted(dev.consumers.get(o, ())):
                q = part.get(c)
                if q is not None and q != part[n.index] and c in member_of:
                    readers.setdefault(q, member_of[c])
            if not readers:
                continue
            to_cpu = any(c in cpu_nodes for c in dev.consumers.get(o, ()))
            if n.index in member_of and not to_cpu and o not in dev.outputs:
                copy_out.setdefault(member_of[n.index], []).append(t.nbytes)
            for anchor in readers.values():
                copy_in.setdefault(anchor, []).append(t.nbytes)
    return copy_in, copy_out


def _crosses(part: dict[int, int], cpu_nodes: frozenset[int], a: int, b: int) -> bool:
    """Nodes ``a`` (on the NPU) and ``b`` run in different calls: ``b`` on the CPU, or in
    another NPU partition (:func:`nxp_partitions`)."""
    return b in cpu_nodes or (b in part and part[b] != part.get(a, -1))


def _cached_act_memory(
    target: Target, dev: Graph, members: list[Node], act_bytes: int
) -> str | None:
    """The memory that caches this kernel's feature maps (``caches = ["activations"]``).

    Arm Vela's Dedicated_Sram mode keeps the arena in DRAM and cascades chains of ops through
    the SRAM cache in stripes (ethos-u-vela 5.2.0 ``cascade_builder.py``; vela.ini
    ``[Memory_Mode.Dedicated_Sram]`` ``cache_mem_area=Axi0``): a feature map read by one op
    only is produced and consumed in SRAM whatever its size. A model input, and a map read
    by several ops (a residual or concatenated branch) that does not fit the cache whole,
    are read from the arena."""
    cache = next((m for m in target.memories.values() if "activations" in m.caches), None)
    if cache is None:
        return None
    for name in members[0].inputs:
        if not name or dev.tensors[name].is_constant:
            continue
        if _reads_model_input(dev, dev.tensors[name]):
            return None
        if len(dev.consumers.get(name, ())) > 1:
            return None
    for o in members[-1].outputs:
        if o and (o in dev.outputs or len(dev.consumers.get(o, ())) > 1):
            return None
    if act_bytes > cache.size_bytes:
        return None
    return cache.name


def _separate_ports(target: Target, a_mem: str | None, w_mem: str | None) -> bool:
    if a_mem is None or w_mem is None:
        return False
    return target.memories[a_mem].port != target.memories[w_mem].port


def _conv_out_elements(graph: Graph, node: Node) -> int:
    """Output elements of a conv / depthwise conv (0 for other ops or an unknown shape)."""
    if node.op not in ("conv", "depthwise_conv") or not node.outputs:
        return 0
    return graph.tensors[node.outputs[0]].elements or 0


_BYTE_INTS = (np.dtype(np.int8), np.dtype(np.uint8))


def weight_magnitude_gini(graph: Graph, node: Node) -> float | None:
    """Gini coefficient of the magnitudes of a per-channel conv's dequantised weights, as
    VeriSilicon's OpenVX driver computes it to decide whether to re-quantise them per
    tensor (``vxoGraphOptimization_pcq_optimizeEntropy``, driver 6.4.3.p0: magnitudes below
    1e-4 left out, sorted ascending, ``(1 + sum_j (2j - n - 1) x_j) / (n sum x)``); None
    when the weights' values are not in the file or none is above 1e-4."""
    w = next((t for t in weight_tensors(graph, node) if t.quant and t.quant.per_channel), None)
    if w is None or w.quant is None or w.quant.axis is None:
        return None
    q = graph.constant_value(w.name)
    if q is None or q.ndim <= w.quant.axis:
        return None
    shape = [1] * q.ndim
    shape[w.quant.axis] = -1
    scale = np.asarray(w.quant.scale, dtype=np.float64)
    zero = np.asarray(w.quant.zero_point, dtype=np.int32)
    channels = q.shape[w.quant.axis]
    if scale.size != channels or zero.size not in (1, channels) or q.dtype not in _BYTE_INTS:
        return None  # the rule reads 8-bit weights (a fuzzed file may hold its int32 bias)
    # The weights are integers: each channel holds at most 256 distinct magnitudes, so the
    # sorted sum runs over (magnitude, count) groups, not over every weight. A group of m
    # equal values x after a smaller ones adds x * m * (2a + m - n) to sum_j (2j - n - 1) x_j.
    steps = np.abs(q.astype(np.int32) - (zero.reshape(shape) if zero.size > 1 else zero))
    per_channel = np.moveaxis(steps, w.quant.axis, 0).reshape(channels, -1)
    width = int(per_channel.max(initial=0)) + 1
    if width > 512:  # |q - zero point| of 8-bit values: a hostile zero point, not weights
        return None
    rows = np.arange(channels, dtype=np.int32)[:, None] * width
    counts = np.bincount((per_channel + rows).ravel(), minlength=channels * width)
    counts = counts.reshape(channels, width)
    values = scale[:, None] * np.arange(width, dtype=np.float64)[None, :]
    keep = (counts > 0) & (values >= 1e-4)
    x, m = values[keep], counts[keep].astype(np.float64)
    order = np.argsort(x, kind="stable")
    x, m = x[order], m[order]
    n = m.sum()
    if n == 0:
        return None
    before = np.cumsum(m) - m
    return float((1.0 + np.sum(x * m * (2.0 * before + m - n))) / (n * np.dot(x, m)))


def per_channel_weights(graph: Graph, node: Node) -> bool:
    """True when ``node`` is a weighted op whose weights carry one scale per channel."""
    if node.op not in WEIGHTED_OPS:
        return False
    return any(t.quant is not None and t.quant.per_channel for t in weight_tensors(graph, node))


def memory_for(target: Target, holds: tuple[str, ...]) -> str | None:
    for kind in holds:
        for m in target.memories.values():
            if kind in m.holds:
                return m.name
    return None


def _activation_memory(target: Target, on_acc: bool) -> str | None:
    """The memory whose rate prices a kernel's activation traffic: on the accelerator the
    one holding ``layer_io`` (else ``activations``). A streaming weight cache that also
    keeps the largest layer's activations (the Edge TPU's parameter cache) only gives them
    room: their traffic stays priced at the ``activations`` memory, the rate the Edge TPU
    fits were made with."""
    if on_acc:
        for m in target.memories.values():
            if "layer_io" in m.holds and m.on_overflow != "stream":
                return m.name
    return memory_for(target, ("activations",))


# --------------------------------------------------------------------------- #
# The work list
# --------------------------------------------------------------------------- #


def _groups(dev: Graph, report: PlacementReport, fuse: bool) -> tuple[list[Kernel], set[int]]:
    """The kernels of ``dev`` (fused groups, or one per op) and the elided transposes."""
    proc = {ly.index: ly.processor for ly in report.layers if not ly.folded}
    unit = {ly.index: ly.unit for ly in report.layers if not ly.folded}
    if not fuse:
        return [Kernel(n.index, (n.index,)) for n in dev.nodes if not n.folded], set()
    elided = elided_transposes(dev)
    pl = report.target.placement
    gate = pl.gated_activation == "fused"
    acts = frozenset(pl.accelerator_activations)
    groups = kernels(dev, proc, elided, pl.accelerator_fuses_residual, gate, unit, acts)
    return groups, elided


def builtin_int8(target: Target, unit: str, graph: Graph, node: Node) -> bool:
    """``node`` is an int8 operator that ``unit`` runs on TFLite's built-in kernels
    (``int8_kernels = "builtin"``)."""
    u = target.units.get(unit)
    if u is None or u.int8_kernels != "builtin" or graph.format != "tflite":
        return False
    if node.op in ("quantize", "dequantize"):  # float <-> int8 at the model's edges
        ends = [graph.tensors[t].dtype for t in (*node.inputs[:1], *node.outputs[:1]) if t]
        return any(d in (DType.INT8, DType.UINT8) for d in ends)
    dt = compute_dtype(graph, node)
    return dt is not None and dtype_key(dt) == "int8"


def _builtin_int8_cost(graph: Graph, node: Node) -> float:
    """ADD elements per output element of a built-in int8 element-wise kernel
    (:data:`BUILTIN_INT8_ELEMENT_COST`; a QUANTIZE from an integer type is a requantisation,
    one ADD element)."""
    if node.op == "quantize" and node.inputs and not graph.tensors[node.inputs[0]].dtype.is_float:
        return 1.0
    return BUILTIN_INT8_ELEMENT_COST.get(node.op, 1.0)


def _ceil_log2(n: int) -> int:
    return max(0, int(n - 1).bit_length())


def builtin_int8_threads(graph: Graph, node: Node, rows: int, depth: int) -> int:
    """The most threads TFLite's built-in int8 kernel for ``node`` runs on (0: no limit
    known), from the size of its work; ``rows`` / ``depth`` are :func:`gemm_rows` /
    :func:`reduction_depth` (the GEMM's output pixels or batch rows, its dot-product length).

    * CONV_2D / FULLY_CONNECTED multiply through ``cpu_backend_gemm`` (NXP's BSPs build
      TFLite with ``TFLITE_ENABLE_RUY=on``, nxp-imx/meta-imx ``tensorflow-lite_2.15.0.bb``).
      A matrix x vector product (one output pixel or batch row, a dot product of 8 or more)
      takes TFLite's custom GEMV (``cpu_backend_gemm_custom_gemv.h``), whose
      ``LegacyHowManyThreads<4>`` gives at most one thread per 4 output channels and per
      64 Ki multiply-adds; any other product goes to ruy, whose ``GetTentativeThreadCount``
      (ruy ``trmul.cc``) gives ``2 ** (ceil_log2(channels) + ceil_log2(pixels) +
      ceil_log2(depth) - 15)`` threads.
    * DEPTHWISE_CONV_2D (``depthwiseconv_multithread.h``): one thread per 8 Ki multiplies
      (``HowManyConvThreads``: output elements x kernel taps / 8192), split over the output
      rows, so at most one thread per output row.
    """
    if node.op not in ("conv", "fully_connected", "depthwise_conv"):
        return 0
    try:
        out = static_shape(graph.output_tensors(node)[0])
    except (ShapeUnknownError, IndexError):
        return 0
    if not out or min(out) <= 0:
        return 0
    elements = int(np.prod(out, dtype=np.int64))
    if node.op == "depthwise_conv":
        try:
            taps = kernel_dims(_conv_weight(graph, node), _weight_layout(node)).spatial_size
        except (ShapeUnknownError, ValueError, IndexError, KeyError):
            return 0
        n = max(1, elements * taps // 8192)
        return min(n, out[1]) if len(out) == 4 and out[0] == 1 else n
    if rows <= 0 or depth <= 0:
        return 0
    channels = elements // rows
    if rows == 1 and depth >= 8 and channels >= 4:
        return max(1, min(channels // 4, channels * depth // 65536))
    return 1 << max(0, _ceil_log2(channels) + _ceil_log2(rows) + _ceil_log2(depth) - 15)


def is_serial(target: Target, unit: str, graph: Graph, node: Node) -> bool:
    """``node`` is one of ``unit``'s ``serial_ops`` (by op name, or ``op:dtype``)."""
    u = target.units.get(unit)
    if u is None or not u.serial_ops:
        return False
    dt = compute_dtype(graph, node)
    return node.op in u.serial_ops or (
        dt is not None and f"{node.op}:{dtype_key(dt)}" in u.serial_ops
    )


def split_serial(
    dev: Graph, report: PlacementReport, target: Target, groups: list[Kernel]
) -> list[Kernel]:
    """``groups`` with every serial op (:func:`is_serial`) cut out as a kernel of its own,
    and what followed it in its group as another: the runtime runs it apart (a delegate
    partition ends before it and a new one starts after it)."""
    unit = {ly.index: ly.unit for ly in report.layers}
    nodes = {n.index: n for n in dev.nodes}
    out: list[Kernel] = []
    for k in groups:
        if len(k.members) == 1 or not any(
            is_serial(target, unit.get(i, ""), dev, nodes[i]) for i in k.members[1:]
        ):
            out.append(k)
            continue
        run: list[int] = []
        for i in k.members:
            if is_serial(target, unit.get(i, ""), dev, nodes[i]):
                if run:
                    out.append(Kernel(run[0], tuple(run)))
                out.append(Kernel(i, (i,)))
                run = []
            else:
                run.append(i)
        if run:
            out.append(Kernel(run[0], tuple(run)))
    return out


def _transfers(
    report: PlacementReport, groups: list[Kernel], *, readback: bool = False
) -> dict[int, list[int]]:
    """Crossing bytes per kernel anchor: charged to the receiving layer, model outputs to
    their producer; the accelerator -> CPU crossings where ``readback``, the others where
    not."""
    member_of = {i: k.anchor for k in groups for i in k.members}
    out: dict[int, list[int]] = {}
    for c in report.crossings:
        if (c.source == "accelerator" and c.destination == "cpu") != readback:
            continue
        at = min(c.consumers) if c.consumers else c.producer
        if at is not None and at in member_of:
            out.setdefault(member_of[at], []).append(c.bytes or 0)
    return out


class _StreamingCaches:
    """Weight caches that stream what they cannot hold (``on_overflow = "stream"``): the
    cumulative unique weights in execution order decide what is streamed. What else the
    memory holds (the largest layer's activations, ``layer_io``) is taken off the room for
    weights first."""

    def __init__(self, target: Target, report: PlacementReport) -> None:
        self.mems = {m.name: m for m in target.memories.values() if m.on_overflow == "stream"}
        self.used = dict.fromkeys(self.mems, 0)
        self.reserved = {name: _non_weight_bytes(report, name) for name in self.mems}
        self.room = {
            name: max(m.size_bytes - self.reserved[name], 0) for name, m in self.mems.items()
        }
        self.seen: set[str] = set()

    def take(self, weights: Mapping[str, int], memory: str | None) -> tuple[int, int]:
        """(bytes read from ``memory``, bytes streamed) of a kernel's weights; a weight
        shared by several kernels is read once per inference."""
        read = streamed = 0
        for root, nb in weights.items():
            if root in self.seen:
                continue
            self.seen.add(root)
            if memory in self.mems:
                cap = self.room[memory]
                fits = max(min(nb, cap - self.used[memory]), 0)
                self.used[memory] += nb
                streamed += nb - fits
                read += fits
            else:
                read += nb
        return read, streamed

    def notes(self) -> list[str]:
        return [
            f"{name}: {self.used[name] - self.room[name]} weight bytes beyond its "
            f"{self.room[name]} bytes are streamed over the link every inference"
            + (
                f" (its {mem.size_bytes} bytes less {self.reserved[name]} bytes it keeps of "
                "the largest layer's activations)"
                if self.reserved[name]
                else ""
            )
            + (
                "; the device's compiler sets the size per model: state the bytes it reports "
                f"cached as memories.{name}.size_bytes, with size_varies = false, in a target "
                "file that extends this one, or pass the compiled model (--edgetpu-compiled)"
                if mem.size_varies
                else ""
            )
            for name, mem in self.mems.items()
            if self.used[name] > self.room[name]
        ]


def _non_weight_bytes(report: PlacementReport, memory: str) -> int:
    """Bytes of ``memory`` that the placement's fit gives to what is not weights (the
    largest layer's activations, ``layer_io``): no room for weights there."""
    f = report.fit.get(memory)
    if f is None:
        return 0
    weights = ("weights_bytes", "accelerator_weights_bytes")
    return sum(v for k, v in f.parts.items() if k not in weights)


def _kernel_io(dev: Graph, k: Kernel, members: list[Node]) -> tuple[int, int, dict[str, int], bool]:
    """(activation bytes, output bytes, weights root -> bytes, sizes known) of kernel ``k``:
    activations read from outside the group, outputs read outside it (or model outputs);
    an activation of unknown size counts 0 bytes and makes the sizes unknown."""
    inside = {o for n in members for o in n.outputs if o}
    act_in: dict[str, int | None] = {}
    weights: dict[str, int] = {}
    for n in members:
        wts = weight_tensors(dev, n)
        wnames = {t.name for t in wts}
        for t in wts:
            weights[t.derived_from or t.name] = t.nbytes or 0
        for name in n.inputs:
            if name and name not in inside and name not in wnames:
                t = dev.tensors[name]
                if not t.is_constant:
                    act_in[name] = t.nbytes
    act_out: dict[str, int | None] = {o: dev.tensors[o].nbytes for o in members[-1].outputs if o}
    for n in members[:-1]:
        for o in n.outputs:
            if o and (
                o in dev.outputs or any(c not in k.members for c in dev.consumers.get(o, ()))
            ):
                act_out[o] = dev.tensors[o].nbytes
    known = all(v is not None for v in (*act_in.values(), *act_out.values()))
    out_bytes = sum(v or 0 for v in act_out.values())
    act_bytes = sum(v or 0 for v in act_in.values()) + out_bytes
    if relabels_input(dev, members[0]) and len(members) == 1:  # no copy in ORT / TFLite
        act_bytes = 0
    return act_bytes, out_bytes, weights, known


def _arithmetic(
    dev: Graph, members: list[Node], cost: Mapping[int, LayerCost]
) -> tuple[float, bool]:
    """(ops, known) of a kernel: its members' FLOPs; a copy counts one op per element written
    (so that efficiency.movement is the copy throughput)."""
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
    anchor = members[0]
    relabel = relabels_input(dev, anchor)
    if op_class(anchor, dev) in ("movement", "resample") and known and ops == 0 and not relabel:
        ops = float(sum((dev.tensors[o].elements or 0) for o in anchor.outputs if o))
    return ops, known


@dataclass
class _Context:
    """What every kernel of one forecast shares."""

    dev: Graph
    target: Target
    cost: dict[int, LayerCost]
    place_of: dict[int, LayerPlacement]
    nodes: dict[int, Node]
    transfers: dict[int, list[int]]
    readbacks: dict[int, list[int]]
    caches: _StreamingCaches
    elided: set[int]
    missing_peak: set[str]
    linear: frozenset[str] = frozenset()
    """Feature maps Vela stores linear (NHWC) rather than in 16-channel bricks
    (:func:`vela_linear_maps`); empty for a target that does not model Vela."""
    cpu_nodes: frozenset[int] | None = None
    """The nodes on the CPU, for a target with NXP's Vela schedule (:func:`_cpu_nodes`)."""
    partitions: dict[int, int] | None = None
    """The NPU partition of each NPU node under NXP's Vela schedule (:func:`nxp_partitions`)."""


def _peak_dtype(ctx: _Context, anchor: Node, unit: str, ops: float) -> str | None:
    dt = compute_dtype(ctx.dev, anchor)
    if ops <= 0 or dt is None:
        return None
    key, exact = peak_key(ctx.target, unit, dtype_key(dt))
    if key is None:
        raise EstimateError(
            f"{ctx.target.name}: unit '{unit}' states no peak_<dtype>_ops_per_s",
            "add one to the target file",
        )
    if not exact:
        ctx.missing_peak.add(f"{unit}: {dtype_key(dt)} computed at the {key} peak")
    return key


def _work_of(ctx: _Context, k: Kernel) -> Work:
    target, dev = ctx.target, ctx.dev
    anchor = ctx.nodes[k.anchor]
    lp = ctx.place_of[k.anchor]
    on_acc = lp.processor == "accelerator"
    members = [ctx.nodes[i] for i in k.members]
    act_bytes, out_bytes, weights, sizes_known = _kernel_io(dev, k, members)
    w_mem = memory_for(target, ("accelerator_weights", "weights") if on_acc else ("weights",))
    a_mem = _activation_memory(target, on_acc)
    refetch = arena = 0
    accel, nxp = _vela_accel(target), nxp_vela_schedule(target)
    block_depth = target.units[lp.unit].ifm_refetch_depth
    if on_acc and block_depth > 0:
        cached = _cached_act_memory(target, dev, members, act_bytes)
        arena_maps = (
            cpu_exchanged_maps(dev, members, ctx.cpu_nodes, ctx.partitions)
            if ctx.cpu_nodes
            else set()
        )
        a_mem = cached or a_mem
        burst = _burst_bytes(target.memories[a_mem]) if a_mem else 0
        refetch = ifm_refetch_bytes(dev, anchor, block_depth, burst, accel)
        if cached and arena_maps and w_mem and memory_for(target, ("activations",)) == w_mem:
            # the partition's inputs / outputs go through the arena, the rest stays cached
            arena = sum(dev.tensors[t].nbytes or 0 for t in arena_maps)
            act_bytes -= arena
            linear = ctx.linear - arena_maps
            arena_burst = _burst_bytes(target.memories[w_mem])
            arena += linear_transfer_bytes(
                dev, members, ctx.linear & arena_maps, arena_burst, accel, nxp
            )
        else:
            linear = ctx.linear
        refetch += linear_transfer_bytes(dev, members, linear, burst, accel, nxp)
    w_bytes, streamed = ctx.caches.take(weights, w_mem)
    ops, known = _arithmetic(dev, members, ctx.cost)
    factor = shape_factor(dev, anchor, target, lp.unit) * note_slowdown(lp, target)
    cycles = vela_npu_cycles(dev, members, accel) if on_acc else None
    lowered = None
    lowered_cls = "depthwise_conv"
    ew = False
    if on_acc and cycles is None and nxp:
        lowered = nxp_resize_cycles(dev, anchor, accel)
        mean = nxp_mean_cycles(dev, anchor, accel) if lowered is None else None
        if mean is not None:
            lowered, lowered_cls = mean
        cycles = lowered
        if cycles is None:
            cycles = nxp_elementwise_cycles(dev, members, accel)
            if cycles is None:
                cycles = nxp_softmax_cycles(dev, anchor, accel)
                if cycles is not None:  # a chain of element-wise passes
                    lowered, lowered_cls = cycles, "elementwise"
            ew = cycles is not None
    unit = target.units[lp.unit]
    if cycles is not None and ops > 0 and unit.macs_per_cycle:
        factor = cycles * 2.0 * unit.macs_per_cycle / ops
    known = known and sizes_known
    # NXP's Vela runs a half-pixel bilinear resize as depthwise convolutions, a MEAN as one
    cls = lowered_cls if lowered is not None else op_class(anchor, dev)
    has_acc = target.placement.accelerator is not None
    serial = is_serial(target, lp.unit, dev, anchor)
    builtin = builtin_int8(target, lp.unit, dev, anchor)
    if builtin and cls == "elementwise" and ops > 0 and not serial:
        elements = sum(dev.tensors[o].elements or 0 for o in anchor.outputs if o)
        factor = elements * _builtin_int8_cost(dev, anchor) / ops
    one_thread = serial or (builtin and anchor.op not in BUILTIN_INT8_THREADED)
    gemm = cls in ("conv", "linalg")
    depth = reduction_depth(dev, anchor) if gemm else 0
    rows = gemm_rows(dev, anchor) if gemm else 0
    pointwise = cls == "conv" and is_pointwise(dev, anchor)
    per_channel = per_channel_weights(dev, anchor)
    return Work(
        unit=lp.unit,
        op_class=cls,
        dtype=_peak_dtype(ctx, anchor, lp.unit, ops),
        ops=ops,
        shape_factor=factor,
        reduction_depth=depth,
        act_bytes=act_bytes,
        weight_bytes=w_bytes,
        streamed_bytes=streamed,
        act_memory=a_mem,
        weight_memory=w_mem,
        transfers=tuple(ctx.transfers.get(k.anchor, ())),
        readbacks=tuple(ctx.readbacks.get(k.anchor, ())),
        rewrite_bytes=out_bytes if lp.placement == "partial" else None,
        fallback_unit=target.placement.fallback,
        fallback_memory=memory_for(target, ("activations",)),
        on_fallback=has_acc and lp.processor == "cpu",
        known=known,
        elided=len(members) == 1 and k.anchor in ctx.elided,
        per_channel=per_channel,
        per_channel_out_elements=_conv_out_elements(dev, anchor) if per_channel else 0,
        parallel=cls in PARALLEL_CLASSES and not one_thread,
        serial=serial,
        broadcast_bytes=sum(broadcast_bytes(dev, n) for n in members),
        refetch_bytes=refetch,
        arena_bytes=arena,
        separate_ports=_separate_ports(target, a_mem, w_mem),
        pointwise=pointwise,
        gemm_rows=rows,
        im2col_bytes=rows * depth if builtin and anchor.op == "conv" and not pointwise else 0,
        max_threads=builtin_int8_threads(dev, anchor, rows, depth) if builtin else 0,
        npu_cycles=ew,
        instructions=_instructions(target, lp.unit, dev, members),
    )


def _instructions(target: Target, unit: str, graph: Graph, members: Sequence[Node]) -> float:
    """Instructions of a kernel on a unit that states its Arm ``isa``: the sum over its
    members (each a TFLite built-in int8 operator, or TFLite's SSD post-processing, whose
    scalar C++ is the same on every CPU back-end) of :mod:`infercast.estimate.aarch64`'s
    prediction; 0 where the unit states none or any member is not in the table."""
    isa = target.units[unit].isa
    if not isa:
        return 0.0
    total = 0.0
    for n in members:
        if n.op != "detection_postprocess" and not builtin_int8(target, unit, graph, n):
            return 0.0
        v = table().predict(isa, op_shape(graph, n))
        if v is None:
            return 0.0
        total += v
    return total


def permute_works(
    dev: Graph, report: PlacementReport, target: Target, works: list[tuple[Kernel, Work]]
) -> list[tuple[Kernel, Work]]:
    """``works`` with the layout permutes of :func:`~infercast.estimate.layout.
    layout_permutes` attached to the kernels they are charged to (:attr:`Work.permutes`):
    each a ``movement`` kernel on the accelerator that reads and writes the tensor once."""
    pl = target.placement
    if not pl.channels_first_ops or pl.accelerator is None:
        return works
    on_acc = {ly.index: ly.processor == "accelerator" for ly in report.layers}
    found = layout_permutes(
        dev, on_acc, frozenset(pl.channels_first_ops), frozenset(pl.layout_reset_ops)
    )
    if not found:
        return works
    kernel_of = {m: i for i, (k, _w) in enumerate(works) for m in k.members}
    extra: dict[int, list[Work]] = {}
    a_mem = _activation_memory(target, True)
    for at, name in found:
        i = kernel_of.get(at)
        t = dev.tensors[name]
        key, _exact = peak_key(target, pl.accelerator, dtype_key(t.dtype))
        if i is None or t.elements is None or t.nbytes is None or key is None:
            continue
        extra.setdefault(i, []).append(
            Work(
                unit=pl.accelerator,
                op_class="movement",
                dtype=key,
                ops=float(t.elements),
                shape_factor=1.0,
                act_bytes=2 * t.nbytes,
                weight_bytes=0,
                streamed_bytes=0,
                act_memory=a_mem,
                weight_memory=None,
            )
        )
    return [
        (k, replace(w, permutes=tuple(extra[i])) if i in extra else w)
        for i, (k, w) in enumerate(works)
    ]


def _cpu_nodes(report: PlacementReport, target: Target) -> frozenset[int] | None:
    """The nodes placed on the CPU, for a target with NXP's Vela schedule; else None."""
    if not nxp_vela_schedule(target):
        return None
    return frozenset(ly.index for ly in report.layers if ly.processor == "cpu")


def build_works(
    dev: Graph, analysis: Analysis, report: PlacementReport, target: Target, fuse: bool
) -> tuple[list[tuple[Kernel, Work]], list[str]]:
    """One :class:`Work` per kernel of the device graph ``dev``, and the notes it raised."""
    groups, elided = _groups(dev, report, fuse)
    groups = split_serial(dev, report, target, groups)
    cpu = _cpu_nodes(report, target)
    part = nxp_partitions(dev, cpu) if cpu is not None else None
    ctx = _Context(
        dev=dev,
        target=target,
        cost={ly.index: ly for ly in analysis.main_layers()},
        place_of={ly.index: ly for ly in report.layers},
        nodes={n.index: n for n in dev.nodes},
        transfers=_transfers(report, groups),
        readbacks=_transfers(report, groups, readback=True),
        caches=_StreamingCaches(target, report),
        elided=elided,
        missing_peak=set(),
        linear=vela_linear_maps(dev, groups, cpu, part) if _vela_accel(target) else frozenset(),
        cpu_nodes=cpu,
        partitions=part,
    )
    if cpu is not None:
        copy_in, copy_out = nxp_partition_copies(dev, groups, cpu, part)
        for anchor, sizes in copy_in.items():
            ctx.transfers.setdefault(anchor, []).extend(sizes)
        for anchor, sizes in copy_out.items():
            ctx.readbacks.setdefault(anchor, []).extend(sizes)
    out = [(k, _work_of(ctx, k)) for k in groups]
    out = permute_works(dev, report, target, out)
    if ctx.partitions:
        opened: set[int] = set()
        for i, (k, w) in enumerate(out):
            p = next((ctx.partitions[m] for m in k.members if m in ctx.partitions), None)
            if p is None or p in opened:
                continue
            if opened:
                out[i] = (k, replace(w, invokes=1))
            opened.add(p)
    notes = [f"no peak stated for the dtype; {m}" for m in sorted(ctx.missing_peak)]
    return out, notes + ctx.caches.notes()
