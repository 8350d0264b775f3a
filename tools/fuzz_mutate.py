"""Mutators for the fuzzer: byte level, and field level through each format's own schema.

* TFLite: the flatbuffer is read into LiteRT's object API
  (``ai_edge_litert.schema_py_generated.ModelT``), one field is changed (a tensor
  shape, a buffer or tensor index, an opcode, an option, a quantisation scale, the
  int32 data of a small constant, a name), and the model is packed again.
* ONNX: the protobuf is read with ``onnx``, one field is changed (an op type, an
  attribute, a node input, dims and small integer values of initializers,
  declared shapes, opset, external-data entries, names), and it is serialised.
  Graph inputs may first be made constants ("constify": the ONNX node tests keep
  their operands as inputs; as initializers they reach constant folding).
* TOML target files and profiles: values replaced by hostile ones (inf, nan,
  5e-324, 1e308, negative, 5,000-digit integers, wrong types), keys dropped or
  misspelt, lines cut, duplicated or swapped.

Every mutator is a pure function of its input and a ``random.Random``, so a
campaign is reproduced by its seed.
"""

from __future__ import annotations

import copy
import json
import math
import random
import re
import tomllib
from collections.abc import Callable
from typing import Any

INTS = [0, 1, -1, 2, 3, 7, 16, 255, 256, 4097, 65535, 65536, 1 << 20, 2**31 - 1, -(2**31)]
INTS64 = [*INTS, 2**32, 2**40, 2**53, 2**62, 2**63 - 1, -(2**63), 10**12, -1000]
FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, 1e-300, 5e-324, 1e308, 1e21, math.inf, -math.inf, math.nan]
NAMES = [
    "", "x\ny", "\x1b[31mred\x1b[0m", "[/bold]", "[bold]b", "a" * 5000, "é\u202eevil", "\x00z",
    "<script>alert(1)</script>",
]  # fmt: skip


def _pick(rng: random.Random, seq: list[Any]) -> Any:
    return seq[rng.randrange(len(seq))]


def _set_index(rng: random.Random, obj: Any, attr: str, values: list[int], p: float) -> None:
    """Replace one tensor index of ``obj.attr`` (with probability ``p``) or append one."""
    import numpy as np

    vec = list(getattr(obj, attr) if getattr(obj, attr) is not None else [])
    v = _pick(rng, values)
    if vec and rng.random() < p:
        vec[rng.randrange(len(vec))] = v
    else:
        vec.append(v)
    setattr(obj, attr, np.array(vec, dtype=np.int32))


# --------------------------------------------------------------------------- #
# Bytes
# --------------------------------------------------------------------------- #


def mutate_bytes(data: bytes, rng: random.Random, *, region: int | None = None) -> bytes:
    """Flip, overwrite, insert, delete, duplicate or truncate; ``region`` limits where
    (the structure of a model sits in its first bytes for most files)."""
    b = bytearray(data)
    if not b:
        return bytes(rng.randbytes(rng.randrange(1, 64)))
    for _ in range(rng.choice([1, 1, 2, 4, 8])):
        if not b:
            break
        op = rng.randrange(7)
        i = rng.randrange(min(len(b), region or len(b)))
        if op == 0:
            b[i] ^= 1 << rng.randrange(8)
        elif op == 1:
            b[i] = _pick(rng, [0, 0xFF, 0x7F, 0x80, 0x01, rng.randrange(256)])
        elif op == 2:
            v = _pick(rng, INTS)
            b[i : i + 4] = (v & 0xFFFFFFFF).to_bytes(4, "little")
        elif op == 3:
            b[i:i] = rng.randbytes(rng.randrange(1, 16))
        elif op == 4:
            del b[i : i + rng.randrange(1, 64)]
        elif op == 5:
            n = rng.randrange(1, 64)
            b[i:i] = b[i : i + n]
        else:
            b = b[: max(1, i)]
            break
    return bytes(b)


