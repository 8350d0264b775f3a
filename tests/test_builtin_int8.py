"""TFLite's built-in int8 kernels as a CPU target runs them (``int8_kernels = "builtin"``).

Mechanics, on a model of keras layers converted by the real TFLite converter and listed by
LiteRT's own interpreter: a standalone activation is its own kernel on a TFLite runtime (and
fused on ncnn); a built-in int8 element-wise kernel costs its output elements times
:data:`~infercast.estimate.work.BUILTIN_INT8_ELEMENT_COST` ADD elements, on one thread; a conv
that is not 1x1 / stride 1 fills an im2col buffer of output pixels x input channels x taps
bytes, on one thread; a whole-model fit recovers the im2col rate it was generated with.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from conftest import roofline_target, run_keras_script
from infercast import estimate, load
from infercast.estimate.fit import Sample, fit_values, predict
from infercast.estimate.forecast import Params, kernel_time
from infercast.estimate.fusion import kernels
from infercast.estimate.work import BUILTIN_INT8_ELEMENT_COST
from infercast.targets import load_target

BUILD = """
import sys
import keras
import tensorflow as tf
from keras import layers as L
from infercast.estimate.published.recipes import convert
keras.utils.set_random_seed(0)
inp = keras.Input((16, 16, 8), batch_size=1)
c = L.Conv2D(16, 3, padding="same")(inp)
hs = L.Lambda(lambda t: t * tf.nn.relu6(t + 3.0) * 0.16666667)(c)
p = L.Conv2D(16, 1)(hs)
a = L.Add()([hs, p])
g = L.Multiply()([a, L.Activation("sigmoid")(a)])
out = L.Conv2D(8, 1, strides=2)(g)
open(sys.argv[1], "wb").write(convert(keras.Model(inp, out), "int8"))
"""


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("builtin") / "m.tflite"
    run_keras_script(BUILD, str(path))
    return path


def test_the_converter_writes_each_operator_and_the_runtime_runs_each(model: Path) -> None:
    """LiteRT lists the HARD_SWISH and the LOGISTIC as operators of their own; infercast's
    kernels of the TFLite graph on a CPU are those operators one by one, where ncnn (a
    runtime that fuses activations into its convolution layer) takes the HARD_SWISH into
    the conv."""
    from ai_edge_litert.interpreter import Interpreter

    ops = [d["op_name"] for d in Interpreter(model_path=str(model))._get_ops_details()]
    assert ops == ["CONV_2D", "HARD_SWISH", "CONV_2D", "ADD", "LOGISTIC", "MUL", "CONV_2D"]
    g = load(model)
    assert [len(k.members) for k in kernels(g)] == [1] * 7
    fused = [[g.nodes[i].op for i in k.members] for k in kernels(g, gate_fused=True)]
    assert ["conv", "hard_swish"] in fused
    # The shipped targets: the i.MX CPU (TFLite) forecasts seven kernels, ncnn's fewer.
    imx = estimate(model, "imx8mp-cpu")
    assert sum(1 for ly in imx.layers if ly.bound != "fused") == 7
    rpi = estimate(model, "rpi4-cpu")
    assert sum(1 for ly in rpi.layers if ly.bound != "fused") < 7


def test_builtin_element_wise_kernels_cost_their_elements_on_one_thread(model: Path) -> None:
    g = load(model)
    t = load_target("imx8mp-cpu")
    one, four = estimate(model, t, threads=1), estimate(model, t, threads=4)
    seen = set()
    for (k, w1), (_, w4) in zip(one.works, four.works, strict=True):
        node = g.nodes[k.anchor]
        if w1.op_class != "elementwise":
            continue
        seen.add(node.op)
        elements = g.tensors[node.outputs[0]].elements
        assert elements == 16 * 16 * 16
        assert w1.ops_eff == pytest.approx(elements * BUILTIN_INT8_ELEMENT_COST[node.op])
        assert not w1.parallel and not w4.parallel and w1.efficiency_class == "elementwise"
        assert kernel_time(w4, four.params).compute_s == pytest.approx(
            kernel_time(w1, one.params).compute_s
        )
    assert seen == {"hard_swish", "add", "sigmoid", "mul"}
    # A target on XNNPACK (rpi4-cpu states no int8_kernels) keeps the FLOP count, threaded.
    rpi = estimate(model, "rpi4-cpu", threads=4)
    assert all(w.parallel for _, w in rpi.works if w.op_class == "elementwise")


def test_im2col_bytes_are_the_gemm_input_of_every_conv_but_a_pointwise_one(model: Path) -> None:
    fc = estimate(model, roofline_target("imx8mp-cpu"))
    convs = [w for _, w in fc.works if w.op_class == "conv"]
    # 3x3 / stride 1 on 16x16x8: 256 output pixels x 8 channels x 9 taps; 1x1 / stride 1: no
    # im2col; 1x1 / stride 2 on 16x16x16: 64 output pixels x 16 channels.
    assert [w.im2col_bytes for w in convs] == [256 * 8 * 9, 0, 64 * 16]
    assert all(w.im2col_bytes == 0 for _, w in estimate(model, "rpi4-cpu").works)
    p = fc.params
    w = convs[0]
    bare = kernel_time(dataclasses.replace(w, im2col_bytes=0), p).compute_s
    assert kernel_time(w, p).compute_s == pytest.approx(bare + w.im2col_bytes * p.im2col_s["cpu"])


def test_fit_recovers_the_im2col_rate(model: Path) -> None:
    """The one-thread im2col copy is told apart from the threaded GEMM by the thread counts
    (the element-wise rate, one-thread as well, is recovered in test_serial_ops with a
    float twin of the model)."""
    t = roofline_target("imx8mp-cpu")
    truth_values = {
        "units.cpu.efficiency.conv": 0.4,
        "units.cpu.im2col_s_per_byte": 4e-9,
        "units.cpu.thread_efficiency": 0.7,
    }
    keys = list(truth_values)
    prior = Params.of(t, prior_for=keys)
    truth = prior.with_values(truth_values)
    samples = []
    for threads in (1, 2, 3, 4):
        works = tuple(w for _, w in estimate(model, t, threads=threads).works)
        s = Sample(f"t{threads}", works, 1.0, threads=threads)
        samples.append(dataclasses.replace(s, measured_s=predict(s, truth)))
    f = fit_values(samples, prior, keys, prior_weight=0.0)
    for k, v in truth_values.items():
        assert f.values[k] == pytest.approx(v, rel=1e-3), k


def test_an_in_order_core_adds_memory_to_compute(model: Path) -> None:
    """``memory_stalls`` (the i.MX CPUs' in-order Cortex-A53 / A55): a kernel takes its
    arithmetic plus its memory traffic, where the roofline of an out-of-order core takes the
    longer of the two; the vectorised fit evaluates the same sum."""
    t = load_target("imx8mp-cpu")
    assert t.units["cpu"].memory_stalls and load_target("imx93-cpu").units["cpu"].memory_stalls
    assert not load_target("rpi4-cpu").units["cpu"].memory_stalls
    fc = estimate(model, t, threads=4)
    p = fc.params
    for _, w in fc.works:
        k = kernel_time(w, p)
        assert k.stalls
        rest = k.overhead_s + k.transfer_s + k.rewrite_s + k.spill_s + k.pass_s
        assert k.latency_s == pytest.approx(k.compute_s + k.memory_s + rest)
        lapped = dataclasses.replace(k, stalls=False).latency_s
        assert lapped == pytest.approx(max(k.compute_s, k.memory_s) + rest)
    s = Sample("m", tuple(w for _, w in fc.works), 1.0, threads=4)
    total = sum(kernel_time(w, p).latency_s for _, w in fc.works) + p.invoke_s
    assert predict(s, p) == pytest.approx(total)


GEMV = """
import sys
import keras
from keras import layers as L
from infercast.estimate.published.recipes import convert
keras.utils.set_random_seed(0)
inp = keras.Input((16, 16, 64), batch_size=1)
d = L.DepthwiseConv2D(3, padding="same")(inp)
f = L.Dense(128)(L.Flatten()(L.DepthwiseConv2D(3, strides=4, padding="same")(d)))
out = L.Dense(640)(f)
open(sys.argv[1], "wb").write(convert(keras.Model(inp, out), "int8"))
"""


def test_builtin_kernels_size_their_thread_count_to_the_work(model: Path, tmp_path: Path) -> None:
    """TFLite's built-in int8 kernels pick their own thread count from the work, below the
    interpreter's: ruy's GetTentativeThreadCount for a GEMM (2 ** (ceil_log2 of channels,
    pixels and depth) - 15), the custom GEMV's LegacyHowManyThreads<4> for a batch-1 FC (one
    thread per 64 Ki multiply-adds), HowManyConvThreads for a depthwise conv (one per 8 Ki
    multiplies). XNNPACK targets have no such limit."""
    # ruy: 16 x 256 x 72 -> 2**4; 16 x 256 x 16 -> 2**1; 8 x 64 x 16 -> 2**-2, one thread
    convs = [w for _, w in estimate(model, "imx8mp-cpu", threads=4).works if w.op_class == "conv"]
    assert [w.max_threads for w in convs] == [16, 2, 1]
    p = Params.of(load_target("imx8mp-cpu"), 4)
    assert [p.kernel_threads("cpu", w.max_threads) for w in convs] == [4, 2, 1]
    assert all(w.max_threads == 0 for _, w in estimate(model, "rpi4-cpu").works)

    path = tmp_path / "gemv.tflite"
    run_keras_script(GEMV, str(path))
    works = [w for _, w in estimate(path, "imx8mp-cpu", threads=4).works]
    dw = [w.max_threads for w in works if w.op_class == "depthwise_conv"]
    fc = [w.max_threads for w in works if w.op_class == "linalg"]
    # 16x16x64 x 9 taps / 8192 = 18 (16 output rows: 16); 4x4x64 x 9 / 8192 = 1
    assert dw == [16, 1]
    # 1024 -> 128: min(128 / 4, 128 x 1024 / 65536) = 2; 128 -> 640: 640 x 128 / 65536 = 1
    assert fc == [2, 1]
    one = [w for w in works if w.max_threads == 1 and w.parallel]
    assert one and all(kernel_time(w, p).overhead_s == p.overhead_s["cpu"] for w in one)
