"""ONNX protobuf -> :class:`~infercast.ir.Graph`.

* Weights are never loaded: the model is parsed with ``load_external_data=False``
  and initializers are sized from their dims (external data from its ``length``).
* Shapes come from ONNX's own shape inference with data propagation
  (``infer_shapes(..., data_prop=True)``) on the proto without its weights (so
  the 2 GB protobuf limit is not reached), from the inputs: a shape the file
  declares for a node output is used only where inference has none.
  Outputs it leaves unknown are filled by the rules in :mod:`.shapes`.
* Constant values are read from the file only when asked
  (``Graph.constant_value``).
* Constants are initializers (also those older models list as graph inputs),
  ``Constant`` nodes, and outputs of nodes all of whose inputs are constant
  (``ConstantOfShape`` weights, ``DequantizeLinear`` of int8 weights, …): such a
  node is marked ``folded`` and costs nothing at inference, as a runtime folds it.
* Symbolic input dimensions must be fixed with ``--input-shape``; the error names
  the inputs and shows the option.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import re
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np

from infercast.errors import (
    MAX_NODES,
    InputShapeError,
    ModelFileError,
    SymbolicShapeError,
    too_many_nodes,
)
from infercast.ir.dtypes import DType
from infercast.ir.graph import Graph, Node, Quantization, Shape, Tensor
from infercast.isolation import IsolatedError, Limits, call_worker
from infercast.ops.registry import get_handler, registered_ops

_SNAKE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")

_CANONICAL: dict[str, str] = {
    "MatMul": "matmul",
    "MatMulInteger": "matmul_integer",
    "QLinearMatMul": "qlinear_matmul",
    "QLinearConv": "qlinear_conv",
    "AveragePool": "avg_pool",
    "GlobalAveragePool": "global_avg_pool",
    "PRelu": "prelu",
    "IsNaN": "is_nan",
    "IsInf": "is_inf",
    "And": "logical_and",
    "Or": "logical_or",
    "Xor": "logical_xor",
    "Not": "logical_not",
    "LessOrEqual": "less_equal",
    "GreaterOrEqual": "greater_equal",
    "Upsample": "resize",
    "QuantizeLinear": "quantize",
    "DequantizeLinear": "dequantize",
    "DynamicQuantizeLinear": "quantize",
    "CastLike": "cast",
    "LSTM": "lstm",
    "GRU": "gru",
    "RNN": "rnn",
    "LRN": "lrn",
    "Col2Im": "col2im",
    "BitCast": "bitcast",
}


@functools.cache
def canonical_name(op_type: str, domain: str) -> str:
    name = _CANONICAL.get(op_type) or _SNAKE.sub("_", op_type).lower()
    if domain not in ("", "ai.onnx"):
        return f"{domain}:{name}"
    return name


def _onnx() -> Any:
    import onnx

    return onnx


@functools.cache
def _dtype(elem_type: int) -> DType:
    onnx = _onnx()
    try:
        np_name = onnx.helper.tensor_dtype_to_string(elem_type)  # "TensorProto.FLOAT"
    except Exception:
        return DType.UNKNOWN
    name = np_name.rsplit(".", 1)[-1].lower()
    mapping = {
        "float": DType.FLOAT32,
        "double": DType.FLOAT64,
        "float16": DType.FLOAT16,
        "bfloat16": DType.BFLOAT16,
        "int8": DType.INT8,
        "uint8": DType.UINT8,
        "int16": DType.INT16,
        "uint16": DType.UINT16,
        "int32": DType.INT32,
        "uint32": DType.UINT32,
        "int64": DType.INT64,
        "uint64": DType.UINT64,
        "bool": DType.BOOL,
        "string": DType.STRING,
        "complex64": DType.COMPLEX64,
        "complex128": DType.COMPLEX128,
        "int4": DType.INT4,
        "uint4": DType.UINT4,
        "int2": DType.INT2,
    }
    if name.startswith("float8") or name.startswith("float4"):
        return DType.FLOAT8
    return mapping.get(name, DType.UNKNOWN)


def _type_shape(type_proto: Any) -> tuple[DType, Shape | None]:
    # Many values share one type: decode each distinct serialised TypeProto once.
    return _type_shape_cached(type_proto.SerializeToString())


@functools.lru_cache(maxsize=4096)
def _type_shape_cached(raw: bytes) -> tuple[DType, Shape | None]:
    onnx = _onnx()
    type_proto = onnx.TypeProto.FromString(raw)
    if not type_proto.HasField("tensor_type"):
        kind = type_proto.WhichOneof("value")
        if kind in ("sequence_type", "optional_type", "map_type"):
            return DType.VARIANT, None  # a container of tensors, not a tensor: no shape
        return DType.UNKNOWN, None
    tt = type_proto.tensor_type
    dtype = _dtype(tt.elem_type)
    if not tt.HasField("shape"):
        return dtype, None
    dims: list[int | None] = []
    for d in tt.shape.dim:
        # A negative dim_value (-1, as Paddle's exporter writes) means "dynamic".
        dims.append(int(d.dim_value) if d.HasField("dim_value") and d.dim_value >= 0 else None)
    return dtype, tuple(dims)


def _initializer_bytes(t: Any, dtype: DType, n: int) -> int:
    if t.data_location == 1:  # EXTERNAL: the size follows from dims; "length" is a claim
        if dtype.bits or n == 0:
            return dtype.nbytes(n)
        info = {e.key: e.value for e in t.external_data}
        length = info.get("length", "")
        return int(length) if length.isdigit() and int(length) <= 1 << 48 else 0
    if t.raw_data:
        return len(t.raw_data)
    for field in ("float_data", "int32_data", "int64_data", "double_data", "uint64_data"):
        vals = getattr(t, field)
        if len(vals):
            return dtype.nbytes(n)
    return dtype.nbytes(n) if n else 0


# TensorProto element types stored little-endian in ``raw_data`` one value per element
# (onnx/onnx.proto3 DataType): read with numpy directly, as numpy_helper.to_array does.
_RAW_NUMPY: dict[int, Any] = {
    1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32,
    7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64,
}  # fmt: skip


def _small_value(t: Any, dtype: DType, n: int) -> np.ndarray[Any, Any] | None:
    """The value of a small integer or bool constant (shape arguments, axes, masks)
    or of a short float vector (scalars, Resize scales)."""
    if n > 4096 or t.data_location == 1:
        return None
    if not (dtype.is_integer or dtype == DType.BOOL or n <= 16):
        return None
    np_type = _RAW_NUMPY.get(t.data_type)
    if np_type is not None and t.HasField("raw_data") and sys.byteorder == "little":
        raw = t.raw_data
        if len(raw) == n * np.dtype(np_type).itemsize:
            return np.frombuffer(raw, np_type).reshape(tuple(t.dims))
    try:
        return np.asarray(_onnx().numpy_helper.to_array(t))
    except Exception:
        return None


# AttributeProto.AttributeType (onnx/onnx.proto3)
_A_FLOAT, _A_INT, _A_STRING, _A_TENSOR, _A_GRAPH = 1, 2, 3, 4, 5
_A_FLOATS, _A_INTS, _A_STRINGS, _A_GRAPHS, _A_SPARSE_TENSOR = 6, 7, 8, 10, 11


def _attrs(node: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Plain attributes, and graph attributes (control-flow bodies) separately.

    Scalars and lists of scalars become Python values (strings decoded, lists as
    tuples); a tensor attribute stays a TensorProto; lists of tensors, graphs' other
    kinds and type protos are left out (``onnx.helper.get_attribute_value`` for the
    rare kinds)."""
    plain: dict[str, Any] = {}
    graphs: dict[str, Any] = {}
    for a in node.attribute:
        kind = a.type
        if kind == _A_INT:
            plain[a.name] = a.i
        elif kind == _A_INTS:
            plain[a.name] = tuple(a.ints)
        elif kind == _A_FLOAT:
            plain[a.name] = a.f
        elif kind == _A_STRING:
            plain[a.name] = a.s.decode("utf-8", "replace")
        elif kind == _A_FLOATS:
            plain[a.name] = tuple(a.floats)
        elif kind == _A_STRINGS:
            plain[a.name] = tuple(x.decode("utf-8", "replace") for x in a.strings)
        elif kind == _A_GRAPH:
            graphs[a.name] = a.g
        elif kind == _A_GRAPHS:
            for i, g in enumerate(a.graphs):
                graphs[f"{a.name}_{i}"] = g
        elif kind == _A_TENSOR:
            plain[a.name] = a.t
        elif kind == _A_SPARSE_TENSOR:
            plain[a.name] = a.sparse_tensor
        else:
            v = _onnx().helper.get_attribute_value(a)
            if isinstance(v, list):
                if v and not isinstance(v[0], int | float | str | bytes):
                    continue
                v = tuple(x.decode("utf-8", "replace") if isinstance(x, bytes) else x for x in v)
            plain[a.name] = v
    return plain, graphs


