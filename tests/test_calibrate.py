"""Calibration on this machine with real runtimes, from real ONNX Runtime profiles, and the
validation metrics (checked against SciPy)."""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from infercast import estimate
from infercast.cli import main
from infercast.errors import InfercastError
from infercast.estimate.calibrate import (
    CalibrationResult,
    _samples_from_graphs,
    calibrate_profiles,
    calibrate_runtime,
    calibrated_toml,
    read_profile,
)
from infercast.estimate.fit import fit
from infercast.estimate.forecast import kernel_time
from infercast.estimate.measure import check_clock, measure
from infercast.estimate.microkernels import build, quick_specs
from infercast.estimate.validate import metrics, spearman
from infercast.frontends import load
from infercast.targets import load_target
from infercast.targets.schema import Target

BUDGET_S = 25.0


@pytest.fixture(scope="module")
def ort_calibration(tmp_path_factory: pytest.TempPathFactory) -> tuple[CalibrationResult, Path]:
    """A reduced calibration (about 20 micro-kernels, 25 s) with ONNX Runtime, 1 thread."""
    res = calibrate_runtime(load_target("host"), "ort", threads=1, budget_s=BUDGET_S)
    path = tmp_path_factory.mktemp("cal") / "host-ort.toml"
    path.write_text(res.toml)
    return res, path


@pytest.mark.slow
def test_fit_is_sane_and_round_trips(ort_calibration: tuple[CalibrationResult, Path]) -> None:
    res, path = ort_calibration
    f = res.fit
    assert res.samples == len(quick_specs())
    assert res.elapsed_s < BUDGET_S + 20
    assert {"conv", "depthwise_conv", "linalg", "elementwise"} <= set(f.efficiency)
    for cls, eff in f.efficiency.items():
        assert 0 < eff <= 1, cls
    assert 0 < f.op_overhead_s < 1e-3 and 0 < f.invoke_overhead_s < 1e-2
    assert f.channel_multiple in (1, 4, 8, 16)
    # How well the fit explains times taken on a loaded machine is bench/'s business; the
    # fit's recovery of known parameters is test_fit_recovers_known_parameters.
    assert math.isfinite(f.rmspe) and f.rmspe >= 0
    # TOML round trip: plain numbers, the file loads as a target with the fitted values.
    raw = tomllib.loads(path.read_text())
    assert raw["extends"] == "host" and raw["detect"] is False
    t = load_target(str(path))
    assert t.calibration.calibrated and t.calibration.runtime == "ort"
    assert t.calibration.threads == 1 and t.calibration.samples == res.samples
    cpu = t.units["cpu"]
    for cls, eff in f.efficiency.items():
        assert cpu.efficiency[cls] == pytest.approx(eff, rel=1e-3)
    assert cpu.op_overhead_s == pytest.approx(f.op_overhead_s, rel=1e-3)
    assert cpu.channel_multiple == f.channel_multiple
    assert t.calibration.invoke_overhead_s == pytest.approx(f.invoke_overhead_s, rel=1e-3)
    # The peaks the fit was made against (detection off in the calibrated file), times what
    # the fit raised them by (efficiencies above 1 moved into the peak).
    host = load_target("host")
    assert f.peak_scale >= 1.0
    for k, v in host.units["cpu"].peak_ops_per_s.items():
        assert cpu.peak_ops_per_s[k] == pytest.approx(v * f.peak_scale, rel=1e-3)
    # Forecast with the loaded file == forecast with the fitted parameters.
    specs = quick_specs()
    one = build(specs[:1], "onnx")[0]
    fc_file = estimate(one, t)
    t_name, p_fit, _ = f.residuals[0]
    assert t_name == specs[0].name
    assert fc_file.latency_s == pytest.approx(p_fit, rel=1e-2)


