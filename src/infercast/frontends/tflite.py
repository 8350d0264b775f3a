"""TFLite flatbuffer -> :class:`~infercast.ir.Graph`.

Reads the file with the schema LiteRT itself is generated from
(``ai_edge_litert.schema_py_generated``, i.e. ``tensorflow/compiler/mlir/lite/schema/schema.fbs``).
Shapes come from the file (TFLite stores every tensor's shape); a model with
dynamic dimensions (``shape_signature`` -1) is resolved through the LiteRT
interpreter's own shape propagation once ``--input-shape`` fixes its inputs.

Every subgraph is read: the main one (subgraph 0) becomes the graph, the others
its ``subgraphs`` (WHILE / IF bodies, CALL_ONCE initialisers). Constants
decoded at load time by DEQUANTIZE (fp16 weights) or DENSIFY (sparse weights)
become *derived* constants: the consumer sees a constant, the storage bytes
stay those of the stored source.
"""

from __future__ import annotations

import dataclasses
import mmap
import os
import re
from collections.abc import Callable, Mapping
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

TFLITE_IDENTIFIER = b"TFL3"


def _schema() -> Any:
    try:
        from ai_edge_litert import schema_py_generated as schema
    except ImportError as exc:  # pragma: no cover - dependency of the package
        raise ModelFileError(
            "reading .tflite needs the TFLite schema from LiteRT",
            "pip install ai-edge-litert",
        ) from exc
    return schema


# Canonical names for TFLite builtins whose lower-cased name is not already one.
_CANONICAL: dict[str, str] = {
    "CONV_2D": "conv",
    "CONV_3D": "conv",
    "DEPTHWISE_CONV_2D": "depthwise_conv",
    "TRANSPOSE_CONV": "conv_transpose",
    "CONV_3D_TRANSPOSE": "conv_transpose",
    "FULLY_CONNECTED": "fully_connected",
    "BATCH_MATMUL": "matmul",
    "AVERAGE_POOL_2D": "avg_pool",
    "MAX_POOL_2D": "max_pool",
    "L2_POOL_2D": "l2_pool",
    "LOGISTIC": "sigmoid",
    "CONCATENATION": "concat",
    "MEAN": "reduce_mean",
    "SUM": "reduce_sum",
    "ARG_MAX": "arg_max",
    "ARG_MIN": "arg_min",
    "CUMSUM": "cum_sum",
    "LSTM": "lstm",
    "UNIDIRECTIONAL_SEQUENCE_LSTM": "lstm",
    "BIDIRECTIONAL_SEQUENCE_LSTM": "lstm",
    "RNN": "rnn",
    "UNIDIRECTIONAL_SEQUENCE_RNN": "rnn",
    "BIDIRECTIONAL_SEQUENCE_RNN": "rnn",
    "RESIZE_BILINEAR": "resize",
    "RESIZE_NEAREST_NEIGHBOR": "resize",
    "LOCAL_RESPONSE_NORMALIZATION": "lrn",
    "SPACE_TO_BATCH_ND": "space_to_batch",
    "BATCH_TO_SPACE_ND": "batch_to_space",
    "PADV2": "pad",
    "SELECT": "where",
    "SELECT_V2": "where",
    "WHERE": "non_zero",
    "REVERSE_V2": "reverse",
    "TOPK_V2": "top_k",
    "NON_MAX_SUPPRESSION_V4": "non_max_suppression",
    "NON_MAX_SUPPRESSION_V5": "non_max_suppression",
    "RANDOM_STANDARD_NORMAL": "random_normal",
    "SQUARED_DIFFERENCE": "squared_difference",
    "NOT_EQUAL": "not_equal",
    "LOGICAL_NOT": "logical_not",
    "RIGHT_SHIFT": "right_shift",
    "BITWISE_XOR": "bitwise_xor",
}


_CUSTOM = {"TFLite_Detection_PostProcess": "detection_postprocess"}
"""Custom ops the TFLite runtime ships a kernel for (``tensorflow/lite/kernels/
register.cc``, ``AddCustom``), by custom code: their canonical op names."""
_CUSTOM_OPTIONS: dict[str, dict[str, type]] = {
    "detection_postprocess": dict.fromkeys(
        ("max_detections", "max_classes_per_detection", "detections_per_class", "num_classes"),
        int,
    )
    | {"use_regular_nms": bool, "nms_score_threshold": float, "nms_iou_threshold": float},
}
"""Keys read from a custom op's options (a FlexBuffer map, as the kernel's ``Init`` reads
them: ``tensorflow/lite/kernels/detection_postprocess.cc``), with their types."""


EDGETPU_OP = "custom:edgetpu-custom-op"
"""The op edgetpu_compiler puts in place of the layers it maps to the Edge TPU."""


