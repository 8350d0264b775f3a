"""Fold small constant sub-computations so ONNX shape inference can see through them.

``onnx.shape_inference`` propagates values only through a few shape ops
(Shape, Gather, Concat, Slice … on shape tensors). Exporters often compute
paddings, reshape targets or split sizes with other ops on constants
(ConstantOfShape -> Concat -> Reshape -> Transpose -> Cast -> Pad, as in
silero-vad's STFT), and every shape after such a node stays unknown.

This module evaluates those constant sub-computations with ONNX's own
reference implementation (``onnx.reference.ReferenceEvaluator``), one node at a
time, and returns a copy of the model in which each folded node is a
``Constant``. That copy is used for shape inference only; the analysed graph
keeps the original nodes.

The model is a stranger's, so every evaluation is bounded *before* it runs:

* only ops whose work is linear in their inputs and outputs are evaluated
  (:data:`FOLDABLE`: shape arithmetic, data movement, comparisons; never a
  convolution, an einsum, a window function or a regular expression);
* each input and each output has at most :data:`MAX_ELEMENTS` elements, the
  outputs' sizes being those ONNX's own shape inference gives for the node
  alone with its constant inputs (an output it cannot size is not computed:
  a broadcasting ``Where`` of three 1,000-vectors, a ``Pad`` by 2^31 or a
  ``OneHot`` of depth 1e6 are sized, or refused, before anything is allocated);
* all evaluations together touch at most :data:`MAX_TOTAL_ELEMENTS` elements
  and take at most :data:`MAX_SECONDS`;

and the whole pass runs in the isolated worker (infercast.isolation) with its own
time and memory limits (``reader.py``).
"""

from __future__ import annotations

import contextlib
import math
import time
from typing import Any

import numpy as np

from infercast.frontends.onnx.reader import canonical_name
from infercast.ops.registry import get_handler

MAX_ELEMENTS = 4096
"""Largest input or output (elements) a folded node may have."""
MAX_TOTAL_ELEMENTS = 1 << 22
"""Elements (inputs + outputs) all folded nodes of a model may touch together."""
MAX_SECONDS = 4.0
"""Time the folding of one model may take; the nodes after it are left as they are."""

FOLDABLE = frozenset(
    {
        # shapes and data movement
        "Shape", "Size", "Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze",
        "Transpose", "Concat", "Split", "Slice", "Gather", "GatherElements", "Cast",
        "CastLike", "ConstantOfShape", "Expand", "Tile", "Range", "Pad", "OneHot",
        "NonZero", "Trilu", "EyeLike",
        # elementwise arithmetic, comparisons and logic
        "Add", "Sub", "Mul", "Div", "Mod", "Pow", "Neg", "Abs", "Floor", "Ceil", "Round",
        "Sqrt", "Reciprocal", "Sign", "Relu", "Clip", "Min", "Max", "Sum", "Mean", "Equal",
        "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Not", "And", "Or", "Xor",
        "Where", "BitShift",
        # reductions
        "ReduceSum", "ReduceProd", "ReduceMax", "ReduceMin", "ReduceMean", "ArgMax",
        "ArgMin", "CumSum",
    }
)  # fmt: skip
"""Ops whose evaluation costs time linear in their inputs and outputs. Regular
expressions (``RegexFullMatch`` backtracks for ever on ``(a+)+$``), string ops,
convolutions, matrix products, einsums, window functions and control flow are
never evaluated."""


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


NO_LARGER_THAN_INPUTS = frozenset(
    {
        "Shape", "Size", "Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose",
        "Split", "Slice", "GatherElements", "Cast", "CastLike", "Neg", "Abs", "Floor", "Ceil",
        "Round", "Sqrt", "Reciprocal", "Sign", "Relu", "Clip", "Not", "ReduceSum", "ReduceProd",
        "ReduceMax", "ReduceMin", "ReduceMean", "ArgMax", "ArgMin", "CumSum",
    }
)  # fmt: skip
"""Of :data:`FOLDABLE`, the ops whose outputs hold no more elements than their inputs."""


