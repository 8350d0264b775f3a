"""The permutes an accelerator's runtime inserts to move feature maps between layouts.

A TFLite graph keeps its feature maps channels-last (NHWC). An accelerator whose
convolutions run channels-first has its runtime insert a permute wherever a tensor must
change layout. The VX delegate of the i.MX 8M Plus NPU hands TIM-VX the TFLite graph with
its NHWC layout, and TIM-VX's layout pass (``src/tim/transform/layout_inference.cc``, run
by tflite-vx-delegate ``delegate_main.cc``) decides where:

* a conv, depthwise or transposed conv, pool, resize, space/depth or batch/space op
  wants its input channels-first (WHCN; ``ops/conv2d_layout_inference.h`` and its
  siblings ``required_pv = kCWHN2WHCN``): a channels-last input gets a permute first, and
  the output stays channels-first;
* an op the pass has no rule for (``DefaultLayoutInfer``: RESHAPE and EXPAND_DIMS, which
  the delegate maps to a reshape, SQUEEZE, whose rule reverses its input the same way, and
  the reshape the delegate puts before a FULLY_CONNECTED of a 4-D input) gets each
  channels-first input permuted back (``ReverseInputsPermuteVector``); its output is
  channels-last;
* a TRANSPOSE composes the input's layout into its own permutation: no extra op;
* every other op (element-wise, activations, CONCATENATION, SPLIT, PAD, MEAN, SOFTMAX)
  follows its inputs; an op with several inputs takes the layout of its highest-rank one
  (the first of them) and permutes any other input of that rank that differs
  (``AlignPermuteVectorForElementWise`` / ``...ForMutilInputs``);
* a channels-first tensor the graph returns, or a CPU op reads, is permuted back at the
  delegate's boundary (``OpLayoutInfer::OnOutputs``).

A permute that moves no data is a reshaped view, no node: ovxlib's
``vsi_nn_op_permute.c`` ``op_optimize`` / ``_is_same_memory_shape`` (a 1x1xC map, or a
single channel). Each permute the pass inserts, once per tensor (the pass maps the
tensor to its permuted copy for the readers after), is one transpose on the accelerator
(on the VeriSilicon NPU, a tensor-processor job), costed as the target's ``movement``
kernels are.

Which ops are which is the target's data (``placement.channels_first_ops``,
``placement.layout_reset_ops``); a target that states no channels-first op has no
permutes.
"""

from __future__ import annotations

from collections.abc import Mapping

from infercast.ir.graph import Graph, Tensor


def moves_data(t: Tensor) -> bool:
    """A channels-last <-> channels-first permute of ``t`` moves data (it is not a view):
    its channel count and its spatial extent both exceed 1."""
    if t.shape is None or t.rank != 4:
        return False
    _n, h, w, c = (int(d) if isinstance(d, int) else 0 for d in t.shape)
    return c > 1 and h * w > 1


def layout_permutes(
    graph: Graph,
    on_accelerator: Mapping[int, bool],
    channels_first_ops: frozenset[str],
    reset_ops: frozenset[str],
) -> list[tuple[int, str]]:
    """``(node index, tensor name)`` of each permute the runtime inserts, the node the
    permute is charged to (the reader that needs it, or the producer of a tensor the
    graph returns or the CPU reads), in execution order. ``on_accelerator`` maps a node's
    index to whether it runs on the accelerator. Only data-moving permutes
    (:func:`moves_data`) of rank-4 tensors are listed."""
    if not channels_first_ops:
        return []
    first: dict[str, bool] = {}
    producer: dict[str, int] = {}
    out: list[tuple[int, str]] = []

    def acts(names: tuple[str, ...] | list[str]) -> list[str]:
        return [
            n
            for n in dict.fromkeys(names)
            if n and n in graph.tensors and not graph.tensors[n].is_constant
        ]

    def permute(at: int, name: str, to_first: bool) -> None:
        if first.get(name, False) != to_first:
            if moves_data(graph.tensors[name]):
                out.append((at, name))
            first[name] = to_first

    for node in graph.nodes:
        if node.folded:
            continue
        ins = acts(node.inputs)
        outs = [o for o in node.outputs if o and o in graph.tensors]
        for o in outs:
            producer[o] = node.index
        if not on_accelerator.get(node.index, False):
            for t in ins:
                if first.get(t, False):
                    permute(producer.get(t, node.index), t, False)
            continue
        if node.op in channels_first_ops:
            if ins and graph.tensors[ins[0]].rank == 4:
                permute(node.index, ins[0], True)
            for o in outs:
                first[o] = graph.tensors[o].rank == 4
            continue
        if node.op == "transpose" or node.op in reset_ops:
            if node.op != "transpose":
                for t in ins:
                    permute(node.index, t, False)
            for o in outs:
                first[o] = False
            continue
        if not ins:
            continue
        ranks = [graph.tensors[t].rank or 0 for t in ins]
        ref = ins[ranks.index(max(ranks))]
        want = first.get(ref, False)
        for t, r in zip(ins, ranks, strict=True):
            if r == max(ranks):
                permute(node.index, t, want)
        for o in outs:
            first[o] = want and (graph.tensors[o].rank or 0) == max(ranks)
    for name in graph.outputs:
        if first.get(name, False):
            permute(producer.get(name, -1), name, False)
    return out
