"""Kernels: the fused groups of ops a runtime executes as one.

nn-Meter (Zhang et al., MobiSys 2021) predicts latency per *kernel*, where a
kernel is a group of ops the runtime fuses (conv-bn-relu, dwconv-bn-relu,
add-relu, …); costing each op alone overcounts the memory traffic and the
per-op dispatch of the fused ones. This module uses that idea in a simple,
fixed form that matches the CPU runtimes infercast measures:

* an **anchor** is a conv, depthwise conv, transposed conv, fully-connected,
  Gemm or MatMul with constant weights;
* it absorbs the chain of ops that directly follow it, as long as each reads
  the previous one's output, that output has no other reader, the op runs on
  the same processor, and the op is a **follower**:

  - a bias / batch-norm step: ``add``, ``sub``, ``mul``, ``div`` with a
    constant operand, or ``batch_normalization``;
  - an activation: relu, relu6, clip, leaky_relu, sigmoid, tanh, hard_swish,
    hard_sigmoid, swish, elu, prelu, gelu;
  - one residual ``add`` of another feature map (ONNX Runtime's Conv+Add+Relu
    fusion on the CPU provider); not for a TFLite model on a CPU, where LiteRT
    runs the ADD (with its folded activation) as its own operator, nor on an
    accelerator whose target says it keeps the ADD apart (Arm Vela on Ethos-U;
    :func:`_separate_residual`).

Transposes that cancel: converters that translate NHWC graphs to NCHW
(tf2onnx) wrap every conv in a Transpose pair, and ONNX Runtime's transpose
optimizer (``core/optimizer/transpose_optimization``) pushes each Transpose
through layout-agnostic ops (elementwise, Pad, reductions, Concat) until it
meets its inverse, and removes both. :func:`elided_transposes` finds those
pairs; they cost nothing, and a fused group walks through them.

A gated activation ``x * sigmoid(x)`` (swish / SiLU, as converters emit it)
is one elementwise kernel in an ONNX model: ONNX Runtime fuses it (``QuickGelu``,
``core/optimizer/quick_gelu_fusion.cc``). In a TFLite model it stays two kernels:
the schema has no SiLU operator, so the converter writes LOGISTIC and MUL, and the
interpreter runs each (XNNPACK's delegate maps them to its own sigmoid and multiply
nodes, ``tensorflow/lite/delegates/xnnpack/xnnpack_delegate.cc`` VisitLogisticNode /
VisitMulNode; Arm Vela runs them as a LUT pass and an elementwise pass; the VX
delegate hands TIM-VX a sigmoid and a multiply).

The group is costed once: the anchor's input, weights and the last op's
output cross memory; intermediate tensors do not; one per-op overhead.
TFLite's ``fused_activation`` attribute is already one node and needs nothing
here. Sources: ONNX Runtime ``core/optimizer/conv_activation_fusion.cc``,
``conv_add_act_fusion.cc``; XNNPACK fuses the clamp of a TFLite op's
``fused_activation_function`` into its conv/FC operators.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from infercast.ir.graph import Graph, Node
from infercast.ops.registry import get_handler, ops_where

ANCHORS = ops_where(lambda h: h.conv_like or h.fc_like)
"""Conv-like and FC-like ops (their kernel or weight matrix is an input): the op table's facts."""
ACTIVATIONS = frozenset(
    {
        "relu",
        "relu6",
        "relu_n1_to_1",
        "relu_0_to_1",
        "clip",
        "leaky_relu",
        "sigmoid",
        "tanh",
        "hard_swish",
        "hard_sigmoid",
        "swish",
        "elu",
        "prelu",
        "gelu",
    }
)
AFFINE = frozenset({"add", "sub", "mul", "div"})
NORMS = frozenset({"batch_normalization"})


@dataclass(frozen=True)
class Kernel:
    """One fused group: the anchor (or a lone op) and the followers it absorbed."""

    anchor: int
    """Node index of the first op of the group."""
    members: tuple[int, ...]
    """Node indices in execution order, the anchor first."""

    @property
    def fused(self) -> bool:
        return len(self.members) > 1


def _constant_operand(graph: Graph, node: Node, chained: str) -> bool:
    """True when every input of ``node`` other than ``chained`` is a constant."""
    others = [n for n in node.inputs if n and n != chained]
    return bool(others) and all(graph.tensors[n].is_constant for n in others)


def _has_weights(graph: Graph, node: Node) -> bool:
    """MatMul / Gemm fuse only with a constant weight operand (a layer, not a product);
    a TFLite FULLY_CONNECTED is a layer whatever its weights."""
    h = get_handler(node.op)
    if h is not None and h.fc_like and node.op != "fully_connected":
        idx = h.weight_input or 1
        if len(node.inputs) <= idx or not node.inputs[idx]:
            return False
        return graph.tensors[node.inputs[idx]].is_constant
    return True