def _value_of_constant(node: Any) -> np.ndarray[Any, Any] | None:
    """The value of a ``Constant`` node, if it is small (a large one is never read)."""
    from onnx import numpy_helper

    for a in node.attribute:
        if a.name == "value" and a.HasField("t"):
            if a.t.data_location == 1 or not _small_dims(a.t.dims):
                return None
            return np.asarray(numpy_helper.to_array(a.t))
        if a.name == "value_int":
            return np.asarray(a.i, dtype=np.int64)
        if a.name == "value_ints" and len(a.ints) <= MAX_ELEMENTS:
            return np.asarray(list(a.ints), dtype=np.int64)
        if a.name == "value_float":
            return np.asarray(a.f, dtype=np.float32)
        if a.name == "value_floats" and len(a.floats) <= MAX_ELEMENTS:
            return np.asarray(list(a.floats), dtype=np.float32)
    return None


def _small_dims(dims: Any) -> bool:
    return all(d >= 0 for d in dims) and math.prod(dims) <= MAX_ELEMENTS


def _output_elements(
    node: Any, ins: list[np.ndarray[Any, Any]], opsets: dict[str, int]
) -> list[int] | None:
    """Elements of each output, from ONNX's shape inference of the node alone with its
    inputs as constants (nothing is computed); None where some output has no static size."""
    from onnx import helper, numpy_helper, shape_inference

    names = [f"in{i}" if name else "" for i, name in enumerate(node.input)]
    outs = [f"out{i}" for i in range(len(node.output))]
    single = helper.make_node(node.op_type, names, outs, domain=node.domain)
    single.attribute.extend(node.attribute)
    inits = [
        numpy_helper.from_array(x, n) for n, x in zip([n for n in names if n], ins, strict=False)
    ]
    graph = helper.make_graph(
        [single],
        "size",
        [],
        [helper.make_empty_tensor_value_info(o) for o in outs],
        initializer=inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets.items()]
    )
    try:
        inferred = shape_inference.infer_shapes(
            model, check_type=False, strict_mode=False, data_prop=True
        )
    except Exception:
        return None
    sizes = {}
    for vi in [*inferred.graph.output, *inferred.graph.value_info]:
        tt = vi.type.tensor_type
        if not vi.type.HasField("tensor_type") or not tt.HasField("shape"):
            continue
        dims = [d.dim_value if d.HasField("dim_value") else -1 for d in tt.shape.dim]
        if all(d >= 0 for d in dims):
            sizes[vi.name] = math.prod(dims)
    if any(o not in sizes for o in outs):
        return None
    return [sizes[o] for o in outs]


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

    deadline = time.monotonic() + MAX_SECONDS
    spent = 0

    def fold_graph(g: Any, outer: dict[str, np.ndarray[Any, Any]]) -> None:
        nonlocal folded, spent
        values = dict(outer)
        for init in g.initializer:
            if init.data_location != 1 and _small_dims(init.dims):
                with contextlib.suppress(Exception):  # data that does not match its dims
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
            found = [values.get(n) for n in node.input if n]
            ins = [x for x in found if x is not None]
            if (
                node.op_type not in FOLDABLE
                or _never_folded(node)
                or node.domain not in ("", "ai.onnx")
                or not ins
                or len(ins) < len(found)
                or any(x.dtype.kind in "OSU" for x in ins)
                or time.monotonic() > deadline
            ):
                new_nodes.append(node)
                continue
            sizes = _output_elements(node, ins, opsets)
            if sizes is None and node.op_type in NO_LARGER_THAN_INPUTS:
                # ONNX cannot size an uneven Split (5 into 4: 2, 2, 1, 0); these ops
                # never make more elements than they are given.
                sizes = [sum(x.size for x in ins)] * len(node.output)
            touched = sum(x.size for x in ins) + sum(sizes or ())
            if (
                sizes is None
                or max(sizes, default=0) > MAX_ELEMENTS
                or spent + touched > MAX_TOTAL_ELEMENTS
            ):
                new_nodes.append(node)
                continue
            spent += touched
            outs = _evaluate(node, ins, opsets)
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
