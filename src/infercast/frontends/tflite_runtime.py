"""Tensor shapes of a TFLite model as LiteRT computes them, and which of them to trust.

TFLite files store every tensor's shape, but shapes computed at run time
(``SHAPE -> STRIDED_SLICE / RANGE -> RESHAPE`` chains of STFT front ends,
``FILL``, ``TILE`` with computed multiples, ...) are stored as placeholders
(often 1s), and LiteRT's ``allocate_tensors()`` does not compute them either:
a kernel whose shape argument is not a constant marks its output *dynamic*
and sizes it during ``invoke()``. So:

1. :func:`dynamic_tensors` finds, statically, the main-graph tensors whose
   shapes LiteRT decides only at run time: outputs of ops whose shape argument
   (``RESHAPE`` input 1, ``STRIDED_SLICE`` begin/end/strides, ...) is not a
   constant, outputs of ops whose output size depends on values (``WHERE``,
   ``NON_MAX_SUPPRESSION_V4/V5``, ``UNIQUE``), and everything computed from those.
2. :func:`run_shapes` (run in an isolated child process, see
   :mod:`infercast.isolation`: the file is untrusted) resizes the inputs,
   allocates, records every tensor's shape, runs ``invoke()`` once on generated
   inputs and records them again.
3. The frontend takes the allocation shapes for the other tensors, and the
   after-run shapes for dynamic tensors whose shape cannot depend on input
   *values* (:func:`value_dependent`: only on input shapes and constants). What
   is left stays unknown (None), never a placeholder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from infercast.ir.graph import Graph, Node

# Inputs (by position) whose *values* set the output shape, per TFLite builtin.
# From the kernels in tensorflow/lite/kernels/*.cc: each calls SetTensorToDynamic
# on its output when one of these inputs is not a constant.
SHAPE_ARGS: dict[str, tuple[int, ...]] = {
    "RESHAPE": (1,),
    "TILE": (1,),
    "PAD": (1,),
    "PADV2": (1,),
    "MIRROR_PAD": (1,),
    "SLICE": (1, 2),
    "STRIDED_SLICE": (1, 2, 3),
    "RANGE": (0, 1, 2),
    "FILL": (0,),
    "BROADCAST_TO": (1,),
    "BROADCAST_ARGS": (0, 1),
    "RESIZE_BILINEAR": (1,),
    "RESIZE_NEAREST_NEIGHBOR": (1,),
    "TRANSPOSE": (1,),
    "MEAN": (1,),
    "SUM": (1,),
    "REDUCE_PROD": (1,),
    "REDUCE_MAX": (1,),
    "REDUCE_MIN": (1,),
    "REDUCE_ANY": (1,),
    "REDUCE_ALL": (1,),
    "EXPAND_DIMS": (1,),
    "SPLIT": (0,),
    "SPLIT_V": (1, 2),
    "SPACE_TO_BATCH_ND": (1, 2),
    "BATCH_TO_SPACE_ND": (1, 2),
    "TOPK_V2": (1,),
    "TRANSPOSE_CONV": (0,),
    "ARG_MAX": (1,),
    "ARG_MIN": (1,),
    "ONE_HOT": (1,),
    "SCATTER_ND": (2,),
    "RFFT2D": (1,),
    "UNSORTED_SEGMENT_SUM": (2,),
    "UNSORTED_SEGMENT_MAX": (2,),
    "UNSORTED_SEGMENT_MIN": (2,),
    "UNSORTED_SEGMENT_PROD": (2,),
    "RANDOM_STANDARD_NORMAL": (0,),
    "RANDOM_UNIFORM": (0,),
    "MULTINOMIAL": (1,),
    "GATHER": (),
}

VALUE_SHAPED: frozenset[str] = frozenset(
    {"WHERE", "NON_MAX_SUPPRESSION_V4", "NON_MAX_SUPPRESSION_V5", "UNIQUE", "SEGMENT_SUM"}
)
"""Ops whose output size depends on the values of their data inputs."""

SHAPE_OF: frozenset[str] = frozenset({"SHAPE", "RANK"})
"""Ops whose output value depends only on the input's shape."""


def _args(native: str) -> tuple[int, ...]:
    """Shape-argument positions of ``native``. Custom ops size their outputs from
    their inputs' shapes in ``Prepare`` (as TFLite_Detection_PostProcess does with
    its fixed maximum counts): no shape argument."""
    return SHAPE_ARGS.get(native, ())


