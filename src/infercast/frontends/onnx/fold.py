"""Fold small constant sub-computations so ONNX shape inference can see through them.

``onnx.shape_inference`` propagates values only through a few shape ops
(Shape, Gather, Concat, Slice … on shape tensors). Exporters often compute
paddings, reshape targets or split sizes with other ops on constants
(ConstantOfShape -> Concat -> Reshape -> Transpose -> Cast -> Pad, as in
silero-vad's STFT), and every shape after such a node stays unknown.

This module evaluates those constant sub-computations with ONNX's own
reference implementation (``onnx.reference.ReferenceEvaluator``), one node at a
time, on small values only (at most ``MAX_ELEMENTS`` per tensor, so weights are
never materialised), and returns a copy of the model in which each folded node
is a ``Constant``. That copy is used for shape inference only; the analysed
graph keeps the original nodes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from infercast.frontends.onnx.reader import canonical_name
from infercast.ops.registry import get_handler

MAX_ELEMENTS = 4096
_NOT_TENSORS = {"sequence_construct", "sequence_empty", "optional"}
"""Ops that make a sequence or an optional, not a tensor shape inference could read."""


def _never_folded(node: Any) -> bool:
    """Random draws and control flow are not evaluated (the op table's facts)."""
    op = canonical_name(node.op_type, node.domain)
    facts = get_handler(op)
    return op in _NOT_TENSORS or (
        facts is not None and (facts.nondeterministic or facts.control_flow)
    )


def _small(arr: np.ndarray[Any, Any]) -> bool:
    return bool(arr.size <= MAX_ELEMENTS and arr.dtype != object)


def _value_of_constant(node: Any) -> np.ndarray[Any, Any] | None:
    from onnx import numpy_helper

    for a in node.attribute:
        if a.name == "value" and a.HasField("t"):
            # External data, or too large to fold (the data of large constants is
            # not read from the file: wire.py).
            if a.t.data_location == 1 or math.prod(a.t.dims) > MAX_ELEMENTS:
                return None
            return np.asarray(numpy_helper.to_array(a.t))
        if a.name == "value_int":
            return np.asarray(a.i, dtype=np.int64)
        if a.name == "value_ints":
            return np.asarray(list(a.ints), dtype=np.int64)
        if a.name == "value_float":
            return np.asarray(a.f, dtype=np.float32)
        if a.name == "value_floats":
            return np.asarray(list(a.floats), dtype=np.float32)
    return None


def _output_too_large(node: Any, ins: list[np.ndarray[Any, Any]]) -> bool:
    """Generators whose output can be far larger than their inputs."""
    if node.op_type == "ConstantOfShape" and ins:
        return math.prod(int(d) for d in np.ravel(ins[0])) > MAX_ELEMENTS
    if node.op_type == "Expand" and len(ins) > 1:
        return math.prod(int(d) for d in np.ravel(ins[1])) > MAX_ELEMENTS
    if node.op_type == "Tile" and len(ins) > 1:
        return ins[0].size * math.prod(int(d) for d in np.ravel(ins[1])) > MAX_ELEMENTS
    if node.op_type == "Range" and len(ins) == 3:
        start, limit, delta = (float(np.ravel(x)[0]) for x in ins)
        return delta == 0 or abs((limit - start) / delta) > MAX_ELEMENTS
    return False


def _evaluate(
    node: Any, ins: list[np.ndarray[Any, Any]], opsets: dict[str, int]
) -> list[Any] | None:
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    names = [f"in{i}" if name else "" for i, name in enumerate(node.input)]
    single = helper.make_node(
        node.op_type, names, [f"out{i}" for i in range(len(node.output))], domain=node.domain
    )
    single.attribute.extend(node.attribute)
    graph = helper.make_graph(
        [single],
        "fold",
        [helper.make_tensor_value_info(n, 0, None) for n in names if n],
        [helper.make_tensor_value_info(f"out{i}", 0, None) for i in range(len(node.output))],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets.items()]
    )
    feeds = {n: x for n, x in zip(names, ins, strict=False) if n}
    try:
        out = ReferenceEvaluator(model).run(None, feeds)
    except Exception:
        return None
    return list(out)


def fold_for_inference(model: Any) -> tuple[Any, int]:
    """A copy of ``model`` with small constant computations replaced by ``Constant``
    nodes, and the number of nodes folded."""
    import onnx
    from onnx import helper, numpy_helper

    opsets = {(o.domain or ""): int(o.version) for o in model.opset_import}
    work = onnx.ModelProto()
    work.CopyFrom(model)
    folded = 0

    def fold_graph(g: Any, outer: dict[str, np.ndarray[Any, Any]]) -> None:
        nonlocal folded
        values = dict(outer)
        for init in g.initializer:
            if init.data_location != 1 and math.prod(init.dims) <= MAX_ELEMENTS:
                values[init.name] = np.asarray(numpy_helper.to_array(init))
        new_nodes = []
        for node in g.node:
            for a in node.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    fold_graph(a.g, values)
                for sub in a.graphs:
                    fold_graph(sub, values)
            if node.op_type == "Constant":
                v = _value_of_constant(node)
                if v is not None and _small(v) and node.output:
                    values[node.output[0]] = v
                new_nodes.append(node)
                continue
            ins = [values.get(n) for n in node.input if n]
            if (
                node.domain not in ("", "ai.onnx")
                or _never_folded(node)
                or not ins
                or any(x is None for x in ins)
                or _output_too_large(node, ins)  # type: ignore[arg-type]
            ):
                new_nodes.append(node)
                continue
            outs = _evaluate(node, ins, opsets)  # type: ignore[arg-type]
            if outs is None or not all(isinstance(o, np.ndarray) and _small(o) for o in outs):
                new_nodes.append(node)
                continue
            for name, arr in zip(node.output, outs, strict=False):
                if not name:
                    continue
                values[name] = arr
                const = helper.make_node(
                    "Constant", [], [name], value=numpy_helper.from_array(arr, name)
                )
                new_nodes.append(const)
            folded += 1
        del g.node[:]
        g.node.extend(new_nodes)

    fold_graph(work.graph, {})
    return work, folded