# --------------------------------------------------------------------------- #
# TFLite, through the schema's object API
# --------------------------------------------------------------------------- #


def _schema() -> Any:
    from ai_edge_litert import schema_py_generated as schema

    return schema


def _int32(v: int) -> int:
    return ((v + 2**31) % 2**32) - 2**31


def _tflite_field(model: Any, rng: random.Random) -> str:
    """Change one field of ``model`` (a ``ModelT``); returns what was done."""
    import numpy as np

    subs = model.subgraphs or []
    if not subs:
        return "no subgraph"
    sg = _pick(rng, subs)
    tensors = sg.tensors or []
    ops = sg.operators or []
    choice = rng.randrange(16)
    if choice == 0 and tensors:
        t = _pick(rng, tensors)
        shape = list(t.shape) if t.shape is not None else []
        if shape and rng.random() < 0.8:
            shape[rng.randrange(len(shape))] = _int32(_pick(rng, INTS))
        else:
            shape = [_int32(_pick(rng, INTS)) for _ in range(rng.randrange(0, 9))]
        t.shape = np.array(shape, dtype=np.int32)
        return "tensor shape"
    if choice == 1 and tensors:
        t = _pick(rng, tensors)
        if t.shape is not None and len(t.shape):
            sig = np.array(t.shape, dtype=np.int32).copy()
            sig[rng.randrange(len(sig))] = -1
            t.shapeSignature = sig
        return "shape signature"
    if choice == 2 and tensors:
        t = _pick(rng, tensors)
        t.buffer = _pick(rng, [0, 1, len(model.buffers or []), 2**31 - 1, rng.randrange(64)])
        return "tensor buffer"
    if choice == 3 and tensors:
        _pick(rng, tensors).type = rng.randrange(0, 24)
        return "tensor type"
    if choice in (4, 5) and ops:
        op = _pick(rng, ops)
        attr = "inputs" if choice == 4 else "outputs"
        n = len(tensors)
        _set_index(rng, op, attr, [-1, n, n + 5, 2**31 - 1, rng.randrange(n or 1)], 0.8)
        return f"operator {attr}"
    if choice == 6 and ops:
        _pick(rng, ops).opcodeIndex = _pick(rng, [len(model.operatorCodes or []), 2**31 - 1, 0])
        return "opcode index"
    if choice == 7 and model.operatorCodes:
        oc = _pick(rng, model.operatorCodes)
        code = rng.randrange(0, 215)
        oc.builtinCode = code
        oc.deprecatedBuiltinCode = min(code, 127)
        return "builtin code"
    if choice == 8 and ops:
        op = _pick(rng, [o for o in ops if o.builtinOptions is not None] or ops)
        opts = op.builtinOptions
        if opts is None:
            return "no options"
        fields = [k for k, v in vars(opts).items() if isinstance(v, int | float | bool)]
        if not fields:
            return "no option fields"
        k = _pick(rng, fields)
        cur = getattr(opts, k)
        if isinstance(cur, float):
            setattr(opts, k, _pick(rng, FLOATS))
        else:
            setattr(opts, k, _pick(rng, [0, 1, -1, 2, 3, 127, -128, 100, 32767]))
        return f"option {k}"
    if choice == 9:
        attr = _pick(rng, ["inputs", "outputs"])
        _set_index(rng, sg, attr, [-1, len(tensors), rng.randrange(len(tensors) or 1)], 0.7)
        return f"subgraph {attr}"
    if choice == 10 and ops:
        k = rng.randrange(3)
        if k == 0:
            del ops[rng.randrange(len(ops))]
        elif k == 1:
            ops.insert(rng.randrange(len(ops)), copy.deepcopy(_pick(rng, ops)))
        else:
            rng.shuffle(ops)
        return "operator list"
    if choice == 11 and tensors:
        t = _pick(rng, tensors)
        q = t.quantization
        if q is not None and q.scale is not None and len(q.scale):
            scale = np.array(q.scale, dtype=np.float32).copy()
            with np.errstate(over="ignore"):
                scale[rng.randrange(len(scale))] = _pick(rng, FLOATS)
            q.scale = scale
            return "quant scale"
        return "no quant"
    if choice == 12 and model.buffers:
        small = [b for b in model.buffers if b.data is not None and 4 <= len(b.data) <= 64]
        if small:
            b = _pick(rng, small)
            arr = np.frombuffer(bytes(np.asarray(b.data, dtype=np.uint8)), dtype=np.int32).copy()
            if len(arr):
                arr[rng.randrange(len(arr))] = _int32(_pick(rng, INTS))
                b.data = np.frombuffer(arr.tobytes(), dtype=np.uint8)
                return "small int32 constant"
        return "no small buffer"
    if choice == 13 and tensors:
        _pick(rng, tensors).name = _pick(rng, NAMES).encode("utf-8", "replace")
        return "tensor name"
    if choice == 14 and tensors:
        t = _pick(rng, tensors)
        t.isVariable = not bool(t.isVariable)
        return "is_variable"
    if choice == 15 and len(subs) < 8:
        model.subgraphs.append(copy.deepcopy(sg))
        return "duplicate subgraph"
    return "nothing"