def _resizing_call(node: Node, subgraphs: Mapping[str, Graph]) -> bool:
    """A WHILE / IF / CALL_ONCE whose called subgraphs hold a tensor of unknown shape
    (LiteRT may then resize the node's outputs while it runs)."""
    return any(
        name not in subgraphs or not all(t.is_static for t in subgraphs[name].tensors.values())
        for name in node.subgraphs
    )


def dynamic_tensors(graph: Graph, subgraphs: Mapping[str, Graph]) -> set[str]:
    """Main-graph tensors whose shape LiteRT computes only during ``invoke()``."""
    dynamic: set[str] = set()
    for node in graph.nodes:
        ins = [n for n in node.inputs if n]
        shape_args = [node.inputs[i] for i in _args(node.native_op) if i < len(node.inputs)]
        if (
            node.native_op in VALUE_SHAPED
            or any(n and not graph.tensors[n].is_constant for n in shape_args)
            or any(n in dynamic for n in ins)
            or _resizing_call(node, subgraphs)
        ):
            dynamic.update(o for o in node.outputs if o)
    # The called subgraphs' own tensors are not reported by LiteRT's Python API:
    # they keep the file's shapes (unknown where the file marks them dynamic).
    return dynamic


SAME_SHAPE: frozenset[str] = frozenset(
    {
        "LOGISTIC", "TANH", "RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1", "HARD_SWISH",
        "LEAKY_RELU", "ELU", "GELU", "ABS", "NEG", "EXP", "LOG", "SQRT", "RSQRT", "SQUARE",
        "SIN", "COS", "FLOOR", "CEIL", "ROUND", "SIGN", "SOFTMAX", "LOG_SOFTMAX",
        "L2_NORMALIZATION", "LOCAL_RESPONSE_NORMALIZATION", "QUANTIZE", "DEQUANTIZE", "CAST",
        "ZEROS_LIKE", "ONES_LIKE", "LOGICAL_NOT", "COMPLEX_ABS", "REAL", "IMAG",
    }
)  # fmt: skip
"""Builtins whose output has the shape of input 0 (elementwise, per-row softmax)."""

BROADCAST: frozenset[str] = frozenset(
    {
        "ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE", "POW",
        "FLOOR_DIV", "FLOOR_MOD", "LESS", "GREATER", "EQUAL", "NOT_EQUAL", "LESS_EQUAL",
        "GREATER_EQUAL", "LOGICAL_AND", "LOGICAL_OR",
    }
)  # fmt: skip
"""Builtins whose output is the broadcast of their two inputs."""


def _window(size: int, k: int, stride: int, dilation: int, padding: str) -> int | None:
    """Output length of a conv / pool window (tensorflow/lite/kernels/padding.h)."""
    if padding == "SAME":
        return (size + stride - 1) // stride
    if padding == "VALID":
        return (size - (k - 1) * dilation - 1) // stride + 1
    return None