def follower_kind(graph: Graph, node: Node, chained: str) -> str | None:
    """How ``node`` joins a group whose last output is ``chained``; None if it does not."""
    if node.op in ACTIVATIONS:
        first = next((n for n in node.inputs if n), "")
        return "activation" if first == chained else None
    if node.op in NORMS:
        return "norm" if node.inputs and node.inputs[0] == chained else None
    if node.op in AFFINE:
        if _constant_operand(graph, node, chained):
            return "affine"
        if node.op == "add":
            others = [n for n in node.inputs if n and n != chained]
            if len(others) == 1 and not graph.tensors[others[0]].is_constant:
                return "residual"
    return None


AGNOSTIC_EXTRA = frozenset(
    {"pad", "concat", "reduce_mean", "reduce_max", "reduce_sum", "reduce_min", "identity"}
)


def _agnostic(node: Node) -> bool:
    """Ops a transpose can be pushed through (their axes / pads are permuted instead)."""
    h = get_handler(node.op)
    return (h is not None and h.elementwise) or node.op in AGNOSTIC_EXTRA


def _perm(node: Node) -> tuple[int, ...] | None:
    p = node.attrs.get("perm")
    if isinstance(p, tuple | list) and p:
        return tuple(int(x) for x in p)
    return None


def elided_transposes(graph: Graph) -> set[int]:
    """Indices of Transpose nodes a runtime's transpose optimizer removes.

    A Transpose with permutation *q* whose input is (through layout-agnostic ops
    only) the output of a Transpose with permutation *p* where *q* undoes *p* is
    removed; the first Transpose is removed too when every path from it ends at
    such an inverse (otherwise it is kept: the runtime still transposes once).
    """
    dom: dict[str, tuple[tuple[int, ...], frozenset[int]]] = {}
    origins: set[int] = set()
    kept: set[int] = set()
    elided: set[int] = set()
    for node in graph.nodes:
        if node.folded:
            continue
        acts = [n for n in dict.fromkeys(node.inputs) if n and not graph.tensors[n].is_constant]
        ins = [dom.get(a) for a in acts]
        if node.op == "transpose":
            q = _perm(node)
            x = node.inputs[0] if node.inputs else ""
            d = dom.get(x)
            inverse = (
                d is not None
                and q is not None
                and len(q) == len(d[0])
                and all(d[0][q[i]] == i for i in range(len(q)))
            )
            if inverse:
                elided.add(node.index)
                continue
            if d is not None:
                kept |= d[1]
            if q is not None and len(node.outputs) == 1:
                origins.add(node.index)
                dom[node.outputs[0]] = (q, frozenset({node.index}))
            continue
        present = [d for d in ins if d is not None]
        if not present:
            continue
        same = all(d is not None and d[0] == present[0][0] for d in ins)
        if _agnostic(node) and same:
            merged = frozenset().union(*(d[1] for d in present))
            for o in node.outputs:
                if o:
                    dom[o] = (present[0][0], merged)
        else:
            for d in present:
                kept |= d[1]
    for o in graph.outputs:
        if o in dom:
            kept |= dom[o][1]
    return elided | (origins - kept)


def _swish_mul(
    graph: Graph,
    node: Node,
    nodes: Mapping[int, Node],
    consumers: Mapping[str, tuple[int, ...]],
    gate_fused: bool,
) -> int | None:
    """The Mul of ``x * sigmoid(x)`` when ``node`` is its Sigmoid (ORT's QuickGelu fusion);
    None in a TFLite graph, whose runtimes run the two operators apart, unless the runtime
    fuses the gate whatever the file (``gate_fused``: ncnn's Swish layer)."""
    if graph.format == "tflite" and not gate_fused:
        return None
    if node.op not in ("sigmoid", "hard_sigmoid") or len(node.outputs) != 1 or not node.inputs:
        return None
    readers = consumers.get(node.outputs[0], ())
    if len(readers) != 1 or node.outputs[0] in graph.outputs:
        return None
    mul = nodes.get(readers[0])
    if mul is None or mul.op != "mul":
        return None
    ins = [n for n in mul.inputs if n]
    return mul.index if sorted(ins) == sorted([node.inputs[0], node.outputs[0]]) else None


def _separate_residual(graph: Graph, processor: str, accelerator_fuses: bool = True) -> bool:
    """LiteRT on a CPU runs a residual ``add`` as its own operator: the TFLite converter folds
    only the activation into the ADD, and XNNPACK fuses no ADD into a conv (its convolution
    operators take a bias and a clamp, google/XNNPACK ``include/xnnpack.h``). Its cost is
    then the add's own: measured per op (LiteRT, one thread, ResNet50 at 128 px), the 16
    residual ADDs take 0.71 ms of the 20.8 ms of ops (3 MB each at the 32x32 stage: 155 us).
    ONNX Runtime fuses Conv+Add+Relu (``conv_add_act_fusion.cc``); an accelerator keeps its
    fusion unless its target says it has none (``accelerator_fuses`` False: Arm Vela runs
    each ADD as an elementwise Ethos-U operation)."""
    if processor == "accelerator":
        return not accelerator_fuses
    return graph.format == "tflite" and processor in ("", "cpu")