def mutate_tflite(data: bytes, rng: random.Random) -> bytes:
    """One to three field mutations through the schema; a byte mutation when the file
    is no longer readable or packable."""
    import flatbuffers

    schema = _schema()
    if rng.random() < 0.25:
        return mutate_bytes(data, rng, region=min(len(data), 1 << 16))
    try:
        model = schema.ModelT.InitFromPackedBuf(bytearray(data), 0)
        for _ in range(rng.choice([1, 1, 2, 3])):
            _tflite_field(model, rng)
        b = flatbuffers.Builder(1024)
        b.Finish(model.Pack(b), file_identifier=b"TFL3")
        return bytes(b.Output())
    except Exception:
        return mutate_bytes(data, rng, region=min(len(data), 1 << 16))


# --------------------------------------------------------------------------- #
# ONNX, through onnx's protobuf classes
# --------------------------------------------------------------------------- #

DANGEROUS_OPS = [
    "Where", "Sum", "Pad", "OneHot", "HannWindow", "HammingWindow", "BlackmanWindow",
    "ConvTranspose", "Einsum", "RegexFullMatch", "StringSplit", "StringNormalizer",
    "ConstantOfShape", "Expand", "Tile", "Range", "Resize", "Upsample", "Reshape",
    "Loop", "If", "Scan", "Concat", "Gather", "MatMul", "Gemm", "Conv", "Col2Im",
    "EyeLike", "CenterCropPad", "DFT", "STFT", "MelWeightMatrix", "Unique", "NonZero",
    "TopK", "Trilu", "CumSum", "ReduceSum", "Mul", "Add", "Slice", "Split", "Squeeze",
    "Unsqueeze", "Cast", "Shape", "Size", "Flatten", "Transpose", "DepthToSpace",
    "SpaceToDepth", "MaxPool", "AveragePool", "LpPool", "RoiAlign", "GridSample",
    "AffineGrid", "ScatterND", "GatherND", "Compress", "ReverseSequence", "Bernoulli",
]  # fmt: skip


def _all_ops() -> list[str]:
    import onnx.defs

    return sorted({s.name for s in onnx.defs.get_all_schemas() if s.domain in ("", "ai.onnx")})


def _graphs(g: Any) -> list[Any]:
    out = [g]
    for n in g.node:
        for a in n.attribute:
            if a.HasField("g"):
                out.extend(_graphs(a.g))
            for sub in a.graphs:
                out.extend(_graphs(sub))
    return out


def _value_names(g: Any) -> list[str]:
    names = [vi.name for vi in g.input] + [t.name for t in g.initializer]
    for n in g.node:
        names.extend(o for o in n.output if o)
    return names


