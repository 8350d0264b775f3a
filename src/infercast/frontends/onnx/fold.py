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


class _Lazy:
    """A value converted to numpy when first asked for (most constants never are: only
    the inputs of nodes whose every input is constant)."""

    __slots__ = ("arg", "convert", "done", "value")

    def __init__(self, convert: Any, arg: Any) -> None:
        self.convert, self.arg = convert, arg
        self.done = False
        self.value: np.ndarray[Any, Any] | None = None

    def get(self) -> np.ndarray[Any, Any] | None:
        if not self.done:
            self.value = self.convert(self.arg)
            self.done = True
        return self.value


def _initializer_value(init: Any) -> np.ndarray[Any, Any]:
    from onnx import numpy_helper

    return np.asarray(numpy_helper.to_array(init))


def _small_constant(node: Any) -> np.ndarray[Any, Any] | None:
    v = _value_of_constant(node)
    return v if v is not None and _small(v) else None


Values = dict[str, "np.ndarray[Any, Any] | _Lazy"]


def _value(values: Values, name: str) -> np.ndarray[Any, Any] | None:
    v = values.get(name)
    return v.get() if isinstance(v, _Lazy) else v


def fold_for_inference(model: Any) -> tuple[Any, int]:
    """A copy of ``model`` with small constant computations replaced by ``Constant``
    nodes, and the number of nodes folded."""
    import onnx
    from onnx import helper, numpy_helper

    opsets = {(o.domain or ""): int(o.version) for o in model.opset_import}
    work = onnx.ModelProto()
    work.CopyFrom(model)
    folded = 0

    def fold_graph(g: Any, outer: Values) -> None:
        nonlocal folded
        values = dict(outer)
        for init in g.initializer:
            if init.data_location != 1 and math.prod(init.dims) <= MAX_ELEMENTS:
                values[init.name] = _Lazy(_initializer_value, init)
        replaced: list[tuple[int, list[Any]]] = []  # node index -> the Constants for it
        for i, node in enumerate(g.node):
            for a in node.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    fold_graph(a.g, values)
                for sub in a.graphs:
                    fold_graph(sub, values)
            if node.op_type == "Constant":
                if node.output:
                    values[node.output[0]] = _Lazy(_small_constant, node)
                continue
            names = [n for n in node.input if n]
            if (
                node.domain not in ("", "ai.onnx")
                or _never_folded(node)
                or not names
                or any(n not in values for n in names)
            ):
                continue
            ins = [_value(values, n) for n in names]
            if any(x is None for x in ins) or _output_too_large(node, ins):  # type: ignore[arg-type]
                continue
            outs = _evaluate(node, ins, opsets)  # type: ignore[arg-type]
            if outs is None or not all(isinstance(o, np.ndarray) and _small(o) for o in outs):
                continue
            consts = []
            for name, arr in zip(node.output, outs, strict=False):
                if not name:
                    continue
                values[name] = arr
                consts.append(
                    helper.make_node(
                        "Constant", [], [name], value=numpy_helper.from_array(arr, name)
                    )
                )
            replaced.append((i, consts))
            folded += 1
        if not replaced:
            return
        if all(len(consts) == 1 for _, consts in replaced):
            for i, consts in replaced:
                g.node[i].CopyFrom(consts[0])
            return
        by_index = dict(replaced)
        new_nodes: list[Any] = []
        for i, node in enumerate(g.node):
            new_nodes.extend(by_index.get(i, (node,)))
        del g.node[:]
        g.node.extend(new_nodes)

    fold_graph(work.graph, {})
    return work, folded
