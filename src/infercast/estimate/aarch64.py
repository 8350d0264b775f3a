"""Instructions that TFLite's built-in int8 kernels execute on an AArch64 core.

Where a CPU unit runs TFLite's built-in int8 kernels (``int8_kernels = "builtin"``, NXP's
i.MX BSPs) and states its Arm ISA level (``isa``), a kernel's time is the instructions it
executes over the core's instruction rate (``instructions_per_cycle`` x clock), not its
MACs over a roofline: the same conv costs 0.09 instructions a MAC on a 1x1 ruy GEMM with
deep channels and 0.5 on a 16-channel one, a 3x3 depthwise conv 0.67 on TFLite's aarch64
3x3 kernel and 1.3-1.8 on its general one.

The instruction counts come from the kernels themselves: every operator of a set of int8
models, cut into a one-operator model, run by LiteRT's aarch64 wheel (built-in op resolver,
one thread) under QEMU's user-mode emulator with an instruction-counting plugin, for two
ISA levels: ``armv8.2-dotprod`` (QEMU ``-cpu cortex-a76``: SDOT / UDOT, as the Cortex-A55)
and ``armv8.0`` (``-cpu cortex-a53``: no dot product; ruy and the depthwise kernels take
their plain NEON paths). ``bench/bench_aarch64_insns.py`` measures them and fits, per kind
of kernel below, a non-negative linear model of the counts in the kernel's sizes; the
coefficients are the data file ``data/aarch64-builtin-int8.json``, with the models they were
fitted on and their error on models never in the fit.

Kinds and their terms (each model also has a constant: the kernel's per-call work):

* ``conv`` (CONV_2D, ruy GEMM): M output pixels, N output channels, K = taps x input
  channels. MACs over ruy's padded blocks (M, N to 8 and K to 4 for its dot-product
  kernel; M, N to 4 and K to 16 for its plain NEON one: both terms, the fit keeps what the
  ISA's counts need), M x N (the output stage's requantisation), M x K (packing the
  activations), and for every conv but a 1x1 stride-1 one the im2col buffer
  (``optimized_integer_ops/conv.h``): its M x K bytes and its M x taps copies of one
  pixel's input channels.
* ``depthwise_conv:fast3x3`` / ``depthwise_conv:general`` (DEPTHWISE_CONV_2D): TFLite takes
  its aarch64 3x3 kernel (``depthwiseconv_uint8_3x3_filter.h``) only where
  ``Fast3x3FilterKernelSupported`` holds (:func:`fast_3x3_depthwise`); MACs and output
  elements, plus output rows x channels on the general path.
* ``fully_connected``, ``conv_transpose``: MACs and output elements (and input elements).
* ``max_pool`` / ``avg_pool``: output elements x window taps, output elements.
* ``mean:hw`` (a 4-D map averaged over height and width into a 4-D output: the optimized
  int8 kernel) / ``mean:general`` (any other MEAN, a classifier's pool that drops the
  shape included: the reference kernel, ~170x the instructions): input and output
  elements.
* a binary element-wise op (ADD, SUB, MUL, ...): output elements; one whose inputs differ
  in shape is its own kind (``ADD:broadcast``).
* data movement (CONCATENATION, SPLIT, TRANSPOSE, PAD, STRIDED_SLICE, ...): output
  elements and the contiguous runs copied (:data:`MOVEMENT`).
* every other kernel (activations, resize, softmax, the float <-> int8 conversions):
  output and input elements, per TFLite operator.
* ``detection:fast`` / ``detection:regular``: TFLite's SSD post-processing
  (``TFLite_Detection_PostProcess``, ``kernels/detection_postprocess.cc``: scalar C++, float
  whatever the model's type, so it is priced here even though it is not an int8 kernel). For
  N anchors, C classes, D kept boxes: fast NMS (the exporters' default) scans each anchor's
  C scores for its best (N x C, by ``1 + log2`` of the classes kept per anchor), decodes N
  boxes, sorts the N best scores (N log2 N) and compares each of at most D kept boxes with
  every remaining one (D x N IoUs, the worst case, which random and real scores both reach
  since every anchor passes the exporters' score threshold); regular NMS does that per class
  (C x N, C x N log2 N, C x min(per-class detections, N) x N). Uint8 / int8 inputs add their
  dequantisation (N x (C + 1) scores and N box codes).

A kernel of a kind the table lacks, or whose shapes are not static, gets no instruction
count (:meth:`Table.predict` returns None), and the forecast costs it by its op class's
efficiency as a unit without an ``isa`` does.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from infercast.ir.graph import Graph, Node
from infercast.ir.views import same_pads

ISAS = ("armv8.0", "armv8.2-dotprod")
"""ISA levels with a table: plain ARMv8.0 NEON (Cortex-A53, A57, A72) and ARMv8.2 with the
dot-product instructions (Cortex-A55, A75, A76, A78)."""

DATA_FILE = "aarch64-builtin-int8.json"


@dataclass(frozen=True)
class OpShape:
    """What the instruction model reads of one operator: its TFLite name, the static shapes
    and dtypes of its inputs and outputs, and its attributes."""

    native: str
    ins: Sequence[Sequence[int | None] | None]
    outs: Sequence[Sequence[int | None] | None]
    attrs: Mapping[str, Any] = field(default_factory=dict)
    consts: Mapping[int, Sequence[int]] = field(default_factory=dict)
    """Values of the small integer constant inputs, by input position (a TRANSPOSE's
    permutation, a SPLIT's axis, a STRIDED_SLICE's strides)."""
    in_dtypes: Sequence[str] = ()
    """The inputs' element types (``DType`` values: ``"float32"``, ``"uint8"`` ...)."""


