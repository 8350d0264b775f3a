"""The benchmark harness on real runtimes: ONNX Runtime, LiteRT, TVM; statistics; isolation.

Runs are real worker processes (``python -m infercast.bench.worker``); timings are
kept short (``min_time_s`` 0.2 s). No test asserts a speed: figures go to
bench/bench_harness.py.
"""

from __future__ import annotations

import copy
import json
import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from infercast.analysis.cost import analyze_graph
from infercast.bench import bench, plan_runs
from infercast.bench.harness import RunSpec, TimingConfig, run_isolated
from infercast.bench.inputs import InputError, InputSpec, make_inputs
from infercast.bench.stats import median_ci_ranks, summarize
from infercast.errors import InfercastError
from infercast.frontends import load

FAST = TimingConfig(warmup_runs=2, warmup_time_s=0.0, min_runs=10, min_time_s=0.2)


# --------------------------------------------------------------------------- #
# Statistics
# --------------------------------------------------------------------------- #


def test_median_ci_ranks_match_the_binomial_tables() -> None:
    # n = 10: [x(2), x(9)], coverage 1 - 2 * (1 + 10) / 2**10 (Conover, Table A3).
    lo, hi, cov = median_ci_ranks(10)
    assert (lo, hi) == (2, 9)
    assert cov == pytest.approx(1 - 2 * 11 / 1024)
    # n = 100: [x(40), x(61)] is the classic 95% interval for the median.
    lo, hi, cov = median_ci_ranks(100)
    assert (lo, hi) == (40, 61)
    assert cov >= 0.95
    # Below 6 samples no 95% interval exists: the range, with its coverage stated.
    lo, hi, cov = median_ci_ranks(5)
    assert (lo, hi) == (1, 5) and cov == pytest.approx(1 - 2 / 32)


def test_summary_figures() -> None:
    x = np.arange(1, 101, dtype=float) * 1e-3
    s = summarize(x[::-1])
    assert s.n == 100 and s.median_s == pytest.approx(50.5e-3)
    assert s.mean_s == pytest.approx(50.5e-3) and s.min_s == 1e-3 and s.max_s == 0.1
    assert s.p90_s == pytest.approx(np.percentile(x, 90))
    assert (s.ci_low_s, s.ci_high_s) == (40e-3, 61e-3)
    assert s.std_s == pytest.approx(math.sqrt(sum((v - 50.5e-3) ** 2 for v in x) / 99))


# --------------------------------------------------------------------------- #
# Inputs
# --------------------------------------------------------------------------- #


def test_generated_inputs_respect_dtype_and_range(tmp_path: Path) -> None:
    specs = (
        InputSpec("img", (1, 8, 8, 3), "int8"),
        InputSpec("x", (2, 3), "float32"),
        InputSpec("ids", (4,), "int64"),
    )
    feeds, rec = make_inputs(specs, seed=3)
    assert feeds["img"].dtype == np.int8 and feeds["img"].min() < -64 < 64 < feeds["img"].max()
    assert feeds["x"].dtype == np.float32 and feeds["x"].min() >= -1 and feeds["x"].max() < 1
    assert feeds["ids"].dtype == np.int64 and feeds["ids"].min() >= 0 and feeds["ids"].max() < 16
    again, _ = make_inputs(specs, seed=3)
    assert all(np.array_equal(feeds[k], again[k]) for k in feeds)  # fixed seed
    assert rec[0]["source"].startswith("uniform[-128,127]")
    f = tmp_path / "x.npy"
    np.save(f, np.ones((2, 3), np.float32))
    feeds, rec = make_inputs(specs, files={"x": str(f)})
    assert feeds["x"].sum() == 6 and rec[1]["source"] == f"file {f}"
    np.save(f, np.ones((2, 3), np.float64))
    with pytest.raises(InputError, match="dtype float64 does not match"):
        make_inputs(specs, files={"x": str(f)})
    with pytest.raises(InputError, match="does not have"):
        make_inputs(specs, files={"nope": str(f)})


# --------------------------------------------------------------------------- #
# Runtimes, for real
# --------------------------------------------------------------------------- #


def test_ort_run_and_profile(edge_dir: Path) -> None:
    model = edge_dir / "convs_5x5_7x7.onnx"
    r = run_isolated(
        RunSpec(
            str(model),
            "ort",
            1,
            {"opt_level": "disable"},
            timing=FAST,
            profile=True,
            profile_runs=10,
        ),
        timeout_s=120,
    )
    assert r.ok, (r.error, r.stderr_tail)
    assert r.summary is not None and r.summary.n >= 10 and r.summary.median_s > 0
    assert r.summary.ci_low_s <= r.summary.median_s <= r.summary.ci_high_s
    assert r.first_s is not None and r.load_s is not None
    assert r.versions["onnxruntime"] and r.resolved_options == {"opt_level": "disable"}
    assert r.inputs[0]["shape"] == [1, 64, 64, 3] and r.inputs[0]["dtype"] == "float32"
    p = r.profile
    assert p is not None and p.runs == 10
    # With optimisations off, ORT runs exactly the model's nodes.
    assert sorted(o.name for o in p.ops) == sorted(n.name for n in load(model).nodes)
    assert p.whole_s is not None and p.ops_total_s <= p.whole_s


