"""Every constraint: one node that passes and one that fails, on real models.

Nodes come from the fixtures (keras, edge) and from crafted models that LiteRT
and ONNX Runtime run (tests/test_placement_craft.py). Where Vela judges the
same node, tests/test_placement_vela.py checks that it agrees. The expected
outcome follows from the node's shapes and attributes, stated beside each case.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from infercast.frontends import load
from infercast.ir.graph import Graph
from infercast.targets.constraints import REGISTRY, NodeView

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_placement_craft import write_all

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def _models(
    tmp_path_factory: pytest.TempPathFactory, keras_dir: Path, edge_dir: Path
) -> dict[str, Path]:
    keras, edge = keras_dir, edge_dir
    out = {f"keras:{p.stem}": p for p in keras.glob("*.tflite")}
    out.update({f"edge:{p.name}": p for p in edge.iterdir() if p.suffix in (".tflite", ".onnx")})
    out.update({f"craft:{k}": v for k, v in write_all(tmp_path_factory.mktemp("craft")).items()})
    return out


_GRAPHS: dict[str, Graph] = {}


def _view(models: dict[str, Path], source: str, node: int | str) -> NodeView:
    if source not in _GRAPHS:
        _GRAPHS[source] = load(models[source])
    g = _GRAPHS[source]
    n = g.nodes[node] if isinstance(node, int) else next(x for x in g.nodes if x.name == node)
    return NodeView(g, n)


MV2 = "keras:mobilenet_v2_int8"
MV2F = "keras:mobilenet_v2_fp32"
MIX = "craft:mixed_int8"
LIM = "craft:limits_int8"
NXP = "craft:nxp_semantics"

# constraint -> (params, passing (model, node), failing (model, node), why)
CASES: dict[str, tuple[dict[str, Any], tuple[str, int | str], tuple[str, int | str], str]] = {
    "model_format_in": (
        {"formats": ["tflite"]},
        (MV2, 0),
        ("edge:convs_5x5_7x7.onnx", 1),
        "ONNX Conv",
    ),
    "tensor_dtypes_in": ({"dtypes": ["int8", "uint8"]}, (MV2, 0), (MV2F, 0), "float32 maps"),
    "input_dtypes_not_in": (
        {"dtypes": ["int64", "string"]},
        (MV2, 0),
        ("craft:add_int64", 0),
        "int64 Add",
    ),
    "output_dtypes_not_in": (
        {"dtypes": ["int16", "int64"]},
        (MV2, 0),
        (LIM, "mean_int16_90000"),
        "int16 out",
    ),
    "feature_map_bits_max": ({"bits": 16}, (LIM, "mean_int16_90000"), (MV2F, 0), "32-bit maps"),
    "quantized": ({}, (MV2, 0), ("edge:dynamic_range.tflite", 0), "float activations, no scales"),
    "per_tensor_quantization": (
        {},
        (MV2, 9),
        (MV2, 0),
        "per-channel conv weights; ADD is per-tensor",
    ),
    "non_negative_unsigned_zero_points": (
        {},
        ("craft:zero_point", 0),
        ("craft:zero_point", 1),
        "int32 zp 3",
    ),
    "static_shapes": (
        {},
        (MV2, 0),
        ("craft:nonzero", 0),
        "NonZero's output length is data-dependent",
    ),
    "rank_max": ({"rank": 6}, (MV2, 0), ("craft:add_rank7", 0), "rank 7"),
    "dims_in": ({"lo": 1, "hi": 65535}, (MV2, 0), ("craft:relu_wide", 0), "a 70000-long axis"),
    "hw_max": ({"size": 65535}, (MV2, 0), ("craft:relu_wide", 0), "W = 70000 (NCHW)"),
    "innermost_dims_only": (
        {"count": 3},
        (MV2, 0),
        ("craft:add_outer_dims", 0),
        "2x3x4x5: outer dim 2",
    ),
    "batch_one": ({}, (MV2, 0), ("craft:dwconv_batch2", 0), "batch 2"),
    "params_constant": (
        {},
        ("edge:gru.tflite", 0),
        ("craft:reshape_runtime_shape", 0),
        "shape is an input",
    ),
    "constant_weights": ({}, (MV2, 0), ("craft:matmul_runtime_weights", 0), "B is a graph input"),
    "weights_bits": ({"bits": 8}, (MV2, 0), (MV2F, 0), "float32 weights"),
    "weight_sum_max": (
        {"limit": 8323072},
        (LIM, "conv3x3_light_weights"),
        (LIM, "conv3x3_heavy_weights"),
        "3*3*8000 weights of 127 = 9144000 per output channel",
    ),
    "bias_dtypes_in": ({"dtypes": ["int32", "int64"]}, (MV2, 0), (MV2F, 0), "float32 bias"),
    "bias_constant": (
        {},
        (MV2, 0),
        ("craft:conv_group2_dilated_batch2_bias_input", 0),
        "B is an input",
    ),
    "same_input_weight_dtype": (
        {},
        (MV2, 0),
        ("edge:dynamic_range.tflite", 1),
        "float input, int8 weights",
    ),
    "grouped_conv_batch_one": ({}, (MV2, 1), ("craft:dwconv_batch2", 0), "depthwise, batch 2"),
    "stride_in": ({"lo": 1, "hi": 3}, (MV2, 1), (MIX, "dwconv3x3_s4"), "stride 4"),
    "stride_in_set": ({"strides": [1, 2]}, (MV2, 0), (MIX, "conv3x3_s4_same"), "stride 4"),
    "large_stride_needs_valid": (
        {"max_stride": 3},
        (MIX, "conv3x3_s4_same"),
        (LIM, "conv3x3_s4_same_padded"),
        "32 -> 8 at stride 4 needs no padding; 30 -> 8 pads 0/1",
    ),
    "kernel_square_in": ({"sizes": [1, 3]}, (MV2, 0), ("edge:convs_5x5_7x7.tflite", 0), "5x5"),
    "kernel_limits": (
        {"height": 256, "area": 65536},
        (LIM, "maxpool_256x1"),
        (LIM, "maxpool_257x1"),
        "257 high",
    ),
    "kernel_size_max": (
        {"size": 15},
        (MV2, 0),
        (LIM, "maxpool_257x1"),
        "257 high: over the 4-bit kernel size fields of the VeriSilicon NN core",
    ),
    "pool_kernel_limits": (
        {"same_max": 8, "valid_height": 256, "valid_area": 65536},
        (MIX, "avgpool2x2_valid"),
        (MIX, "avgpool9x9_same"),
        "9x9 SAME",
    ),
    "pool_window_in": (
        {"windows": ["2x2/2", "4x4/4", "2x2/1"]},
        (MIX, "avgpool2x2_valid"),
        (MIX, "avgpool9x9_same"),
        "9x9/1",
    ),
    "dilation_one": (
        {},
        (MV2, 0),
        ("craft:conv_group2_dilated_batch2_bias_input", 0),
        "dilation 2",
    ),
    "symmetric_padding": (
        {},
        ("edge:convs_5x5_7x7.tflite", 3),
        ("edge:convs_5x5_7x7.tflite", 1),
        "3x3/2 SAME on 64: TF pads 0 before, 1 after ((32-1)*2+3-64 = 1)",
    ),
    "groups_one_or_depthwise": (
        {},
        (MV2, 1),
        ("craft:conv_group2_dilated_batch2_bias_input", 0),
        "2 groups of 4",
    ),
    "input_hw_range": (
        {"min_h": 4, "max_h": 256, "min_w": 4, "max_w": 512},
        (MV2, 0),
        (LIM, "softmax_90000"),
        "300 high",
    ),
    "output_hw_min": ({"size": 4}, (MV2, 0), (MIX, "dwconv3x3_s4"), "1x1 output"),
    "channels_max": (
        {"channels": 1024},
        (MV2, 0),
        (LIM, "conv3x3_heavy_weights"),
        "8000 input channels",
    ),
    "no_fused_activation": ({}, (MIX, "maxpool2x2_same"), (LIM, "maxpool_relu"), "fused RELU"),
    "transpose_conv_stride": ({}, (MIX, "tconv3x3_s2"), (MIX, "tconv3x3_s3"), "stride 3"),
    "transpose_conv_shape": ({}, (MIX, "tconv3x3_s2"), (LIM, "tconv_s2_same_out15"), "8 x 2 != 15"),
    "reduce_spatial_only": ({}, (MIX, "mean_hw"), (MIX, "mean_c"), "axis 3 = channels"),
    "reduced_axis_max": ({"size": 4096}, (MIX, "mean_hw"), (LIM, "mean_w5000"), "W = 5000"),
    "reduced_elements_max": (
        {"int8": 16777216, "uint8": 8388608, "int16": 65536},
        (MIX, "mean_hw"),
        (LIM, "mean_int16_90000"),
        "300*300 int16",
    ),
    "depth_reduce_needs_unit_dim": ({}, (MIX, "mean_hw"), (MIX, "mean_c"), "1x8x8x8 over C"),
    "rescaled_mean_hw_max": (
        {"size": 4096},
        (MIX, "mean_c"),
        (MIX, "mean_hw"),
        "144 x 144 pixels with keep_dims",
    ),
    "softmax_hw_max": ({"size": 65536}, (LIM, "softmax_10"), (LIM, "softmax_90000"), "300*300"),
    "single_axis_max": (
        {"elements": 16000},
        (LIM, "softmax_10"),
        (LIM, "softmax_90000"),
        "2-D 300x300",
    ),
    "output_one_dimensional": ({}, (LIM, "fc"), (MV2, 0), "1x112x112x32"),
    "unit_strides": (
        {},
        ("craft:edgetpu_int8", "slice_s1"),
        ("craft:edgetpu_int8", "slice_s2"),
        "strides 2",
    ),
    "pad_spatial_only": (
        {},
        ("craft:edgetpu_int8", "pad_hw"),
        ("craft:edgetpu_int8", "pad_channels"),
        "pads C",
    ),
    "resize_scale_in": (
        {"factors": [2, 4, 8]},
        (MIX, "resize_x2"),
        (MIX, "resize_x3"),
        "3x upscale",
    ),
    "resize_factor_max": (
        {"factor": 2.5},
        (MIX, "resize_x2"),
        (MIX, "resize_x3"),
        "3x upscale beyond 2.5x",
    ),
    "crops_zero": (
        {},
        ("craft:batch_to_space", "b2s_whole"),
        ("craft:batch_to_space", "b2s_cropped"),
        "crops [0, 1, 0, 1]",
    ),
    "no_scalar_feature_maps": ({}, (NXP, "add_row"), (NXP, "add_scalar"), "a rank-0 ADD"),
    "output_shape_of_an_input": (
        {},
        (NXP, "add_row"),
        (NXP, "add_both_broadcast"),
        "1x4x4x1 + 1x1x1x8",
    ),
    "depth_axis_of_4d_input": (
        {"depth": 127},
        (NXP, "argmax_depth"),
        (NXP, "argmax_2d"),
        "a 2-D ARG_MAX",
    ),
    "integer_compute": (
        {"dtypes": ["int8", "uint8", "int16", "int32", "bool"]},
        (MV2, 0),
        (MV2F, 0),
        "float32",
    ),
}


def test_every_constraint_has_cases() -> None:
    assert set(CASES) | {"always_rewritten", "runs_on_engine"} == set(REGISTRY)


@pytest.mark.parametrize("name", sorted(CASES))
def test_constraint_passes_and_fails(_models: dict[str, Path], name: str) -> None:
    params, good, bad, why = CASES[name]
    c = REGISTRY[name]
    ok, detail = c.run(_view(_models, *good), params)
    assert ok and detail == "", f"{name} should pass on {good}: {detail}"
    ok, detail = c.run(_view(_models, *bad), params)
    assert not ok, f"{name} should fail on {bad} ({why})"
    assert detail, "a failing check says what it saw"
    # The reason shown to the user is the docstring with the parameters filled in.
    text = c.reason(params, {"accelerator": "NPU", "fallback": "CPU"})
    assert "{" not in text


def test_constraint_details_name_the_offending_values(_models: dict[str, Path]) -> None:
    def detail(name: str, src: tuple[str, int | str]) -> str:
        return REGISTRY[name].run(_view(_models, *src), CASES[name][0])[1]

    assert (
        detail("weight_sum_max", (LIM, "conv3x3_heavy_weights"))
        == "an output channel sums to 9144000"
    )
    assert detail("kernel_square_in", ("edge:convs_5x5_7x7.tflite", 0)) == "kernel 5x5"
    assert (
        detail("symmetric_padding", ("edge:convs_5x5_7x7.tflite", 1))
        == "padding top 0, bottom 1, left 0, right 1"
    )
    assert detail("stride_in", (MIX, "dwconv3x3_s4")) == "stride 4x4 (HxW)"
    assert detail("reduced_axis_max", (LIM, "mean_w5000")) == "axis 2 has 5000 elements"
    assert detail("softmax_hw_max", (LIM, "softmax_90000")) == "height x width = 90000"


def test_onnx_padding_is_read_from_pads(_models: dict[str, Path]) -> None:
    """The same asymmetric pad in ONNX form (tf2onnx writes pads = [0, 0, 1, 1])."""
    v = _view(_models, "edge:convs_5x5_7x7.onnx", 3)
    assert v.pads == (0, 1, 0, 1)
    assert v.kernel_hw == (3, 3) and v.strides_hw == (2, 2)
    v7 = _view(_models, "edge:convs_5x5_7x7.onnx", 5)
    assert v7.pads == (0, 0, 0, 0) and v7.kernel_hw == (7, 7)


def test_always_rewritten_always_fails(_models: dict[str, Path]) -> None:
    """The marker of nncase's MatMul/TransposeConv rewrites: it fails on any node by design
    (placement turns that into 'partial'); it has no passing case."""
    ok, detail = REGISTRY["always_rewritten"].run(
        _view(_models, "edge:convs_5x5_7x7.tflite", 7), {}
    )
    assert not ok and detail == "FULLY_CONNECTED"


def test_runs_on_engine_always_fails(_models: dict[str, Path]) -> None:
    """The marker that moves an operator to another engine of the accelerator (with
    ``on_fail = "note"`` and a ``unit``): it fails on any node by design."""
    c = REGISTRY["runs_on_engine"]
    ok, detail = c.run(_view(_models, "edge:convs_5x5_7x7.tflite", 7), {"engine": "shader"})
    assert not ok and detail == "FULLY_CONNECTED"
    assert "{" not in c.reason({"engine": "shader"}, {"accelerator": "NPU", "fallback": "CPU"})
