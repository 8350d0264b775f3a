"""The AArch64 instruction model of TFLite's built-in int8 kernels (a CPU unit's ``isa``).

Checked against what others can read: TFLite's own padding rule and the rule by which its
int8 DEPTHWISE_CONV_2D takes the aarch64 3x3 kernel (``Fast3x3FilterKernelSupported`` in
``optimized/depthwiseconv_uint8_3x3_filter.h``), on the depthwise layers the real TFLite
converter writes for keras' MobileNetV2; then the forecast's mechanics: an ``isa`` unit
costs a kernel its table instructions over clock x instructions per cycle, split across
threads as before, the vectorised fit evaluates the same time and recovers the rate it was
generated with. The table's own figures (QEMU counts) are reproduced by
``bench/bench_aarch64_insns.py``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from conftest import run_keras_script
from infercast import estimate, load
from infercast.estimate.aarch64 import (
    ISAS,
    OpShape,
    fast_3x3_depthwise,
    features,
    op_shape,
    same_padding,
    table,
)
from infercast.estimate.fit import Batch, Sample, fit_values, predict
from infercast.estimate.forecast import Params, kernel_time
from infercast.targets import load_target

BUILD = """
import sys
import keras
from infercast.estimate.published.recipes import convert
keras.utils.set_random_seed(0)
inp = keras.Input((96, 96, 3), batch_size=1)
m = keras.applications.MobileNetV2(input_tensor=inp, alpha=0.35, weights=None)
open(sys.argv[1], "wb").write(convert(m, "int8"))
"""


@pytest.fixture(scope="module")
def mnv2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("aarch64") / "mnv2.tflite"
    run_keras_script(BUILD, str(path))
    return path


def test_tflite_same_padding_puts_the_odd_pixel_last() -> None:
    # ComputePaddingHeightWidth: total = (out - 1) * stride + filter - in, leading = total // 2
    assert same_padding(28, 3, 2, 1, "SAME") == 0  # 28 -> 14: total 1, all of it trailing
    assert same_padding(257, 3, 2, 1, "SAME") == 1  # 257 -> 129: total 2
    assert same_padding(56, 3, 1, 1, "SAME") == 1
    assert same_padding(224, 7, 2, 1, "SAME") == 2  # total 5
    assert same_padding(56, 3, 1, 1, "VALID") == 0


def dw(shape: tuple[int, int, int], k: int, s: int, pad: str, out: tuple[int, int]) -> OpShape:
    h, w, c = shape
    return OpShape(
        "DEPTHWISE_CONV_2D",
        [[1, h, w, c], [1, k, k, c], [c]],
        [[1, out[0], out[1], c]],
        {"stride_h": s, "stride_w": s, "padding": pad, "depth_multiplier": 1},
    )


def test_the_3x3_kernel_rule_is_tflites() -> None:
    assert fast_3x3_depthwise(dw((56, 56, 144), 3, 1, "SAME", (56, 56)))
    # stride 2 SAME on an even map: leading pad 0, and the last window runs past the input
    assert not fast_3x3_depthwise(dw((56, 56, 144), 3, 2, "SAME", (28, 28)))
    # on an odd map the leading pad is 1 and the last window ends one past it: supported
    assert fast_3x3_depthwise(dw((257, 257, 48), 3, 2, "SAME", (129, 129)))
    # an explicit PAD then VALID (Ultraface's layers) keeps the kernel
    assert fast_3x3_depthwise(dw((42, 42, 48), 3, 2, "VALID", (20, 20)))
    assert not fast_3x3_depthwise(dw((56, 56, 12), 3, 1, "SAME", (56, 56)))  # 12 % 8
    assert not fast_3x3_depthwise(dw((14, 14, 480), 5, 1, "SAME", (14, 14)))  # 5x5


def test_mobilenet_v2_depthwise_layers_split_as_tflite_runs_them(mnv2: Path) -> None:
    """keras' MobileNetV2 pads a stride-2 depthwise conv on its bottom and right only
    (``correct_pad`` on an even map) and the converter folds that PAD into SAME padding,
    whose leading pad TFLite computes as 0: the last window then runs past the input, so
    its four stride-2 layers take the general kernel and the thirteen stride-1 ones, all
    with channels a multiple of 8, the 3x3 one."""
    g = load(mnv2)
    kinds = []
    for n in g.nodes:
        if n.native_op == "DEPTHWISE_CONV_2D":
            f = features(op_shape(g, n))
            assert f is not None
            assert g.tensors[n.inputs[0]].shape[3] % 8 == 0
            assert n.attrs["padding"] == "SAME"
            kinds.append((f[0], n.attrs["stride_h"]))
    assert len(kinds) == 17
    assert sum(1 for _, s in kinds if s == 2) == 4
    assert all(k == ("depthwise_conv:fast3x3" if s == 1 else "depthwise_conv:general")
               for k, s in kinds)  # fmt: skip


def test_the_table_covers_every_int8_operator_of_a_keras_model(mnv2: Path) -> None:
    g = load(mnv2)
    t = table()
    assert set(t.coefficients) == set(ISAS)
    for isa in ISAS:
        for n in g.nodes:
            v = t.predict(isa, op_shape(g, n))
            assert v is not None and v > 0, (isa, n.native_op)
    # without the dot-product instructions the GEMMs take more instructions
    convs = [n for n in g.nodes if n.native_op == "CONV_2D"]
    plain = sum(t.predict("armv8.0", op_shape(g, n)) or 0 for n in convs)
    dot = sum(t.predict("armv8.2-dotprod", op_shape(g, n)) or 0 for n in convs)
    assert plain > 1.3 * dot


def test_an_isa_unit_costs_instructions_over_its_clock(mnv2: Path) -> None:
    t = load_target("imx93-cpu")
    cpu = t.units["cpu"]
    assert cpu.isa == "armv8.2-dotprod" and load_target("imx8mp-cpu").units["cpu"].isa
    one, two = estimate(mnv2, t, threads=1), estimate(mnv2, t, threads=2)
    p1, p2 = one.params, two.params
    ipc = p1.ipc["cpu"]
    assert cpu.clock_hz is not None
    n = 0
    for (_, w1), (_, w2) in zip(one.works, two.works, strict=True):
        if w1.elided:
            continue
        assert w1.instructions > 0
        k1, k2 = kernel_time(w1, p1), kernel_time(w2, p2)
        assert k1.compute_s == pytest.approx(w1.instructions / (cpu.clock_hz * ipc))
        speed = p2.speedup("cpu", w2.max_threads) if w2.parallel else 1.0
        assert k2.compute_s == pytest.approx(k1.compute_s / speed)
        n += 1
    assert n > 50
    # on an NPU target only the kernels left to its CPU count instructions
    vx = estimate(mnv2, "imx8mp-npu-vx")
    assert load_target("imx8mp-npu-vx").units["cpu"].isa == "armv8.0"
    assert all((w.instructions > 0) == (w.unit == "cpu") for _, w in vx.works if not w.elided)


def test_fit_recovers_the_instruction_rate(mnv2: Path) -> None:
    """The vectorised fit evaluates what the per-kernel forecast does, and a fit on samples
    generated from known parameters recovers them."""
    t = load_target("imx93-cpu")
    truth_values = {"units.cpu.instructions_per_cycle": 0.6, "units.cpu.thread_efficiency": 0.5}
    keys = list(truth_values)
    prior = Params.of(t, prior_for=keys)
    truth = prior.with_values(truth_values)
    samples = []
    for threads in (1, 2):
        works = tuple(w for _, w in estimate(mnv2, t, threads=threads).works)
        s = Sample(f"t{threads}", works, 1.0, threads=threads)
        samples.append(dataclasses.replace(s, measured_s=predict(s, truth)))
    batch = Batch(samples, truth, keys)
    for s, v in zip(samples, batch.latencies(batch.full()), strict=True):
        assert v == pytest.approx(s.measured_s, rel=1e-9)
    f = fit_values(samples, prior, keys, prior_weight=0.0)
    for k, v in truth_values.items():
        assert f.values[k] == pytest.approx(v, rel=1e-3), k
