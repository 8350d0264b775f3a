"""CPU ops a runtime runs outside its thread pool.

The shipped i.MX CPU targets run int8 models on TFLite's built-in kernels
(``units.cpu.int8_kernels = "builtin"``: NXP's BSPs build TFLite without XNNPACK's int8
operators), where an int8 LEAKY_RELU is the scalar reference kernel, on one thread after the
conv before it; a unit's ``serial_ops`` names such ops one by one for any CPU target.
Mechanics only: the op is its own kernel, its time does not shrink with threads, the float
model's LEAKY_RELU (XNNPACK's, threaded) does, and a whole-model fit on rows generated from
known parameters recovers them with the serial ops in the model.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from conftest import roofline_target, run_keras_script
from infercast import estimate
from infercast.estimate.fit import Sample, fit_values, predict
from infercast.estimate.forecast import Params, kernel_time
from infercast.targets import load_target
from infercast.targets.schema import Target, TargetError

BUILD = """
import sys
from pathlib import Path
import keras
from keras import layers as L
from infercast.estimate.published.recipes import convert
keras.utils.set_random_seed(0)
inp = keras.Input((24, 24, 8), batch_size=1)
x = L.Conv2D(16, 3, padding="same")(inp)
x = L.LeakyReLU(negative_slope=0.1)(x)
x = L.Conv2D(32, 3, padding="same")(x)
x = L.LeakyReLU(negative_slope=0.1)(x)
x = L.Conv2D(16, 1)(x)
m = keras.Model(inp, x)
for q in ("int8", "fp32"):
    Path(sys.argv[1], q + ".tflite").write_bytes(convert(m, q))
"""


@pytest.fixture(scope="module")
def leaky(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A conv / leaky ReLU stack (keras layers, the real TFLite converter), int8 and fp32."""
    d = tmp_path_factory.mktemp("leaky")
    run_keras_script(BUILD, str(d))
    return {q: d / f"{q}.tflite" for q in ("int8", "fp32")}


def _leaky_layers(fc: estimate.Forecast) -> list[int]:
    return [ly.index for ly in fc.layers if ly.native_op == "LEAKY_RELU"]


def test_int8_leaky_relu_runs_apart_on_one_thread(leaky: dict[str, Path]) -> None:
    t = load_target("imx8mp-cpu")
    assert t.units["cpu"].int8_kernels == "builtin"
    one, four = estimate(leaky["int8"], t, threads=1), estimate(leaky["int8"], t, threads=4)
    idx = _leaky_layers(one)
    assert len(idx) == 2
    by_anchor = {k.anchor: (k, w) for k, w in four.works}
    for i in idx:
        k, w = by_anchor[i]  # its own kernel, not fused into the conv before it
        assert k.members == (i,) and not w.parallel and w.op_class == "elementwise"
        l1 = next(ly for ly in one.layers if ly.index == i)
        l4 = next(ly for ly in four.layers if ly.index == i)
        assert l1.bound != "fused" and l4.compute_s == pytest.approx(l1.compute_s)
    # The convs still split across the threads (the im2col of the 3x3 ones does not).
    e = four.params.thread_efficiency["cpu"]
    for (_, w1), (_, w4) in zip(one.works, four.works, strict=True):
        if w1.op_class == "conv":
            c1 = kernel_time(dataclasses.replace(w1, im2col_bytes=0), one.params).compute_s
            c4 = kernel_time(dataclasses.replace(w4, im2col_bytes=0), four.params).compute_s
            assert c4 == pytest.approx(c1 / (1 + 3 * e))
    # The same model in float32: XNNPACK runs LEAKY_RELU, its own operator, on the threads.
    f32 = estimate(leaky["fp32"], t, threads=4)
    assert len(_leaky_layers(f32)) == 2
    kinds = {k.anchor: w for k, w in f32.works}
    assert all(kinds[i].parallel for i in _leaky_layers(f32))
    # ncnn (the Raspberry Pi target's runtime) fuses it into the conv.
    rpi = estimate(leaky["int8"], load_target("rpi4-cpu"), threads=4)
    assert len(_leaky_layers(rpi)) == 2
    assert all(ly.bound == "fused" for ly in rpi.layers if ly.index in _leaky_layers(rpi))