def _set_input_shapes(
    model: Any, input_shapes: Mapping[str, Shape], real_inputs: list[Any]
) -> None:
    names = [vi.name for vi in real_inputs]
    unknown = [k for k in input_shapes if k not in names]
    if unknown:
        shown = ", ".join(f"{vi.name}={_shape_str(_type_shape(vi.type)[1])}" for vi in real_inputs)
        raise InputShapeError(
            f"--input-shape names {', '.join(unknown)}, which is not an input of the model",
            f"inputs: {shown}",
        )
    for vi in real_inputs:
        if vi.name not in input_shapes:
            continue
        shape = input_shapes[vi.name]
        tt = vi.type.tensor_type
        if tt.HasField("shape") and len(tt.shape.dim) not in (0, len(shape)):
            raise InputShapeError(
                f"--input-shape {vi.name} has rank {len(shape)}; the model's input has rank "
                f"{len(tt.shape.dim)} ({_shape_str(_type_shape(vi.type)[1])})"
            )
        declared = _type_shape(vi.type)[1] or ()
        for axis, (given, fixed) in enumerate(zip(shape, declared, strict=False)):
            if fixed is not None and given != fixed:
                spec = "x".join(str(d) for d in shape)
                raise InputShapeError(
                    f"--input-shape {vi.name}={spec}: dimension {axis} is fixed at {fixed} "
                    f"in the model ({_shape_str(declared)})",
                    "only the dimensions shown as ? can be set",
                )
        tt.shape.ClearField("dim")
        for d in shape:
            tt.shape.dim.add().dim_value = int(d or 0)


