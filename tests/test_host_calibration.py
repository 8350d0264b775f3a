"""Host calibration mechanics: cold micro-kernel runs, the spill beyond a CPU's cache,
pointwise convs' own efficiency, and a fit that may raise a detected peak.

Every fit here is made on samples generated from known parameters (the real work lists of
generated ONNX micro-kernels, timed by the cost model itself), so each recovered number is
checkable; no assertion depends on how fast this machine is."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from infercast import estimate
from infercast.errors import InfercastError
from infercast.estimate.fit import (
    Sample,
    fit,
    fit_values,
    predict,
    renormalised,
    unit_keys,
)
from infercast.estimate.forecast import Params, kernel_time, spill_bytes, weight_passes
from infercast.estimate.measure import (
    LAYOUT_OPS,
    Timing,
    cold_floor_s,
    cold_times,
    l2_bytes,
    layout_shares,
    measure,
    ort_layout_share,
    parse_cache_size,
)
from infercast.estimate.microkernels import Spec, build, quick_specs
from infercast.frontends import load
from infercast.targets import load_target
from infercast.targets.schema import Target

CACHE = 1 << 20


def _host(cache_bytes: int = CACHE, spill_bw: float = 0.0) -> Target:
    t = load_target("host")
    u = dataclasses.replace(
        t.units["cpu"], cache_bytes=cache_bytes, spill_bandwidth_bytes_per_s=spill_bw
    )
    return dataclasses.replace(t, units={**t.units, "cpu": u})


def _samples(target: Target, specs: list[Spec] | None = None) -> list[Sample]:
    specs = specs if specs is not None else quick_specs()
    out = []
    for s, p in zip(specs, build(specs, "onnx"), strict=True):
        works = tuple(w for _, w in estimate(load(p), target).works)
        out.append(Sample(s.name, works, 1.0))
    return out


def test_cache_sizes_parse_as_sysfs_writes_them() -> None:
    assert parse_cache_size("2048K\n") == 2048 * 1024
    assert parse_cache_size("4M") == 4 * 1024 * 1024
    assert parse_cache_size("512") == 512
    assert l2_bytes() > 0


def test_cold_floor_is_the_smallest_cold_minus_warm_difference() -> None:
    ts = [  # (warm, cold): 2 us is the smallest extra of a cold run
        Timing("a", 1e-6, 1e-6, 9, 1e-6, 1e-6, 3e-6, 3e-6),
        Timing("b", 100e-6, 100e-6, 9, 100e-6, 100e-6, 150e-6, 150e-6),
        Timing("c", 10e-6, 10e-6, 9, 10e-6, 10e-6, 12.5e-6, 12.5e-6),
    ]
    assert cold_floor_s(ts, "cpu") == pytest.approx(2e-6)
    assert cold_times(ts, "wall") == pytest.approx([1e-6, 148e-6, 10.5e-6])
    # No cold runs measured: asking for them is an error, not a silent warm figure.
    with pytest.raises(InfercastError, match="no cpu cold time"):
        Timing("d", 1e-6, 1e-6, 9, 1e-6, 1e-6).min_of("cpu", True)


def test_cold_runs_are_measured_beside_warm_ones() -> None:
    paths = build(quick_specs()[:2], "onnx")
    for t in measure(paths, "ort", 1, budget_s=1.0, min_runs=3, cold_bytes=1 << 20):
        assert t.cold_min_s is not None and t.cold_cpu_min_s is not None
        assert 0 < t.cold_cpu_min_s <= t.cold_min_s * 1.02 + 2e-5


def test_pointwise_convs_read_their_own_efficiency_else_convs() -> None:
    specs = [
        Spec("conv", 64, 28, 128, 1, 1),  # 1x1, stride 1: a plain GEMM
        Spec("conv", 64, 28, 128, 3, 1),
        Spec("conv", 64, 28, 128, 1, 2),  # strided: not a plain GEMM over the map
        Spec("dwconv", 64, 28, 64, 3, 1),
    ]
    host = load_target("host")
    samples = _samples(host, specs)
    anchors = [s.works[0] for s in samples]
    assert [w.pointwise for w in anchors] == [True, False, False, False]
    assert [w.efficiency_class for w in anchors] == [
        "pointwise_conv", "conv", "conv", "depthwise_conv"
    ]  # fmt: skip
    # A target that states no pointwise efficiency costs a pointwise conv at conv's.
    p = Params.of(host)
    w = anchors[0]
    by_hand = w.ops_eff / (p.rate("cpu", "fp32", w.parallel) * p.eff("cpu", "conv"))
    assert kernel_time(w, p).compute_s == pytest.approx(by_hand, rel=1e-12)
    # The micro-kernel fit frees pointwise_conv only when asked to split it.
    keys = unit_keys(samples, "cpu", fit_invoke=True)
    assert "units.cpu.efficiency.pointwise_conv" in keys
    merged = unit_keys(samples, "cpu", fit_invoke=True, pointwise=False)
    assert "units.cpu.efficiency.pointwise_conv" not in merged


def test_spill_is_the_bytes_beyond_the_cache_at_its_bandwidth() -> None:
    target = _host(CACHE, 5e9)
    samples = _samples(target)
    p = Params.of(target)
    for s in samples:
        for w in s.works:
            beyond = max(w.act_bytes + w.weight_bytes - CACHE, 0)
            assert spill_bytes(w, CACHE) == beyond
            assert kernel_time(w, p).spill_s == pytest.approx(beyond / 5e9, rel=1e-12)
    assert any(spill_bytes(w, CACHE) > 0 for s in samples for w in s.works)
    assert any(spill_bytes(w, CACHE) == 0 for s in samples for w in s.works)
    # No cache stated (every built-in target): no spill, whatever the bandwidth.
    assert all(
        kernel_time(w, Params.of(load_target("host"))).spill_s == 0 for w in samples[0].works
    )


def test_fit_on_kernels_generated_from_known_parameters_recovers_the_spill() -> None:
    target = _host()
    base = Params.of(target)
    truth = base.with_values(
        {
            "units.cpu.efficiency.conv": 0.7,
            "units.cpu.efficiency.pointwise_conv": 0.9,
            "units.cpu.efficiency.depthwise_conv": 0.3,
            "units.cpu.op_overhead_s": 5e-7,
            "memories.ram.bandwidth_bytes_per_s": 3e10,
            "units.cpu.spill_bandwidth_bytes_per_s": 7e9,
        }
    )
    samples = [Sample(s.name, s.works, predict(s, truth)) for s in _samples(target)]
    keys = unit_keys(samples, "cpu", fit_invoke=False, cache_bytes=CACHE)
    assert "units.cpu.spill_bandwidth_bytes_per_s" in keys
    start = {k: truth.get(k) * 1.3 for k in keys}  # a start off the truth by 30%
    f = fit_values(samples, base, keys, prior_weight=0.0, extra_starts=[start])
    assert f.values["units.cpu.spill_bandwidth_bytes_per_s"] == pytest.approx(7e9, rel=1e-3)
    assert f.values["memories.ram.bandwidth_bytes_per_s"] == pytest.approx(3e10, rel=1e-3)
    assert f.values["units.cpu.efficiency.pointwise_conv"] == pytest.approx(0.9, rel=1e-3)
    assert f.rmspe < 1e-3


def test_renormalising_moves_an_efficiency_above_one_into_the_peak() -> None:
    target = load_target("host")
    p = Params.of(target).with_values(
        {"units.cpu.efficiency.conv": 1.6, "units.cpu.efficiency.depthwise_conv": 0.4}
    )
    values = {"units.cpu.efficiency.conv": 1.6, "units.cpu.op_overhead_s": 1e-6}
    q, out, scale = renormalised(p, values, "cpu")
    assert scale == pytest.approx(1.6)
    assert q.peak[("cpu", "fp32")] == pytest.approx(p.peak[("cpu", "fp32")] * 1.6)
    assert q.eff("cpu", "conv") == pytest.approx(1.0)
    assert q.eff("cpu", "depthwise_conv") == pytest.approx(0.25)
    assert out == pytest.approx({"units.cpu.efficiency.conv": 1.0, "units.cpu.op_overhead_s": 1e-6})
    # The same forecasts: only the split between peak and efficiency moved.
    for s in _samples(target)[:8]:
        assert predict(s, q) == pytest.approx(predict(s, p), rel=1e-12)


def test_a_fit_may_raise_a_peak_that_was_stated_too_low() -> None:
    """Kernels timed as if convs ran at 1.5x the stated peak: with the peak free the fit
    finds the 1.5 and reproduces the times; with it fixed, conv efficiency sticks at 1."""
    target = load_target("host")
    truth = Params.of(target).with_values(
        {
            "units.cpu.efficiency.conv": 1.5,
            "units.cpu.efficiency.depthwise_conv": 0.3,
            "memories.ram.bandwidth_bytes_per_s": 3e10,
        }
    )
    timed = {s.name: predict(s, truth) for s in _samples(target)}

    def build_samples(t: Target) -> list[Sample]:
        return [Sample(s.name, s.works, timed[s.name]) for s in _samples(t)]

    free, _ = fit(target, build_samples, "cpu", channel_multiples=(1,), free_peak=True)
    fixed, _ = fit(target, build_samples, "cpu", channel_multiples=(1,), free_peak=False)
    assert free.peak_scale == pytest.approx(1.5, rel=0.03)
    assert max(free.efficiency.values()) <= 1.0
    assert free.rmspe < 0.02
    assert fixed.peak_scale == 1.0 and fixed.efficiency["conv"] == pytest.approx(1.0, rel=1e-3)
    assert fixed.rmspe > 5 * free.rmspe


def test_calibrated_file_states_cache_spill_and_raised_peak(tmp_path: Path) -> None:
    from infercast.estimate.calibrate import calibrated_toml
    from infercast.estimate.fit import FitResult

    target = _host()
    p = Params.of(target)
    result = FitResult(
        unit="cpu", params=p, channel_multiple=8, efficiency={"conv": 0.5},
        reduction_half_depth=0.0, op_overhead_s=1e-6, bandwidth={"ram": 3e10},
        invoke_overhead_s=1e-5, rmspe=0.1, residuals=(), fitted_classes=("conv",),
        spill_bandwidth=7e9, peak_scale=1.25,
    )  # fmt: skip
    path = tmp_path / "cal.toml"
    path.write_text(calibrated_toml(target, result, "litert", 1, 3, "test"))
    cpu = load_target(str(path)).units["cpu"]
    assert cpu.cache_bytes == CACHE
    assert cpu.spill_bandwidth_bytes_per_s == pytest.approx(7e9)
    stated = target.units["cpu"].peak_ops_per_s["fp32"]
    assert cpu.peak_ops_per_s["fp32"] == pytest.approx(stated * 1.25, rel=1e-3)


def test_spilled_bytes_leave_the_overlapped_memory_term() -> None:
    """Bytes beyond the cache are a stall on top of max(compute, memory), taken off the
    weights first: the memory term moves what stays, the spill what does not, never both."""
    target = _host(CACHE, 5e9)
    p = Params.of(target)
    act_bw = p.bandwidth["ram"]
    seen_spill = False
    for s in _samples(target):
        for w in s.works:
            if w.act_memory is None or w.weight_memory is None:
                continue
            beyond = max(w.act_bytes + w.weight_bytes - CACHE, 0)
            from_w = min(beyond, w.weight_bytes)
            kept_act = w.act_bytes + w.refetch_bytes - (beyond - from_w)
            kept_w = w.weight_bytes - from_w
            t = kernel_time(w, p)
            assert t.memory_s == pytest.approx((kept_act + kept_w) / act_bw, rel=1e-12, abs=1e-18)
            assert t.spill_s == pytest.approx(beyond / 5e9, rel=1e-12)
            assert t.latency_s == pytest.approx(
                max(t.compute_s, t.memory_s) + t.overhead_s + t.spill_s, rel=1e-12
            )
            seen_spill = seen_spill or beyond > w.weight_bytes > 0
    # Some kernel spilled more than its weights: activations came off the memory term too.
    assert seen_spill


BIG = [
    Spec("conv", 512, 7, 512, 3, 1),  # 9.4 MB of weights, M = 49 output pixels
    Spec("conv", 256, 14, 512, 3, 1),  # 4.7 MB, M = 196
    Spec("conv", 1024, 4, 1024, 1, 1),  # 4.2 MB, M = 16
    Spec("conv", 2048, 7, 512, 1, 1),  # 4.2 MB, M = 49
    Spec("fc", 2048, 0, 1000),  # 8.2 MB, M = 1
    Spec("dwconv", 512, 14, 512, 3, 1),  # not a GEMM
]


def test_weights_beyond_the_cache_are_read_once_per_block_of_gemm_rows() -> None:
    samples = _samples(_host(), BIG)
    anchors = [s.works[0] for s in samples]
    assert [w.gemm_rows for w in anchors] == [49, 196, 16, 49, 1, 0]
    conv = anchors[0]
    assert conv.weight_bytes == 512 * 512 * 9 * 4 + 512 * 4  # fp32 kernel and bias
    for block, passes in ((0, 1), (7, 7), (4, 13), (16, 4), (64, 1)):
        assert weight_passes(conv, CACHE, block) == passes
        assert (
            spill_bytes(conv, CACHE, block) == conv.act_bytes + conv.weight_bytes * passes - CACHE
        )
    # Weights that fit the cache are read once, whatever the block; so are an FC's (M = 1)
    # and a depthwise conv's (no GEMM).
    assert weight_passes(conv, conv.weight_bytes + 1, 7) == 1
    assert weight_passes(anchors[4], CACHE, 7) == 1
    assert weight_passes(anchors[5], CACHE, 7) == 1


def test_fit_finds_the_gemm_block_the_kernels_were_timed_with() -> None:
    """Kernels timed by the cost model with weights re-read per 7 GEMM rows: among the
    candidate blocks the fit picks 7 and recovers the bandwidth beyond the cache."""
    specs = [*quick_specs(), *BIG]
    truth_target = dataclasses.replace(
        _host(),
        units={
            "cpu": dataclasses.replace(
                _host().units["cpu"], gemm_block_rows=7, spill_bandwidth_bytes_per_s=6e10
            )
        },
    )
    truth = Params.of(truth_target).with_values(
        {"units.cpu.efficiency.conv": 0.7, "memories.ram.bandwidth_bytes_per_s": 3e10}
    )
    timed = {s.name: predict(s, truth) for s in _samples(truth_target, specs)}

    def build_samples(t: Target) -> list[Sample]:
        return [Sample(s.name, s.works, timed[s.name]) for s in _samples(t, specs)]

    f, cand = fit(
        _host(), build_samples, "cpu", channel_multiples=(1,), gemm_block_rows=(0, 4, 7, 16)
    )
    assert f.gemm_block_rows == 7 and cand.units["cpu"].gemm_block_rows == 7
    assert f.spill_bandwidth == pytest.approx(6e10, rel=0.05)
    assert f.rmspe < 0.02


def test_layout_share_is_the_reorders_median_time_over_all_nodes() -> None:
    def ev(node: str, op: str, dur: float) -> dict[str, object]:
        return {"cat": "Node", "name": f"{node}_kernel_time", "dur": dur, "args": {"op_name": op}}

    events = [
        *(ev("r_in", "ReorderInput", d) for d in (10, 30, 20)),
        *(ev("c", "Conv", d) for d in (100, 60, 80)),
        *(ev("r_out", "ReorderOutput", d) for d in (20, 20, 20)),
        {"cat": "Session", "name": "model_run", "dur": 500},
    ]  # fmt: skip
    # medians: 20 (in) + 80 (conv) + 20 (out): the conversions are 40 of 120
    assert layout_shares(json.dumps(events)) == pytest.approx(40 / 120)
    assert layout_shares("[]") == 0.0


@pytest.mark.parametrize(("spec", "converts"), [
    (Spec("conv", 64, 28, 128, 1, 1), True),  # channels a multiple of ORT's NCHWc block
    (Spec("conv", 17, 28, 33, 1, 1), False),  # not: ORT leaves it in NCHW
])  # fmt: skip
def test_ort_layout_share_follows_orts_own_optimised_graph(
    spec: Spec, converts: bool, tmp_path: Path
) -> None:
    import onnx
    import onnxruntime as ort

    (path,) = build([spec], "onnx")
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    so.optimized_model_filepath = str(tmp_path / "opt.onnx")
    ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    ops = {n.op_type for n in onnx.load(str(tmp_path / "opt.onnx")).graph.node}
    assert bool(ops & set(LAYOUT_OPS)) == converts
    share = ort_layout_share(path, 1, runs=5)
    assert (0.0 < share < 1.0) if converts else share == 0.0
