"""LiteRT per-op times by single-operator sub-models.

LiteRT's Python ``Interpreter`` exposes no per-op profiler (ai-edge-litert 2.3:
no profiling method; ``experimental_force_delegate_node_profiling`` only
configures a profiler that Python cannot read back). So each operator of the
main subgraph is cut out of the flatbuffer into a model of its own -- the
operator, its tensors (same shapes, types and quantisation), its constant
buffers -- with the schema's object API (``ModelT``, the schema LiteRT is built
from), run with the same threads and op resolver (XNNPACK on or off) as the
whole model, and timed.

Each single-op time has the cost of one ``invoke()`` (Python call, interpreter
dispatch, delegate entry) that the whole model pays once, not once per op:
that overhead is measured on a one-element RELU model and subtracted. What the
method cannot see: cross-op cache reuse (an op's input is warm in cache in the
whole model, and also here, because the op runs repeatedly on the same
buffers), and XNNPACK's fusion of neighbouring ops. The sum of per-op times
plus one invoke overhead is compared with the whole model's median
(``Profile.sum_vs_whole``) -- that ratio is the method's error on the model.
Control-flow operators (WHILE, IF, CALL_ONCE: they call other subgraphs) are
not cut; their time is left out and named in the notes.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from infercast.bench.profiles.base import OpTime, Profile
from infercast.frontends.tflite import canonical_op
from infercast.ops.registry import is_control_flow


def _schema() -> Any:
    from ai_edge_litert import schema_py_generated as schema

    return schema


def _pack(schema: Any, model: Any) -> bytes:
    import flatbuffers

    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def op_names(schema: Any, model: Any) -> dict[int, str]:
    names = {v: k for k, v in vars(schema.BuiltinOperator).items() if k.isupper()}
    out: dict[int, str] = {}
    for i, code in enumerate(model.operatorCodes or []):
        bc = max(int(code.builtinCode or 0), int(code.deprecatedBuiltinCode or 0))
        if bc == schema.BuiltinOperator.CUSTOM:
            cc = code.customCode
            out[i] = "custom:" + (cc.decode() if isinstance(cc, bytes) else str(cc))
        else:
            out[i] = names.get(bc, f"BUILTIN_{bc}")
    return out


def _is_constant(model: Any, tensor: Any) -> bool:
    buf = model.buffers[tensor.buffer] if tensor.buffer is not None else None
    return buf is not None and buf.data is not None and len(buf.data) > 0


def _cut_one(schema: Any, model: Any, sg: Any, op: Any, i: int, name: str) -> bytes:
    """A model holding operator ``i`` of subgraph 0 alone."""
    buffers = [schema.BufferT()]
    tensors: list[Any] = []
    remap: dict[int, int] = {}
    inputs: list[int] = []

    def add(t: int) -> int:
        if t < 0:
            return t
        if t in remap:
            return remap[t]
        tt = copy.copy(sg.tensors[t])
        if _is_constant(model, tt):
            buffers.append(model.buffers[tt.buffer])
            tt.buffer = len(buffers) - 1
        else:
            tt.buffer = 0
        remap[t] = len(tensors)
        tensors.append(tt)
        return remap[t]

    for t in op.inputs if op.inputs is not None else []:
        j = add(int(t))
        src = sg.tensors[int(t)] if int(t) >= 0 else None
        if (
            j >= 0
            and src is not None
            and not _is_constant(model, src)
            and not src.isVariable
            and j not in inputs
        ):
            inputs.append(j)
    outs = [add(int(t)) for t in (op.outputs if op.outputs is not None else [])]
    new_op = copy.copy(op)
    new_op.inputs = [remap[int(t)] if int(t) >= 0 else -1 for t in op.inputs]
    new_op.outputs = outs
    if op.intermediates is not None and len(op.intermediates):
        new_op.intermediates = [add(int(t)) for t in op.intermediates]
    sub = schema.SubGraphT()
    sub.tensors = tensors
    sub.inputs = inputs
    sub.outputs = outs
    sub.operators = [new_op]
    sub.name = f"op{i}"
    m = schema.ModelT()
    m.version = model.version
    m.operatorCodes = model.operatorCodes
    m.subgraphs = [sub]
    m.buffers = buffers
    m.description = f"infercast single-op cut: operator {i} ({name})"
    return _pack(schema, m)


def cut_single_ops(data: bytes) -> list[tuple[int, str, bytes | None]]:
    """``(operator index, op name, model bytes or None if it cannot be cut)`` per operator."""
    schema = _schema()
    model = schema.ModelT.InitFromPackedBuf(bytearray(data), 0)
    sg = model.subgraphs[0]
    names = op_names(schema, model)
    out: list[tuple[int, str, bytes | None]] = []
    for i, op in enumerate(sg.operators or []):
        name = names.get(op.opcodeIndex, "?")
        if is_control_flow(canonical_op(name)):
            out.append((i, name, None))
        else:
            out.append((i, name, _cut_one(schema, model, sg, op, i, name)))
    return out


def relu_model() -> bytes:
    """A model of one RELU on one float: the cost of an ``invoke()`` that does nothing."""
    schema = _schema()
    t_in = schema.TensorT()
    t_in.shape = [1]
    t_in.type = schema.TensorType.FLOAT32
    t_in.buffer = 0
    t_in.name = "x"
    t_out = copy.copy(t_in)
    t_out.name = "y"
    code = schema.OperatorCodeT()
    code.builtinCode = schema.BuiltinOperator.RELU
    code.deprecatedBuiltinCode = schema.BuiltinOperator.RELU
    code.version = 1
    op = schema.OperatorT()
    op.opcodeIndex = 0
    op.inputs = [0]
    op.outputs = [1]
    sub = schema.SubGraphT()
    sub.tensors = [t_in, t_out]
    sub.inputs = [0]
    sub.outputs = [1]
    sub.operators = [op]
    m = schema.ModelT()
    m.version = 3
    m.operatorCodes = [code]
    m.subgraphs = [sub]
    m.buffers = [schema.BufferT()]
    return _pack(schema, m)


def profile_from_times(raw: dict[str, Any]) -> Profile:
    """The :class:`Profile` of :func:`infercast.bench.opcuts.time_single_ops`'s raw times
    (measured here or on a board): each op's time minus one invoke overhead."""
    overhead = float(raw["overhead_s"])
    ops = [
        OpTime(
            name=f"{o['op']}:{o['index']}",
            op=str(o["op"]),
            measured_s=max(float(o["raw_s"]) - overhead, 0.0),
            provider=str(o.get("provider", "")),
            layers=(int(o["index"]),),
            mapping="index",
            extra={"raw_s": float(o["raw_s"])},
        )
        for o in raw["ops"]
    ]
    before, after = float(raw["whole_before_s"]), float(raw["whole_after_s"])
    notes: list[str] = []
    if raw.get("skipped"):
        notes.append("not measured (left out of the sum): " + "; ".join(raw["skipped"]))
    notes.append(
        f"single-op sub-models; each time minus one invoke overhead ({overhead * 1e6:.1f} us, "
        "measured on a one-element RELU model)"
    )
    return Profile(
        source="litert_single_op",
        ops=tuple(ops),
        whole_s=float(np.median([before, after])),
        runs=int(raw.get("runs", 0)),
        statistic="median",
        outside=(
            "the whole model's one invoke overhead; differences from running ops in "
            "sequence (cache state, XNNPACK fusing neighbouring ops)"
        ),
        notes=tuple(notes),
        meta={"invoke_overhead_s": overhead, "whole_before_s": before, "whole_after_s": after},
    )