class _Constants:
    """Reads a constant's value from the ONNX file when asked: the file is parsed again
    (weights included, external data from its files) on the first request, and the
    initializers and ``Constant`` values of every graph are indexed by name. A file
    that changed since it was loaded (size or modification time) gives None."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.index: dict[str, Any] | None = None
        try:
            st = os.stat(path)
            self.stamp: tuple[int, int] | None = (st.st_size, st.st_mtime_ns)
        except OSError:
            self.stamp = None

    def __call__(self, name: str) -> np.ndarray[Any, Any] | None:
        if self.stamp is None:
            return None
        try:
            st = os.stat(self.path)
            if (st.st_size, st.st_mtime_ns) != self.stamp:
                return None
            if self.index is None:
                self.index = {}
                _index_tensors(_onnx().load(self.path, load_external_data=False).graph, self.index)
            proto = self.index.get(name)
            if proto is None:
                return None
            return np.asarray(
                _onnx().numpy_helper.to_array(proto, base_dir=os.path.dirname(self.path))
            )
        except Exception:  # a truncated file, missing external data: not available
            return None


def _index_tensors(g: Any, acc: dict[str, Any]) -> None:
    """Name -> TensorProto of the initializers and Constant values of ``g`` and its bodies."""
    for t in g.initializer:
        acc[t.name] = t
    for node in g.node:
        for a in node.attribute:
            if node.op_type == "Constant" and a.name == "value" and a.HasField("t") and node.output:
                acc[node.output[0]] = a.t
            if a.HasField("g"):
                _index_tensors(a.g, acc)
            for body in a.graphs:
                _index_tensors(body, acc)


def _shape_str(shape: Shape | None) -> str:
    if shape is None:
        return "?"
    return "x".join("?" if d is None else str(d) for d in shape)


def load_onnx(path: str, data: bytes, input_shapes: Mapping[str, Shape] | None = None) -> Graph:
    """Parse an ONNX model held in ``data``. Raises :class:`ModelFileError` and kin."""
    onnx = _onnx()
    try:
        model = onnx.load_model_from_string(data)
    except Exception as exc:
        raise ModelFileError(
            f"{path}: not a readable ONNX model (protobuf parse failed: {type(exc).__name__})",
            "the file is truncated, corrupt, or another format",
        ) from exc
    if not model.HasField("graph") or model.ir_version <= 0 or not model.opset_import:
        raise ModelFileError(
            f"{path}: not an ONNX model (no graph, IR version or opset in the file)",
            "check the file is an .onnx export",
        )
    _check_text(path, model)
    try:
        from infercast.frontends.onnx.shapes import ONNX_INFERENCE_WRONG, infer_missing_shapes

        graph, declared_only = _build(path, model, input_shapes or {})
        parts = graph.all_graphs()
        if (
            not declared_only
            and all(t.is_static for _, g in parts for t in g.tensors.values())
            and not any(n.op in ONNX_INFERENCE_WRONG for _, g in parts for n in g.nodes)
        ):
            return graph  # ONNX's inference left nothing for the op rules to fill or fix
        return infer_missing_shapes(graph, declared=declared_only)
    except (ModelFileError, SymbolicShapeError, InputShapeError):
        raise
    except Exception as exc:
        raise ModelFileError(
            f"{path}: the ONNX model is inconsistent ({type(exc).__name__}: {exc})",
            "the file may be corrupt; onnx.checker.check_model gives details",
        ) from exc


def _check_text(path: str, model: Any) -> None:
    """Names are UTF-8 text (ONNX says so); protobuf hands back ``bytes`` for a string
    field that is not, and a name of bytes breaks every output. Said in one line."""
    fields = [model.producer_name, model.producer_version, model.domain]
    fields.extend(o.domain for o in model.opset_import)
    graphs = [model.graph]
    nodes = 0
    while graphs:
        g = graphs.pop()
        nodes += len(g.node)
        if nodes > MAX_NODES:
            raise too_many_nodes(path, nodes)
        fields.append(g.name)
        fields.extend(x.name for x in (*g.input, *g.output, *g.value_info, *g.initializer))
        for n in g.node:
            fields.extend((n.name, n.op_type, n.domain, *n.input, *n.output))
            for a in n.attribute:
                fields.append(a.name)
                if a.HasField("g"):
                    graphs.append(a.g)
                graphs.extend(a.graphs)
        bad = next((f for f in fields if not isinstance(f, str)), None)
        if bad is not None:
            raise ModelFileError(
                f"{path}: a name in the model is not UTF-8 text ({bytes(bad)[:40]!r})",
                "the file is corrupt or crafted",
            )
        fields.clear()


def _strip_weight_data(g: Any) -> None:
    """Drop the data of large initializers (sizes follow from dims and data type).

    Shape inference serialises the whole model into C++ and back; without the
    weights that costs microseconds instead of a copy of every weight. Small
    initializers (shape arguments) keep their values for data propagation.
    """
    for t in g.initializer:
        if t.data_location != 1 and math.prod(t.dims) > _KEEP_VALUES_UP_TO:
            for field in _DATA_FIELDS:
                t.ClearField(field)


_KEEP_VALUES_UP_TO = 4096
_DATA_FIELDS = (
    "raw_data",
    "float_data",
    "int32_data",
    "int64_data",
    "double_data",
    "uint64_data",
    "string_data",
)


def _build(
    path: str, model: Any, input_shapes: Mapping[str, Shape]
) -> tuple[Graph, frozenset[str]]:
    """The graph with ONNX-inferred shapes, and the node outputs whose shape comes
    from the file's declaration alone (ONNX's inference had nothing for them)."""
    g = model.graph
    _strip_weight_data(g)
    notes: list[str] = []
    _fix_inputs(path, model, input_shapes, notes)
    shapes, declared_only = _isolated_shapes(model, notes)
    opsets = {o.domain or "ai.onnx": int(o.version) for o in model.opset_import}
    meta = {
        "ir_version": str(model.ir_version),
        "producer": f"{model.producer_name} {model.producer_version}".strip(),
        "opsets": ", ".join(f"{k}={v}" for k, v in sorted(opsets.items())),
    }
    graph = _graph(path, model.graph, {}, notes, shapes, _Constants(path))
    full = Graph(
        name=graph.name,
        format="onnx",
        layout="NCHW",
        tensors=graph.tensors,
        nodes=graph.nodes,
        inputs=graph.inputs,
        outputs=graph.outputs,
        path=path,
        subgraphs=graph.subgraphs,
        metadata=meta,
        notes=tuple(notes),
        constants=graph.constants,
    )
    return full, declared_only


def _fix_inputs(path: str, model: Any, input_shapes: Mapping[str, Shape], notes: list[str]) -> None:
    """Give the model's inputs the shapes asked for (a leading dynamic batch alone
    becomes 1, with a note); refuse inputs that stay symbolic, saying what to give."""
    g = model.graph
    init_names = {t.name for t in g.initializer}
    real_inputs = [vi for vi in g.input if vi.name not in init_names]
    given = dict(input_shapes)
    for vi in real_inputs:
        if vi.name in given or not vi.type.HasField("tensor_type"):
            continue
        declared = _type_shape(vi.type)[1]
        if declared and len(declared) > 1 and declared[0] is None and None not in declared[1:]:
            # A leading dynamic batch alone: batch 1, as users expect (with a note).
            given[vi.name] = (1, *declared[1:])
            notes.append(
                f"input {vi.name}: dynamic batch dimension set to 1 "
                f"(--input-shape {vi.name}=Nx... to change it)"
            )
    if given:
        _set_input_shapes(model, given, real_inputs)
    symbolic = []
    for vi in real_inputs:
        if not vi.type.HasField("tensor_type"):
            continue  # sequence / optional / map inputs have no dimensions to fix
        shape = _type_shape(vi.type)[1]
        if shape is None or any(d is None for d in shape):
            symbolic.append((vi.name, shape))
    if symbolic:
        shown = ", ".join(f"{n} [{_shape_str(s)}]" for n, s in symbolic)
        guess = {n: tuple(1 if d is None else d for d in (s or (1,))) for n, s in symbolic}
        options = " ".join(
            f"--input-shape {n}=" + "x".join(str(d) for d in dims) for n, dims in guess.items()
        )
        valid = _suggestion_is_valid(path, model, {**given, **guess})
        raise SymbolicShapeError(
            f"{path}: input(s) with symbolic or unknown dimensions: {shown}",
            f"fix them, e.g. {options}"
            if valid
            else "give each with --input-shape NAME=DIMS (setting the unknown dimensions to 1 "
            "does not give a consistent graph; the model's documentation says what it expects)",
        )


ONNX_LIMITS = Limits(timeout_s=12.0, memory_bytes=768 << 20, cpu_s=12.0)
"""Time and memory ONNX's shape inference and constant folding may take on one model."""

