"""Variants as runnable model files, so ``infercast bench`` can measure them.

The original file is rewritten, never rebuilt from the IR: everything the variant
does not change (op options, names, signatures, metadata) stays as the converter
wrote it.

* ``.onnx`` -- the ModelProto with initializers of the new shapes (random values of
  the same dtype; shape arguments with their recomputed values), new input / output
  dimensions, replaced op types and attributes; intermediate ``value_info`` is
  dropped so runtimes infer it.
* ``.tflite`` -- the flatbuffer through the schema's object API
  (``ai_edge_litert.schema_py_generated.ModelT``): tensors get their new shapes
  (and shape signatures), constant buffers random data of the new sizes (or the
  recomputed shape values), per-channel quantisation parameters the new channel
  counts, replaced ops their new operator codes.

Weights are random (seeded), so a variant's outputs mean nothing; its shapes,
sizes and speed are what it is for. Variants that re-type the model (``--dtype``,
``--quant``) are not written: a valid quantised file needs calibrated scales on
every tensor, which a what-if does not have.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from infercast.errors import InfercastError
from infercast.ir.dtypes import DType
from infercast.ir.graph import Graph, Tensor
from infercast.whatif.spec import VariantError, VariantSpec
from infercast.whatif.transform import transform

SEED = 0

_NP: dict[DType, Any] = {
    DType.FLOAT32: np.float32,
    DType.FLOAT16: np.float16,
    DType.FLOAT64: np.float64,
    DType.INT8: np.int8,
    DType.UINT8: np.uint8,
    DType.INT16: np.int16,
    DType.INT32: np.int32,
    DType.INT64: np.int64,
    DType.UINT16: np.uint16,
    DType.UINT32: np.uint32,
    DType.UINT64: np.uint64,
    DType.BOOL: np.bool_,
}


class ExportError(InfercastError):
    """A variant cannot be written as a runnable file."""


def random_values(t: Tensor, rng: np.random.Generator) -> np.ndarray[Any, Any]:
    """Random data of ``t``'s shape and dtype (small floats; integers spread over a
    few quantisation steps; int32 biases near zero)."""
    shape = tuple(int(d or 0) for d in (t.shape or ()))
    np_type = _NP.get(t.dtype)
    if np_type is None:
        raise ExportError(f"tensor '{t.name}': no random values for dtype {t.dtype.value}")
    if t.dtype.is_float:
        fan = max(int(np.prod(shape[1:])) if len(shape) > 1 else 1, 1)
        return (rng.standard_normal(shape) / math.sqrt(fan)).astype(np_type)
    if t.dtype == DType.BOOL:
        return rng.integers(0, 2, size=shape).astype(np_type)
    if t.dtype == DType.INT32:
        return rng.integers(-64, 64, size=shape).astype(np_type)
    info = np.iinfo(np_type)
    return rng.integers(max(info.min, -64), min(info.max, 64), size=shape).astype(np_type)


def _exportable(spec: VariantSpec) -> None:
    if spec.dtype is not None or spec.quant is not None:
        raise ExportError(
            f"variant {spec.label()} re-types the model; re-typed variants are not exported",
            "export resolution / width / replace variants; quantise with the converter",
        )


# --------------------------------------------------------------------------- #
# ONNX
# --------------------------------------------------------------------------- #


def export_onnx(base: Graph, variant: Graph, path: Path) -> Path:
    import onnx
    from onnx import numpy_helper

    if base.path is None:
        raise ExportError("the model was not read from a file; nothing to rewrite")
    model = onnx.load(base.path)
    g = model.graph
    rng = np.random.default_rng(SEED)
    vt = variant.tensors
    inits = {t.name: i for i, t in enumerate(g.initializer)}

    def tensor_proto(t: Tensor) -> Any:
        if t.value is not None:
            arr = np.asarray(t.value).astype(_NP.get(t.dtype, np.asarray(t.value).dtype))
        else:
            arr = random_values(t, rng)
        return numpy_helper.from_array(
            arr.reshape(tuple(int(d or 0) for d in t.shape or ())), t.name
        )

    for name, i in inits.items():
        old = base.tensors.get(name)
        new = vt.get(name)
        if old is None or new is None:
            continue
        if new.shape != old.shape or not _same(new.value, old.value):
            g.initializer[i].CopyFrom(tensor_proto(new))
    for name, t in vt.items():
        if name not in base.tensors and t.is_constant:
            g.initializer.append(tensor_proto(t))
    by_index = {n.index: n for n in variant.nodes}
    for i, proto in enumerate(g.node):
        old_node = base.nodes[i]
        node = by_index[i]
        if node is old_node:
            continue
        if node.native_op != old_node.native_op:
            _check_opset(model, node.native_op)
            proto.op_type = node.native_op
            del proto.attribute[:]
        del proto.input[:]
        proto.input.extend(node.inputs)
        for key, value in node.attrs.items():
            if old_node.attrs.get(key) == value and node.native_op == old_node.native_op:
                continue
            if key in ("group", "kernel_shape", "pads", "split", "strides", "dilations"):
                _set_attr(proto, key, value)
        if proto.op_type == "Constant":
            out = vt.get(node.outputs[0])
            if out is not None and out.value is not None:
                _set_attr(proto, "value", tensor_proto(out))
    for vi in [*g.input, *g.output]:
        io = vt.get(vi.name)
        if io is None or io.shape is None:
            continue  # (older models also list their initializers as inputs: updated too)
        dims = vi.type.tensor_type.shape.dim
        del dims[:]
        for d in io.shape:
            dims.add().dim_value = int(d or 0)
    del g.value_info[:]
    used = {n for node in g.node for n in node.input}
    kept = [t for t in g.initializer if t.name in used or t.name in {o.name for o in g.output}]
    if len(kept) != len(g.initializer):  # e.g. a Clip's bounds after Clip -> Relu
        del g.initializer[:]
        g.initializer.extend(kept)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    return path


def _check_opset(model: Any, op_type: str) -> None:
    import onnx

    version = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    try:
        onnx.defs.get_schema(op_type, int(version), "")
    except Exception:
        raise ExportError(
            f"{op_type} does not exist at the model's opset {version}",
            "the variant is analysed, but not written as .onnx",
        ) from None


def _set_attr(proto: Any, key: str, value: Any) -> None:
    import onnx

    keep = [a for a in proto.attribute if a.name != key]
    del proto.attribute[:]
    proto.attribute.extend(keep)
    proto.attribute.append(onnx.helper.make_attribute(key, value))


def _same(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return bool(np.asarray(a).shape == np.asarray(b).shape and np.array_equal(a, b))


# --------------------------------------------------------------------------- #
# TFLite
# --------------------------------------------------------------------------- #


def export_tflite(base: Graph, variant: Graph, path: Path) -> Path:
    if base.path is None:
        raise ExportError("the model was not read from a file; nothing to rewrite")
    if base.subgraphs:
        raise ExportError("models with several subgraphs are not exported")
    writer = _TfliteWriter(base, variant)
    writer.tensors()
    writer.operators()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(writer.pack())
    return path


class _TfliteWriter:
    """The original flatbuffer as a ``ModelT``, changed to the variant."""

    def __init__(self, base: Graph, variant: Graph) -> None:
        from ai_edge_litert import schema_py_generated as schema

        assert base.path is not None
        self.schema = schema
        self.base = base
        self.variant = variant
        self.buf = Path(base.path).read_bytes()
        self.model = schema.ModelT.InitFromPackedBuf(self.buf, 0)
        self.sg = self.model.subgraphs[0]
        self.rng = np.random.default_rng(SEED)
        # The frontend keeps the file's tensor order (names made unique by index).
        self.index = {name: i for i, name in enumerate(base.tensors)}

    def tensors(self) -> None:
        schema = self.schema
        codes = {k.lower(): v for k, v in vars(schema.TensorType).items() if k.isupper()}
        for name, t in self.variant.tensors.items():
            old = self.base.tensors.get(name)
            if old is not None:
                if t is old:
                    continue
                if old.sparse and t.shape != old.shape:
                    raise ExportError(
                        f"tensor '{name}' is stored sparse; re-shaped sparse weights are not "
                        "written",
                        "the variant is analysed; export a variant that keeps that layer's shape",
                    )
                if t.dtype != old.dtype:
                    raise ExportError(
                        f"tensor '{name}' is re-typed; re-typed variants are not exported"
                    )
                self.write(self.sg.tensors[self.index[name]], t, old)
                continue
            tt = schema.TensorT()  # a constant the variant added (a recomputed shape)
            tt.name = name.encode()
            tt.type = codes[t.dtype.value]
            tt.buffer = 0
            self.write(tt, t, None)
            self.sg.tensors.append(tt)
            self.index[name] = len(self.sg.tensors) - 1

    def write(self, tt: Any, t: Tensor, old: Tensor | None) -> None:
        shape = [int(d or 0) for d in t.shape or ()]
        tt.shape = np.asarray(shape, dtype=np.int32)
        if tt.shapeSignature is not None and len(tt.shapeSignature):
            sig = [-1 if s < 0 else d for s, d in zip(list(tt.shapeSignature), shape, strict=False)]
            tt.shapeSignature = np.asarray(sig if len(sig) == len(shape) else shape, dtype=np.int32)
        q = t.quant
        if q is not None and tt.quantization is not None and tt.quantization.scale is not None:
            tt.quantization.scale = np.asarray(q.scale, dtype=np.float32)
            tt.quantization.zeroPoint = np.asarray(q.zero_point, dtype=np.int64)
            tt.quantization.quantizedDimension = int(q.axis or 0)
        changed = old is None or old.shape != t.shape or not _same(old.value, t.value)
        if not t.is_constant or t.derived_from or not changed:
            return  # DEQUANTIZE'd weights take their source's new buffer
        data = (
            np.asarray(t.value).astype(_NP[t.dtype])
            if t.value is not None
            else random_values(t, self.rng)
        )
        buffers = self.model.buffers
        if old is None or tt.buffer <= 0 or _shared_buffer(self.sg, tt.buffer) > 1:
            buffers.append(self.schema.BufferT())
            tt.buffer = len(buffers) - 1
        b = buffers[tt.buffer]
        b.data = np.frombuffer(data.tobytes(), dtype=np.uint8)
        b.offset, b.size = 0, 0

    def operators(self) -> None:
        builtin = {k: v for k, v in vars(self.schema.BuiltinOperator).items() if k.isupper()}
        for node in self.variant.nodes:
            op = self.sg.operators[node.index]
            old = self.base.nodes[node.index]
            if node is old:
                continue
            op.inputs = np.asarray(
                [self.index[n] if n else -1 for n in node.inputs], dtype=np.int32
            )
            if node.native_op != old.native_op:
                code = builtin.get(node.native_op)
                if code is None:
                    raise ExportError(f"{node.native_op} is not a TFLite builtin")
                op.opcodeIndex = _opcode(self.model, self.schema, code)
                op.builtinOptionsType = 0
                op.builtinOptions = None
            opts = op.builtinOptions
            if opts is None:
                continue
            if node.attrs.get("new_shape") != old.attrs.get("new_shape"):
                opts.newShape = np.asarray(node.attrs["new_shape"], dtype=np.int32)
            window = (node.attrs.get("filter_height"), node.attrs.get("filter_width"))
            if window != (old.attrs.get("filter_height"), old.attrs.get("filter_width")):
                opts.filterHeight, opts.filterWidth = window

    def pack(self) -> bytes:
        import flatbuffers

        builder = flatbuffers.Builder(max(len(self.buf), 1024))
        builder.Finish(self.model.Pack(builder), file_identifier=b"TFL3")
        return bytes(builder.Output())


def _shared_buffer(sg: Any, buffer: int) -> int:
    return sum(1 for t in sg.tensors if t.buffer == buffer)


def _opcode(model: Any, schema: Any, code: int) -> int:
    for i, oc in enumerate(model.operatorCodes):
        if max(oc.builtinCode, oc.deprecatedBuiltinCode) == code:
            return i
    oc = schema.OperatorCodeT()
    oc.builtinCode = code
    oc.deprecatedBuiltinCode = min(code, schema.BuiltinOperator.PLACEHOLDER_FOR_GREATER_OP_CODES)
    oc.version = 1
    model.operatorCodes.append(oc)
    return len(model.operatorCodes) - 1


# --------------------------------------------------------------------------- #
# Many at once
# --------------------------------------------------------------------------- #


def export_variant(base: Graph, spec: VariantSpec, directory: Path) -> Path:
    """Write variant ``spec`` of ``base`` into ``directory``; returns the file's path."""
    _exportable(spec)
    variant = transform(base, spec)
    stem = Path(base.path or base.name).stem
    suffix = ".onnx" if base.format == "onnx" else ".tflite"
    path = directory / f"{stem}__{spec.label()}{suffix}"
    try:
        if base.format == "onnx":
            return export_onnx(base, variant, path)
        return export_tflite(base, variant, path)
    except OSError as exc:
        raise ExportError(f"cannot write {path}: {exc.strerror}") from exc


def export_variants(
    base: Graph, specs: Sequence[VariantSpec], directory: str | os.PathLike[str]
) -> list[Path]:
    out = []
    d = Path(directory)
    if d.exists() and not d.is_dir():
        raise ExportError(f"--export {d}: not a directory")
    for spec in specs:
        try:
            out.append(export_variant(base, spec, d))
        except VariantError:
            raise
    return out