def test_litert_xnnpack_on_off_and_single_op_profile(edge_dir: Path) -> None:
    model = edge_dir / "convs_5x5_7x7.tflite"
    g = load(model)
    specs = plan_runs(
        model,
        ["litert"],
        [1],
        {"litert.xnnpack": ["on", "off"]},
        timing=FAST,
        profile=True,
        profile_runs=10,
    )
    rep = bench(specs, timeout_s=120, analysis=analyze_graph(g))
    assert [r.resolved_options["xnnpack"] for r in rep.runs] == [True, False]
    assert all(r.ok for r in rep.runs), [r.error for r in rep.runs]
    for r in rep.runs:
        p = r.profile
        assert p is not None and p.source == "litert_single_op"
        # One single-op model per operator, named by the flatbuffer's own opcodes.
        assert [o.layers for o in p.ops] == [(n.index,) for n in g.nodes]
        assert [o.op for o in p.ops] == [n.native_op for n in g.nodes]
        # The method's error against the whole model (stated in docs/bench.md).
        assert p.sum_vs_whole is not None and 0.5 < p.sum_vs_whole < 1.5
    j = rep.joins[0]
    assert j.total_macs == sum(r.macs or 0 for r in j.rows)
    assert rep.fastest() in (0, 1)


def test_litert_int8_model(edge_dir: Path) -> None:
    r = run_isolated(
        RunSpec(str(edge_dir / "convs_5x5_7x7_int8.tflite"), "litert", 1, timing=FAST),
        timeout_s=120,
    )
    assert r.ok, r.error
    assert r.inputs[0]["dtype"] in ("int8", "uint8")
    assert r.inputs[0]["source"].startswith("uniform[-128,127]") or r.inputs[0][
        "source"
    ].startswith("uniform[0,255]")


@pytest.mark.slow
def test_tvm_compile_run_and_profile(edge_dir: Path, tmp_path: Path) -> None:
    model = edge_dir / "convs_5x5_7x7.onnx"
    spec = RunSpec(str(model), "tvm", 1, timing=FAST, profile=True, profile_runs=5)
    r = run_isolated(replace(spec, raw_profile_dir=str(tmp_path)), timeout_s=300)
    assert r.ok, (r.error, r.stderr_tail[-5:])
    assert r.versions["apache-tvm"].startswith("0.")
    assert "llvm" in r.runtime_meta["target"]
    p = r.profile
    assert p is not None and p.source == "tvm_vm_instrument"
    # Calls are timed inside the timed run: in each run their sum cannot exceed it (the
    # profile's medians need not keep that order: a sum of medians is not a median of sums).
    raw = json.loads((tmp_path / "tvm_vm_profile.json").read_text())
    assert len(raw["runs"]) == len(raw["whole_s"]) == 6
    assert all(sum(r.values()) <= w for r, w in zip(raw["runs"], raw["whole_s"], strict=True))
    assert p.whole_s is not None and p.ops_total_s > 0
    g = load(model)
    rep_join = bench(
        [RunSpec(str(model), "tvm", 1, timing=FAST, profile=True, profile_runs=3)],
        timeout_s=300,
        analysis=analyze_graph(g),
    ).joins[0]
    by_layer = {i: row for row in rep_join.rows for i in row.layers}
    heavy = [n for n in g.nodes if n.native_op in ("Conv", "ConvTranspose", "MatMul")]
    assert heavy and all(n.index in by_layer for n in heavy)
    assert all(by_layer[n.index].mapping == "order" for n in heavy)


# --------------------------------------------------------------------------- #
# Failure isolation
# --------------------------------------------------------------------------- #


def _unknown_op_onnx(path: Path) -> Path:
    node = helper.make_node("Frobnicate", ["x"], ["y"], domain="com.infercast.test", name="frob")
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    m = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.infercast.test", 1)],
    )
    m.ir_version = 8
    onnx.save(m, path)
    return path


