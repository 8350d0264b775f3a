"""Monotonicity: more channels or a larger input never forecasts faster, on the same target
and placement (hypothesis-generated conv and fully-connected layers)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import onnx
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from infercast import estimate
from infercast.targets import load_target

TARGETS = ("host", "k210-kpu", "rpi4-cpu", "edgetpu-usb", "ethos-u55-128")
_counter = itertools.count()


def _save(tmp: Path, nodes: list, inits: list, x_shape: list[int]) -> Path:
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=inits,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    m = onnx.shape_inference.infer_shapes(m)
    p = tmp / f"m{next(_counter)}.onnx"
    onnx.save(m, p)
    return p


def conv(tmp: Path, cin: int, cout: int, h: int, w: int, k: int, stride: int, dw: bool) -> Path:
    group = cin if dw else 1
    cout = cin if dw else cout
    wt = numpy_helper.from_array(np.zeros((cout, cin // group, k, k), np.float32), "w")
    b = numpy_helper.from_array(np.zeros((cout,), np.float32), "b")
    nodes = [
        helper.make_node(
            "Conv", ["x", "w", "b"], ["c"], pads=[k // 2] * 4, strides=[stride] * 2, group=group
        ),
        helper.make_node("Relu", ["c"], ["y"]),
    ]
    return _save(tmp, nodes, [wt, b], [1, cin, h, w])


def fc(tmp: Path, cin: int, cout: int) -> Path:
    wt = numpy_helper.from_array(np.zeros((cin, cout), np.float32), "w")
    return _save(tmp, [helper.make_node("Gemm", ["x", "w"], ["y"])], [wt], [1, cin])


def _placements(path: Path, target: str) -> tuple[str, ...]:
    return tuple(ly.placement for ly in estimate(path, target).layers)


dims = st.integers(min_value=1, max_value=96)
sides = st.integers(min_value=4, max_value=80)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    target=st.sampled_from(TARGETS),
    cin=dims,
    cout=dims,
    h=sides,
    w=sides,
    k=st.sampled_from([1, 3, 5]),
    stride=st.sampled_from([1, 2]),
    dw=st.booleans(),
    grow=st.sampled_from(["cin", "cout", "h", "w", "hw"]),
    by=st.integers(min_value=1, max_value=40),
)
def test_conv_bigger_is_never_faster(
    tmp_path: Path,
    target: str,
    cin: int,
    cout: int,
    h: int,
    w: int,
    k: int,
    stride: int,
    dw: bool,
    grow: str,
    by: int,
) -> None:
    big = {"cin": cin, "cout": cout, "h": h, "w": w}
    for key in ("h", "w") if grow == "hw" else (grow,):
        big[key] += by
    if dw and grow == "cout":
        big["cin"] += by  # a depthwise conv's output channels are its input channels
    small_p = conv(tmp_path, cin, cout, h, w, k, stride, dw)
    big_p = conv(tmp_path, big["cin"], big["cout"], big["h"], big["w"], k, stride, dw)
    assume(_placements(small_p, target) == _placements(big_p, target))
    t = load_target(target)
    small_s = estimate(small_p, t).latency_s
    big_s = estimate(big_p, t).latency_s
    assert big_s >= small_s * (1 - 1e-12), (target, cin, cout, h, w, k, stride, dw, grow, by)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    target=st.sampled_from(TARGETS),
    cin=st.integers(min_value=1, max_value=2048),
    cout=st.integers(min_value=1, max_value=2048),
    grow_in=st.integers(min_value=0, max_value=512),
    grow_out=st.integers(min_value=0, max_value=512),
)
def test_fc_bigger_is_never_faster(
    tmp_path: Path, target: str, cin: int, cout: int, grow_in: int, grow_out: int
) -> None:
    a = fc(tmp_path, cin, cout)
    b = fc(tmp_path, cin + grow_in, cout + grow_out)
    assume(_placements(a, target) == _placements(b, target))
    t = load_target(target)
    assert estimate(b, t).latency_s >= estimate(a, t).latency_s * (1 - 1e-12)
