"""ONNX models over 2 GB keep their weights in external files (the protobuf limit).
infercast must analyse them without reading the weights."""

from __future__ import annotations

import resource
import time
from pathlib import Path

import onnx
from onnx import TensorProto, helper

import infercast


def _external_matmul(tmp: Path, k: int, n: int) -> Path:
    weights = tmp / "weights.bin"
    size = k * n * 4
    with open(weights, "wb") as f:  # a sparse file: no disk blocks, never read
        f.truncate(size)
    w = TensorProto()
    w.name = "W"
    w.data_type = TensorProto.FLOAT
    w.dims.extend([k, n])
    w.data_location = TensorProto.EXTERNAL
    for key, value in (("location", weights.name), ("offset", "0"), ("length", str(size))):
        entry = w.external_data.add()
        entry.key, entry.value = key, value
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["y"]), helper.make_node("Relu", ["y"], ["z"])],
        "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, k])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, n])],
        [w],
    )
    path = tmp / "big.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def test_model_over_2gb_with_external_data(tmp_path: Path) -> None:
    k = n = 24_000  # 576 M float32 weights = 2.30 GB
    path = _external_matmul(tmp_path, k, n)
    assert path.stat().st_size < 10_000
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    a = infercast.analyze(path)
    elapsed = time.perf_counter() - t0
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before
    assert a.totals.macs == k * n
    assert a.totals.params == k * n
    assert a.totals.weight_bytes == k * n * 4 > 2**31
    assert a.graph.tensors["z"].shape == (1, n)
    # Nothing close to the 2.3 GB of weights was read into memory.
    assert grown_kib < 200_000, grown_kib
    assert elapsed < 30