Packed = dict[str, Any]


def _isolated_shapes(
    model: Any, notes: list[str]
) -> tuple[dict[str, tuple[DType, Shape | None]], frozenset[str]]:
    """:func:`_inferred_shapes` in the isolated worker. ONNX's C++ shape inference and
    its reference evaluator execute the file's content (a mutated model crashes the
    former with SIGSEGV; folding can be asked for gigabytes): a failure there leaves the
    shapes the file declares, for the op rules to complete, and a note."""
    try:
        found = call_worker(
            f"{__name__}:_inferred_shapes_packed",
            blob=model.SerializeToString(),  # without weights: the structure only
            limits=ONNX_LIMITS,
            what="ONNX shape inference",
        )
    except IsolatedError as exc:
        notes.append(f"{exc}; the op rules filled the shapes instead")
        return _collect_shapes(model.graph), frozenset()
    notes.extend(str(n) for n in found["notes"])
    shapes = {
        str(k): (DType(d), None if s is None else tuple(None if x is None else int(x) for x in s))
        for k, (d, s) in found["shapes"].items()
    }
    return shapes, frozenset(str(n) for n in found["declared_only"])


def _inferred_shapes_packed(blob: bytes) -> Packed:
    """In the isolated worker: :func:`_inferred_shapes` of the model in ``blob``, as JSON."""
    notes: list[str] = []
    shapes, declared_only = _inferred_shapes(_onnx().load_model_from_string(blob), notes)
    return {
        "shapes": {k: [d.value, None if s is None else list(s)] for k, (d, s) in shapes.items()},
        "declared_only": sorted(declared_only),
        "notes": notes,
    }


