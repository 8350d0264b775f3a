"""Constant values through the IR (``Graph.constant_value``), and the one check that needs them.

* TFLite: every constant the graph gives equals what LiteRT's interpreter holds for
  that tensor (``Interpreter.get_tensor`` after ``allocate_tensors``).
* ONNX: every initializer equals ``onnx.numpy_helper.to_array`` of the fully loaded
  model (external data included).
* Vela's weight-sum limit (``weight_sum_max``): a graph built in memory, whose
  weights come from a plain dict, is placed exactly as the file is; one whose
  weights are not reachable says "unknown" instead of passing.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import infercast
from infercast.ir.graph import Graph
from infercast.targets import load_target, place

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_placement_craft import limits_int8_model


@pytest.fixture(scope="module")
def limits_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("constants") / "limits_int8.tflite"
    path.write_bytes(limits_int8_model())
    return path


def test_tflite_constants_equal_litert(limits_path: Path, keras_dir: Path) -> None:
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    for path in (limits_path, keras_dir / "mobilenet_v2_int8.tflite"):
        graph = infercast.load(path)
        interp = Interpreter(
            model_path=str(path),
            experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
        )
        interp.allocate_tensors()
        checked = 0
        for d in interp.get_tensor_details():
            t = graph.tensors.get(d["name"])
            if t is None or not t.is_constant or t.derived_from:
                continue
            ours = graph.constant_value(t.name)
            assert ours is not None, t.name
            np.testing.assert_array_equal(ours, interp.get_tensor(d["index"]))
            checked += 1
        assert checked > 10


def test_onnx_constants_equal_the_onnx_library(keras_dir: Path) -> None:
    path = keras_dir / "mobilenet_v2_fp32.onnx"
    graph = infercast.load(path)
    model = onnx.load(str(path))
    assert model.graph.initializer
    for init in model.graph.initializer:
        ours = graph.constant_value(init.name)
        assert ours is not None, init.name
        np.testing.assert_array_equal(ours, numpy_helper.to_array(init))


def _weight_sum_layers(graph: Graph) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Layer -> (placement, the weight-sum check's reasons and notes)."""
    report = place(graph, load_target("ethos-u55-128"))
    return {
        ly.name: (
            ly.placement,
            tuple(
                f"{r.outcome}: {r.text}: {r.detail}"
                for r in (*ly.reasons, *ly.notes)
                if r.check == "weight_sum_max"
            ),
        )
        for ly in report.layers
    }


def test_weight_sum_limit_in_memory_graph_as_from_the_file(limits_path: Path) -> None:
    from ai_edge_litert import schema_py_generated as schema

    from_file = infercast.load(limits_path)
    # The weights as the flatbuffer stores them, decoded here with LiteRT's own schema.
    model = schema.ModelT.InitFromPackedBuf(bytearray(limits_path.read_bytes()), 0)
    np_types = {schema.TensorType.INT8: np.int8, schema.TensorType.INT32: np.int32}
    stored: dict[str, np.ndarray[Any, Any]] = {}
    for t in model.subgraphs[0].tensors:
        data = model.buffers[t.buffer].data
        if data is not None and len(data) and t.type in np_types:
            arr = np.asarray(data, np.uint8).view(np_types[t.type]).reshape(t.shape)
            stored[t.name.decode() if isinstance(t.name, bytes) else t.name] = arr
    in_memory = dataclasses.replace(from_file, path=None, constants=stored.get)
    expected = _weight_sum_layers(from_file)
    assert _weight_sum_layers(in_memory) == expected
    # The crafted model's two 3x3x8000 convs: weights of 127 (sum 9,144,000 per output
    # channel) exceed Vela's 8,323,072 (127 * 65,536); weights of 1 do not.
    assert expected["conv3x3_heavy_weights"][0] == "cpu"
    assert expected["conv3x3_heavy_weights"][1][0].startswith("cpu: ")
    assert "9144000" in expected["conv3x3_heavy_weights"][1][0]
    assert expected["conv3x3_light_weights"] == ("accelerator", ())


def test_weight_sum_limit_says_unknown_without_values(limits_path: Path) -> None:
    """Without the weights' values the check is undecided: it says so (a note on the
    layer), neither passing silently nor moving the op to the CPU."""
    from_file = _weight_sum_layers(infercast.load(limits_path))
    no_values = dataclasses.replace(infercast.load(limits_path), path=None, constants=None)
    layers = _weight_sum_layers(no_values)
    for name in ("conv3x3_heavy_weights", "conv3x3_light_weights"):
        reasons = layers[name][1]
        assert len(reasons) == 1 and reasons[0].startswith("note: ")
        assert "unknown: the values of weights" in reasons[0]
    assert layers["conv3x3_light_weights"][0] == from_file["conv3x3_light_weights"][0]
    assert layers["conv3x3_heavy_weights"][0] == "accelerator"  # the one check undecided


def test_changed_file_gives_no_value(tmp_path: Path) -> None:
    path = tmp_path / "m.tflite"
    path.write_bytes(limits_int8_model())
    graph = infercast.load(path)
    big = next(
        t for t in graph.tensors.values() if t.is_constant and t.value is None and t.elements
    )
    assert graph.constant_value(big.name) is not None
    path.write_bytes(path.read_bytes() + b"\0" * 16)
    assert graph.constant_value(big.name) is None