def test_fit_recovers_thread_efficiency_with_serial_ops(leaky: dict[str, Path]) -> None:
    """Rows generated from known parameters (the element-wise rate, the im2col copy, the
    threads' gain): a fit from the target's prior recovers them (on the MAC roofline of the
    built-in kernels: the target with its ``isa`` cleared)."""
    t = roofline_target("imx8mp-cpu")
    keys = [
        "units.cpu.efficiency.conv",
        "units.cpu.efficiency.elementwise",
        "units.cpu.im2col_s_per_byte",
        "units.cpu.thread_efficiency",
        "units.cpu.op_overhead_s",
    ]
    truth_values = {
        "units.cpu.efficiency.conv": 0.45,
        "units.cpu.efficiency.elementwise": 0.02,
        "units.cpu.im2col_s_per_byte": 3e-9,
        "units.cpu.thread_efficiency": 0.75,
        "units.cpu.op_overhead_s": 4e-6,
    }
    prior = Params.of(t, prior_for=keys)
    truth = prior.with_values(truth_values)
    samples = []
    for q in ("int8", "fp32"):
        for threads in (1, 2, 4):
            works = tuple(w for _, w in estimate(leaky[q], t, threads=threads).works)
            s = Sample(f"{q}/t{threads}", works, 1.0, threads=threads)
            samples.append(dataclasses.replace(s, measured_s=predict(s, truth)))
    f = fit_values(samples, prior, keys, prior_weight=0.0)
    for k, v in truth_values.items():
        assert f.values[k] == pytest.approx(v, rel=1e-3), k
    # The int8 rows' 1 -> 4 thread speed-up is below the convs' own (1 + 3 x 0.75):
    # the serial leaky ReLUs do not shrink.
    by = {s.name: s.measured_s for s in samples}
    assert by["int8/t1"] / by["int8/t4"] < by["fp32/t1"] / by["fp32/t4"]


def _named_serial_target(tmp_path: Path) -> Target:
    """The Raspberry Pi CPU target with ``serial_ops = ["leaky_relu:int8"]`` and a
    ``serial_elementwise`` rate: a runtime that leaves int8 LEAKY_RELU to a scalar kernel."""
    text = Path(__file__).resolve().parents[1] / "src/infercast/targets/data/rpi4-cpu.toml"
    body = text.read_text().replace(
        "[units.cpu]\n", '[units.cpu]\nserial_ops = ["leaky_relu:int8"]\n', 1
    )
    rate = "[units.cpu.efficiency]\nserial_elementwise = 0.005"
    body = body.replace("[units.cpu.efficiency]", rate, 1)
    f = tmp_path / "serial.toml"
    f.write_text(body)
    return load_target(str(f))


def test_serial_elementwise_has_its_own_efficiency(leaky: dict[str, Path], tmp_path: Path) -> None:
    """An element-wise op named in ``serial_ops`` (a scalar built-in kernel) is cut out of its
    fused group, runs on one thread and reads ``efficiency.serial_elementwise``, not the
    vectorised ``elementwise`` rate; where a target states no such key it falls back to
    ``elementwise``."""
    t = _named_serial_target(tmp_path)
    fc = estimate(leaky["int8"], t, threads=4)
    serial = [(k, w) for k, w in fc.works if w.serial]
    assert len(serial) == 2
    assert all(len(k.members) == 1 and not w.parallel for k, w in serial)
    assert all(w.efficiency_class == "serial_elementwise" for _, w in serial)
    p = fc.params
    eff = p.efficiency
    assert eff[("cpu", "serial_elementwise")] != eff[("cpu", "elementwise")]
    w = serial[0][1]
    rate = p.rate("cpu", w.dtype, w.parallel)
    assert kernel_time(w, p).compute_s == pytest.approx(
        w.ops_eff / (rate * eff[("cpu", "serial_elementwise")])
    )
    # Without the key the same kernel costs at the element-wise rate.
    bare = dataclasses.replace(
        p, efficiency={k: v for k, v in eff.items() if k[1] != "serial_elementwise"}
    )
    assert kernel_time(w, bare).compute_s == pytest.approx(
        w.ops_eff / (rate * eff[("cpu", "elementwise")])
    )
    # Every other kernel reads its own class.
    assert all(not w.serial for _, w in estimate(leaky["fp32"], t).works)


def test_serial_ops_must_be_a_list_of_strings(tmp_path: Path) -> None:
    text = Path(__file__).resolve().parents[1] / "src/infercast/targets/data/rpi4-cpu.toml"
    body = text.read_text().replace("[units.cpu]\n", '[units.cpu]\nserial_ops = "leaky_relu"\n', 1)
    bad = tmp_path / "bad.toml"
    bad.write_text(body)
    with pytest.raises(TargetError, match="serial_ops"):
        load_target(str(bad))


def test_the_imx8mp_npu_runs_a_leaky_relu_as_a_layer_of_its_own(leaky: dict[str, Path]) -> None:
    """The i.MX 8M Plus NPU driver merges only ReLU / ReLU1 / ReLU6 into the NN core's conv
    (no leaky ReLU in the NN job on that chip: its hardware-database entry has NN_LEAKY_RELU
    0; ``_imx8mp-npu.toml``): each LEAKY_RELU is a kernel of its own on the accelerator, with
    its own per-layer cost. A target stating no such list (the K210's KPU, whose conv layer
    takes a leaky ReLU) merges it."""
    vx = estimate(leaky["int8"], "imx8mp-npu-vx")
    layers = [ly for ly in vx.layers if ly.native_op == "LEAKY_RELU"]
    assert len(layers) == 2
    assert all(ly.unit == "npu" and ly.bound != "fused" and ly.overhead_s > 0 for ly in layers)
    assert "leaky_relu" not in load_target("imx8mp-npu-nnapi").placement.accelerator_activations
    kpu = estimate(leaky["int8"], "k210-kpu")
    assert {ly.bound for ly in kpu.layers if ly.native_op == "LEAKY_RELU"} == {"fused"}
