"""VeriSilicon NN core tiling and stride lowering (Mesa etnaviv_ml_nn.c): the interleave
modes and tile counts the driver computes, and the ops factor they give a conv."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from infercast.estimate.work import nn_core_factor, nn_interleave, nn_width_factor
from infercast.frontends import load


@pytest.mark.parametrize(
    ("tile", "kh", "mode"),
    [
        (7, 3, 2),  # 2 + 7 <= 18: capped at 2 although 7 <= 8 allows 8
        (14, 3, 2),
        (16, 5, 4),  # 4 + 16 > 18: the cap rises to 4
        (8, 11, 2),  # 10 + 8 = 18, not above
        (8, 12, 4),
        (28, 3, 2),  # wider than 16: mode 2
        (30, 8, 1),  # 7 + 30 > 36: one row
        (56, 3, 1),
        (64, 1, 1),
    ],
)
def test_interleave_matches_mesa(tile: int, kh: int, mode: int) -> None:
    assert nn_interleave(tile, kh) == mode


def test_width_factor_counts_tiles_and_slots() -> None:
    assert nn_width_factor(224, 3, 64) == pytest.approx(256 / 224)  # 4 tiles of 64
    assert nn_width_factor(112, 3, 64) == pytest.approx(128 / 112)  # 2 tiles
    assert nn_width_factor(64, 3, 64) == 1.0
    assert nn_width_factor(56, 3, 64) == pytest.approx(64 / 56)  # one tile, one row
    assert nn_width_factor(7, 3, 64) == pytest.approx(64 / 14)  # 2 rows of 7 in 64 slots
    assert nn_width_factor(16, 5, 64) == 1.0  # 4 rows of 16 fill the tile


def _graph(tmp: Path, op: str, hw: tuple[int, int], c: int, k: int, stride: int) -> Path:
    group = c if op == "dw" else 1
    w = np.zeros((c, c // group, k, k), np.float32)
    node = helper.make_node(
        "Conv", ["x", "w"], ["y"], strides=[stride] * 2, pads=[k // 2] * 4, group=group
    )
    g = helper.make_graph(
        [node],
        op,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, *hw])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(w, "w")],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = tmp / f"{op}-{k}-{stride}.onnx"
    onnx.save(onnx.shape_inference.infer_shapes(m), path)
    return path


def _factor(path: Path, tile: int, strided: bool) -> float:
    graph = load(path)
    node = next(n for n in graph.nodes if n.op in ("conv", "depthwise_conv"))
    return nn_core_factor(graph, node, tile, strided)


def test_strided_conv_runs_space_to_depth(tmp_path: Path) -> None:
    p = _graph(tmp_path, "conv", (128, 128), 8, 3, 2)  # 64 output rows: one full tile
    assert _factor(p, 64, True) == pytest.approx(16 / 9)  # 2x2 kernel over 4x channels
    assert _factor(p, 64, False) == 1.0
    assert _factor(p, 0, True) == pytest.approx(16 / 9)


def test_strided_depthwise_keeps_first_pixel(tmp_path: Path) -> None:
    p = _graph(tmp_path, "dw", (112, 112), 8, 3, 2)  # 56 rows, run as 112 at stride 1
    assert _factor(p, 64, True) == pytest.approx(4 * 128 / 112)
    assert _factor(p, 64, False) == pytest.approx(64 / 56)


def test_tiles_run_along_the_rows(tmp_path: Path) -> None:
    """Mesa's x size is the NHWC tensor's H (teflon copies the dims as they are)."""
    p = _graph(tmp_path, "conv", (112, 8), 8, 3, 1)  # 112 rows of 8 px
    assert _factor(p, 64, False) == pytest.approx(128 / 112)