def test_fit_recovers_known_parameters(tmp_path: Path) -> None:
    """Micro-kernel times made by the cost model from known parameters (``host`` with other
    efficiencies, overheads, channel multiple, depth penalty and bandwidth): the fit finds
    every parameter the samples determine, and its file round-trips them."""
    true = {
        "units.cpu.efficiency.conv": 0.42,
        "units.cpu.efficiency.depthwise_conv": 0.15,
        "units.cpu.op_overhead_s": 4e-6,
        "units.cpu.channel_multiple": 8,
        "units.cpu.reduction_half_depth": 20.0,
        "memories.ram.bandwidth_bytes_per_s": 1.2e10,
        "calibration.invoke_overhead_s": 3e-5,
    }
    truth = _truth_target(tmp_path, **true)
    specs = quick_specs()
    graphs = [(s.name, load(p)) for s, p in zip(specs, build(specs, "onnx"), strict=True)]
    timed = [(name, g, estimate(g, truth, threads=1).latency_s) for name, g in graphs]
    host = load_target("host")
    f, _ = fit(host, _samples_from_graphs(timed, 1), "cpu")
    # The fit explains its own samples (a wrong model or a broken optimiser would not).
    assert f.rmspe < 0.02
    assert f.channel_multiple == true["units.cpu.channel_multiple"]
    assert f.efficiency["conv"] == pytest.approx(true["units.cpu.efficiency.conv"], rel=0.03)
    assert f.efficiency["depthwise_conv"] == pytest.approx(
        true["units.cpu.efficiency.depthwise_conv"], rel=0.03
    )
    assert f.bandwidth["ram"] == pytest.approx(true["memories.ram.bandwidth_bytes_per_s"], rel=0.03)
    assert f.invoke_overhead_s == pytest.approx(true["calibration.invoke_overhead_s"], rel=0.1)
    assert f.reduction_half_depth == pytest.approx(true["units.cpu.reduction_half_depth"], rel=0.1)
    # The per-op cost hides behind the per-call cost in one-op models: its order only.
    assert 1e-6 < f.op_overhead_s < 1e-5
    # TOML round trip of the recovered values.
    path = tmp_path / "fit.toml"
    path.write_text(calibrated_toml(host, f, "ort", 1, len(specs), "synthetic"))
    cpu = load_target(str(path)).units["cpu"]
    assert cpu.efficiency["conv"] == pytest.approx(f.efficiency["conv"], rel=1e-3)
    assert cpu.channel_multiple == f.channel_multiple


@pytest.mark.slow
def test_calibrated_forecast_of_held_out_models_uses_the_fit(
    ort_calibration: tuple[CalibrationResult, Path], keras_dir: Path
) -> None:
    """Models calibration never saw are forecast from the fitted numbers.

    Mechanics only: how close the calibrated forecast comes to a measurement depends on
    the machine's load, so that comparison lives in ``bench/bench_forecast.py``."""
    res, path = ort_calibration
    models = [keras_dir / "mobilenet_v1_fp32.onnx", keras_dir / "mobilenet_v2_fp32.onnx"]
    cal = load_target(str(path))
    f = res.fit
    # One thread: the rate of one core, the unit's peak over its cores.
    peak = cal.units["cpu"].peak_ops_per_s["fp32"] / cal.units["cpu"].cores
    for m in models:
        fc = estimate(m, cal)
        assert fc.latency_s > 0 and fc.complete
        # Every conv kernel's compute time is its padded ops over the fitted rate, from the
        # fit's own numbers: ops_eff / (peak x efficiency) x (K + half) / K (the file keeps
        # four significant digits).
        assert any(w.op_class == "conv" for _k, w in fc.works)
        for _kernel, w in fc.works:
            if w.op_class != "conv" or w.reduction_depth == 0:
                continue
            # 1x1 convs read their own efficiency (pointwise_conv) when the fit has one.
            eff = f.efficiency.get(w.efficiency_class, f.efficiency["conv"])
            expected = w.ops_eff / (peak * eff)
            expected *= (w.reduction_depth + f.reduction_half_depth) / w.reduction_depth
            assert kernel_time(w, fc.params).compute_s == pytest.approx(expected, rel=1e-3)
    # A real measurement is the same order of magnitude (a unit error would be 1000x).
    timings = measure(models[:1], "ort", 1, budget_s=4)
    assert 0.1 < estimate(models[0], cal).latency_s / timings[0].min_s < 10