def _strict_inference(blob: bytes) -> bool:
    """In the isolated worker: ONNX's strict shape inference accepts the model (else it raises)."""
    onnx = _onnx()
    model = onnx.load_model_from_string(blob)
    onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=True, data_prop=True)
    return True


def _inferred_shapes(
    model: Any, notes: list[str]
) -> tuple[dict[str, tuple[DType, Shape | None]], frozenset[str]]:
    """ONNX's shape inference over the whole model (declarations set aside, see
    :func:`_infer_over_declarations`); where it leaves used outputs unknown, again after
    folding small constant computations, if that knows more. Also the names whose
    shape comes from a declaration alone."""
    shapes, declared_only = _infer_over_declarations(model, notes)
    graphs = _graph_protos(model.graph)
    used = _used_names(graphs)
    before = _unknown_outputs(graphs, shapes, used)
    if before:
        # ONNX's data propagation stops at some constant computations: fold the
        # small ones with its reference evaluator and infer again (fold.py).
        from infercast.frontends.onnx.fold import fold_for_inference

        work, n_folded = fold_for_inference(model)
        if n_folded:
            again = _collect_shapes(_infer(work, notes).graph)
            # What inference alone knew stays (declarations never override it).
            again.update({k: v for k, v in shapes.items() if _full(v[1])})
            after = _unknown_outputs(graphs, again, used)
            if after < before:
                shapes = again
                notes.append(
                    f"{n_folded} small constant computations evaluated (onnx.reference) so "
                    f"that shape inference could see through them ({before - after} more "
                    "shapes known)"
                )
    return shapes, declared_only


def _suggestion_is_valid(path: str, model: Any, shapes: Mapping[str, Shape]) -> bool:
    """Whether ``shapes`` propagate through the graph: ONNX's strict shape inference
    and our rules accept them, and every layer output comes out known and non-empty."""
    onnx = _onnx()
    trial = onnx.ModelProto()
    trial.CopyFrom(model)
    try:
        init_names = {t.name for t in trial.graph.initializer}
        inputs = [vi for vi in trial.graph.input if vi.name not in init_names]
        _set_input_shapes(trial, shapes, inputs)
        call_worker(  # ONNX's C++ inference on a stranger's file: isolated
            f"{__name__}:_strict_inference",
            blob=trial.SerializeToString(),
            limits=ONNX_LIMITS,
            what="ONNX shape inference",
        )
        graph, _ = _build(path, trial, {})
    except Exception:
        return False
    for node in graph.nodes:
        for out in node.outputs:
            t = graph.tensors.get(out) if out else None
            if t is not None and (not t.is_static or t.elements == 0):
                return False
    return True


def _infer(model: Any, notes: list[str]) -> Any:
    """ONNX shape inference with data propagation. Returns the model unchanged if it
    fails. (Weights are not in the proto: large initializers are stripped and external
    data is never loaded, so the 2 GB protobuf limit is not reached.)"""
    try:
        return _try_infer(model)
    except Exception as exc:
        note = f"ONNX shape inference failed ({type(exc).__name__}); op rules used instead"
        if note not in notes:
            notes.append(note)
        return model


def _try_infer(model: Any) -> Any:
    return _onnx().shape_inference.infer_shapes(
        model, check_type=False, strict_mode=False, data_prop=True
    )


def _decl_str(shape: Shape | None) -> str:
    return _shape_str(shape) if shape != () else "[] (rank 0)"


def _full(shape: Shape | None) -> bool:
    return shape is not None and None not in shape


def _compatible(declared: Shape, inferred: Shape) -> bool:
    """The same rank, and no dimension known on both sides that differs."""
    return len(declared) == len(inferred) and all(
        d is None or i is None or d == i for d, i in zip(declared, inferred, strict=True)
    )


def _produced(g: Any, acc: set[str]) -> set[str]:
    for node in g.node:
        acc.update(o for o in node.output if o)
        for a in node.attribute:
            if a.HasField("g"):
                _produced(a.g, acc)
            for sub in a.graphs:
                _produced(sub, acc)
    return acc


