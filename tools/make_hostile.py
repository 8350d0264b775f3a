"""Write the hostile-input reproducers of ``tests/data/hostile/`` (issue 14), one per class.

Every file is built here from first principles (ONNX graphs with ``onnx.helper``,
TFLite by editing the bundled example through LiteRT's schema, TOML and profile
text), so each is small and its construction is its documentation. Inputs that
would be large (a 200 MB ``Constant``, a 1,200-file ``extends`` chain, a FIFO)
are made by :func:`make_large` at test time, in a temporary directory.

:data:`CASES` says, for every reproducer, the command to run, the exit code the
contract allows, and a phrase the one stderr line must hold (``tests/test_hostile.py``
runs them all under the 20 s / 1.5 GiB bounds).

    python tools/make_hostile.py            # rewrite tests/data/hostile/
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "tests" / "data" / "hostile"
EXAMPLE = REPO / "examples" / "mobilenet_v2_int8.tflite"


# --------------------------------------------------------------------------- #
# ONNX builders
# --------------------------------------------------------------------------- #


def _model(
    nodes: list[Any], inits: list[Any], outputs: list[Any], opset: int = 18, **kw: Any
) -> bytes:
    from onnx import helper

    g = helper.make_graph(nodes, "hostile", kw.pop("inputs", []), outputs, initializer=inits, **kw)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    return bytes(m.SerializeToString())


def _out(name: str, elem: int = 1) -> Any:
    from onnx import helper

    return helper.make_tensor_value_info(name, elem, None)


def _const(name: str, arr: Any) -> Any:
    import numpy as np
    from onnx import numpy_helper

    return numpy_helper.from_array(np.asarray(arr), name)


def onnx_where_broadcast() -> bytes:
    """Where(c[N,1,1], a[1,N,1], b[1,1,N]), all constants: N^3 = 1e9 outputs from 3 KB."""
    import numpy as np
    from onnx import helper

    n = 1000
    inits = [
        _const("c", np.ones((n, 1, 1), bool)),
        _const("a", np.ones((1, n, 1), np.float32)),
        _const("b", np.zeros((1, 1, n), np.float32)),
    ]
    return _model([helper.make_node("Where", ["c", "a", "b"], ["y"])], inits, [_out("y")])


def onnx_sum_broadcast() -> bytes:
    """Sum of three broadcasting constant vectors: 1e9 outputs."""
    import numpy as np
    from onnx import helper

    n = 1000
    inits = [
        _const("a", np.ones((n, 1, 1), np.float32)),
        _const("b", np.ones((1, n, 1), np.float32)),
        _const("c", np.ones((1, 1, n), np.float32)),
    ]
    return _model([helper.make_node("Sum", ["a", "b", "c"], ["y"])], inits, [_out("y")])


def onnx_pad_huge() -> bytes:
    """Pad of a 1-element constant by 2^31 - 2 on each side (17 GB of floats)."""
    import numpy as np
    from onnx import helper

    inits = [_const("x", np.ones((1,), np.float32)), _const("p", np.array([2**31 - 2] * 2))]
    return _model([helper.make_node("Pad", ["x", "p"], ["y"])], inits, [_out("y")])


def onnx_onehot_huge() -> bytes:
    """OneHot of 4,000 constant indices with depth 1e6: 4e9 outputs."""
    import numpy as np
    from onnx import helper

    inits = [
        _const("i", np.arange(4000, dtype=np.int64)),
        _const("d", np.array(1_000_000, np.int64)),
        _const("v", np.array([0.0, 1.0], np.float32)),
    ]
    return _model([helper.make_node("OneHot", ["i", "d", "v"], ["y"])], inits, [_out("y")])


def onnx_hannwindow_huge() -> bytes:
    """HannWindow of size 2^31 - 1 from a constant scalar."""
    import numpy as np
    from onnx import helper

    inits = [_const("n", np.array(2**31 - 1, np.int64))]
    return _model([helper.make_node("HannWindow", ["n"], ["y"])], inits, [_out("y")], opset=17)


def onnx_convtranspose_stride() -> bytes:
    """ConvTranspose of constant 4x4 maps with stride 100,000: 1.2e11 outputs."""
    import numpy as np
    from onnx import helper

    inits = [
        _const("x", np.ones((1, 1, 4, 4), np.float32)),
        _const("w", np.ones((1, 1, 3, 3), np.float32)),
    ]
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[100_000, 100_000])
    return _model([node], inits, [_out("y")])


def onnx_einsum_outer() -> bytes:
    """Einsum 'a,b,c->abc' of three constant 1,000-vectors: 1e9 outputs."""
    import numpy as np
    from onnx import helper

    inits = [_const(k, np.ones((1000,), np.float32)) for k in "abc"]
    node = helper.make_node("Einsum", ["a", "b", "c"], ["y"], equation="a,b,c->abc")
    return _model([node], inits, [_out("y")], opset=12)


def onnx_einsum_contraction() -> bytes:
    """Einsum 'a,b,c,d->' of four constant 4,096-vectors: a scalar out, 2.8e14 products."""
    import numpy as np
    from onnx import helper

    inits = [_const(k, np.ones((4096,), np.float32)) for k in "abcd"]
    node = helper.make_node("Einsum", ["a", "b", "c", "d"], ["y"], equation="a,b,c,d->")
    return _model([node], inits, [_out("y")], opset=12)


def onnx_regex_redos() -> bytes:
    """RegexFullMatch of '(a+)+$' on a constant 'aaaa…!' (catastrophic backtracking)."""
    import numpy as np
    from onnx import TensorProto, helper

    x = helper.make_tensor("x", TensorProto.STRING, [1], [b"a" * 64 + b"!"])
    node = helper.make_node("RegexFullMatch", ["x"], ["y"], pattern="(a+)+$")
    del np
    return _model([node], [x], [_out("y", TensorProto.BOOL)], opset=20)


def onnx_nested_if(depth: int = 30) -> bytes:
    """If inside If, ``depth`` deep: each then-branch holds the next If, each else-branch
    a 4x4 MatMul (64 MACs). The costlier branch is 64 MACs at every level."""
    import numpy as np
    from onnx import helper

    def leaf(tag: str) -> Any:
        mm = helper.make_node("MatMul", ["x", "m"], [f"o{tag}"])
        return helper.make_graph([mm], f"g{tag}", [], [_out(f"o{tag}")])

    graph = leaf("deepest")
    for level in range(depth):
        node = helper.make_node(
            "If", ["cond"], [f"o{level}"], then_branch=graph, else_branch=leaf(f"e{level}")
        )
        graph = helper.make_graph([node], f"g{level}", [], [_out(f"o{level}")])
    inits = [_const("cond", np.array(True)), _const("m", np.ones((4, 4), np.float32))]
    x = helper.make_tensor_value_info("x", 1, [4, 4])
    top = helper.make_graph(
        list(graph.node), "nested_if", [x], list(graph.output), initializer=inits
    )
    m = helper.make_model(top, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    return bytes(m.SerializeToString())


def _loop(m_value: Any, m_type: int) -> bytes:
    import numpy as np
    from onnx import TensorProto, helper

    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("MatMul", ["acc_in", "w"], ["acc_out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [4, 4]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [4, 4]),
        ],
    )
    m = helper.make_tensor("M", m_type, [], [m_value])
    inits = [m, _const("c", np.array(True)), _const("w", np.ones((4, 4), np.float32))]
    node = helper.make_node("Loop", ["M", "c", "a"], ["y"], body=body)
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 4])
    return _model([node], inits, [y], inputs=[a])


def onnx_loop_negative() -> bytes:
    """Loop with trip count -1000 around a 4x4 MatMul (was: -64,000 MACs, exit 0)."""
    from onnx import TensorProto

    return _loop(-1000, TensorProto.INT64)


def onnx_loop_int64max() -> bytes:
    """Loop with trip count INT64_MAX (was: counted through a float, off by one)."""
    from onnx import TensorProto

    return _loop(2**63 - 1, TensorProto.INT64)


def onnx_loop_nan() -> bytes:
    """Loop whose trip count is a float NaN (was: ValueError, exit 1)."""
    from onnx import TensorProto

    return _loop(math.nan, TensorProto.FLOAT)


def onnx_loop_inf() -> bytes:
    from onnx import TensorProto

    return _loop(math.inf, TensorProto.FLOAT)


def onnx_external_length() -> bytes:
    """A [10] float initializer whose external data claims a length of 1e12 bytes."""
    from onnx import TensorProto, helper

    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[10])
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "w.bin"), ("offset", "0"), ("length", str(10**12))):
        e = t.external_data.add()
        e.key, e.value = k, v
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [10])
    return _model([helper.make_node("Mul", ["x", "w"], ["y"])], [t], [_out("y")], inputs=[x])


def onnx_dims_overflow() -> bytes:
    """An input of shape [2^62, 2^62, 4] (its byte size overflows int64 in the planner)."""
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2**62, 2**62, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2**62, 2**62, 4])
    return _model([helper.make_node("Relu", ["x"], ["y"])], [], [y], inputs=[x])


def onnx_markup_names() -> bytes:
    """Node and tensor names with Rich markup, a newline and an ESC sequence."""
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])
    y = helper.make_tensor_value_info("[/bold]", TensorProto.FLOAT, [1, 8])
    nodes = [
        helper.make_node("Relu", ["x"], ["a\nb\x1b[2J"], name="[/bold]"),
        helper.make_node("Relu", ["a\nb\x1b[2J"], ["[/bold]"], name="[red]x\x1b]0;pwned\x07"),
    ]
    return _model(nodes, [], [y], inputs=[x])


def onnx_undefined_input_with_escape() -> bytes:
    """A node reads a tensor nobody produces, named with ESC and newline (error message)."""
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])
    node = helper.make_node("Add", ["x", "ghost\n\x1b[31mred"], ["y"])
    return _model([node], [], [_out("y")], inputs=[x])


def onnx_valid_conv() -> bytes:
    """A valid model (Conv 3->8, 3x3, on 1x3x16x16, then Relu) that commands pair with
    hostile target and profile files: 1x8x14x14 outputs x 27 MACs = 42,336 MACs."""
    import numpy as np
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 14, 14])
    w = _const("w", np.ones((8, 3, 3, 3), np.float32))
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
        helper.make_node("Relu", ["c"], ["y"], name="relu"),
    ]
    return _model(nodes, [w], [y], inputs=[x])


def onnx_constant_big(mbytes: int = 200) -> bytes:
    """A Constant node holding ``mbytes`` MB of float weights (large: made at test time)."""
    import numpy as np
    from onnx import helper, numpy_helper

    w = numpy_helper.from_array(np.zeros((mbytes * 1024 * 1024 // 4,), np.float32), "w")
    nodes = [
        helper.make_node("Constant", [], ["w"], value=w),
        helper.make_node("Neg", ["w"], ["y"]),
    ]
    return _model(nodes, [], [_out("y")])


# --------------------------------------------------------------------------- #
# TFLite builders (the bundled example, one field changed through the schema)
# --------------------------------------------------------------------------- #


def _tflite_edit(edit: Callable[[Any], None]) -> bytes:
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema

    model = schema.ModelT.InitFromPackedBuf(bytearray(EXAMPLE.read_bytes()), 0)
    edit(model)
    b = flatbuffers.Builder(1024)
    b.Finish(model.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def tflite_bad_operator_input() -> bytes:
    """The first CONV_2D's filter input is -1 (an omitted optional input): LiteRT's
    allocate_tensors dereferences it and dies with SIGSEGV; it ran in the CLI process
    when --input-shape was given (rc 139)."""
    import numpy as np

    def edit(m: Any) -> None:
        sg = m.subgraphs[0]
        op = sg.operators[0]
        ins = np.array(op.inputs, dtype=np.int32)
        ins[1] = -1
        op.inputs = ins

    return _tflite_edit(edit)


def _aliased_model(n_ops: int, n_tensors: int, scales: int) -> bytes:
    """A flatbuffer whose operators vector lists one RELU table ``n_ops`` times and whose
    tensors vector lists one tensor (with ``scales`` quantisation scales) ``n_tensors``
    times: offsets may alias, so the file size does not bound what a reader walks."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as s

    b = flatbuffers.Builder(1024)
    q = None
    if scales:
        vec = b.CreateNumpyVector(np_f32([0.5] * scales))
        s.QuantizationParametersStart(b)
        s.QuantizationParametersAddScale(b, vec)
        q = s.QuantizationParametersEnd(b)
    name = b.CreateString("x")
    s.TensorStartShapeVector(b, 2)
    b.PrependInt32(8)
    b.PrependInt32(1)
    shape = b.EndVector()
    s.TensorStart(b)
    s.TensorAddShape(b, shape)
    s.TensorAddName(b, name)
    s.TensorAddBuffer(b, 0)
    if q is not None:
        s.TensorAddQuantization(b, q)
    tensor = s.TensorEnd(b)
    ins = b.CreateNumpyVector(np_i32([0]))
    outs = b.CreateNumpyVector(np_i32([1]))
    s.OperatorStart(b)
    s.OperatorAddOpcodeIndex(b, 0)
    s.OperatorAddInputs(b, ins)
    s.OperatorAddOutputs(b, outs)
    op = s.OperatorEnd(b)
    vectors = {}
    for key, start, item, n in (
        ("ops", s.SubGraphStartOperatorsVector, op, n_ops),
        ("tensors", s.SubGraphStartTensorsVector, tensor, n_tensors),
    ):
        start(b, n)
        for _ in range(n):
            b.PrependUOffsetTRelative(item)
        vectors[key] = b.EndVector()
    sg_in = b.CreateNumpyVector(np_i32([0]))
    sg_out = b.CreateNumpyVector(np_i32([1]))
    s.SubGraphStart(b)
    s.SubGraphAddTensors(b, vectors["tensors"])
    s.SubGraphAddOperators(b, vectors["ops"])
    s.SubGraphAddInputs(b, sg_in)
    s.SubGraphAddOutputs(b, sg_out)
    sg = s.SubGraphEnd(b)
    s.OperatorCodeStart(b)
    s.OperatorCodeAddBuiltinCode(b, s.BuiltinOperator.RELU)
    s.OperatorCodeAddDeprecatedBuiltinCode(b, s.BuiltinOperator.RELU)
    s.OperatorCodeAddVersion(b, 1)
    code = s.OperatorCodeEnd(b)
    s.BufferStart(b)
    buf = s.BufferEnd(b)
    model_vectors = []
    for start, items in (
        (s.ModelStartSubgraphsVector, [sg]),
        (s.ModelStartOperatorCodesVector, [code]),
        (s.ModelStartBuffersVector, [buf]),
    ):
        start(b, len(items))
        for it in reversed(items):
            b.PrependUOffsetTRelative(it)
        model_vectors.append(b.EndVector())
    s.ModelStart(b)
    s.ModelAddVersion(b, 3)
    s.ModelAddSubgraphs(b, model_vectors[0])
    s.ModelAddOperatorCodes(b, model_vectors[1])
    s.ModelAddBuffers(b, model_vectors[2])
    b.Finish(s.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def tflite_aliased_operators() -> bytes:
    """4 MB listing one RELU operator a million times."""
    return _aliased_model(1_000_000, 2, 0)


def tflite_aliased_tensors() -> bytes:
    """1 MB: 100,000 entries of one tensor whose quantisation has 100,000 scales
    (1e10 scales to convert, for a reader that converts each tensor's)."""
    return _aliased_model(1, 100_000, 100_000)


def np_f32(values: list[float]) -> Any:
    import numpy as np

    return np.array(values, dtype=np.float32)


def np_i32(values: list[int]) -> Any:
    import numpy as np

    return np.array(values, dtype=np.int32)


def onnx_many_nodes(n: int | None = None) -> bytes:
    """A chain of ``n`` Relu nodes (default: one past infercast's limit, 2.4 MB)."""
    from onnx import TensorProto, helper

    from infercast.errors import MAX_NODES

    n = MAX_NODES + 1 if n is None else n

    nodes = [helper.make_node("Relu", [f"t{i}"], [f"t{i + 1}"]) for i in range(n)]
    x = helper.make_tensor_value_info("t0", TensorProto.FLOAT, [1, 8])
    y = helper.make_tensor_value_info(f"t{n}", TensorProto.FLOAT, [1, 8])
    return _model(nodes, [], [y], inputs=[x])


def tflite_subgraph_output_minus1() -> bytes:
    """The main subgraph lists tensor -1 as its output ("omitted" is for operators)."""
    import numpy as np

    def edit(m: Any) -> None:
        m.subgraphs[0].outputs = np.array([-1], dtype=np.int32)

    return _tflite_edit(edit)


# --------------------------------------------------------------------------- #
# Target files and profiles
# --------------------------------------------------------------------------- #

BASE = 'extends = "k210-kpu"\n'
TARGETS: dict[str, str] = {
    "target_fp8.toml": BASE + '[compile]\nquantize_float_to = "fp8"\n',
    "target_negative_compile.toml": BASE + "[one_time]\ngraph_compile_s = -5\n",
    "target_inf_peak.toml": BASE + "[units.kpu]\npeak_int8_ops_per_s = inf\n",
    "target_1e308.toml": BASE + "[memories.kpu_ram]\nbandwidth_bytes_per_s = 1e308\n"
    "[units.cpu]\npeak_fp32_ops_per_s = 1e308\n",
    "target_tiny_peak.toml": BASE + "[units.kpu]\npeak_int8_ops_per_s = 5e-324\n",
    "target_nan.toml": BASE + "[crossing]\nfixed_s = nan\n",
    "target_deep.toml": "a = " + "[" * 5000 + "]" * 5000 + "\n",
    "target_deep_dotted.toml": "a." * 5000 + "b = 1\n",
    "target_bigint.toml": BASE + "[units.kpu]\ncores = " + "9" * 5000 + "\n",
    "target_extends_passwd.toml": 'extends = "/etc/passwd"\n',
    "target_extends_dotdot.toml": 'extends = "../../src/infercast/targets/data/k210-kpu.toml"\n',
    "target_escape_key.toml": BASE + '[units."\\u001b[2J\\n"]\nkind = "cpu"\n',
}


def _ort_profile(dur: str = "60", extra: str = "") -> str:
    events = [
        '{"cat": "Session", "name": "model_run", "ts": 100, "dur": 500}',
        '{"cat": "Node", "name": "conv_kernel_time", "ts": 110, "dur": '
        + dur
        + ', "args": {"op_name": "Conv", "provider": "CPUExecutionProvider"}}',
    ]
    return "[\n" + ",\n".join(events) + extra + "\n]\n"


def profile_ort_many_ops(n: int = 300_000) -> str:
    """An ORT trace (13 MB) naming ``n`` distinct kernels: a row and a median each."""
    ev = '{"cat": "Node", "name": "n%d_kernel_time", "ts": %d, "dur": 1}'
    return "[\n" + ",\n".join(ev % (i, i + 1) for i in range(n)) + "\n]\n"


PROFILES: dict[str, str] = {
    "profile_ort_nan.json": _ort_profile("NaN"),
    "profile_ort_negative.json": _ort_profile("-5000"),
    "profile_ort_bigint.json": _ort_profile("9" * 5000),
    "profile_ort_huge.json": _ort_profile("1e308"),
    "profile_ort_deep.json": "[" * 20_000 + "]" * 20_000,
    "profile_ort_ts_table.json": _ort_profile().replace('"ts": 110', '"ts": {"a": 1}'),
}

_TFLITE_HEAD = (
    "Operator-wise Profiling Info for Regular Benchmark Runs:\n"
    "============================== Run Order ==============================\n"
    "\t[node type]\t[first]\t[avg ms]\t[%]\t[cdf%]\t[mem KB]\t[times called]\t[Name]\n"
)
PROFILES["profile_tflite_negative.txt"] = (
    _TFLITE_HEAD + "\tCONV_2D\t0.5\t-60.957\t2.066%\t2.066%\t0.000\t1\t[a]:0\n"
)
PROFILES["profile_tflite_bigcount.txt"] = (
    _TFLITE_HEAD + "\tCONV_2D\t0.5\t60.957\t2.066%\t2.066%\t0.000\t" + "9" * 5000 + "\t[a]:0\n"
)
PROFILES["profile_tflite_dots.txt"] = (
    _TFLITE_HEAD + "\tCONV_2D\t1.2.3\t60.957\t2.066%\t2.066%\t0.000\t1\t[a]:0\n"
)
PROFILES["profile_tvm_bad_percent.txt"] = (
    "Node Name  Ops        Time(us)  Time(%)  Shape\n"
    "---------  ---        --------  -------  -----\n"
    "conv0      fused_conv 12.5      x.y      (1, 8)\n"
)


# --------------------------------------------------------------------------- #
# The cases
# --------------------------------------------------------------------------- #

MODELS: dict[str, Callable[[], bytes]] = {
    "valid_conv.onnx": onnx_valid_conv,
    "onnx_where_broadcast.onnx": onnx_where_broadcast,
    "onnx_sum_broadcast.onnx": onnx_sum_broadcast,
    "onnx_pad_huge.onnx": onnx_pad_huge,
    "onnx_onehot_huge.onnx": onnx_onehot_huge,
    "onnx_hannwindow_huge.onnx": onnx_hannwindow_huge,
    "onnx_convtranspose_stride.onnx": onnx_convtranspose_stride,
    "onnx_einsum_outer.onnx": onnx_einsum_outer,
    "onnx_einsum_contraction.onnx": onnx_einsum_contraction,
    "onnx_regex_redos.onnx": onnx_regex_redos,
    "onnx_nested_if_30.onnx": onnx_nested_if,
    "onnx_loop_negative.onnx": onnx_loop_negative,
    "onnx_loop_int64max.onnx": onnx_loop_int64max,
    "onnx_loop_nan.onnx": onnx_loop_nan,
    "onnx_loop_inf.onnx": onnx_loop_inf,
    "onnx_external_length.onnx": onnx_external_length,
    "onnx_dims_overflow.onnx": onnx_dims_overflow,
    "onnx_markup_names.onnx": onnx_markup_names,
    "onnx_undefined_escape.onnx": onnx_undefined_input_with_escape,
}
DERIVED: dict[str, Callable[[], bytes]] = {
    "tflite_bad_operator_input.tflite": tflite_bad_operator_input,
    "tflite_subgraph_output_minus1.tflite": tflite_subgraph_output_minus1,
    "tflite_aliased_operators.tflite": tflite_aliased_operators,
    "tflite_aliased_tensors.tflite": tflite_aliased_tensors,
    "onnx_many_nodes.onnx": onnx_many_nodes,
    "onnx_constant_200mb.onnx": lambda: onnx_constant_big(200),
    "profile_ort_many_ops.json": lambda: profile_ort_many_ops().encode(),
}
"""Made at test time (:func:`make_large`): 4 MB edits of the bundled example, 200 MB,
13 MB of profile."""


@dataclass(frozen=True)
class Case:
    """One reproducer: ``argv`` with ``{f}`` for the file (and ``{d}`` its directory,
    ``{ex}`` the bundled example, ``{onnx}`` a small valid ONNX model)."""

    name: str
    argv: tuple[str, ...]
    rcs: tuple[int, ...]
    says: str = ""
    """A phrase the stderr line holds (exit 2) or the JSON output holds (exit 0)."""
    issue: str = ""
    json_out: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def argv_in(self, d: Path) -> list[str]:
        """The command line with the file in directory ``d``."""
        sub = {
            "{f}": str(d / self.name),
            "{ex}": str(EXAMPLE),
            "{onnx}": str(d / "valid_conv.onnx"),
        }
        return [sub.get(a, a).replace("{d}", str(d)) for a in self.argv]


A = ("analyze", "{f}", "-f", "json")
CASES: list[Case] = [
    Case("onnx_where_broadcast.onnx", A, (0, 4), issue="memory bomb: broadcasting Where"),
    Case("onnx_sum_broadcast.onnx", A, (0, 4), issue="memory bomb: broadcasting Sum"),
    Case("onnx_pad_huge.onnx", A, (0, 2, 4), issue="memory bomb: Pad"),
    Case("onnx_onehot_huge.onnx", A, (0, 2, 4), issue="memory bomb: OneHot"),
    Case("onnx_hannwindow_huge.onnx", A, (0, 2, 4), issue="memory bomb: HannWindow"),
    Case("onnx_convtranspose_stride.onnx", A, (0, 2, 4), issue="memory bomb: ConvTranspose stride"),
    Case("onnx_einsum_outer.onnx", A, (0, 2, 4), issue="memory bomb: Einsum outer product"),
    Case("onnx_einsum_contraction.onnx", A, (0, 2, 4), issue="time bomb: Einsum contraction"),
    Case("onnx_regex_redos.onnx", A, (0, 4), issue="239-byte file that hangs: RegexFullMatch"),
    Case("onnx_nested_if_30.onnx", A, (0,), '"macs": 64', issue="nested If costs 2^depth"),
    Case("onnx_loop_negative.onnx", A, (2,), "trip count", issue="Loop trip count -1000"),
    Case(
        "onnx_loop_int64max.onnx",
        A,
        (0,),
        '"macs": 590295810358705651648',
        issue="INT64_MAX trips through a float",
    ),
    Case("onnx_loop_nan.onnx", A, (2,), "trip count", issue="NaN Loop trip count"),
    Case("onnx_loop_inf.onnx", A, (2,), "trip count", issue="inf Loop trip count"),
    Case("onnx_external_length.onnx", A, (0, 2, 4), issue="external-data length over dims"),
    Case(
        "onnx_dims_overflow.onnx",
        ("analyze", "{f}", "-f", "json", "--memory-plan"),
        (2,),
        issue="overflowing dims in the planner",
    ),
    Case("onnx_dims_overflow.onnx", A, (2,), issue="overflowing dims"),
    Case(
        "onnx_markup_names.onnx",
        ("analyze", "{f}"),
        (0,),
        json_out=False,
        issue="Rich markup in a node name; ESC / newline in names",
    ),
    Case(
        "onnx_markup_names.onnx",
        ("analyze", "{f}", "-f", "csv"),
        (0,),
        json_out=False,
        issue="names in CSV",
    ),
    Case("onnx_undefined_escape.onnx", A, (2,), "ghost", issue="ESC / newline echoed in errors"),
    Case(
        "tflite_bad_operator_input.tflite",
        ("analyze", "{f}", "-f", "json", "--input-shape", "serving_default_input:0=1x224x224x3"),
        (0, 2, 4),
        issue="SIGSEGV in LiteRT allocate_tensors",
    ),
    Case("tflite_bad_operator_input.tflite", A, (0, 2, 4), issue="bad operator input"),
    Case(
        "tflite_subgraph_output_minus1.tflite",
        A,
        (2,),
        "tensor -1",
        issue="subgraph output -1 (KeyError '', exit 1)",
    ),
    Case(
        "{ex}",
        ("analyze", "{ex}", "-f", "json", "--input-shape", "nope=1x224x224x3"),
        (2,),
        "not an input",
        issue="wrong --input-shape name called a corrupt file",
    ),
    Case(
        "{ex}",
        ("analyze", "{ex}", "-f", "json", "--input-shape", "serving_default_input:0=1x224x224x3"),
        (0,),
        issue="LiteRT's XNNPACK INFO line on stderr",
    ),
    Case(
        "{ex}",
        ("analyze", "{ex}", "-f", "json", "--input-shape", "serving_default_input:0=1x224x224x5"),
        (2,),
        issue="LiteRT's multi-line error",
    ),
]
for _name in TARGETS:
    CASES.append(
        Case(_name, ("estimate", "{onnx}", "-t", "{f}", "-f", "json"), (2,), issue="target file")
    )
CASES.append(Case("target_inf_peak.toml", ("targets", "show", "{f}", "-f", "json"), (2,)))
for _name in PROFILES:
    CASES.append(
        Case(
            _name,
            ("profile", "import", "{f}", "--model", "{onnx}", "-f", "json"),
            (2,),
            issue="profile file",
        )
    )

CASES += [
    Case(
        "tflite_aliased_operators.tflite",
        A,
        (2,),
        "operators",
        issue="new: a 4 MB flatbuffer listing one operator a million times",
    ),
    Case(
        "tflite_aliased_tensors.tflite",
        A,
        (2,),
        "name bytes",
        issue="new: 100,000 tensors sharing one table with 100,000 scales (1 MB)",
    ),
    Case(
        "onnx_many_nodes.onnx",
        A,
        (2,),
        "operators",
        issue="new: 100,001 nodes in a 2.4 MB file (200,000 took minutes)",
    ),
    Case("onnx_constant_200mb.onnx", A, (0,), issue="200 MB Constant node read whole (1.24 GB)"),
    Case(
        "profile_ort_many_ops.json",
        ("profile", "import", "{f}", "--model", "{onnx}", "-f", "json"),
        (2,),
        "operators",
        issue="new: a trace naming 300,000 kernels (17 s of CPU, 1.4 GB)",
    ),
    Case(
        "target_chain_1200.toml",
        ("estimate", "{onnx}", "-t", "{f}", "-f", "json"),
        (2,),
        "extends chain",
        issue="1,200-file extends chain (RecursionError)",
    ),
    Case("fifo.onnx", A, (2,), "not a regular file", issue="a FIFO as model path hangs"),
    Case(
        "fifo.toml",
        ("estimate", "{onnx}", "-t", "{f}", "-f", "json"),
        (2,),
        "not a regular file",
        issue="a FIFO as target file",
    ),
    Case(
        "valid_conv.onnx",
        ("analyze", "{f}", "-f", "json", "-o", "{f}"),
        (2,),
        issue="-o overwrites its own input",
    ),
    Case(
        "profile_ort_nan.json",
        ("calibrate", "-t", "rpi4-cpu", "--from", "{f}", "--model", "{onnx}", "-o", "{f}"),
        (2,),
        json_out=False,
        issue="calibrate -o over the profile",
    ),
    Case(
        "valid_conv.onnx",
        (
            "calibrate",
            "-t",
            "rpi4-cpu",
            "--from",
            "{d}/profile_ort_nan.json",
            "--model",
            "{f}",
            "-o",
            "{f}",
        ),
        (2,),
        json_out=False,
        issue="calibrate -o over the model",
    ),
]

FUZZ_FINDS: list[Case] = [
    Case(
        "fuzz_tflite_check_fit_unknown.tflite",
        ("check", "{f}", "-t", "imx8mp-npu-vx", "-f", "json"),
        (4,),
        issue="fuzzer: check's exit 4 (fit unknown, tensors of unknown size): no stderr line",
    ),
    Case(
        "fuzz_onnx_inference_segv.onnx",
        (*A, "--memory-plan"),
        (0, 2, 4),
        issue="fuzzer: SIGSEGV in ONNX's C++ shape inference, in the CLI process",
    ),
    Case(
        "fuzz_onnx_divide_warning.onnx",
        A,
        (0, 2, 4),
        issue="fuzzer: numpy RuntimeWarning on stderr (divide by zero in constants)",
    ),
    Case(
        "fuzz_tflite_buffererror.tflite",
        (*A, "--memory-plan"),
        (0, 2, 4),
        issue="fuzzer: BufferError closing the memory map (exit 1)",
    ),
    Case(
        "fuzz_onnx_name_not_utf8.onnx",
        A,
        (0, 2, 4),
        issue="fuzzer: a graph name of bytes (not UTF-8): JSON TypeError (exit 1)",
    ),
    Case(
        "fuzz_onnx_scan_inputs.onnx",
        A,
        (0, 2, 4),
        issue="fuzzer: Scan with more scan inputs than inputs (IndexError, exit 1)",
    ),
    Case(
        "fuzz_tflite_while_cycle.tflite",
        (*A, "--input-shape", "serving_default_input:0=1x10x8"),
        (0, 2, 4),
        issue="fuzzer: a WHILE condition whose LOGICAL_AND feeds itself (RecursionError)",
    ),
    Case(
        "fuzz_profile_index_digits.txt",
        ("profile", "import", "{f}", "--model", "{ex}", "-f", "json"),
        (0, 2),
        issue="fuzzer: a benchmark_model row named ':<5,000 digits>' (int() ValueError, exit 1)",
    ),
    Case(
        "fuzz_target_abstract.toml",
        ("estimate", "{onnx}", "-t", "{f}", "-f", "json"),
        (2,),
        "shared base",
        issue="fuzzer: abstract = true in a user file (KeyError '', exit 1)",
    ),
]
"""Inputs the fuzzer found that broke the contract, kept as they were found (mutants of
fixture files; not written by this script)."""
CASES += FUZZ_FINDS

LARGE = (*DERIVED, "target_chain_1200.toml", "fifo.onnx", "fifo.toml")
"""Made at test time by :func:`make_large`."""


def make_large(name: str, d: Path) -> Path:
    """Write the large reproducer ``name`` into ``d``; returns the file to run on."""
    p = d / name
    if name in DERIVED:
        p.write_bytes(DERIVED[name]())
    elif name == "target_chain_1200.toml":
        for i in range(1200):
            (d / f"chain{i}.toml").write_text(f'extends = "chain{i + 1}.toml"\n')
        (d / "chain1200.toml").write_text(BASE)
        p.write_text('extends = "chain0.toml"\n')
    elif name.startswith("fifo"):
        os.mkfifo(p)
    else:
        raise KeyError(name)
    return p


def write_all(out: Path = OUT) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, fn in MODELS.items():
        (out / name).write_bytes(fn())
        written.append(out / name)
    for name, text in {**TARGETS, **PROFILES}.items():
        (out / name).write_text(text)
        written.append(out / name)
    return written


if __name__ == "__main__":
    files = write_all(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
    total = sum(p.stat().st_size for p in files)
    print(f"{len(files)} files, {total} bytes in {files[0].parent}")
    json.dumps([c.name for c in CASES])