def _edgetpu_package(op: Any) -> dict[str, Any]:
    """What the compiler decided for this op (infercast.frontends.edgetpu_package): a line
    with units (or why the package could not be read) and the parameter split in bytes."""
    from infercast.frontends.edgetpu_package import PackageError, read_package

    if not op.CustomOptionsLength():
        return {"edgetpu_package": "no compiled package in its options"}
    try:
        pkg = read_package(op.CustomOptionsAsNumpy().tobytes())
    except PackageError as e:
        return {"edgetpu_package": f"its compiled package could not be read ({e})"}
    return {
        "edgetpu_package": pkg.describe(),
        "edgetpu_cached_parameter_bytes": pkg.cached_parameter_bytes,
        "edgetpu_streamed_parameter_bytes": pkg.streamed_parameter_bytes,
        "edgetpu_activation_bytes_per_tile": pkg.narrow_memory_bytes_per_tile,
    }


def _custom_options(op: Any, keys: Mapping[str, type]) -> dict[str, Any]:
    """The ``keys`` of a custom op's FlexBuffer options that are present as scalars of the
    right type; none when the options are not a map (the op's cost rule then says what it
    assumed). Each key is looked up on its own (a binary search over the map's keys) and only
    a scalar is read: the rest of the map is never decoded, so a hostile value (a vector whose
    elements all point at one large vector, nested) costs nothing."""
    from flatbuffers import flexbuffers

    if not op.CustomOptionsLength():
        return {}
    try:
        root = flexbuffers.GetRoot(bytearray(op.CustomOptionsAsNumpy().tobytes()))
        if not root.IsMap:
            return {}
        m = root.AsMap
    except Exception:  # hostile or foreign bytes: no options, not a crash
        return {}
    out: dict[str, Any] = {}
    for k, kind in keys.items():
        try:
            v = m[k]
            if kind is bool and (v.IsBool or v.IsInt):  # the converter writes 0 / 1
                out[k] = bool(v.AsInt if v.IsInt else v.AsBool)
            elif kind is int and v.IsInt:
                out[k] = int(v.AsInt)
            elif kind is float and (v.IsFloat or v.IsInt):
                out[k] = float(v.AsFloat if v.IsFloat else v.AsInt)
        except Exception:  # missing key, or bytes that do not decode: leave it out
            continue
    return out


def canonical_op(native: str) -> str:
    """The canonical op name of a TFLite builtin (``CONV_2D`` -> ``conv``)."""
    return _CANONICAL.get(native, native.lower())


# (weight layout, data input, weight input) of the kernels.
_KERNELS: dict[str, tuple[str, int, int]] = {
    "CONV_2D": ("OHWI", 0, 1),
    "DEPTHWISE_CONV_2D": ("1HWO", 0, 1),
    "CONV_3D": ("DHWIO", 0, 1),
    "TRANSPOSE_CONV": ("OHWI", 2, 1),
    "CONV_3D_TRANSPOSE": ("DHWOI", 2, 1),
}