def _declarations(g: Any, produced: set[str], acc: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """Value infos (``value_info`` and graph outputs, subgraphs included) that declare
    a shape for a node output: name -> the declaring protos. Shapes declared for
    anything else (initializers, inputs passed through, names of nothing) are cleared."""
    for vi in [*g.output, *g.value_info]:
        if not vi.type.HasField("tensor_type") or not vi.type.tensor_type.HasField("shape"):
            continue
        if vi.name in produced:
            acc.setdefault(vi.name, []).append(vi)
        else:
            # An initializer's dims and a graph input's declaration are what count; an
            # entry naming nothing is left over by an optimiser's rewrite.
            vi.type.tensor_type.ClearField("shape")
    for node in g.node:
        for a in node.attribute:
            if a.HasField("g"):
                _declarations(a.g, produced, acc)
            for sub in a.graphs:
                _declarations(sub, produced, acc)
    return acc


def _infer_over_declarations(
    model: Any, notes: list[str]
) -> tuple[dict[str, tuple[DType, Shape | None]], frozenset[str]]:
    """Shapes of every value: what inference derives from the inputs wins over what
    the file declares for a node output.

    A file may declare an output (or a ``value_info``) with a wrong shape: rank 0
    (``[]``) where the runtime computes a 4-D tensor, a wrong dimension, a wrong rank.
    ONNX's inference keeps such a declaration and derives everything downstream from
    it. So node-output declarations are set aside, inference runs from the inputs, and
    a declaration is used only where inference has nothing for that value (or only
    some dimensions, and the declaration agrees with them); then inference runs again
    so the declared values propagate. A declaration that contradicts the inferred
    shape is named in a note. Returns the shapes and the names whose shape comes from
    a declaration alone (the op rules may still override those).
    """
    decls = _declarations(model.graph, _produced(model.graph, set()), {})
    originals = {name: [vi.type.SerializeToString() for vi in vis] for name, vis in decls.items()}
    declared: dict[str, Shape | None] = {}
    for name, vis in decls.items():
        shape = _type_shape(vis[0].type)[1]
        declared[name] = shape
        for vi in vis:
            vi.type.tensor_type.ClearField("shape")
    shapes = _collect_shapes(_infer(model, notes).graph)
    inferred = {k: v for k, v in shapes.items() if k in declared}
    conflicts: list[str] = []
    used: set[str] = set()
    for name, dshape in declared.items():
        ishape = inferred.get(name, (DType.UNKNOWN, None))[1]
        if dshape is None:
            continue
        if ishape is not None and not _compatible(dshape, ishape):
            conflicts.append(f"{name} declared {_decl_str(dshape)}, inferred {_decl_str(ishape)}")
            continue
        if _full(ishape) and ishape is not None:
            continue
        used.add(name)
        for vi, raw in zip(decls[name], originals[name], strict=True):
            vi.type.CopyFrom(vi.type.FromString(raw))
    consumed = _read_names(model.graph, set())
    if used and not used & consumed:
        # Declared graph outputs nothing reads: nothing downstream to propagate them to.
        shapes.update({n: (shapes.get(n, (DType.UNKNOWN, None))[0], declared[n]) for n in used})
    elif used:
        try:
            again = _collect_shapes(_try_infer(model).graph)
        except Exception:
            # The declarations upset ONNX's inference (a value declared rank 0 feeding a
            # conv): keep what inference alone gave, plus the declarations used.
            again = {n: (shapes[n][0], declared[n]) for n in used if n in shapes}
        for name, (dtype, shape) in shapes.items():
            if _full(shape) or name not in again:
                again[name] = (dtype, shape)
        shapes = again
    if conflicts:
        shown = "; ".join(conflicts[:4])
        if len(conflicts) > 4:
            shown += f"; and {len(conflicts) - 4} more"
        notes.append(
            f"{len(conflicts)} value(s) declared in the file with a shape that contradicts "
            f"the one inferred from the inputs; the inferred shape is used: {shown}"
        )
    return shapes, frozenset(used)


def _graph_protos(g: Any) -> list[Any]:
    """``g`` and every body its nodes call (GRAPH / GRAPHS attributes), depth first."""
    out = [g]
    for node in g.node:
        for a in node.attribute:
            kind = a.type
            if kind == _A_GRAPH:
                out.extend(_graph_protos(a.g))
            elif kind == _A_GRAPHS:
                for body in a.graphs:
                    out.extend(_graph_protos(body))
    return out


def _collect_shapes(g: Any) -> dict[str, tuple[DType, Shape | None]]:
    """Name -> (dtype, shape) of every typed value in ``g`` and its subgraphs."""
    acc: dict[str, tuple[DType, Shape | None]] = {}
    for sub in _graph_protos(g):
        for vis in (sub.input, sub.value_info, sub.output):
            for vi in vis:
                # Many values share one type: decode each distinct TypeProto once.
                acc[vi.name] = _type_shape_cached(vi.type.SerializeToString())
    return acc


def _read_names(g: Any, acc: set[str]) -> set[str]:
    """Names read by some node, or returned by a subgraph to the node that calls it."""
    for node in g.node:
        acc.update(node.input)
        for a in node.attribute:
            bodies = [a.g] if a.HasField("g") else []
            for body in [*bodies, *a.graphs]:
                acc.update(o.name for o in body.output)
                _read_names(body, acc)
    return acc


def _used_names(graphs: list[Any]) -> set[str]:
    """Names read by some node or returned by a graph."""
    acc: set[str] = set()
    for g in graphs:
        acc.update(o.name for o in g.output)
        for node in g.node:
            acc.update(node.input)
    return acc


def _unknown_outputs(
    graphs: list[Any], shapes: Mapping[str, tuple[DType, Shape | None]], used: set[str]
) -> int:
    """How many used node outputs have no fully known shape."""
    n = 0
    for g in graphs:
        for node in g.node:
            for out in node.output:
                if out and out in used:
                    shape = shapes.get(out, _UNKNOWN)[1]
                    if shape is None or None in shape:
                        n += 1
    return n


_UNKNOWN: tuple[DType, Shape | None] = (DType.UNKNOWN, None)


def _graph(
    path: str,
    g: Any,
    outer: Mapping[str, Tensor],
    notes: list[str],
    shapes: Mapping[str, tuple[DType, Shape | None]],
    constants: _Constants,
) -> Graph:
    """One GraphProto (the model's, or a control-flow body) as a :class:`Graph`.

    Types and shapes come from ``shapes`` (ONNX's inference over the whole model,
    which keeps what the file declares); ``outer`` holds the enclosing graphs'
    tensors a body may read."""
    tensors = _initializer_tensors(g)
    init_names = set(tensors)
    inputs = tuple(vi.name for vi in g.input if vi.name not in init_names)
    for name in inputs:
        in_dtype, in_shape = shapes.get(name, _UNKNOWN)
        tensors[name] = Tensor(name, in_dtype, in_shape, _layout(in_shape))
    reading = _Reading(path, tensors, outer, notes, shapes, constants)
    nodes = [reading.node(i, n) for i, n in enumerate(g.node)]
    outputs = tuple(vi.name for vi in g.output)
    for name in outputs:
        reading.ensure(name)
    _attach_qdq(nodes, tensors, g)
    return Graph(
        name=g.name or "main",
        format="onnx",
        layout="NCHW",
        tensors=tensors,
        nodes=tuple(nodes),
        inputs=inputs,
        outputs=outputs,
        path=path,
        subgraphs=reading.subgraphs,
        constants=constants,
    )


def _initializer_tensors(g: Any) -> dict[str, Tensor]:
    tensors: dict[str, Tensor] = {}
    for t in g.initializer:
        dtype = _dtype(t.data_type)
        shape = tuple(t.dims)
        n = math.prod(shape)
        name = t.name
        tensors[name] = Tensor(
            name,
            dtype,
            shape,
            is_constant=True,
            storage_bytes=_initializer_bytes(t, dtype, n),
            value=_small_value(t, dtype, n),
        )
    for t in g.sparse_initializer:
        v = t.values
        dtype = _dtype(v.data_type)
        shape = tuple(int(d) for d in t.dims)
        tensors[v.name or t.name] = Tensor(
            name=v.name,
            dtype=dtype,
            shape=shape,
            is_constant=True,
            sparse=True,
            storage_bytes=_initializer_bytes(v, dtype, int(np.prod(tuple(v.dims)) or 1)),
        )
    return tensors


class _Reading:
    """The state of reading one graph's nodes: the tensors so far, the bodies read."""

    def __init__(
        self,
        path: str,
        tensors: dict[str, Tensor],
        outer: Mapping[str, Tensor],
        notes: list[str],
        shapes: Mapping[str, tuple[DType, Shape | None]],
        constants: _Constants,
    ) -> None:
        self.path = path
        self.tensors = tensors
        self.outer = outer
        self.notes = notes
        self.shapes = shapes
        self.constants = constants
        self.subgraphs: dict[str, Graph] = {}
        self.seen_names: set[str] = set()
        self.handlers = registered_ops()

    def ensure(self, name: str) -> None:
        """``name`` must be known: produced earlier, a constant, or an outer value."""
        if not name or name in self.tensors:
            return
        if name in self.outer:
            self.tensors[name] = self.outer[name]
            return
        raise ModelFileError(
            f"{self.path}: tensor '{name}' is read before anything produces it",
            "the graph is truncated, corrupt or not topologically sorted",
        )

    def node(self, i: int, n: Any) -> Node:
        tensors = self.tensors
        ins = tuple(n.input)
        for x in ins:
            if x not in tensors:
                self.ensure(x)
        op_type, domain = n.op_type, n.domain
        op = canonical_name(op_type, domain)
        attrs, graph_attrs = _attrs(n) if len(n.attribute) else ({}, {})
        outs = tuple(n.output)
        name = n.name or (outs[0] if outs else f"{op_type}_{i}")
        if name in self.seen_names:
            name = f"{name}#{i}"
        self.seen_names.add(name)
        called = tuple(self.body(name, key, body, attrs) for key, body in graph_attrs.items())
        in_tensors = [tensors[x] if x else None for x in ins]
        const_ins = [t for t in in_tensors if t is not None]
        folded = self.folded(op, const_ins)
        if op in _CANONICAL_ATTR_OPS:
            attrs = _canonical_attrs(op, attrs, in_tensors)
            if op == "conv":
                op = _maybe_depthwise(attrs, in_tensors)
        shapes = self.shapes
        for out_name in outs:
            if not out_name:
                continue
            o_dtype, o_shape = shapes.get(out_name, _UNKNOWN)
            if folded:
                tensors[out_name] = _output_tensor(out_name, o_dtype, o_shape, op, attrs, const_ins)
            else:
                tensors[out_name] = Tensor(out_name, o_dtype, o_shape, _layout(o_shape))
        if op == "constant":
            attrs = {k: v for k, v in attrs.items() if not hasattr(v, "SerializeToString")}
        return Node(i, name, op, op_type, ins, outs, attrs, called, domain, folded)

    def folded(self, op: str, const_ins: list[Tensor]) -> bool:
        """Computed once at load: a Constant, or an op of constant inputs only that draws
        no random values and calls no subgraph."""
        if op == "constant":
            return True
        if not const_ins:
            return False
        facts = self.handlers.get(op)
        if facts is not None and (facts.nondeterministic or facts.control_flow):
            return False
        return all(t.is_constant for t in const_ins)

    def body(self, name: str, key: str, body: Any, attrs: dict[str, Any]) -> str:
        """Read a called body (it sees every tensor known so far); its name."""
        sub_name = f"{name}/{key}"
        attrs[f"{key}_subgraph"] = sub_name
        visible = dict(self.outer)
        visible.update(self.tensors)
        self.subgraphs[sub_name] = _graph(
            self.path, body, visible, self.notes, self.shapes, self.constants
        )
        return sub_name


def _layout(shape: Shape | None) -> str | None:
    return "NCHW" if shape is not None and len(shape) == 4 else None


def _output_tensor(
    name: str,
    dtype: DType,
    shape: Shape | None,
    op: str,
    attrs: Mapping[str, Any],
    const_ins: list[Tensor],
) -> Tensor:
    """The output of a folded node: a constant (its storage: the value it holds)."""
    value = None
    storage = 0
    derived = None
    if op == "constant":
        proto = next((v for v in attrs.values() if hasattr(v, "SerializeToString")), None)
        if proto is not None and hasattr(proto, "data_type"):
            onnx = _onnx()
            dtype = _dtype(proto.data_type)
            shape = tuple(int(d) for d in proto.dims)
            n = int(np.prod(shape)) if shape else 1
            storage = _initializer_bytes(proto, dtype, n)
            value = _small_value(proto, dtype, n)
            del onnx
        else:
            for k in ("value_int", "value_ints", "value_float", "value_floats"):
                if k in attrs:
                    arr = np.asarray(attrs[k])
                    storage = arr.nbytes
                    if arr.dtype.kind == "i":
                        value = arr.astype(np.int64)
    elif (facts := get_handler(op)) is not None and facts.generator:
        t = Tensor(name=name, dtype=dtype, shape=shape)
        storage = t.nbytes or 0
    else:
        src = max(const_ins, key=lambda t: t.storage_bytes)
        storage = src.storage_bytes
        derived = src.derived_from or src.name
    quant = None
    return Tensor(
        name=name,
        dtype=dtype,
        shape=shape,
        is_constant=True,
        storage_bytes=storage,
        derived_from=derived,
        value=value,
        quant=quant,
    )


_CANONICAL_ATTR_OPS = frozenset(
    {"conv", "conv_integer", "qlinear_conv", "conv_transpose", "resize", "lstm", "gru", "rnn"}
)


def _canonical_attrs(op: str, attrs: dict[str, Any], ins: list[Tensor | None]) -> dict[str, Any]:
    if op in ("conv", "conv_integer"):
        attrs.update(weight_layout="OIHW", data_input=0, weight_input=1)
    elif op == "qlinear_conv":
        attrs.update(weight_layout="OIHW", data_input=0, weight_input=3)
    elif op == "conv_transpose":
        attrs.update(weight_layout="IOHW", data_input=0, weight_input=1)
    elif op == "resize":
        x = ins[0] if ins else None
        rank = x.rank if x is not None and x.rank is not None else 4
        attrs.setdefault("mode", "nearest")
        attrs["resized_axes"] = max(rank - 2, 1)
    elif op in ("lstm", "gru", "rnn"):
        layout = int(attrs.get("layout", 0))
        attrs.update(
            weight_inputs=(1, 2),
            time_axis=0 if layout == 0 else 1,
            batch_axis=1 if layout == 0 else 0,
            num_directions=2 if attrs.get("direction") == "bidirectional" else 1,
        )
    return attrs


def _maybe_depthwise(attrs: Mapping[str, Any], ins: list[Tensor | None]) -> str:
    group = int(attrs.get("group", 1))
    x = ins[0] if ins else None
    if (
        group > 1
        and x is not None
        and x.shape is not None
        and len(x.shape) >= 2
        and x.shape[1] == group
    ):
        return "depthwise_conv"
    return "conv"


def _attach_qdq(nodes: list[Node], tensors: dict[str, Tensor], g: Any) -> None:
    """Record QuantizeLinear / DequantizeLinear parameters on the quantised tensors."""
    qdq = [n for n in nodes if n.op in ("quantize", "dequantize") and len(n.inputs) >= 2]
    if not qdq:
        return
    onnx = _onnx()
    protos = {t.name: t for t in g.initializer}
    for node in g.node:
        if node.op_type == "Constant" and node.output:
            for a in node.attribute:
                if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
                    protos[node.output[0]] = a.t

    def values(name: str) -> np.ndarray[Any, Any] | None:
        proto = protos.get(name)
        if proto is None or proto.data_location == 1 or math.prod(proto.dims) > 4096:
            return None  # quantisation parameters are small; a large one is not read
        return np.ravel(onnx.numpy_helper.to_array(proto))

    for node in qdq:
        scales_arr = values(node.inputs[1])
        if scales_arr is None:
            continue
        zp_arr = values(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
        scales = tuple(float(x) for x in scales_arr)
        zps = tuple(int(x) for x in zp_arr) if zp_arr is not None else (0,) * len(scales)
        axis = int(node.attrs.get("axis", 1)) if len(scales) > 1 else None
        q = Quantization(scale=scales, zero_point=zps, axis=axis)
        target = node.inputs[0] if node.op == "dequantize" else node.outputs[0]
        if target in tensors:
            tensors[target] = dataclasses.replace(tensors[target], quant=q)
