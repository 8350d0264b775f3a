"""TFLite loader features on small models built by the real converter (group ``edge``):
control flow (WHILE, CALL_ONCE), resource variables, fused and lowered recurrent
layers, hybrid (dynamic-range) quantisation, odd convolutions. Expected figures
are derived here from each model's architecture, stated in its manifest entry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import infercast
from conftest import manifest


@pytest.fixture(scope="module")
def info(edge_dir: Path) -> dict[str, Any]:
    files: dict[str, Any] = manifest(edge_dir)["files"]
    return files


def test_fused_lstm_macs_per_step_times_steps(edge_dir: Path, info: dict[str, Any]) -> None:
    m = info["lstm.tflite"]
    units = m["units"]
    _, steps, features = m["input_shape"]
    a = infercast.analyze(edge_dir / "lstm.tflite")
    lstm = [ly for ly in a.layers if ly.op == "lstm"]
    assert [ly.native_op for ly in lstm] == ["UNIDIRECTIONAL_SEQUENCE_LSTM"]
    # 4 gates, each [units x (features + units)] per step (keras LSTM).
    assert lstm[0].macs == steps * 4 * units * (features + units)
    # keras: 4*units*(features+units) weights + 4*units biases (its count_params).
    assert m["keras_params"] == 4 * units * (features + units) + 4 * units
    # keras initialises the input, cell and output gate biases to zero and the forget
    # gate's to one; the converter stores the three zero vectors as one shared tensor,
    # which the layer reads three times and we count once.
    g = a.graph
    node = g.nodes[lstm[0].index]
    biases = {n for n in node.inputs[12:16] if n}
    assert len(biases) == 2
    assert lstm[0].params == 4 * units * (features + units) + 2 * units


def test_gru_lowered_to_while_counts_every_iteration(edge_dir: Path, info: dict[str, Any]) -> None:
    m = info["gru.tflite"]
    units = m["units"]
    _, steps, features = m["input_shape"]
    a = infercast.analyze(edge_dir / "gru.tflite")
    loop = [ly for ly in a.layers if ly.native_op == "WHILE"]
    assert len(loop) == 1 and loop[0].status == "control_flow"
    assert f"{steps} iterations" in loop[0].note
    # 3 gates, each [units x (features + units)] per step.
    assert a.totals.macs == steps * 3 * units * (features + units)
    # The loop body's layers are listed too, under their subgraph.
    subgraphs = {ly.subgraph for ly in a.layers}
    assert len(subgraphs) == 3
    assert a.graph.subgraphs


def test_while_loop_trip_count_and_flops(edge_dir: Path, info: dict[str, Any]) -> None:
    trips = info["while_loop.tflite"]["trip_count"]
    a = infercast.analyze(edge_dir / "while_loop.tflite")
    (x,) = a.graph.inputs
    n = a.graph.tensors[x].elements
    assert n is not None
    # x -> x*2+1 per iteration (2 FLOPs per element), counter += 1 (1 FLOP);
    # the condition (1 compare) runs once more than the body.
    assert a.totals.flops == trips * (2 * n + 1) + (trips + 1) * 1


def test_resource_variables_and_call_once_are_listed(edge_dir: Path, info: dict[str, Any]) -> None:
    a = infercast.analyze(edge_dir / "resource_var.tflite")
    ops = [ly.native_op for ly in a.layers]
    for op in ("VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE", "CALL_ONCE"):
        assert op in ops
    assert any("resource variables" in n for n in a.notes)
    assert a.totals.complete
    expected_ops = sum(info["resource_var.tflite"]["op_counts"].values())
    assert len(a.layers) == expected_ops


def test_hybrid_quantised_weights(edge_dir: Path, info: dict[str, Any]) -> None:
    a = infercast.analyze(edge_dir / "dynamic_range.tflite")
    g = a.graph
    int8_weights = [t for t in g.tensors.values() if t.is_constant and t.dtype.value == "int8"]
    assert int8_weights and all(t.quant is not None for t in int8_weights)
    # Hybrid kernels read the int8 weights directly: storage = run-time bytes.
    assert a.totals.weight_bytes == a.totals.runtime_weight_bytes
    est = info["dynamic_range.tflite"]["converter_estimate"]
    # conv/fc: 2 x MACs + output elements (the converter's rule; see test_keras_models).
    count = sum(
        2 * (ly.macs or 0) + (g.tensors[n.outputs[0]].elements or 0)
        for ly, n in zip(a.layers, g.nodes, strict=True)
        if ly.macs
    )
    assert abs(count - est["ops"]) <= 500  # printed as "3.531 M"


def test_odd_convolutions_same_macs_in_three_encodings(
    edge_dir: Path, info: dict[str, Any]
) -> None:
    expected = 0
    for ly in info["convs_5x5_7x7.tflite"]["keras_layers"]:
        cls = ly["class"]
        if cls == "Conv2D":
            _, oh, ow, oc = ly["output_shape"]
            kh, kw = ly["kernel_size"]
            ic = ly["input_shape"][-1]
            expected += oh * ow * oc * kh * kw * ic
        elif cls == "DepthwiseConv2D":
            _, oh, ow, oc = ly["output_shape"]
            kh, kw = ly["kernel_size"]
            expected += oh * ow * oc * kh * kw
        elif cls == "Conv2DTranspose":
            _, ih, iw, ic = ly["input_shape"]
            kh, kw = ly["kernel_size"]
            expected += ih * iw * ic * ly["filters"] * kh * kw
        elif cls == "Dense":
            expected += ly["input_shape"][-1] * ly["output_shape"][-1]
    assert expected > 0
    for f in ("convs_5x5_7x7.tflite", "convs_5x5_7x7_int8.tflite", "convs_5x5_7x7.onnx"):
        a = infercast.analyze(edge_dir / f)
        assert a.totals.complete, f
        assert a.totals.macs == expected, f