def _custom_op_tflite(src: Path, path: Path) -> Path:
    """The fixture with its first operator's opcode turned into an unregistered custom op."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema

    m = schema.ModelT.InitFromPackedBuf(bytearray(src.read_bytes()), 0)
    op = m.subgraphs[0].operators[0]
    code = copy.copy(m.operatorCodes[op.opcodeIndex])
    code.builtinCode = schema.BuiltinOperator.CUSTOM
    code.deprecatedBuiltinCode = schema.BuiltinOperator.CUSTOM
    code.customCode = "InfercastNoSuchOp"
    m.operatorCodes.append(code)
    op.opcodeIndex = len(m.operatorCodes) - 1
    op.builtinOptionsType = 0
    op.builtinOptions = None
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    path.write_bytes(bytes(b.Output()))
    return path


def test_failures_are_reported_and_other_runs_complete(edge_dir: Path, tmp_path: Path) -> None:
    bad_onnx = _unknown_op_onnx(tmp_path / "unknown_op.onnx")
    bad_tflite = _custom_op_tflite(edge_dir / "convs_5x5_7x7.tflite", tmp_path / "custom.tflite")
    good = edge_dir / "convs_5x5_7x7.tflite"
    specs = [
        RunSpec(str(bad_onnx), "ort", 1, timing=FAST),
        RunSpec(str(bad_tflite), "litert", 1, timing=FAST),
        # A real model asked for 60 s of timing under a 3 s timeout.
        RunSpec(
            str(good), "litert", 1, timing=TimingConfig(min_time_s=60, max_time_s=60), timeout_s=3
        ),
        RunSpec(str(good), "litert", 1, timing=FAST),
    ]
    results = [run_isolated(s, timeout_s=120) for s in specs]
    ort_fail, lite_fail, slow, ok = results
    assert ort_fail.status == "failed" and ort_fail.phase == "load"
    assert "Frobnicate" in ort_fail.error and ort_fail.returncode == 1
    assert lite_fail.status == "failed" and "InfercastNoSuchOp" in lite_fail.error
    assert lite_fail.returncode == 1
    assert slow.status == "timeout" and "3 s timeout" in slow.error
    assert slow.returncode is not None and slow.returncode < 0  # killed by a signal
    assert 3 <= slow.wall_s < 15
    assert ok.ok and ok.summary is not None and ok.summary.n >= 10


def test_bad_requests_fail_early(edge_dir: Path) -> None:
    tfl = edge_dir / "convs_5x5_7x7.tflite"
    with pytest.raises(InfercastError, match="runs onnx models"):
        plan_runs(tfl, ["ort"])
    with pytest.raises(InfercastError, match="unknown runtime"):
        plan_runs(tfl, ["tensorrt"])
    with pytest.raises(InfercastError, match="not one of"):
        plan_runs(edge_dir / "convs_5x5_7x7.onnx", ["ort"], sweeps={"ort.opt_level": ["max"]})
    with pytest.raises(InfercastError, match="no option"):
        plan_runs(tfl, ["litert"], sweeps={"litert.gpu": ["on"]})


# --------------------------------------------------------------------------- #
# CLI
# --------------------------------------------------------------------------- #


def _cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "infercast", *args], capture_output=True, text=True, timeout=timeout
    )


def test_cli_bench_side_by_side_json(edge_dir: Path) -> None:
    r = _cli(
        "bench",
        str(edge_dir / "convs_5x5_7x7.tflite"),
        "--xnnpack",
        "on,off",
        "--min-time",
        "0.2",
        "--profile",
        "--profile-runs",
        "5",
        "-f",
        "json",
    )
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["schema"] == "infercast.bench/1"
    assert len(d["runs"]) == 2 and sum(run["fastest"] for run in d["runs"]) == 1
    for run in d["runs"]:
        assert {"runtime", "threads", "options", "first_s", "median_s", "p90_s", "n"} <= set(run)
        assert run["runtime"] == "litert" and run["threads"] == 1 and run["n"] >= 10
        assert run["achieved_macs_per_s"] == pytest.approx(d["macs"] / run["median_s"])
    assert d["environment"]["cpu_model"] and d["environment"]["usable_cores"] >= 1
    assert d["profile"] and {
        "index",
        "name",
        "op",
        "measured_s",
        "macs",
        "achieved_macs_per_s",
    } <= set(d["profile"][0])


def test_cli_bench_reports_failures_with_exit_3(edge_dir: Path, tmp_path: Path) -> None:
    bad = _unknown_op_onnx(tmp_path / "unknown_op.onnx")
    r = _cli("bench", str(bad), "-f", "json")
    assert r.returncode == 3
    run = json.loads(r.stdout)["runs"][0]
    assert run["status"] == "failed" and "Frobnicate" in run["error"]
    r = _cli(
        "bench",
        str(edge_dir / "convs_5x5_7x7.onnx"),
        "--min-time",
        "60",
        "--max-time",
        "60",
        "--timeout",
        "3",
    )
    assert r.returncode == 3
    assert "timeout" in r.stdout and "3 s timeout" in r.stdout
    r = _cli("bench", str(edge_dir / "convs_5x5_7x7.tflite"), "--runtime", "ort")
    assert r.returncode == 2 and "runs onnx models" in r.stderr and "Traceback" not in r.stderr