def _convs_model(tmp: Path) -> Path:
    """Three compute-bound 3x3 convs with ReLU, a residual add and a max pool."""
    rng = np.random.default_rng(1)
    inits, nodes = [], []
    x = "x"
    for i in range(3):
        inits.append(
            numpy_helper.from_array(rng.standard_normal((64, 64, 3, 3)).astype(np.float32), f"w{i}")
        )
        nodes.append(
            helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"], pads=[1, 1, 1, 1], name=f"conv{i}")
        )
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}"))
        x = f"r{i}"
    nodes.append(helper.make_node("Add", [x, "r0"], ["s"], name="add"))
    nodes.append(
        helper.make_node("MaxPool", ["s"], ["y"], kernel_shape=[2, 2], strides=[2, 2], name="pool")
    )
    g = helper.make_graph(
        nodes,
        "convs",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 40, 40])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=inits,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = tmp / "convs.onnx"
    onnx.save(m, path)
    return path


def _ort_profile(model: Path, tmp: Path, runs: int = 15) -> Path:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp / "ort")
    so.intra_op_num_threads = 1
    # Keep the graph as written (no NCHWc rewrite) so each node is one profiled kernel.
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    sess = ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).random((1, 64, 40, 40)).astype(np.float32)
    for _ in range(runs):
        sess.run(None, {"x": x})
    return Path(sess.end_profiling())


def _truth_target(tmp: Path, **values: object) -> Target:
    """``host`` with known cost-model parameters: the target that synthetic times come from
    (dotted keys as in a target file, ``units.cpu.efficiency.conv = 0.37``)."""
    tables: dict[str, dict[str, object]] = {}
    for key, value in values.items():
        table, _, leaf = key.rpartition(".")
        tables.setdefault(table, {})[leaf] = value
    lines = ['extends = "host"']
    for table, kv in tables.items():
        lines.append(f"[{table}]")
        lines += [f"{k} = {v!r}" for k, v in kv.items()]
    path = tmp / "truth.toml"
    path.write_text("\n".join(lines) + "\n")
    return load_target(str(path))


def _synthetic_profile(trace: Path, model: Path, truth: Target) -> Path:
    """The real ORT trace of ``model`` with every node's kernel time replaced by what the
    cost model forecasts for it on ``truth`` (a fused kernel's time split evenly over its
    member nodes, the same in every run): a profile whose parameters are known exactly,
    whatever loaded the machine while the trace was taken."""
    graph = load(model)
    fc = estimate(graph, truth)
    node_s: dict[str, float] = {}
    for k, w in fc.works:
        t = kernel_time(w, fc.params).latency_s
        for i in k.members:
            node_s[graph.nodes[i].name] = t / len(k.members)
    events = json.loads(trace.read_text())
    for e in events:
        name = str(e.get("name", ""))
        if e.get("cat") == "Node" and name.endswith("_kernel_time"):
            e["dur"] = node_s[name.removesuffix("_kernel_time")] * 1e6  # ORT: microseconds
    out = trace.with_name("synthetic.json")
    out.write_text(json.dumps(events))
    return out


