"""ONNX Runtime contrib ops (com.microsoft): our output shapes against ORT running each op.

Each case is a one-node graph built here with ``onnx.helper`` (weights as
initializers, activations as inputs); ONNX Runtime runs all of them once in an
isolated child (``shape_oracle.runtime_shapes_many``) and every output shape we
infer must equal ORT's. MACs are checked from first principles for the matrix
products. ``ORT_OPTIMIZED``: real models rewritten by ORT's optimizer keep the
MACs of their source model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import infercast
from infercast.isolation import Limits, run_isolated
from shape_oracle import _known

F = TensorProto.FLOAT
U8 = TensorProto.UINT8
rng = np.random.default_rng(0)


def _w(name: str, shape: tuple[int, ...], dtype: Any = np.float32) -> onnx.TensorProto:
    if np.dtype(dtype).kind == "f":
        arr = rng.uniform(-1, 1, shape).astype(dtype)
    else:
        info = np.iinfo(dtype)
        arr = rng.integers(info.min, info.max, shape).astype(dtype)
    return numpy_helper.from_array(arr, name)


def _s(name: str, value: float | int, dtype: Any = np.float32) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(value, dtype=dtype), name)


def _model(
    op: str,
    inputs: list[tuple[str, int, tuple[int, ...]]],
    inits: list[onnx.TensorProto],
    node_inputs: list[str],
    outputs: list[str],
    domain: str = "com.microsoft",
    **attrs: Any,
) -> onnx.ModelProto:
    node = helper.make_node(op, node_inputs, outputs, domain=domain, **attrs)
    graph = helper.make_graph(
        [node],
        op,
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [onnx.ValueInfoProto(name=o) for o in outputs if o],  # ORT types them
        initializer=inits,
    )
    return helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
        ir_version=8,
    )


def _q(prefix: str) -> list[onnx.TensorProto]:
    return [_s(f"{prefix}_s", 0.02), _s(f"{prefix}_z", 128, np.uint8)]


def cases() -> dict[str, onnx.ModelProto]:
    x4 = [("x", F, (1, 8, 10, 12))]
    seq = [("x", F, (2, 5, 16))]
    qx = [("x", U8, (1, 8, 10, 12))]
    c: dict[str, onnx.ModelProto] = {}
    c["FusedConv"] = _model(
        "FusedConv", x4, [_w("w", (6, 8, 3, 3)), _w("b", (6,))], ["x", "w", "b"], ["y"],
        activation="Relu", strides=[2, 2], pads=[1, 1, 1, 1],
    )  # fmt: skip
    c["FusedMatMul"] = _model(
        "FusedMatMul", [("a", F, (3, 7, 5))], [_w("b", (3, 9, 7))], ["a", "b"], ["y"],
        transA=1, transB=1, alpha=0.5,
    )  # fmt: skip
    c["FusedGemm"] = _model(
        "FusedGemm", [("a", F, (4, 6))], [_w("b", (5, 6)), _w("c", (5,))], ["a", "b", "c"],
        ["y"], transB=1, activation="Relu",
    )  # fmt: skip
    for op in ("QuickGelu", "Gelu", "FastGelu"):
        c[op] = _model(op, seq, [], ["x"], ["y"])
    c["FastGelu_bias"] = _model("FastGelu", seq, [_w("b", (16,))], ["x", "b"], ["y"])
    c["BiasGelu"] = _model("BiasGelu", seq, [_w("b", (16,))], ["x", "b"], ["y"])
    c["SkipLayerNormalization"] = _model(
        "SkipLayerNormalization", seq, [_w("skip", (2, 5, 16)), _w("g", (16,)), _w("be", (16,)),
        _w("bias", (16,))], ["x", "skip", "g", "be", "bias"], ["y", "", "", "sum"],
    )  # fmt: skip
    c["SkipSimplifiedLayerNormalization"] = _model(
        "SkipSimplifiedLayerNormalization", seq, [_w("skip", (2, 5, 16)), _w("g", (16,))],
        ["x", "skip", "g"], ["y"],
    )  # fmt: skip
    c["SimplifiedLayerNormalization"] = _model(
        "SimplifiedLayerNormalization", seq, [_w("g", (16,))], ["x", "g"], ["y"], domain="",
        axis=-1,
    )  # fmt: skip
    c["Attention"] = _model(
        "Attention", seq, [_w("w", (16, 48)), _w("b", (48,))], ["x", "w", "b"], ["y"],
        num_heads=4,
    )  # fmt: skip
    c["MultiHeadAttention"] = _model(
        "MultiHeadAttention", [("q", F, (2, 5, 16)), ("k", F, (2, 7, 16)), ("v", F, (2, 7, 24))],
        [], ["q", "k", "v"], ["y"], num_heads=4,
    )  # fmt: skip
    c["RotaryEmbedding"] = _model(
        "RotaryEmbedding", [("x", F, (2, 5, 16))],
        [numpy_helper.from_array(np.zeros((2, 5), np.int64), "pos"), _w("cos", (8, 2)),
         _w("sin", (8, 2))], ["x", "pos", "cos", "sin"], ["y"], num_heads=4,
    )  # fmt: skip
    c["GroupQueryAttention"] = _model(
        "GroupQueryAttention", [("q", F, (1, 5, 32)), ("k", F, (1, 5, 16)), ("v", F, (1, 5, 16))],
        [_s("seqlens", [4], np.int32), _s("total", 5, np.int32)],
        ["q", "k", "v", "", "", "seqlens", "total"], ["y", "pk", "pv"],
        num_heads=4, kv_num_heads=2,
    )  # fmt: skip
    k, n, block = 32, 12, 16
    c["MatMulNBits"] = _model(
        "MatMulNBits", [("a", F, (3, k))],
        [_w("b", (n, k // block, block // 2), np.uint8), _w("sc", (n * k // block,))],
        ["a", "b", "sc"], ["y"], K=k, N=n, bits=4, block_size=block,
    )  # fmt: skip
    c["MatMulInteger16"] = _model(
        "MatMulInteger16", [("a", TensorProto.INT16, (3, 6))], [_w("b", (6, 4), np.int16)],
        ["a", "b"], ["y"],
    )  # fmt: skip
    c["DynamicQuantizeMatMul"] = _model(
        "DynamicQuantizeMatMul", seq, [_w("b", (16, 10), np.int8), _s("bs", 0.1)],
        ["x", "b", "bs"], ["y"],
    )  # fmt: skip
    c["MatMulIntegerToFloat"] = _model(
        "MatMulIntegerToFloat", [("a", U8, (2, 5, 16))],
        [_w("b", (16, 10), np.int8), _s("as", 0.1), _s("bs", 0.1)], ["a", "b", "as", "bs"], ["y"],
    )  # fmt: skip
    h = 6
    c["DynamicQuantizeLSTM"] = _model(
        "DynamicQuantizeLSTM", [("x", F, (5, 2, 8))],
        [_w("W", (1, 8, 4 * h), np.int8), _w("R", (1, h, 4 * h), np.int8),
         _s("ws", [0.1], np.float32), _s("wz", [0], np.int8), _s("rs", [0.1], np.float32),
         _s("rz", [0], np.int8)],
        ["x", "W", "R", "", "", "", "", "", "ws", "wz", "rs", "rz"], ["y", "yh", "yc"],
        hidden_size=h,
    )  # fmt: skip
    c["QLinearConv"] = _model(
        "QLinearConv", qx, [*_q("x"), _w("w", (6, 8, 3, 3), np.uint8), *_q("w"), *_q("y")],
        ["x", "x_s", "x_z", "w", "w_s", "w_z", "y_s", "y_z"], ["y"], domain="",
        pads=[1, 1, 1, 1], strides=[2, 2],
    )  # fmt: skip
    for op in ("QLinearAdd", "QLinearMul"):
        c[op] = _model(
            op, qx, [*_q("x"), _w("b", (1, 8, 1, 12), np.uint8), *_q("b"), *_q("y")],
            ["x", "x_s", "x_z", "b", "b_s", "b_z", "y_s", "y_z"], ["y"],
        )  # fmt: skip
    for op in ("QLinearSigmoid", "QLinearLeakyRelu"):
        c[op] = _model(op, qx, [*_q("x"), *_q("y")], ["x", "x_s", "x_z", "y_s", "y_z"], ["y"])
    c["QLinearSoftmax"] = _model(
        "QLinearSoftmax", qx, [*_q("x"), *_q("y")], ["x", "x_s", "x_z", "y_s", "y_z"], ["y"],
        opset=13, axis=-1,
    )  # fmt: skip
    c["QLinearGlobalAveragePool"] = _model(
        "QLinearGlobalAveragePool", qx, [*_q("x"), *_q("y")], ["x", "x_s", "x_z", "y_s", "y_z"],
        ["y"], channels_last=0,
    )  # fmt: skip
    c["QLinearAveragePool"] = _model(
        "QLinearAveragePool", qx, [*_q("x"), *_q("y")], ["x", "x_s", "x_z", "y_s", "y_z"], ["y"],
        kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
    )  # fmt: skip
    c["QLinearConcat"] = _model(
        "QLinearConcat", qx, [*_q("y"), *_q("x"), _w("b", (1, 3, 10, 12), np.uint8), *_q("b")],
        ["y_s", "y_z", "x", "x_s", "x_z", "b", "b_s", "b_z"], ["y"], axis=1,
    )  # fmt: skip
    c["QGemm"] = _model(
        "QGemm", [("a", U8, (4, 6))],
        [*_q("a"), _w("b", (5, 6), np.uint8), *_q("b"), *_q("y")],
        ["a", "a_s", "a_z", "b", "b_s", "b_z", "", "y_s", "y_z"], ["y"], transB=1,
    )  # fmt: skip
    c["EmbedLayerNormalization"] = _model(
        "EmbedLayerNormalization", [("ids", TensorProto.INT32, (2, 5))],
        [numpy_helper.from_array(np.zeros((2, 5), np.int32), "seg"), _w("we", (30, 16)),
         _w("pe", (8, 16)), _w("se", (2, 16)), _w("g", (16,)), _w("be", (16,))],
        ["ids", "seg", "we", "pe", "se", "g", "be"], ["y", "mask"],
    )  # fmt: skip
    return c


@pytest.fixture(scope="module")
def ort_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("contrib")
    models = cases()
    payloads = []
    for name, m in models.items():
        onnx.save(m, str(d / f"{name}.onnx"))
        payloads.append({"path": str(d / f"{name}.onnx"), "seed": 0})
    here = str(Path(__file__).resolve().parent)
    results = run_isolated(
        "shape_oracle:runtime_shapes_many", {"models": payloads}, Limits(timeout_s=300),
        extra_path=[here], what="ONNX Runtime on the contrib-op graphs",
    )  # fmt: skip
    return {"dir": d, "results": dict(zip(models, results, strict=True))}


@pytest.mark.parametrize("name", list(cases()))
def test_contrib_op_shapes_equal_ort(name: str, ort_results: dict[str, Any]) -> None:
    res = ort_results["results"][name]
    assert "error" not in res, f"ORT did not run {name}: {res.get('error')}"
    a = infercast.analyze(ort_results["dir"] / f"{name}.onnx")
    (layer,) = a.layers
    assert layer.status == "ok", (layer.status, layer.note)
    node = a.graph.nodes[0]
    for out in node.outputs:
        if not out:
            continue
        ours = a.graph.tensors[out].shape
        if not _known(ours):  # an optional statistic we do not give; never a wrong one
            assert out not in ("y",), f"{name}: main output unknown"
            continue
        assert tuple(ours) == tuple(res["shapes"][out]), (name, out, ours, res["shapes"][out])


def test_contrib_matmul_macs_from_first_principles(ort_results: dict[str, Any]) -> None:
    d = ort_results["dir"]

    def macs(name: str) -> int | None:
        return infercast.analyze(d / f"{name}.onnx").totals.macs

    assert macs("FusedMatMul") == 3 * 5 * 9 * 7  # A^T [3,5,7] x B^T [3,7,9]
    assert macs("MatMulNBits") == 3 * 12 * 32
    assert macs("DynamicQuantizeMatMul") == 2 * 5 * 10 * 16
    assert macs("QGemm") == 4 * 5 * 6
    assert macs("FusedConv") == 6 * 5 * 6 * 8 * 9  # 6 x 5x6 outputs, 8 x 3x3 each
    assert macs("QLinearConv") == 6 * 5 * 6 * 8 * 9
    # Attention: projection 2x5x16x48, then 2 x 4 heads x 5 x 5 x (4 + 4).
    assert macs("Attention") == 2 * 5 * 16 * 48 + 2 * 4 * 5 * 5 * 8
    # MultiHeadAttention: 2 x 4 heads x 5 x 7 x (head_k 4 + head_v 6).
    assert macs("MultiHeadAttention") == 2 * 4 * 5 * 7 * (4 + 6)
    # LSTM: seq 5 x batch 2 x 4h 24 x (input 8 + h 6).
    assert macs("DynamicQuantizeLSTM") == 5 * 2 * 24 * (8 + 6)


@pytest.mark.parametrize(
    "name",
    ["320n", "ch_PP-OCRv4_det_infer", "ch_PP-OCRv4_rec_infer", "ch_ppocr_mobile_v2.0_cls_infer"],
)
def test_ort_optimized_models_keep_their_source_macs(name: str) -> None:
    """ORT's optimizer fuses ops (FusedConv, FusedMatMul, QuickGelu, LayerNorm fusions,
    QLinear* from QDQ, DynamicQuantizeMatMul) but does the same multiply-accumulates."""
    from build_fixtures import ensure

    opt = ensure("ort_optimized")
    files = json.loads((opt / "manifest.json").read_text())["files"]
    done = 0
    for fname, info in files.items():
        group, src = info["source"].split("/")
        if Path(src).stem != name:
            continue
        shapes = {k: tuple(v) for k, v in info["input_shapes"].items()}
        source = infercast.analyze(ensure(group) / src, shapes)
        rewritten = infercast.analyze(opt / fname)
        assert rewritten.totals.complete, rewritten.unsupported
        assert rewritten.totals.macs == source.totals.macs, fname
        done += 1
    assert done