def _set_int_values(t: Any, rng: random.Random) -> None:
    """Overwrite one element of a small integer initializer with a hostile value."""
    import numpy as np
    from onnx import numpy_helper

    arr = numpy_helper.to_array(t).copy()
    if arr.size == 0 or arr.size > 4096 or arr.dtype.kind not in "iu":
        return
    flat = arr.reshape(-1)
    info = np.iinfo(arr.dtype)
    v = _pick(rng, INTS64)
    flat[rng.randrange(flat.size)] = min(max(v, info.min), info.max)
    t.CopyFrom(numpy_helper.from_array(flat.reshape(arr.shape), t.name))


def constify(model: Any, rng: random.Random, values: dict[str, Any] | None = None) -> bool:
    """Turn one graph input into an initializer (its test data, else small random data)."""
    import numpy as np
    from onnx import helper, numpy_helper

    g = model.graph
    inits = {t.name for t in g.initializer}
    cands = [vi for vi in g.input if vi.name not in inits and vi.type.HasField("tensor_type")]
    if not cands:
        return False
    vi = _pick(rng, cands)
    arr = (values or {}).get(vi.name)
    if arr is None:
        dims = [
            d.dim_value if d.HasField("dim_value") else 1 for d in vi.type.tensor_type.shape.dim
        ]
        if math.prod(dims) > 4096:
            return False
        try:
            dtype = helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type)
        except Exception:
            return False
        if np.dtype(dtype).kind == "O":
            return False
        arr = np.asarray(rng.randrange(0, 4), dtype=dtype) * np.ones(dims, dtype=dtype)
    g.initializer.append(numpy_helper.from_array(np.asarray(arr), vi.name))
    return True