@pytest.mark.slow
def test_from_profile_reproduces_the_profiles_own_throughput(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A profile made by the cost model from known parameters: the fit recovers them, and
    the conv efficiency agrees with the profile's own throughput from first principles."""
    model = _convs_model(tmp_path)
    true_eff = 0.37
    truth = _truth_target(tmp_path, **{"units.cpu.efficiency.conv": true_eff})
    prof_path = _synthetic_profile(_ort_profile(model, tmp_path), model, truth)
    profile = read_profile(prof_path)
    res = calibrate_profiles(load_target("host"), [(model, prof_path)])
    f = res.fit
    assert res.runtime == "profile" and res.samples >= 4
    # The parameter the profile was made from comes back (a wrong mapping of profiled ops
    # to kernels, or a broken optimiser, would not give it).
    assert f.efficiency["conv"] == pytest.approx(true_eff, rel=0.02)
    assert f.rmspe < 0.01
    # From first principles: each conv does 2 x 40x40 x 64 x 64 x 9 ops (+ the fused ReLU's
    # 1 per output), in the profile's own time. The efficiency that reproduces the convs'
    # time is that rate over the peak (less the per-op cost the time also holds).
    host = load_target("host").units["cpu"]
    peak = host.peak_ops_per_s["fp32"] / host.cores  # one thread: one core's peak
    conv_ops = 2 * 40 * 40 * 64 * 64 * 9 + 40 * 40 * 64
    by_name = {o.name: o.measured_s for o in profile.ops}
    # ORT at the basic level runs each Conv and its Relu as two kernels (conv0, relu0).
    conv_s = [by_name[f"conv{i}"] + by_name[f"relu{i}"] for i in range(2)]
    assert conv_s[0] == pytest.approx(conv_s[1], rel=1e-6)
    rate = conv_ops / (conv_s[0] - f.op_overhead_s)
    m = f.channel_multiple  # 64 channels: no padding at any candidate multiple
    expected_eff = rate / peak * math.ceil(64 / m) * m / 64
    assert f.efficiency["conv"] == pytest.approx(expected_eff, rel=0.05)
    # The calibrated file reproduces the profile's per-conv time.
    cal = tmp_path / "cal.toml"
    cal.write_text(res.toml)
    fc = estimate(model, load_target(str(cal)))
    convs = [ly for ly in fc.layers if ly.op == "conv"]
    assert [ly.latency_s for ly in convs[:2]] == pytest.approx(conv_s, rel=0.02)
    # The CLI writes the same fit.
    out = tmp_path / "cli.toml"
    argv = ["calibrate", "-t", "host", "--from", str(prof_path), "--model", str(model)]
    assert main([*argv, "-o", str(out), "-f", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["efficiency"]["conv"] == pytest.approx(f.efficiency["conv"], rel=1e-6)
    assert load_target(str(out)).units["cpu"].efficiency["conv"] == pytest.approx(
        f.efficiency["conv"], rel=1e-3
    )


@pytest.mark.slow
def test_from_a_real_profile_gives_finite_positive_parameters(tmp_path: Path) -> None:
    """A profile as ONNX Runtime wrote it (times as the loaded machine gave them) is
    accepted; how close the fit comes to the clock is ``bench/``'s business."""
    model = _convs_model(tmp_path)
    res = calibrate_profiles(load_target("host"), [(model, _ort_profile(model, tmp_path))])
    f = res.fit
    assert res.samples >= 4 and {"conv", "pool"} <= set(f.efficiency)
    for cls, eff in f.efficiency.items():
        assert 0 < eff <= 1, cls
    assert 0 < f.op_overhead_s < 1e-2 and math.isfinite(f.rmspe)
    for _name, predicted_s, measured_s in f.residuals:
        assert predicted_s > 0 and measured_s > 0
    cal = tmp_path / "cal.toml"
    cal.write_text(res.toml)
    assert load_target(str(cal)).units["cpu"].efficiency["conv"] == pytest.approx(
        f.efficiency["conv"], rel=1e-3
    )


def test_cli_calibrate_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "x.toml")
    assert main(["calibrate", "--target", "host", "-o", out]) == 2
    assert "either --runtime" in capsys.readouterr().err
    assert main(["calibrate", "--target", "host", "--runtime", "tvm", "-o", out]) == 2
    assert "unknown runtime 'tvm'" in capsys.readouterr().err
    assert main(["calibrate", "--target", "k210-kpu", "--runtime", "ort", "-o", out]) == 2
    assert "has an accelerator" in capsys.readouterr().err
    prof = tmp_path / "p.json"
    prof.write_text("[]")
    assert main(["calibrate", "--target", "host", "--from", str(prof), "-o", out]) == 2
    assert "--model" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("not a profile")
    assert (
        main(["calibrate", "-t", "host", "--from", str(bad), "--model", str(bad), "-o", out]) == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("infercast: error:")


def test_calibrated_file_with_a_bad_value_is_rejected(tmp_path: Path) -> None:
    p = tmp_path / "bad.toml"
    p.write_text(
        'extends = "host"\n[calibration]\ncalibrated = true\nthreads = -1\n'
        "[units.cpu.efficiency]\nconv = 1.5\n"
    )
    from infercast.targets import TargetError

    with pytest.raises(TargetError) as e:
        load_target(str(p))
    assert "calibration.threads" in str(e.value) and "efficiency.conv" in str(e.value)


# --------------------------------------------------------------------------- #
# Metrics
# --------------------------------------------------------------------------- #


def test_spearman_matches_scipy() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(3)
    for n in (3, 7, 20):
        x = rng.integers(0, 5, n).astype(float)  # with ties
        y = x + rng.normal(0, 1.5, n)
        ref = scipy_stats.spearmanr(x, y).statistic
        assert spearman(list(x), list(y)) == pytest.approx(ref, abs=1e-12)
    assert spearman([1, 2], [2, 1]) is None  # too few models for a rank correlation


def test_metrics_by_hand() -> None:
    # errors: +5%, -10%, +20%, -30%
    pairs = [(1.05, 1.0), (0.9, 1.0), (2.4, 2.0), (2.1, 3.0)]
    m = metrics(pairs)
    assert m.n == 4
    assert m.within_10 == 0.5
    assert m.rmspe == pytest.approx(math.sqrt((0.05**2 + 0.1**2 + 0.2**2 + 0.3**2) / 4))
    assert m.mean_abs_error == pytest.approx(0.1625)
    # forecast ranks 1.05 < 0.9? no: 0.9 < 1.05 < 2.1 < 2.4; measured 1 = 1 < 2 < 3
    assert m.spearman_rho == pytest.approx(spearman([1.05, 0.9, 2.4, 2.1], [1, 1, 2, 3]))


@pytest.mark.slow
def test_cli_validate_json(
    ort_calibration: tuple[CalibrationResult, Path],
    keras_dir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, path = ort_calibration
    model = keras_dir / "mobilenet_v2_fp32.tflite"
    assert main(["validate", str(model), "--target", str(path), "--budget", "3", "-f", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "infercast.validate/1"
    (row,) = doc["rows"]
    assert row["runtime"] == "litert" and row["threads"] == 1
    assert row["measured_s"] > 0 and row["forecast_s"] > 0
    assert row["error"] == pytest.approx(row["forecast_s"] / row["measured_s"] - 1)
    assert doc["metrics"]["models"] == 1


def test_cpu_clock_is_the_calling_threads_time(tmp_path: Path) -> None:
    """One-thread runs carry the calling thread's CPU time beside the wall time: never more
    than the wall time of the same runs (a thread cannot compute longer than it ran), and
    only for one thread (pool threads' work is not on the calling thread's clock)."""
    paths = build(quick_specs()[:2], "onnx")
    one = measure(paths, "ort", 1, budget_s=1.0, min_runs=3)
    for t in one:
        assert t.cpu_min_s is not None and t.cpu_median_s is not None
        assert 0 < t.cpu_min_s <= t.min_s * 1.02 + 2e-5
        assert t.min_of("cpu") == t.cpu_min_s and t.min_of("wall") == t.min_s
    two = measure(paths[:1], "ort", 2, budget_s=0.5, min_runs=3)
    assert two[0].cpu_min_s is None
    with pytest.raises(InfercastError, match="no cpu time"):
        two[0].min_of("cpu")
    with pytest.raises(InfercastError, match="2 threads need the wall clock"):
        check_clock("cpu", 2)
    with pytest.raises(InfercastError, match="unknown clock"):
        check_clock("sundial", 1)
