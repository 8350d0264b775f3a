"""Keras applications converted by the real TFLite converter and tf2onnx, checked
against published MAC and parameter counts (../shared/reference/figures.md), the
converter's own operation estimate, and the LiteRT interpreter's shapes.

The fixtures are ``keras.applications`` models built with ``weights=None``,
224x224x3, 1000 classes, batch 1 (tools/build_fixtures.py, group ``keras``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import infercast
from infercast.analysis.cost import Analysis

# --- Published figures and how each keras model differs from the published one ---
# MobileNet v1 1.0 224: 568,741,376 MACs and 4,222,057 BN-folded params at 1001
# classes (tensorflow/models research/slim/nets/mobilenet_v1.md). The classifier is
# a 1x1 conv from 1024 channels, so one class fewer removes 1024 MACs and
# 1024 weights + 1 bias.
MOBILENET_V1_MACS = 568_741_376 - 1024
MOBILENET_V1_PARAMS = 4_222_057 - (1024 + 1)
# MobileNet v2 1.0 224: 300,774,272 MACs at 1000 classes (slim mobilenet README).
MOBILENET_V2_MACS = 300_774_272
# ResNet-50 v1 (stride in the first 1x1, as keras.applications.ResNet50):
# 3,857,973,248 MACs; 25,503,912 conv + fc parameters (He et al. 2016; torchvision).
RESNET50_MACS = 3_857_973_248
RESNET50_CONV_FC_PARAMS = 25_503_912
# torchvision MobileNetV2 (the same architecture as keras'): 3,504,872 params with
# BatchNorm gamma and beta counted.
MOBILENET_V2_PARAMS_WITH_BN_AFFINE = 3_504_872

EXPECTED_MACS = {
    "mobilenet_v1": MOBILENET_V1_MACS,
    "mobilenet_v2": MOBILENET_V2_MACS,
    "resnet50": RESNET50_MACS,
}
MODELS = sorted(EXPECTED_MACS)


def _files(keras_dir: Path, model: str) -> list[Path]:
    return sorted(keras_dir.glob(f"{model}_*.tflite")) + sorted(keras_dir.glob(f"{model}_*.onnx"))


@pytest.fixture(scope="module")
def analyses(keras_dir: Path) -> dict[str, Analysis]:
    return {p.name: infercast.analyze(p) for m in MODELS for p in _files(keras_dir, m)}


@pytest.mark.parametrize("model", MODELS)
def test_macs_match_published_figures_in_every_format(
    model: str, keras_dir: Path, analyses: dict[str, Analysis]
) -> None:
    files = _files(keras_dir, model)
    # fp32, int8, fp16 TFLite and fp32 ONNX: four encodings of one architecture.
    assert {f.name.split("_")[-1] for f in files} >= {
        "fp32.tflite",
        "int8.tflite",
        "fp16.tflite",
        "fp32.onnx",
    }
    for f in files:
        a = analyses[f.name]
        assert a.totals.complete, (f.name, a.unsupported, a.notes)
        assert a.totals.macs == EXPECTED_MACS[model], f.name


@pytest.mark.parametrize("model", MODELS)
def test_flops_of_mac_layers_are_twice_the_macs(model: str, analyses: dict[str, Analysis]) -> None:
    a = analyses[f"{model}_fp32.tflite"]
    mac_layers = [ly for ly in a.layers if ly.macs]
    assert mac_layers
    for ly in mac_layers:
        assert ly.flops == 2 * ly.macs


def test_params_match_published_bn_folded_counts(analyses: dict[str, Analysis]) -> None:
    # MobileNet v1: the slim figure is BN-folded already.
    v1 = analyses["mobilenet_v1_int8.tflite"]
    assert sum(ly.params for ly in v1.layers) == MOBILENET_V1_PARAMS

    # Folding a BatchNorm into the conv before it leaves one bias per channel.
    # The converter drops an all-zero bias (keras initialises Dense biases to zero,
    # and weights=None leaves them so): the classifier then has no bias input.
    def fc_bias(a: Analysis) -> int:
        fc = [n for n in a.graph.nodes if n.op == "fully_connected"]
        assert len(fc) == 1
        has_bias = len(fc[0].inputs) > 2 and fc[0].inputs[2] != ""
        return 0 if has_bias else 1000

    def bn_channels(a: Analysis) -> int:
        # Every conv / depthwise conv of these architectures is followed by a BN.
        return sum(
            ly.output_shapes[0][-1]  # type: ignore[index,misc]
            for ly in a.layers
            if ly.op in ("conv", "depthwise_conv")
        )

    v2 = analyses["mobilenet_v2_int8.tflite"]
    # torchvision counts gamma and beta (2 per channel); folded, 1 bias per channel.
    expected_v2 = MOBILENET_V2_PARAMS_WITH_BN_AFFINE - bn_channels(v2) - fc_bias(v2)
    assert sum(ly.params for ly in v2.layers) == expected_v2

    r50 = analyses["resnet50_int8.tflite"]
    # keras ResNet50 convs carry a bias, which absorbs the BN: conv+fc weights plus
    # one bias per conv output channel (the fc bias is inside the published 25,503,912).
    conv_bias = sum(
        ly.output_shapes[0][-1]  # type: ignore[index,misc]
        for ly in r50.layers
        if ly.op == "conv"
    )
    assert sum(ly.params for ly in r50.layers) == RESNET50_CONV_FC_PARAMS + conv_bias - fc_bias(r50)


def _converter_count(a: Analysis) -> int:
    """Our per-layer figures under the TFLite converter's counting rule
    (tensorflow/compiler/mlir/lite/ir/tfl_ops.cc GetArithmeticCount; its test
    get-arithmetic-count.mlir: a 256x32x32x3 -> 16, 3x3 conv counts 230,686,720 =
    2 x 113,246,208 MACs + 4,194,304 output elements): conv, depthwise conv and
    fully-connected = 2 x MACs + output elements; elementwise add/mul = output
    elements; MEAN = input elements; pooling = output elements x window."""
    g = a.graph
    total = 0
    for ly, node in zip(a.layers, g.nodes, strict=True):
        out = g.tensors[node.outputs[0]].elements or 0
        if ly.op in ("conv", "depthwise_conv", "fully_connected"):
            total += 2 * (ly.macs or 0) + out
        elif ly.op in ("add", "mul", "sub", "reduce_mean", "max_pool", "avg_pool"):
            total += ly.flops or 0
    return total


@pytest.mark.parametrize("model", MODELS)
def test_agrees_with_the_converters_estimated_op_count(
    model: str, keras_dir: Path, analyses: dict[str, Analysis]
) -> None:
    from conftest import manifest

    info = manifest(keras_dir)["files"][f"{model}_fp32.tflite"]
    estimate = info["converter_estimate"]
    assert estimate is not None, "the converter printed no estimate"
    ops_str: str = estimate["ops_str"]  # e.g. "608.507 M"
    value, _, unit = ops_str.partition(" ")
    scale = {"": 1.0, "M": 1e6, "G": 1e9}[unit.strip()]
    decimals = len(value.partition(".")[2])
    half_unit = 0.5 * 10 ** (-decimals) * scale
    ours = _converter_count(analyses[f"{model}_fp32.tflite"])
    # The converter prints 3 decimals: agreement within that rounding (+ 0.01%).
    assert abs(ours - float(value) * scale) <= half_unit + 1e-4 * ours


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("variant", ["fp32", "int8", "fp16"])
def test_tflite_shapes_agree_with_file_and_litert(
    model: str, variant: str, keras_dir: Path
) -> None:
    from ai_edge_litert.interpreter import Interpreter

    path = keras_dir / f"{model}_{variant}.tflite"
    graph = infercast.load(path)
    interp = Interpreter(model_path=str(path))
    interp.allocate_tensors()
    details = interp.get_tensor_details()
    ours = list(graph.tensors.values())
    assert len(ours) == len(details)
    for t, d in zip(ours, details, strict=True):
        assert t.shape == tuple(int(x) for x in d["shape"]), (t.name, d["name"])
        assert t.dtype.value == np.dtype(d["dtype"]).name, t.name
        scales = d["quantization_parameters"]["scales"]
        if len(scales):
            assert t.quant is not None and len(t.quant.scale) == len(scales), t.name
            assert np.allclose(t.quant.scale, scales)


def test_int8_weights_are_per_channel_quantised(analyses: dict[str, Analysis]) -> None:
    a = analyses["mobilenet_v2_int8.tflite"]
    g = a.graph
    for node in g.nodes:
        if node.op in ("conv", "depthwise_conv"):
            w = g.tensors[node.inputs[1]]
            assert w.dtype == infercast.DType.INT8
            assert w.quant is not None and w.quant.per_channel
            out_c = g.tensors[node.outputs[0]].shape[-1]  # type: ignore[index]
            assert len(w.quant.scale) == out_c


@pytest.mark.parametrize("model", MODELS)
def test_fp16_weights_are_stored_half_size_and_expanded_at_load(
    model: str, analyses: dict[str, Analysis]
) -> None:
    fp16 = analyses[f"{model}_fp16.tflite"]
    fp32 = analyses[f"{model}_fp32.tflite"]
    # DEQUANTIZE of constant fp16 weights runs once at load: folded, free per inference.
    folded = [ly for ly in fp16.layers if ly.status == "folded"]
    assert folded and all(ly.native_op == "DEQUANTIZE" for ly in folded)
    assert fp16.totals.runtime_weight_bytes == fp32.totals.weight_bytes
    assert fp16.totals.weight_bytes * 2 == fp16.totals.runtime_weight_bytes
    assert fp16.totals.params == fp32.totals.params


@pytest.mark.parametrize("model", MODELS)
def test_onnx_and_tflite_layers_agree(model: str, analyses: dict[str, Analysis]) -> None:
    onnx_a = analyses[f"{model}_fp32.onnx"]
    tfl = analyses[f"{model}_fp32.tflite"]
    # Same MAC layers, layer by layer (ONNX is NCHW: compare sorted per-layer MACs).
    ours_onnx = sorted(ly.macs for ly in onnx_a.layers if ly.macs)
    ours_tfl = sorted(ly.macs for ly in tfl.layers if ly.macs)
    assert ours_onnx == ours_tfl
    assert onnx_a.graph.layout == "NCHW" and tfl.graph.layout == "NHWC"