def _onnx_field(model: Any, rng: random.Random, ops: list[str]) -> str:
    from onnx import AttributeProto, TensorProto

    g = _pick(rng, _graphs(model.graph))
    nodes = list(g.node)
    choice = rng.randrange(15)
    if choice == 0 and nodes:
        n = _pick(rng, nodes)
        n.op_type = _pick(rng, DANGEROUS_OPS if rng.random() < 0.6 else ops)
        return "op type"
    if choice == 1 and nodes:
        n = _pick(rng, nodes)
        if not n.attribute:
            return "no attribute"
        a = _pick(rng, list(n.attribute))
        if a.type == AttributeProto.INT:
            a.i = _pick(rng, INTS64)
        elif a.type == AttributeProto.INTS and len(a.ints):
            a.ints[rng.randrange(len(a.ints))] = _pick(rng, INTS64)
        elif a.type == AttributeProto.FLOAT:
            a.f = _pick(rng, FLOATS)
        elif a.type == AttributeProto.FLOATS and len(a.floats):
            a.floats[rng.randrange(len(a.floats))] = _pick(rng, FLOATS)
        elif a.type == AttributeProto.STRING:
            a.s = _pick(rng, [*NAMES, "(a+)+$", "NCHW", "constant"]).encode("utf-8", "replace")
        elif a.type == AttributeProto.TENSOR:
            if len(a.t.dims):
                a.t.dims[rng.randrange(len(a.t.dims))] = _pick(rng, INTS64)
            else:
                _set_int_values(a.t, rng)
        return "attribute"
    if choice == 2 and nodes:
        n = _pick(rng, nodes)
        names = [*_value_names(g), "", "nowhere"]
        if len(n.input) and rng.random() < 0.8:
            n.input[rng.randrange(len(n.input))] = _pick(rng, names)
        else:
            n.input.append(_pick(rng, names))
        return "node input"
    if choice == 3 and g.initializer:
        t = _pick(rng, list(g.initializer))
        if len(t.dims) and rng.random() < 0.5:
            t.dims[rng.randrange(len(t.dims))] = _pick(rng, INTS64)
        else:
            _set_int_values(t, rng)
        return "initializer"
    if choice == 4 and g.initializer:
        _pick(rng, list(g.initializer)).data_type = rng.randrange(0, 26)
        return "initializer type"
    if choice == 5:
        vis = [*g.input, *g.output, *g.value_info]
        if not vis:
            return "no value info"
        vi = _pick(rng, vis)
        dims = vi.type.tensor_type.shape.dim
        if len(dims):
            d = dims[rng.randrange(len(dims))]
            if rng.random() < 0.7:
                d.dim_value = _pick(rng, INTS64)
            else:
                d.dim_param = _pick(rng, ["N", "batch", "x\ny"])
        return "declared shape"
    if choice == 6 and model.opset_import:
        model.opset_import[0].version = rng.randrange(1, 26)
        return "opset"
    if choice == 7 and g.initializer:
        t = _pick(rng, list(g.initializer))
        t.data_location = TensorProto.EXTERNAL
        del t.external_data[:]
        for k, v in (
            ("location", _pick(rng, ["w.bin", "../../../etc/passwd", "/dev/zero", "x\ny"])),
            ("offset", str(_pick(rng, [0, -1, 2**40]))),
            ("length", str(_pick(rng, [0, -1, 10**12, 2**63 - 1]))),
        ):
            e = t.external_data.add()
            e.key, e.value = k, v
        return "external data"
    if choice == 8 and nodes:
        n = _pick(rng, nodes)
        n.name = _pick(rng, NAMES)
        if len(n.output):
            n.output[0] = _pick(rng, NAMES) or n.output[0]
        return "names"
    if choice == 9 and nodes:
        k = rng.randrange(3)
        if k == 0:
            del g.node[rng.randrange(len(nodes))]
        elif k == 1:
            g.node.add().CopyFrom(_pick(rng, nodes))
        else:
            rng.shuffle(nodes)
            del g.node[:]
            g.node.extend(nodes)
        return "node list"
    if choice == 10:
        return "constify" if constify(model, rng) else "no input to constify"
    if choice == 11 and nodes:
        n = _pick(rng, nodes)
        n.domain = _pick(rng, ["", "ai.onnx.ml", "com.microsoft", "custom"])
        return "domain"
    if choice == 12:
        model.ir_version = _pick(rng, [0, 1, 3, 7, 10, 11, 2**31 - 1])
        return "ir version"
    if choice == 13 and nodes:
        n = _pick(rng, nodes)
        a = n.attribute.add()
        a.name = _pick(rng, ["axis", "axes", "pads", "strides", "depth", "to", "mode", "perm"])
        a.type = AttributeProto.INTS
        a.ints.extend(_pick(rng, INTS64) for _ in range(rng.randrange(1, 5)))
        return "extra attribute"
    if choice == 14 and g.output:
        del g.output[rng.randrange(len(g.output))]
        return "graph output removed"
    return "nothing"


_OPS: list[str] = []


def mutate_onnx(data: bytes, rng: random.Random, values: dict[str, Any] | None = None) -> bytes:
    """Field mutations through onnx's classes (a byte mutation for a quarter of inputs,
    or when the file is not readable); ``values``: test data for :func:`constify`."""
    import onnx

    if not _OPS:
        _OPS.extend(_all_ops())
    if rng.random() < 0.2:
        return mutate_bytes(data, rng, region=min(len(data), 1 << 16))
    try:
        model = onnx.load_model_from_string(data)
        if values is not None and rng.random() < 0.7:
            for _ in range(len(model.graph.input)):
                constify(model, rng, values)
        for _ in range(rng.choice([1, 1, 2, 3])):
            _onnx_field(model, rng, _OPS)
        return bytes(model.SerializeToString())
    except Exception:
        return mutate_bytes(data, rng, region=min(len(data), 1 << 16))


# --------------------------------------------------------------------------- #
# Text: TOML target files, JSON and text profiles
# --------------------------------------------------------------------------- #

HOSTILE_TOKENS = [
    "inf", "-inf", "nan", "-5", "0", "5e-324", "1e308", "1e400", "-0.0", "9" * 5000,
    "99999999999999999999", "1.2.3", '"x"', "[]", "{}", "true", "NaN", "Infinity", "-1e9",
]  # fmt: skip
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])")