_ACTIVATIONS = {0: None, 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH", 5: "SIGN_BIT"}
_PADDING = {0: "SAME", 1: "VALID"}
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")
_SKIP_METHODS = {"Init"}


class _Names:
    """Reverse maps of the schema's enums, built once."""

    def __init__(self, schema: Any) -> None:
        self.builtin = {v: k for k, v in vars(schema.BuiltinOperator).items() if k.isupper()}
        self.dtype = {v: k for k, v in vars(schema.TensorType).items() if k.isupper()}
        self.options = {
            v: k for k, v in vars(schema.BuiltinOptions).items() if not k.startswith("_")
        }
        self.options2 = {
            v: k for k, v in vars(schema.BuiltinOptions2).items() if not k.startswith("_")
        }
        self.methods: dict[str, list[tuple[str, str]]] = {}


_NAMES: _Names | None = None


def _names(schema: Any) -> _Names:
    global _NAMES
    if _NAMES is None:
        _NAMES = _Names(schema)
    return _NAMES


def _dtype(names: _Names, code: int) -> DType:
    name = names.dtype.get(code, "UNKNOWN").lower()
    try:
        return DType(name)
    except ValueError:
        return DType.UNKNOWN


def _read_options(schema: Any, names: _Names, table: Any, type_name: str) -> dict[str, Any]:
    """Every scalar and vector field of a ``*Options`` table, keys in snake_case."""
    cls = getattr(schema, type_name, None)
    if cls is None or table is None:
        return {}
    obj = cls()
    obj.Init(table.Bytes, table.Pos)
    methods = names.methods.get(type_name)
    if methods is None:
        methods = []
        public = [m for m in dir(cls) if m[:1].isupper() and m not in _SKIP_METHODS]
        for m in public:
            if m.startswith("GetRootAs") or m.endswith(("BufferHasIdentifier", "IsNone", "Length")):
                continue
            if m.endswith("AsNumpy"):
                methods.append((m, _CAMEL.sub("_", m[: -len("AsNumpy")]).lower()))
            elif f"{m}AsNumpy" in public or f"{m}Length" in public:
                continue
            else:
                methods.append((m, _CAMEL.sub("_", m).lower()))
        names.methods[type_name] = methods
    out: dict[str, Any] = {}
    for m, key in methods:
        try:
            v = getattr(obj, m)()
        except TypeError:
            continue
        if isinstance(v, np.ndarray):
            v = tuple(int(x) for x in v.tolist())
        elif isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        elif isinstance(v, int | float | bool):
            pass
        else:
            continue
        out[key] = v
    return out


def _canonical_attrs(native: str, attrs: dict[str, Any]) -> dict[str, Any]:
    """Add the canonical keys cost rules read to the raw option fields."""
    if "padding" in attrs and isinstance(attrs["padding"], int):
        attrs["padding"] = _PADDING.get(attrs["padding"], attrs["padding"])
    if "fused_activation_function" in attrs:
        act = _ACTIVATIONS.get(attrs.pop("fused_activation_function"))
        if act:
            attrs["fused_activation"] = act
    if "filter_height" in attrs:
        attrs["kernel_shape"] = (attrs["filter_height"], attrs["filter_width"])
    if "stride_h" in attrs:
        attrs["strides"] = (
            (attrs["stride_d"], attrs["stride_h"], attrs["stride_w"])
            if "stride_d" in attrs
            else (attrs["stride_h"], attrs["stride_w"])
        )
    if "dilation_h_factor" in attrs:
        attrs["dilations"] = (
            (attrs["dilation_d_factor"], attrs["dilation_h_factor"], attrs["dilation_w_factor"])
            if "dilation_d_factor" in attrs
            else (attrs["dilation_h_factor"], attrs["dilation_w_factor"])
        )
    if native in _KERNELS:
        layout, data_in, weight_in = _KERNELS[native]
        attrs.update(weight_layout=layout, data_input=data_in, weight_input=weight_in)
    if native == "RESIZE_BILINEAR":
        attrs.update(mode="linear", resized_axes=2)
    elif native == "RESIZE_NEAREST_NEIGHBOR":
        attrs.update(mode="nearest", resized_axes=2)
    if native in ("UNIDIRECTIONAL_SEQUENCE_LSTM", "UNIDIRECTIONAL_SEQUENCE_RNN"):
        tm = bool(attrs.get("time_major", False))
        attrs.update(time_axis=0 if tm else 1, batch_axis=1 if tm else 0)
    elif native in ("BIDIRECTIONAL_SEQUENCE_LSTM", "BIDIRECTIONAL_SEQUENCE_RNN"):
        tm = bool(attrs.get("time_major", True))
        attrs.update(time_axis=0 if tm else 1, batch_axis=1 if tm else 0)
    return attrs


class _Constants:
    """Reads a constant tensor's value from its buffer in the file, when asked.

    The file is memory-mapped only for the read and only the asked buffer is copied;
    a file that changed since it was loaded (size or modification time) gives None.
    ``Graph.constant_value`` checks the element type and shape.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.entries: dict[str, tuple[int, DType]] = {}
        """tensor name -> (buffer index, element type)"""
        try:
            st = os.stat(path)
            self.stamp: tuple[int, int] | None = (st.st_size, st.st_mtime_ns)
        except OSError:
            self.stamp = None

    def __call__(self, name: str) -> np.ndarray[Any, Any] | None:
        entry = self.entries.get(name)
        if entry is None or self.stamp is None:
            return None
        bi, dtype = entry
        np_type = dtype.numpy
        if np_type is None:
            return None
        try:
            st = os.stat(self.path)
            if (st.st_size, st.st_mtime_ns) != self.stamp:
                return None
            with (
                open(self.path, "rb") as f,
                mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm,
            ):
                buf = _schema().Model.GetRootAs(mm, 0).Buffers(bi)
                if buf.DataLength():
                    raw = bytes(buf.DataAsNumpy())
                elif buf.Offset() > 1:
                    raw = mm[buf.Offset() : buf.Offset() + buf.Size()]
                else:
                    return None
        except (OSError, ValueError, IndexError):
            return None
        if len(raw) % np_type.itemsize:
            return None
        return np.frombuffer(raw, np_type)


def _unique(name: str, index: int, seen: set[str]) -> str:
    key = name if name and name not in seen else f"{name or 'tensor'}#{index}"
    seen.add(key)
    return key


def load_tflite(
    path: str, data: bytes | mmap.mmap, input_shapes: Mapping[str, Shape] | None = None
) -> Graph:
    """Parse a TFLite flatbuffer held in ``data``. Raises :class:`ModelFileError`."""
    schema = _schema()
    if len(data) < 8:
        raise ModelFileError(f"{path}: file is {len(data)} bytes, too short to be a model")
    if data[4:8] != TFLITE_IDENTIFIER:
        raise ModelFileError(f"{path}: not a TFLite flatbuffer (no 'TFL3' identifier)")
    try:
        return _parse(schema, path, data, input_shapes or {})
    except (ModelFileError, SymbolicShapeError, InputShapeError):
        raise
    except Exception as exc:  # the flatbuffer accessors raise anything on bad offsets
        raise ModelFileError(
            f"{path}: the TFLite flatbuffer is truncated or corrupt ({type(exc).__name__}: {exc})",
            "re-export the model; compare its size with the original",
        ) from exc


def _parse(
    schema: Any, path: str, data: bytes | mmap.mmap, input_shapes: Mapping[str, Shape]
) -> Graph:
    names = _names(schema)
    model = schema.Model.GetRootAs(data, 0)
    n_buffers = model.BuffersLength()
    n_sub = model.SubgraphsLength()
    # Flatbuffer vectors may all point at one table: a small file can list millions of
    # operators or tensors. Counted before anything is read for each.
    n_ops = sum(model.Subgraphs(i).OperatorsLength() for i in range(min(n_sub, MAX_NODES)))
    n_tensors = sum(model.Subgraphs(i).TensorsLength() for i in range(min(n_sub, MAX_NODES)))
    if n_sub > MAX_NODES or n_ops > MAX_NODES or n_tensors > 2 * MAX_NODES:
        raise too_many_nodes(path, max(n_ops, n_tensors // 2, n_sub))
    _check_vectors(model, n_sub, path)
    if n_sub == 0:
        raise ModelFileError(f"{path}: the TFLite model has no subgraph")
    opcodes: list[tuple[str, str]] = []
    for i in range(model.OperatorCodesLength()):
        oc = model.OperatorCodes(i)
        code = max(oc.BuiltinCode(), oc.DeprecatedBuiltinCode())
        native = names.builtin.get(code, f"BUILTIN_{code}")
        if native == "CUSTOM":
            custom = (oc.CustomCode() or b"").decode("utf-8", "replace")
            opcodes.append((f"custom:{custom}", _CUSTOM.get(custom, f"custom:{custom}")))
        else:
            opcodes.append((native, canonical_op(native)))

    buffer_sizes: list[int] = []
    for i in range(n_buffers):
        b = model.Buffers(i)
        size = b.DataLength()
        if size == 0 and b.Offset() > 1:
            size = int(b.Size())
            if b.Offset() + size > len(data):
                raise ModelFileError(
                    f"{path}: buffer {i} lies past the end of the file (truncated)"
                )
        buffer_sizes.append(size)

    sub_names = []
    for si in range(n_sub):
        raw = model.Subgraphs(si).Name()
        sub_names.append(raw.decode("utf-8", "replace") if raw else f"subgraph_{si}")
    sub_names = [n if sub_names.count(n) == 1 else f"{n}_{i}" for i, n in enumerate(sub_names)]

    reading = _Reading(schema, names, model, sub_names, opcodes, buffer_sizes, path)
    graphs = [_subgraph(reading, si) for si in range(n_sub)]
    main = graphs[0]
    main = _resolve_runtime_shapes(path, main, {g.name: g for g in graphs[1:]}, input_shapes)
    description = model.Description()
    meta = {
        "schema_version": str(model.Version()),
        "subgraphs": str(n_sub),
    }
    if description:
        meta["description"] = description.decode("utf-8", "replace")
    for i in range(model.MetadataLength()):
        md = model.Metadata(i)
        key = (md.Name() or b"").decode("utf-8", "replace")
        if key == "min_runtime_version" and 0 <= md.Buffer() < n_buffers:
            raw_buf = model.Buffers(md.Buffer()).DataAsNumpy()
            if isinstance(raw_buf, np.ndarray):
                meta["min_runtime_version"] = (
                    bytes(raw_buf).rstrip(b"\0").decode("ascii", "replace")
                )
    notes = list(main.notes)
    subs = {g.name: g for g in graphs[1:]}
    return Graph(
        name=main.name,
        format="tflite",
        layout="NHWC",
        tensors=main.tensors,
        nodes=main.nodes,
        inputs=main.inputs,
        outputs=main.outputs,
        path=path,
        subgraphs=subs,
        metadata=meta,
        notes=tuple(notes),
        constants=main.constants,
    )


MAX_VECTOR_ITEMS = 5_000_000
"""Shape dimensions, quantisation parameters, operator inputs and outputs and name bytes a
model may hold in all (a real model has well under a million)."""


def _check_vectors(model: Any, n_sub: int, path: str) -> None:
    """Sum the lengths of every vector the reader will copy, before copying any: tensors
    may all share one table whose shape, scales or name are a million items long."""
    items = 0
    for si in range(n_sub):
        sg = model.Subgraphs(si)
        for ti in range(sg.TensorsLength()):
            t = sg.Tensors(ti)
            items += t.ShapeLength() + t.ShapeSignatureLength()
            name = t._tab.Offset(10)  # Tensor.name, field 3 of the schema: vtable slot 10
            if name:
                items += t._tab.VectorLen(name)  # a string is a length-prefixed vector
            q = t.Quantization()
            if q is not None:
                items += q.ScaleLength() + q.ZeroPointLength()
            if items > MAX_VECTOR_ITEMS:
                break
        for oi in range(sg.OperatorsLength()):
            if items > MAX_VECTOR_ITEMS:
                break
            op = sg.Operators(oi)
            items += op.InputsLength() + op.OutputsLength() + op.IntermediatesLength()
        if items > MAX_VECTOR_ITEMS:
            raise ModelFileError(
                f"{path}: its tensors and operators list more than {MAX_VECTOR_ITEMS} "
                "dimensions, parameters, indices and name bytes",
                "the file is corrupt or crafted (flatbuffer tables that share one long vector)",
            )


class _Reading:
    """What reading one subgraph needs: the model, its opcodes and buffers, the names."""

    def __init__(
        self,
        schema: Any,
        names: _Names,
        model: Any,
        sub_names: list[str],
        opcodes: list[tuple[str, str]],
        buffer_sizes: list[int],
        path: str,
    ) -> None:
        self.schema = schema
        self.names = names
        self.model = model
        self.sub_names = sub_names
        self.opcodes = opcodes
        self.buffer_sizes = buffer_sizes
        self.path = path

    def tensor(self, t: Any, name: str, raw_name: str, constants: _Constants) -> Tensor:
        """One TFLite tensor: type, shape (dynamic dimensions None), buffer, quantisation."""
        path, buffer_sizes = self.path, self.buffer_sizes
        dtype = _dtype(self.names, t.Type())
        shape: tuple[int | None, ...] = (
            tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else ()
        )
        if t.ShapeSignatureLength():
            sig = [int(d) for d in t.ShapeSignatureAsNumpy()]
            if len(sig) == len(shape):
                shape = tuple(None if s < 0 else d for s, d in zip(sig, shape, strict=True))
        if any(d is not None and d < 0 for d in shape):
            raise ModelFileError(f"{path}: tensor '{raw_name}' has a negative dimension {shape}")
        bi = t.Buffer()
        if not 0 <= bi < max(len(buffer_sizes), 1):
            raise ModelFileError(
                f"{path}: tensor '{raw_name}' points at buffer {bi}, which does not exist"
            )
        storage = buffer_sizes[bi] if bi < len(buffer_sizes) else 0
        is_const = bi > 0 and storage > 0
        value = None
        if is_const and dtype in (DType.INT32, DType.INT64) and storage <= 4096 * 8:
            raw = self.model.Buffers(bi).DataAsNumpy()
            if isinstance(raw, np.ndarray):
                arr = raw.view(np.int32 if dtype == DType.INT32 else np.int64)
                value = arr.copy()
        if is_const:
            constants.entries[name] = (bi, dtype)
        return Tensor(
            name=name,
            dtype=dtype,
            shape=shape,
            layout="NHWC" if len(shape) == 4 and not is_const else None,
            is_constant=is_const,
            is_variable=bool(t.IsVariable()),
            quant=_quantization(t.Quantization()),
            storage_bytes=storage if is_const else 0,
            sparse=t.Sparsity() is not None,
            value=value,
        )

    def operator(
        self, op: Any, oi: int, tname: Callable[[int], str], tensors: Mapping[str, Tensor]
    ) -> Node:
        """One operator: canonical op, inputs and outputs by name, options as attributes."""
        schema, names, sub_names = self.schema, self.names, self.sub_names
        code = op.OpcodeIndex()
        if not 0 <= code < len(self.opcodes):
            raise ModelFileError(
                f"{self.path}: operator {oi} uses opcode {code}, which does not exist"
            )
        native, canonical = self.opcodes[code]
        ins = tuple(tname(int(i)) for i in op.InputsAsNumpy()) if op.InputsLength() else ()
        outs = tuple(tname(int(i)) for i in op.OutputsAsNumpy()) if op.OutputsLength() else ()
        attrs: dict[str, Any] = {}
        otype = op.BuiltinOptionsType()
        if otype:
            attrs.update(
                _read_options(schema, names, op.BuiltinOptions(), names.options.get(otype, ""))
            )
        otype2 = op.BuiltinOptions2Type()
        if otype2:
            attrs.update(
                _read_options(schema, names, op.BuiltinOptions2(), names.options2.get(otype2, ""))
            )
        if native.startswith("custom:"):
            attrs["custom_options_bytes"] = int(op.CustomOptionsLength())
            if canonical in _CUSTOM_OPTIONS:
                attrs.update(_custom_options(op, _CUSTOM_OPTIONS[canonical]))
            if native == EDGETPU_OP:
                attrs.update(_edgetpu_package(op))
        attrs = _canonical_attrs(native, attrs)
        if canonical in ("lstm", "rnn"):
            attrs["weight_inputs"] = tuple(
                i
                for i, n in enumerate(ins)
                if n and tensors[n].is_constant and tensors[n].rank == 2
            )
        called_by_role = {
            k[: -len("_index")]: sub_names[v]
            for k, v in attrs.items()
            if k.endswith("subgraph_index") and isinstance(v, int) and 0 <= v < len(sub_names)
        }
        attrs.update(called_by_role)  # e.g. cond_subgraph / body_subgraph -> name
        called = tuple(called_by_role.values())
        name = outs[0] if outs else f"{native.lower()}_{oi}"
        return Node(oi, name, canonical, native, ins, outs, attrs, called)


def _quantization(q: Any) -> Quantization | None:
    if q is None or q.ScaleLength() == 0:
        return None
    zp = q.ZeroPointAsNumpy() if q.ZeroPointLength() else np.zeros(q.ScaleLength(), np.int64)
    return Quantization(
        scale=tuple(float(s) for s in q.ScaleAsNumpy()),
        zero_point=tuple(int(z) for z in zp),
        axis=int(q.QuantizedDimension()) if q.ScaleLength() > 1 else None,
    )


def _subgraph(reading: _Reading, si: int) -> Graph:
    """Subgraph ``si`` of the model as a :class:`Graph`."""
    path = reading.path
    sg = reading.model.Subgraphs(si)
    n_t = sg.TensorsLength()
    constants = _Constants(path)
    seen: set[str] = set()
    tnames: list[str] = []
    tensors: dict[str, Tensor] = {}
    for ti in range(n_t):
        t = sg.Tensors(ti)
        raw_name = (t.Name() or b"").decode("utf-8", "replace")
        name = _unique(raw_name, ti, seen)
        tnames.append(name)
        tensors[name] = reading.tensor(t, name, raw_name, constants)

    def tname(i: int) -> str:
        if i < 0:
            return ""
        if i >= n_t:
            raise ModelFileError(
                f"{path}: an operator refers to tensor {i}; the subgraph has {n_t}"
            )
        return tnames[i]

    nodes = [
        reading.operator(sg.Operators(oi), oi, tname, tensors) for oi in range(sg.OperatorsLength())
    ]
    nodes, tensors = _fold_constants(nodes, tensors)
    io = {"input": sg.InputsAsNumpy() if sg.InputsLength() else (), "output": ()}
    io["output"] = sg.OutputsAsNumpy() if sg.OutputsLength() else ()
    for kind, indices in io.items():
        if any(int(i) < 0 for i in indices):  # -1 means "omitted" for an operator, not here
            name = reading.sub_names[si]
            raise ModelFileError(f"{path}: subgraph {name} lists tensor -1 as an {kind}")
    inputs = tuple(tname(int(i)) for i in io["input"])
    outputs = tuple(tname(int(i)) for i in io["output"])
    notes = [
        f"{n.name} ({EDGETPU_OP}): {n.attrs['edgetpu_package']}; the layers it replaced are "
        "inside the compiled package and are not counted: analyse the model as it was before "
        "edgetpu_compiler and estimate it with -t edgetpu-usb / edgetpu-pcie (a target file "
        "that extends one and states memories.parameter_cache.size_bytes = the cached bytes "
        "above, with size_varies = false, forecasts with the compiler's caching)"
        for n in nodes
        if "edgetpu_package" in n.attrs
    ]
    var_ops = [n for n in nodes if n.op in ("var_handle", "read_variable", "assign_variable")]
    if var_ops:
        notes.append(
            f"resource variables: {len(var_ops)} variable ops in subgraph {reading.sub_names[si]}"
        )
    return Graph(
        name=reading.sub_names[si],
        format="tflite",
        layout="NHWC",
        tensors=tensors,
        nodes=tuple(nodes),
        inputs=inputs,
        outputs=outputs,
        path=path,
        notes=tuple(notes),
        constants=constants,
    )


# Ops that turn stored constants into the values the kernels use, once, at load time.
_DECODE_OPS = {"dequantize", "densify"}


def _fold_constants(
    nodes: list[Node], tensors: dict[str, Tensor]
) -> tuple[list[Node], dict[str, Tensor]]:
    """Mark the outputs of DEQUANTIZE / DENSIFY of a constant as derived constants."""
    out = dict(tensors)
    new_nodes = []
    for node in nodes:
        srcs = [out[n] for n in node.inputs if n]
        if node.op in _DECODE_OPS and srcs and all(t.is_constant for t in srcs):
            src = srcs[0]
            for o in node.outputs:
                t = out[o]
                out[o] = Tensor(
                    name=t.name,
                    dtype=t.dtype,
                    shape=t.shape,
                    layout=None,
                    is_constant=True,
                    quant=t.quant,
                    storage_bytes=src.storage_bytes,
                    sparse=False,
                    derived_from=src.derived_from or src.name,
                )
            node = Node(
                node.index,
                node.name,
                node.op,
                node.native_op,
                node.inputs,
                node.outputs,
                node.attrs,
                node.subgraphs,
                node.domain,
                folded=True,
            )
        new_nodes.append(node)
    return new_nodes, out


def _check_given_shapes(path: str, graph: Graph, input_shapes: Mapping[str, Shape]) -> None:
    """``--input-shape`` must name inputs and agree with their rank and fixed dimensions."""
    inputs = "inputs: " + ", ".join(f"{n}={graph.tensors[n].shape_str()}" for n in graph.inputs)
    unknown = [k for k in input_shapes if k not in graph.inputs]
    if unknown:
        raise InputShapeError(
            f"--input-shape names {', '.join(unknown)}, which is not an input of {path}", inputs
        )
    for name, given in input_shapes.items():
        declared = graph.tensors[name].shape or ()
        spec = "x".join(str(d) for d in given)
        if len(given) != len(declared):
            raise InputShapeError(
                f"--input-shape {name}={spec} has {len(given)} dimensions; "
                f"the input has {len(declared)} ({graph.tensors[name].shape_str()})",
                inputs,
            )
        for axis, (g, d) in enumerate(zip(given, declared, strict=True)):
            if d is not None and g != d:
                raise InputShapeError(
                    f"--input-shape {name}={spec}: dimension {axis} is fixed at {d} "
                    f"in the model ({graph.tensors[name].shape_str()})",
                    "only the dimensions shown as ? can be set",
                )


def _isolated_run(
    path: str, graph: Graph, shapes: Mapping[str, Shape], invoke: bool
) -> dict[str, Any]:
    """LiteRT's shapes for ``shapes``, from an isolated child (raises IsolatedError)."""
    from infercast.isolation import Limits, run_isolated

    positions = {name: i for i, name in enumerate(graph.inputs)}
    payload = {
        "path": path,
        "input_shapes": {str(positions[n]): [int(d or 1) for d in s] for n, s in shapes.items()},
        "invoke": invoke,
    }
    result: dict[str, Any] = run_isolated(
        "infercast.frontends.tflite_runtime:run_shapes",
        payload,
        Limits(timeout_s=RUNTIME_SHAPES_TIMEOUT_S, memory_bytes=RUNTIME_SHAPES_MEMORY_BYTES),
        what="LiteRT (computing tensor shapes)",
    )
    return result


RUNTIME_SHAPES_TIMEOUT_S = 15.0
"""A model file is a stranger's: one whose shapes LiteRT cannot compute in 15 s (a
crafted WHILE loop) is reported, within the 20 s every command ends in (issue 14)."""
RUNTIME_SHAPES_MEMORY_BYTES = 16 << 30
"""Limits of the isolated LiteRT run that computes run-time shapes (address space)."""


def _suggestion(path: str, graph: Graph, missing: list[str], shapes: Mapping[str, Shape]) -> str:
    """``--input-shape`` options that LiteRT accepts and runs, or "" when the obvious
    guess (every unknown dimension 1) does not run."""
    from infercast.isolation import IsolatedError

    guess = dict(shapes)
    for n in missing:
        guess[n] = tuple(1 if d is None else d for d in (graph.tensors[n].shape or ()))
    try:
        res = _isolated_run(path, graph, guess, invoke=True)
    except IsolatedError:
        return ""
    if res.get("invoke_error"):
        return ""
    return " ".join(f"--input-shape {n}=" + "x".join(str(d) for d in guess[n]) for n in missing)


def _dims(shape: Shape) -> str:
    return "x".join("?" if d is None else str(d) for d in shape) or "scalar"


def _resolve_runtime_shapes(
    path: str, graph: Graph, subgraphs: Mapping[str, Graph], input_shapes: Mapping[str, Shape]
) -> Graph:
    """Fix the inputs' dynamic dimensions and take shapes from LiteRT itself.

    See :mod:`infercast.frontends.tflite_runtime`: allocation shapes for tensors
    LiteRT sizes at ``allocate_tensors()``, the shapes after one isolated
    ``invoke()`` for those it sizes while running (unless they depend on input
    values), unknown for the rest. A leading dynamic batch dimension alone
    defaults to 1, with a note.
    """
    from infercast.frontends.tflite_runtime import (
        contradicted_shapes,
        dynamic_tensors,
        value_dependent,
    )
    from infercast.isolation import IsolatedError

    notes: list[str] = []
    shapes = _runtime_input_shapes(path, graph, input_shapes, notes)
    dynamic = dynamic_tensors(graph, subgraphs)
    unknown_dims = any(
        not graph.tensors[o].is_static for node in graph.nodes for o in node.outputs if o
    )
    contradicted = contradicted_shapes(graph)
    if not shapes and not dynamic and not unknown_dims and not contradicted:
        return graph
    try:
        res = _isolated_run(path, graph, shapes, invoke=bool(dynamic))
    except IsolatedError as exc:
        if shapes:
            raise ModelFileError(
                f"{path}: LiteRT could not propagate the input shapes ({exc})",
                "check the --input-shape values against the model's inputs",
            ) from exc
        res = {"allocated": None, "invoked": None, "invoke_error": str(exc)}
    allocated: list[list[int]] | None = res["allocated"]
    invoked: list[list[int]] | None = res["invoked"]
    unsure = value_dependent(graph, subgraphs) if invoked is not None else set(dynamic)
    # With the inputs as stored, LiteRT's allocation shapes differ from the file's only
    # where the file contradicts its own ops.
    resized = any(tuple(s) != graph.tensors[n].shape for n, s in shapes.items())
    stored: list[str] = []
    taken = left = 0
    tensors: dict[str, Tensor] = {}
    for i, (name, t) in enumerate(graph.tensors.items()):
        shape: Shape | None = t.shape
        if name in dynamic:
            if invoked is not None and name not in unsure and i < len(invoked):
                shape = tuple(invoked[i])
                taken += 1
            else:
                shape = None if t.shape is None else tuple(None for _ in t.shape)
                left += 1
        elif allocated is not None and i < len(allocated) and not t.is_constant:
            shape = tuple(allocated[i])
            if t.is_static and shape != t.shape and not resized:
                stored.append(f"{name} stored {t.shape_str()}, LiteRT {_dims(shape)}")
        elif name in contradicted and t.shape is not None:
            shape = tuple(None for _ in t.shape)  # LiteRT did not say: unknown
        tensors[name] = dataclasses.replace(t, shape=shape) if shape != t.shape else t
    why = (
        "they depend on input values"
        if invoked is not None
        else f"LiteRT could not run the model ({res['invoke_error']})"
    )
    notes.extend(_runtime_notes(stored, taken, left, why))
    out = graph.with_tensors(tensors)
    return dataclasses.replace(out, notes=(*out.notes, *notes))


def _runtime_input_shapes(
    path: str, graph: Graph, input_shapes: Mapping[str, Shape], notes: list[str]
) -> dict[str, Shape]:
    """The inputs' shapes to run with: those given, a leading dynamic batch alone as 1
    (with a note); inputs left dynamic are refused, with a suggestion when one runs."""
    _check_given_shapes(path, graph, input_shapes)
    shapes: dict[str, Shape] = dict(input_shapes)
    for n in graph.inputs:
        dims = graph.tensors[n].shape or ()
        if n in shapes or graph.tensors[n].is_static:
            continue
        if len(dims) > 1 and dims[0] is None and all(d is not None for d in dims[1:]):
            shapes[n] = (1, *dims[1:])
            notes.append(
                f"input {n}: dynamic batch dimension set to 1 "
                f"(--input-shape {n}=Nx... to change it)"
            )
    missing = [n for n in graph.inputs if not graph.tensors[n].is_static and n not in shapes]
    if missing:
        shown = ", ".join(f"{n} [{graph.tensors[n].shape_str()}]" for n in missing)
        suggestion = _suggestion(path, graph, missing, shapes)
        raise SymbolicShapeError(
            f"{path}: input(s) with dynamic dimensions: {shown}",
            f"fix them, e.g. {suggestion}"
            if suggestion
            else "give each with --input-shape NAME=DIMS (the model's documentation says "
            "what sizes it expects; setting the unknown dimensions to 1 does not run)",
        )
    return shapes


def _runtime_notes(stored: list[str], taken: int, left: int, why: str) -> list[str]:
    """What the graph's shapes owe to LiteRT; ``why``: why ``left`` shapes stay unknown."""
    notes = []
    if stored:
        shown = "; ".join(stored[:3]) + (f"; and {len(stored) - 3} more" if len(stored) > 3 else "")
        notes.append(
            f"{len(stored)} tensor shape(s) stored in the file contradict what the ops compute "
            f"from their inputs; LiteRT's (allocate_tensors) are used: {shown}"
        )
    if taken:
        notes.append(
            f"{taken} tensor shapes are computed while the model runs (e.g. SHAPE -> "
            "STRIDED_SLICE -> RESHAPE chains): taken from one LiteRT run in an isolated process"
        )
    if left:
        notes.append(f"{left} tensor shapes are computed while the model runs and {why}: unknown")
    return notes