Dims = list[int]


def _dims(s: Sequence[int | None] | None) -> Dims | None:
    """The shape as integers, None where it or any dimension is unknown."""
    if s is None or not all(isinstance(d, int) and d >= 0 for d in s):
        return None
    return [int(d) for d in s if d is not None]


def _prod(s: Sequence[int]) -> int:
    return math.prod(s)


def _up(x: int, m: int) -> int:
    return -(-x // m) * m


def same_padding(size: int, kernel: int, stride: int, dilation: int, padding: str) -> int:
    """TFLite's leading pad of one spatial axis: SAME's, rounded down (:func:`same_pads`);
    0 for VALID."""
    if str(padding).upper() != "SAME":
        return 0
    return same_pads(size, kernel, stride, dilation)[0]


def _attr(op: OpShape, key: str, default: int = 1) -> int:
    return int(op.attrs.get(key, default))


def fast_3x3_depthwise(op: OpShape) -> bool:
    """Whether TFLite's int8 DEPTHWISE_CONV_2D takes its aarch64 3x3 kernel: the rule of
    ``Fast3x3FilterKernelSupported`` (``optimized/depthwiseconv_uint8_3x3_filter.h``): equal
    strides of 1 or 2, no dilation, equal leading pads of 0 or 1, a 3x3 filter, depth
    multiplier 1, input channels a multiple of 8, and the last window inside the input (one
    past it where the pad is 1); inputs one pixel wide or high only when the output is too."""
    i = _dims(op.ins[0]) if op.ins else None
    w = _dims(op.ins[1]) if len(op.ins) > 1 else None
    o = _dims(op.outs[0]) if op.outs else None
    if i is None or w is None or o is None or len(i) != 4 or len(w) != 4 or len(o) != 4:
        return False
    sh, sw = _attr(op, "stride_h"), _attr(op, "stride_w")
    dh, dw = _attr(op, "dilation_h_factor"), _attr(op, "dilation_w_factor")
    pad = str(op.attrs.get("padding", "VALID"))
    ph = same_padding(i[1], w[1], sh, dh, pad)
    pw = same_padding(i[2], w[2], sw, dw, pad)
    ok = (
        sh == sw
        and sh in (1, 2)
        and dh == dw == 1
        and pw in (0, 1)
        and pw == ph
        and w[1] == w[2] == 3
        and _attr(op, "depth_multiplier") == 1
        and i[3] % 8 == 0
    )
    if not ok:
        return False
    x_end = (o[2] - 1) * sw - pw + 3
    y_end = (o[1] - 1) * sh - ph + 3
    if pw == 0:
        return x_end <= i[2] and y_end <= i[1]
    if x_end > i[2] + 1 or y_end > i[1] + 1:
        return False
    if i[2] == 1:
        return o[2] == 1
    if i[1] == 1:
        return o[1] == 1
    return True


POOLS = {"MAX_POOL_2D": "max_pool", "AVERAGE_POOL_2D": "avg_pool"}
BINARY = frozenset({"ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE", "DIV"})
MOVEMENT = frozenset(
    {"CONCATENATION", "SPLIT", "SPLIT_V", "PACK", "UNPACK", "TRANSPOSE", "STRIDED_SLICE",
     "SLICE", "PAD", "PADV2", "MIRROR_PAD", "SPACE_TO_BATCH_ND", "BATCH_TO_SPACE_ND",
     "SPACE_TO_DEPTH", "DEPTH_TO_SPACE", "GATHER", "TILE"}
)  # fmt: skip
"""Data-movement kernels: their cost is per element copied and per contiguous run copied
(a memcpy's set-up), so both are terms (:func:`_copy_runs`)."""
DETECTION = "custom:TFLite_Detection_PostProcess"


def _log2(n: int) -> float:
    return float(max(math.ceil(math.log2(n)), 1)) if n > 1 else 0.0


def _detection(op: OpShape, box: Dims, scores: Dims) -> tuple[str, list[float]] | None:
    """(kind, terms) of TFLite's SSD post-processing (the module docstring)."""
    if len(box) < 2 or not scores:
        return None
    n, with_bg = box[-2], scores[-1]
    classes = max(_attr(op, "num_classes", with_bg - 1), 1)
    d = max(_attr(op, "max_detections", 10), 0)
    q = float(any(t in ("uint8", "int8") for t in op.in_dtypes[:2]))
    dequant = [q * n * with_bg, q * n]
    if bool(op.attrs.get("use_regular_nms", False)):
        per_class = min(max(_attr(op, "detections_per_class", 100), 1), n)
        terms = [classes * n, classes * n * _log2(n), classes * per_class * n]
        return "detection:regular", [*terms, *dequant, float(n), 1.0]
    keep = max(_attr(op, "max_classes_per_detection", 1), 1)
    scan = n * classes * (1.0 + _log2(min(keep, classes)))
    return "detection:fast", [scan, *dequant, float(n), min(d, n) * n, n * _log2(n), 1.0]


def features(op: OpShape) -> tuple[str, list[float]] | None:
    """(kind, terms) of an operator (the module docstring), or None where its static shapes
    are not known."""
    ins = [_dims(s) for s in op.ins]
    outs = [_dims(s) for s in op.outs]
    if not outs or any(s is None for s in outs) or not ins or ins[0] is None:
        return None
    o0 = outs[0]
    assert o0 is not None
    out_elems = float(sum(_prod(s) for s in outs if s is not None))
    n = op.native
    w = ins[1] if len(ins) > 1 else None
    if n == DETECTION:
        return _detection(op, ins[0], w) if w is not None else None
    if n == "CONV_2D":
        if w is None or len(w) != 4 or len(o0) != 4:
            return None
        cout, kh, kw, cin = w
        m = o0[0] * o0[1] * o0[2]
        k = kh * kw * cin
        dil = _attr(op, "dilation_h_factor") * _attr(op, "dilation_w_factor")
        direct = kh == kw == 1 and _attr(op, "stride_h") * _attr(op, "stride_w") == 1 and dil == 1
        blocks8 = _up(m, 8) * _up(cout, 8)
        blocks4 = _up(m, 4) * _up(cout, 4)
        im2col = 0.0 if direct else float(m * k)
        runs = 0.0 if direct else float(m * kh * kw)
        gemm = [float(blocks8 * _up(k, 4)), float(blocks4 * _up(k, 16))]
        return "conv", [*gemm, m * cout, m * k, im2col, runs, 1.0]
    if n == "DEPTHWISE_CONV_2D":
        if w is None or len(w) != 4 or len(o0) != 4:
            return None
        elems = _prod(o0)
        macs = elems * w[1] * w[2]
        if fast_3x3_depthwise(op):
            return "depthwise_conv:fast3x3", [macs, elems, 1.0]
        return "depthwise_conv:general", [macs, elems, o0[0] * o0[1] * w[3], 1.0]
    if n == "FULLY_CONNECTED":
        if w is None or len(w) != 2:
            return None
        rows = _prod(ins[0]) // max(w[1], 1)
        return "fully_connected", [rows * w[0] * w[1], rows * w[0], 1.0]
    if n == "TRANSPOSE_CONV":
        x = ins[2] if len(ins) > 2 else None
        if w is None or x is None or len(w) != 4 or not x:
            return None
        in_px = _prod(x) // max(x[-1], 1)
        return "conv_transpose", [in_px * _prod(w), out_elems, float(_prod(x)), 1.0]
    if n in POOLS:
        taps = _attr(op, "filter_height") * _attr(op, "filter_width")
        return POOLS[n], [out_elems * taps, out_elems, 1.0]
    in_elems = float(sum(_prod(s) for s in ins if s))
    x0 = ins[0]
    if n == "MEAN":
        axes = sorted(int(a) % 4 for a in op.consts.get(1, ()))
        if len(x0) == 4 and axes == [1, 2] and len(o0) == 4:
            return "mean:hw", [float(_prod(x0)), out_elems, 1.0]  # optimized_integer_ops::Mean
        return "mean:general", [float(_prod(x0)), out_elems, 1.0]  # reference MeanGeneral
    if n in BINARY and len(ins) >= 2:
        if ins[1] is not None and x0 != ins[1]:
            return f"{n}:broadcast", [out_elems, 1.0]
        return n, [out_elems, 1.0]
    if n in MOVEMENT:
        return n, [out_elems, _copy_runs(op, ins, o0), 1.0]
    return n, [out_elems, in_elems, 1.0]


def _copy_runs(op: OpShape, ins: Sequence[Dims | None], out: Dims) -> float:
    """Contiguous runs a movement kernel copies: the output's elements over the length of
    the innermost block that stays contiguous (a permutation's unmoved trailing axes, the
    part inside a concatenation's axis, a row of a padded or sliced map)."""
    elems = _prod(out)
    rank = len(out)
    if rank == 0 or elems == 0:
        return 0.0
    inner = out[-1]
    n = op.native
    if n == "TRANSPOSE":
        perm = [int(v) for v in op.consts.get(1, range(rank))]
        inner = 1
        for d in range(rank - 1, -1, -1):
            if d < len(perm) and perm[d] == d:
                inner *= out[d]
            else:
                break
    elif n in ("CONCATENATION", "PACK"):
        axis = _attr(op, "axis", -1) % rank
        parts = [s[axis] for s in ins if s is not None and len(s) == rank]
        inner = _prod(out[axis + 1 :]) * max(1, min(parts, default=1))
    elif n in ("SPLIT", "SPLIT_V", "UNPACK"):
        ax = op.consts.get(0 if n == "SPLIT" else 2) or (_attr(op, "axis", -1),)
        inner = _prod(out[int(ax[0]) % rank :])
    elif n in ("STRIDED_SLICE", "SLICE"):
        strides = [int(v) for v in op.consts.get(3, ())]
        if strides and strides[-1] != 1:
            inner = 1
    return elems / max(inner, 1)


@dataclass(frozen=True)
class Table:
    """Per ISA level, per kind: the coefficients of the kind's terms."""

    coefficients: Mapping[str, Mapping[str, tuple[float, ...]]]
    provenance: Mapping[str, Any] = field(default_factory=dict)

    def predict(self, isa: str, op: OpShape) -> float | None:
        """Instructions of one call of ``op`` on ``isa``; None where its kind is not in the
        table or its shapes are not known."""
        f = features(op)
        if f is None:
            return None
        kind, x = f
        coef = self.coefficients.get(isa, {}).get(kind)
        if coef is None or len(coef) != len(x):
            return None
        return float(sum(c * v for c, v in zip(coef, x, strict=True)))


@cache
def table() -> Table:
    """The shipped table (``data/aarch64-builtin-int8.json``)."""
    text = resources.files("infercast.estimate").joinpath("data", DATA_FILE).read_text()
    raw = json.loads(text)
    coefs = {
        isa: {k: tuple(float(v) for v in c) for k, c in kinds.items()}
        for isa, kinds in raw["coefficients"].items()
    }
    return Table(coefs, raw.get("provenance", {}))


def op_shape(graph: Graph, node: Node) -> OpShape:
    """The :class:`OpShape` of one node of a loaded TFLite graph."""

    def shape(name: str) -> list[int | None] | None:
        t = graph.tensors.get(name) if name else None
        if t is None or t.shape is None:
            return None
        return [d if isinstance(d, int) else None for d in t.shape]

    consts: dict[int, list[int]] = {}
    for pos, name in enumerate(node.inputs):
        t = graph.tensors.get(name) if name else None
        if t is not None and t.value is not None and t.value.size <= 16 and not t.dtype.is_float:
            consts[pos] = [int(v) for v in t.value.reshape(-1)]
    return OpShape(
        native=node.native_op,
        ins=[shape(t) for t in node.inputs],
        outs=[shape(t) for t in node.outputs],
        attrs=dict(node.attrs),
        consts=consts,
        in_dtypes=[graph.tensors[t].dtype.value if t in graph.tensors else "" for t in node.inputs],
    )