def mutate_text(text: str, rng: random.Random) -> str:
    """Replace a number by a hostile token, or cut / duplicate / swap / drop lines."""
    lines = text.splitlines(keepends=True)
    if not lines:
        return _pick(rng, HOSTILE_TOKENS)
    for _ in range(rng.choice([1, 1, 2, 3])):
        k = rng.randrange(6)
        if k <= 2:
            nums = list(_NUMBER.finditer(text))
            if nums:
                m = _pick(rng, nums)
                text = text[: m.start()] + _pick(rng, HOSTILE_TOKENS) + text[m.end() :]
                lines = text.splitlines(keepends=True)
                continue
        if not lines:
            break
        i = rng.randrange(len(lines))
        if k == 3:
            lines.insert(i, lines[i])
        elif k == 4:
            del lines[i]
        else:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        text = "".join(lines)
    return text


TOML_VALUES: list[Any] = [
    math.inf, -math.inf, math.nan, -5, 0, 5e-324, 1e308, -1.0, 10**30, "x", "fp8", [], {},
    True, [1, "a"], {"a": {"b": {"c": 1}}}, "/etc/passwd", "../../x.toml", "\x1b[31m", "[/bold]",
]  # fmt: skip


def _leaves(d: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    if isinstance(d, dict):
        for k, v in d.items():
            out.append((*path, k))
            out.extend(_leaves(v, (*path, k)))
    elif isinstance(d, list):
        for i, v in enumerate(d):
            out.append((*path, i))
            out.extend(_leaves(v, (*path, i)))
    return out


def mutate_toml(text: str, rng: random.Random, to_toml: Callable[[dict[str, Any]], str]) -> str:
    """Field level through tomllib and ``to_toml`` (keys dropped, misspelt, values
    replaced); text level when the file does not parse."""
    if rng.random() < 0.3:
        return mutate_text(text, rng)
    try:
        raw = tomllib.loads(text)
    except Exception:
        return mutate_text(text, rng)
    for _ in range(rng.choice([1, 1, 2, 3])):
        leaves = _leaves(raw)
        if not leaves:
            break
        path = _pick(rng, leaves)
        parent: Any = raw
        for p in path[:-1]:
            parent = parent[p]
        key = path[-1]
        k = rng.randrange(4)
        if k == 0 and isinstance(parent, dict):
            del parent[key]
        elif k == 1 and isinstance(parent, dict) and isinstance(key, str):
            parent[key + "x" if rng.random() < 0.5 else key[:-1]] = parent.pop(key)
        else:
            parent[key] = copy.deepcopy(_pick(rng, TOML_VALUES))
    try:
        return to_toml(raw)
    except Exception:
        return mutate_text(text, rng)


JSON_VALUES: list[Any] = [
    -1,
    -1000.5,
    math.nan,
    math.inf,
    1e308,
    10**30,
    "12",
    None,
    [],
    {},
    True,
    {"a": [[[]]]},
]


def mutate_json(text: str, rng: random.Random) -> str:
    """Field level for JSON profiles (values of random keys of random events)."""
    if rng.random() < 0.3:
        return mutate_text(text, rng)
    try:
        data = json.loads(text)
    except Exception:
        return mutate_text(text, rng)
    events = data if isinstance(data, list) else data.get("traceEvents", [])
    for _ in range(rng.choice([1, 2, 4, 8])):
        if not events:
            break
        e = _pick(rng, events)
        if not isinstance(e, dict) or not e:
            continue
        key = _pick(rng, [*list(e), "dur", "ts", "name", "cat", "args"])
        if rng.random() < 0.15:
            e.pop(key, None)
        else:
            e[key] = copy.deepcopy(_pick(rng, JSON_VALUES))
    out = json.dumps(data)
    if rng.random() < 0.1:
        out = out.replace('"dur": 1', '"dur": ' + "9" * 5000, 1)
    return out
