"""The op table's facts (``infercast.ops.registry.Handler``) against the runtimes and ONNX.

* ``alias``: LiteRT's arena gives the output of an alias op the same buffer as its
  input (read back through ``Interpreter.tensor``), and no other op's; ONNX Runtime
  removes a Dropout whose mask no one reads (its optimised model has no Dropout) and
  keeps one whose mask is read. infercast's memory plan shares exactly those buffers.
* ``control_flow``: the ONNX ops whose schema has graph attributes, and TFLite's
  subgraph-calling builtins.
* ``weight_input``: the weight / kernel input of conv-like and FC-like ONNX ops, by
  the input names of ONNX's own operator schemas.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from infercast.analysis.lifetimes import compute_lifetimes
from infercast.frontends import load
from infercast.frontends.onnx import canonical_name
from infercast.frontends.tflite import canonical_op
from infercast.ops.registry import argument_inputs, get_handler, ops_where, registered_ops

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_placement_craft import Craft, S

_SQUEEZE = S.SqueezeOptionsT()
_SQUEEZE.squeezeDims = [0]

# builtin -> (output shape, output dtype, extra inputs, options)
_TFLITE_CASES: dict[str, tuple[tuple[int, ...], str, Any, Any]] = {
    "RESHAPE": ((1, 32), "float32", [("shape", np.asarray([1, 32], np.int32))], None),
    "EXPAND_DIMS": ((1, 1, 4, 4, 2), "float32", [("axis", np.asarray([0], np.int32))], None),
    "SQUEEZE": ((4, 4, 2), "float32", [], (S.BuiltinOptions.SqueezeOptions, _SQUEEZE)),
    "BITCAST": ((1, 4, 4, 2), "int32", [], None),
    "TRANSPOSE": ((1, 4, 2, 4), "float32", [("perm", np.asarray([0, 1, 3, 2], np.int32))], None),
}


def _tflite_model(code: str) -> tuple[bytes, int, int]:
    """x -> ADD -> a -> ``code`` -> r -> ADD -> y; returns the model, a's and r's index."""
    shape, dtype, extra, options = _TFLITE_CASES[code]
    c = Craft()
    x = c.tensor("x", (1, 4, 4, 2), "float32", scale=None)
    a = c.tensor("a", (1, 4, 4, 2), "float32", scale=None)
    c.add(x, x, a)
    r = c.tensor("r", shape, dtype, scale=None)
    args = [c.const(name, value) for name, value in extra]
    c.op(code, [a, *args], [r], *(options or ()))
    y = c.tensor("y", shape, dtype, scale=None)
    c.add(r, r, y)
    return c.build([x], [y], code.lower()), a, r


@pytest.mark.parametrize("code", sorted(_TFLITE_CASES))
def test_tflite_alias_ops_share_litert_buffers(code: str, tmp_path: Path) -> None:
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    data, a, r = _tflite_model(code)
    interp = Interpreter(
        model_content=data,
        experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
    )
    interp.allocate_tensors()
    shared = interp.tensor(a)().ctypes.data == interp.tensor(r)().ctypes.data
    handler = get_handler(canonical_op(code))
    assert handler is not None
    assert handler.alias == shared, f"{code}: LiteRT shares the buffer: {shared}"
    path = tmp_path / f"{code}.tflite"
    path.write_bytes(data)
    lt = compute_lifetimes(load(path))
    assert (lt.tensor("r").buffer == "a") == shared


def _dropout_model(mask_read: bool) -> onnx.ModelProto:
    nodes = [
        helper.make_node("Relu", ["x"], ["a"]),
        helper.make_node("Dropout", ["a"], ["d", "m"] if mask_read else ["d"]),
        helper.make_node("Relu", ["d"], ["y"]),
    ]
    out = "y"
    if mask_read:
        nodes += [
            helper.make_node("Cast", ["m"], ["mf"], to=TensorProto.FLOAT),
            helper.make_node("Add", ["mf", "y"], ["z"]),
        ]
        out = "z"
    graph = helper.make_graph(
        nodes,
        "dropout",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, [1, 64])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("mask_read", [False, True])
def test_onnx_dropout_alias_follows_onnxruntime(mask_read: bool, tmp_path: Path) -> None:
    import onnxruntime as ort

    path = tmp_path / "dropout.onnx"
    onnx.save(_dropout_model(mask_read), path)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    opts.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    kept = any(n.op_type == "Dropout" for n in onnx.load(opts.optimized_model_filepath).graph.node)
    assert kept == mask_read
    lt = compute_lifetimes(load(path))
    assert (lt.tensor("d").buffer == "a") == (not kept)


def test_control_flow_ops_are_the_subgraph_callers() -> None:
    calls_graphs = {
        canonical_name(s.name, s.domain)
        for s in onnx.defs.get_all_schemas()
        if any(a.type == onnx.AttributeProto.GRAPH for a in s.attributes.values())
    }
    control = ops_where(lambda h: h.control_flow)
    onnx_control = {op for op in control if op in calls_graphs}
    assert onnx_control == {"if", "loop", "scan"}
    # SequenceMap and FlexAttention also call bodies: costed as ordinary ops (one run
    # of the body; FlexAttention's score / prob modifiers are applied once).
    assert calls_graphs - control == {"sequence_map", "ai.onnx.preview:flex_attention"}
    tflite = {canonical_op(c) for c in ("WHILE", "IF", "CALL_ONCE", "CALL")}
    assert all(hasattr(S.BuiltinOperator, c) for c in ("WHILE", "IF", "CALL_ONCE", "CALL"))
    assert control == onnx_control | tflite


def test_weight_inputs_follow_the_onnx_schemas() -> None:
    checked = 0
    for op_type in ("Conv", "ConvInteger", "QLinearConv", "ConvTranspose", "Gemm", "MatMul",
                    "MatMulInteger", "QLinearMatMul"):  # fmt: skip
        h = get_handler(canonical_name(op_type, ""))
        assert h is not None and h.weight_input is not None
        assert h.conv_like or h.fc_like
        names = [i.name for i in onnx.defs.get_schema(op_type).inputs]
        wanted = ("W", "w") if h.conv_like else ("B", "b")
        assert names[h.weight_input] == next(n for n in names if n in wanted), op_type
        checked += 1
    conv_fc = ops_where(lambda h: h.conv_like or h.fc_like)
    assert checked == len(conv_fc - {"depthwise_conv", "fully_connected"})


def test_every_alias_op_is_a_movement_op() -> None:
    """An alias writes no data: its cost rule must say 0 FLOPs (a movement op)."""
    for op, h in registered_ops().items():
        if h.alias or h.generator:
            assert h.family == "movement", op


def test_ops_import_no_later_stage() -> None:
    """The cost rules reach a called subgraph's cost through the walker's callback: no
    module of ``infercast.ops`` imports a later stage (or a frontend)."""
    import ast

    later = ("analysis", "targets", "estimate", "report", "cli", "bench", "frontends")
    ops_dir = Path(__file__).resolve().parents[1] / "src" / "infercast" / "ops"
    bad = []
    for path in sorted(ops_dir.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            bad += [f"{path.name}: {n}" for n in names if n.split(".")[:2][-1] in later]
    assert bad == []


def test_split_arguments_follow_each_formats_input_order(
    onnx_node_dir: Path, tmp_path: Path
) -> None:
    """TFLite SPLIT takes (axis, data), ONNX Split (data, sizes): only the axis / the sizes
    are arguments. A run-time data input must not fail ``params_constant`` (the i.MX 8M
    Plus VX delegate maps SPLIT: op_status.md; its target checks that rule) nor count as
    a weight."""
    from ai_edge_litert.interpreter import Interpreter

    from infercast import analyze
    from infercast.targets import load_target
    from infercast.targets.placement import place

    c = Craft()
    x = c.tensor("x", (1, 8, 8, 16))
    a = c.tensor("a", (1, 8, 8, 16))
    c.add(x, x, a)
    halves = [c.tensor(f"half{i}", (1, 8, 8, 8)) for i in range(2)]
    c.split(a, halves, 3)
    y = c.tensor("y", (1, 8, 8, 8))
    c.add(*halves, y)
    path = tmp_path / "split.tflite"
    path.write_bytes(c.build([x], [y], "split"))
    it = Interpreter(model_path=str(path))
    it.allocate_tensors()
    it.invoke()
    assert it.get_output_details()[0]["shape"].tolist() == [1, 8, 8, 8]

    report = place(load(path), load_target("imx8mp-npu-vx"))
    split = next(lp for lp in report.layers if lp.native_op == "SPLIT")
    assert split.placement != "cpu", split.reasons
    node = next(n for n in load(path).nodes if n.native_op == "SPLIT")
    assert argument_inputs(node, get_handler(node.op)) == {0}
    assert not any(layer.weight_bytes for layer in analyze(path).layers)

    # ONNX Split(input, split): the sizes, input 1, are the argument, the data is not.
    onnx_path = onnx_node_dir / "test_split_variable_parts_2d_opset13" / "model.onnx"
    node = next(n for n in load(onnx_path).nodes if n.native_op == "Split")
    assert argument_inputs(node, get_handler(node.op)) == {1}