def _operators_apart(graph: Graph, processor: str, gate_fused: bool) -> bool:
    """A TFLite graph on the CPU runs each of its operators as one kernel: the converter has
    already folded what the runtime fuses (a ReLU / ReLU6 into its op's
    ``fused_activation_function``), and neither LiteRT's built-in kernels nor its XNNPACK
    delegate fuse a standalone operator into the conv before it (XNNPACK's convolution and
    fully-connected operators take a bias and an output clamp only, google/XNNPACK
    ``include/xnnpack.h``; the delegate maps HARD_SWISH, LOGISTIC, LEAKY_RELU, TANH, MUL,
    ADD to their own nodes, ``tensorflow/lite/delegates/xnnpack/xnnpack_delegate.cc``). A
    MobileNet v3's HARD_SWISH after each conv is a pass over the conv's output of its own.
    Not for a runtime that fuses whatever the file (``gate_fused``: ncnn, whose Convolution
    layer takes sigmoid, hard-swish and leaky ReLU activations, ``src/layer/convolution.cpp``
    ``activation_type``)."""
    return graph.format == "tflite" and processor in ("", "cpu") and not gate_fused


def kernels(
    graph: Graph,
    processor: Mapping[int, str] | None = None,
    transparent: set[int] | frozenset[int] = frozenset(),
    accelerator_fuses_residual: bool = True,
    gate_fused: bool = False,
    unit: Mapping[int, str] | None = None,
    accelerator_activations: frozenset[str] = frozenset(),
) -> list[Kernel]:
    """Group the non-folded nodes of ``graph`` into kernels, in execution order.

    ``processor`` maps a node index to where it runs (``accelerator`` / ``cpu``);
    a group never spans two processors. ``transparent`` nodes (elided
    transposes) join the group they sit in without ending it. Every non-folded
    node is in exactly one kernel. ``accelerator_fuses_residual`` False: a residual
    ``add`` on the accelerator stays its own kernel (:func:`_separate_residual`).
    ``gate_fused``: the runtime fuses ``x * sigmoid(x)`` in a TFLite graph too
    (:func:`_swish_mul`). ``unit`` maps a node index to the unit placement gave it: a group
    never spans two units either (an accelerator's engines are separate jobs: the
    VeriSilicon driver runs a MUL on its shader, never inside the NN core's conv).
    ``accelerator_activations``, when not empty: the only activations an op on the
    accelerator absorbs (its compiler merges no other into the conv job).
    """
    proc = processor or {}
    engine = unit or {}

    def same(a: int, b: int) -> bool:
        return proc.get(a, "") == proc.get(b, "") and engine.get(a, "") == engine.get(b, "")

    nodes = {n.index: n for n in graph.nodes if not n.folded}
    consumers = graph.consumers
    taken: set[int] = set()
    out: list[Kernel] = []
    for node in graph.nodes:
        if node.index not in nodes or node.index in taken:
            continue
        members = [node.index]
        taken.add(node.index)
        gate = _swish_mul(graph, node, nodes, consumers, gate_fused)
        if gate is not None and gate not in taken and same(gate, node.index):
            members.append(gate)
            taken.add(gate)
        elif (
            node.op in ANCHORS
            and _has_weights(graph, node)
            and len(node.outputs) == 1
            and not _operators_apart(graph, proc.get(node.index, ""), gate_fused)
        ):
            current = node.outputs[0]
            residual_used = False
            while current and current not in graph.outputs:
                readers = consumers.get(current, ())
                if len(readers) != 1:
                    break
                nxt = nodes.get(readers[0])
                if nxt is None or nxt.index in taken:
                    break
                if not same(nxt.index, node.index):
                    break
                if nxt.index in transparent and len(nxt.outputs) == 1:
                    members.append(nxt.index)
                    taken.add(nxt.index)
                    current = nxt.outputs[0]
                    continue
                kind = follower_kind(graph, nxt, current)
                if kind is None or (kind == "residual" and residual_used):
                    break
                if (
                    kind == "activation"
                    and accelerator_activations
                    and proc.get(node.index, "") == "accelerator"
                    and nxt.op not in accelerator_activations
                ):
                    break
                if kind == "residual" and _separate_residual(
                    graph, proc.get(node.index, ""), accelerator_fuses_residual
                ):
                    break
                residual_used = residual_used or kind == "residual"
                members.append(nxt.index)
                taken.add(nxt.index)
                if len(nxt.outputs) != 1:
                    break
                current = nxt.outputs[0]
        out.append(Kernel(node.index, tuple(members)))
    return out