def _expected(graph: Graph, node: Node) -> tuple[int, ...] | None:
    """Output 0's shape as the op's rule computes it from its inputs, where the rule
    is simple and every shape it reads is stored as known; else None."""
    ins = [graph.tensors[n] if n else None for n in node.inputs]
    if not ins or ins[0] is None or not ins[0].is_static or ins[0].shape is None:
        return None
    x = tuple(int(d or 0) for d in ins[0].shape)
    op = node.native_op
    if op in SAME_SHAPE:
        return x
    if op in BROADCAST and len(ins) == 2 and ins[1] is not None and ins[1].is_static:
        y = tuple(int(d or 0) for d in ins[1].shape or ())
        try:
            return tuple(int(d) for d in np.broadcast_shapes(x, y))
        except ValueError:
            return None
    if op == "RFFT2D" and len(ins) > 1 and ins[1] is not None and ins[1].value is not None:
        fft = [int(v) for v in np.asarray(ins[1].value).reshape(-1)]
        if len(fft) == 2 and len(x) >= 2:
            return (*x[:-2], fft[0], fft[1] // 2 + 1)
        return None
    a = node.attrs
    strides, padding = a.get("strides"), a.get("padding")
    if op in ("CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D"):
        if len(x) != 4 or not isinstance(strides, tuple) or len(strides) != 2:
            return None
        dil = a.get("dilations", (1, 1))
        if op.endswith("POOL_2D"):
            k, channels = a.get("kernel_shape"), x[3]
        else:
            w = ins[1] if len(ins) > 1 else None
            if w is None or not w.is_static or w.shape is None or len(w.shape) != 4:
                return None
            ws = tuple(int(d or 0) for d in w.shape)
            k, channels = (ws[1], ws[2]), (ws[0] if op == "CONV_2D" else ws[3])
        if not isinstance(k, tuple) or not isinstance(dil, tuple):
            return None
        h = _window(x[1], int(k[0]), int(strides[0]), int(dil[0]), str(padding))
        wd = _window(x[2], int(k[1]), int(strides[1]), int(dil[1]), str(padding))
        if h is None or wd is None:
            return None
        return (x[0], h, wd, channels)
    return None


def contradicted_shapes(graph: Graph) -> list[str]:
    """Main-graph outputs whose stored shape contradicts what the op computes from its
    inputs' stored shapes (a file edited or written by a faulty converter): LiteRT
    recomputes them in ``allocate_tensors()``, so the file's shape is not the truth."""
    out: list[str] = []
    for node in graph.nodes:
        if node.folded or not node.outputs or not node.outputs[0]:
            continue
        t = graph.tensors[node.outputs[0]]
        if not t.is_static or t.shape is None:
            continue
        want = _expected(graph, node)
        if want is not None and tuple(t.shape) != want:
            out.append(t.name)
    return out


def value_dependent(graph: Graph, subgraphs: Mapping[str, Graph]) -> set[str]:
    """Main-graph tensors whose *shape* may depend on input values (not only shapes).

    A tensor's value is data-derived when it is computed from a graph input's
    values (``SHAPE`` of a tensor is not: it reads the shape alone). A shape is
    value-dependent when a shape argument is data-derived, when the op's output
    size depends on values (:data:`VALUE_SHAPED`), or when an input's shape is.
    """
    data_valued: set[str] = {n for n in graph.inputs}
    for t in graph.tensors.values():
        if t.is_variable:
            data_valued.add(t.name)
    shape_dep: set[str] = set()
    for node in graph.nodes:
        ins = [n for n in node.inputs if n]
        outs = [o for o in node.outputs if o]
        in_shape_dep = any(n in shape_dep for n in ins)
        if node.native_op in SHAPE_OF:
            if in_shape_dep:
                data_valued.update(outs)  # the value is a shape that depends on data
        elif any(n in data_valued for n in ins) or node.native_op in (
            "READ_VARIABLE",
            "VAR_HANDLE",
        ):
            data_valued.update(outs)
        shape_args = [node.inputs[i] for i in _args(node.native_op) if i < len(node.inputs)]
        if (
            node.native_op in VALUE_SHAPED
            or in_shape_dep
            or any(n in data_valued for n in shape_args if n)
            or _resizing_call(node, subgraphs)
        ):
            shape_dep.update(outs)
    return shape_dep


def _generated(shape: Sequence[int], dtype: Any, rng: Any) -> Any:
    import numpy as np

    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.uniform(-1.0, 1.0, size=shape).astype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, size=shape).astype(dt)
    if dt.kind in "iu" and dt.itemsize <= 2:
        info = np.iinfo(dt)
        return rng.integers(int(info.min), int(info.max) + 1, size=shape).astype(dt)
    if dt.kind in "iu":
        return rng.integers(0, 16, size=shape).astype(dt)
    return np.zeros(shape, dtype=dt)


def run_shapes(payload: Mapping[str, Any]) -> dict[str, Any]:
    """Runs in the isolated child: ``{path, input_shapes: {input position: dims}, invoke}``.

    Returns ``{"allocated": [shape per tensor], "invoked": [...] | None,
    "invoke_error": str | None}``, shapes by tensor index of subgraph 0.
    """
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    # No default delegate: XNNPACK takes over whole partitions and the tensors
    # inside them keep their allocation-time shapes in the interpreter's view.
    interp = Interpreter(
        model_path=str(payload["path"]),
        num_threads=1,
        experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
    )
    details = interp.get_input_details()
    for pos, dims in dict(payload.get("input_shapes") or {}).items():
        interp.resize_tensor_input(details[int(pos)]["index"], [int(d) for d in dims], strict=False)
    interp.allocate_tensors()

    def shapes() -> list[list[int]]:
        by_index = {d["index"]: [int(x) for x in d["shape"]] for d in interp.get_tensor_details()}
        return [by_index.get(i, []) for i in range(max(by_index, default=-1) + 1)]

    allocated = shapes()
    invoked: list[list[int]] | None = None
    error: str | None = None
    if payload.get("invoke", True):
        rng = np.random.default_rng(0)
        try:
            for d in interp.get_input_details():
                interp.set_tensor(d["index"], _generated(d["shape"], d["dtype"], rng))
            interp.invoke()
            invoked = shapes()
        except Exception as exc:
            error = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
    return {"allocated": allocated, "invoked": invoked, "invoke_error": error}
