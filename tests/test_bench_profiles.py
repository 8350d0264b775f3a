"""Profile importers and the join with the static cost, on real profile files.

Samples (tests/data/profiles/SOURCES.md): TFLite benchmark_model output for
mobilenet_v1_1.0_224 published in NobuoTsukamoto/meta-tensorflow-lite; TVM's
debug executor sample from apache/tvm's docs; ONNX Runtime 1.32 JSON made here.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from infercast import analyze
from infercast.bench.join import join, target_peak_macs_per_s
from infercast.bench.profiles import ProfileFormatError, read_profile, sniff
from infercast.bench.profiles.tflite import parse_tflite_benchmark
from infercast.bench.profiles.tvm import kernel_ops
from infercast.frontends import load

DATA = Path(__file__).parent / "data" / "profiles"
TFLITE_TXT = DATA / "tflite_benchmark_mobilenet_v1_riscv64.txt"
TVM_DEBUG = DATA / "tvm_debugger_docs_sample.txt"
ORT_ALL = DATA / "ort_convs_opt_all.json"
ORT_OFF = DATA / "ort_convs_opt_disable.json"

# MobileNet v1 1.0/224: "569 Million Mult-Adds" (Howard et al. 2017, Table 8).
MOBILENET_V1_MMACS = 569


def test_tflite_text_sample_reads_as_the_tool_reports_it() -> None:
    p = read_profile(TFLITE_TXT)
    assert p.source == "tflite_benchmark_model"
    assert len(p.ops) == 31  # the file: "Number of nodes executed: 31"
    assert p.runs == 50  # "Timings (microseconds): count=50"
    # "Inference timings in us: ... Inference (avg): 2.95034e+06"
    assert p.whole_s == pytest.approx(2.95034)
    assert p.ops[0].op == "CONV_2D" and p.ops[0].measured_s == pytest.approx(0.060957)
    assert p.ops[0].first_s == pytest.approx(0.087754)
    # Per-op averages add up to the tool's whole-inference average (same profiled runs).
    assert p.sum_vs_whole == pytest.approx(1.0, abs=0.002)
    # Our shares reproduce the tool's own [%] column.
    for op in p.ops:
        assert 100 * op.measured_s / p.ops_total_s == pytest.approx(op.extra["percent"], abs=0.01)


def _csv_from_text(with_start: bool) -> str:
    """The same rows in the CSV form stats_calculator.cc writes (format_as_csv)."""
    text = TFLITE_TXT.read_text()
    p = parse_tflite_benchmark(text)
    head = "node type, start, first, avg_ms, %, cdf%, mem KB, times called, name"
    if not with_start:
        head = head.replace(" start,", "")
    lines = text.splitlines()
    cut = lines.index("Operator-wise Profiling Info for Regular Benchmark Runs:")
    rule = "=" * 30
    out = [*lines[: cut + 1], f"{rule} Run Order {rule}", head]
    cdf = 0.0
    for op in p.ops:
        pct = float(op.extra["percent"])
        cdf += pct
        avg_ms = op.measured_s * 1000 / op.count
        first_ms = (op.first_s or 0) * 1000
        cells = (
            [op.op]
            + (["0"] if with_start else [])
            + [
                f"{first_ms:g}",
                f"{avg_ms:g}",
                f"{pct:g}%",
                f"{cdf:g}%",
                "0",
                str(op.count),
                op.name,
            ]
        )
        out.append(", ".join(cells))
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("with_start", [True, False])
def test_tflite_csv_rows_read_like_the_text_rows(with_start: bool) -> None:
    text = parse_tflite_benchmark(TFLITE_TXT.read_text())
    csv_p = parse_tflite_benchmark(_csv_from_text(with_start))
    assert [o.name for o in csv_p.ops] == [o.name for o in text.ops]
    assert [o.op for o in csv_p.ops] == [o.op for o in text.ops]
    for a, b in zip(csv_p.ops, text.ops, strict=True):
        assert a.measured_s == pytest.approx(b.measured_s, rel=1e-6)
        assert a.extra.get("node_index") == b.extra.get("node_index")


def test_tflite_csv_node_type_with_commas() -> None:
    # XNNPACK kernel names hold commas: "Convolution (NHWC, F32) IGEMM" (stats_calculator.cc
    # writes the type unquoted).
    text = (
        "Operator-wise Profiling Info for Regular Benchmark Runs:\n"
        "============================== Run Order ==============================\n"
        "node type, first, avg_ms, %, cdf%, mem KB, times called, name\n"
        "Convolution (NHWC, F32) IGEMM, 0.16, 0.1999, 11.4405%, 11.4405%, 0, 1, "
        "Delegate/Convolution (NHWC, F32) IGEMM:0\n"
        "HardSwish (NC), 0.016, 0.0656, 3.75436%, 15.1949%, 0, 3, Delegate/HardSwish (NC):1\n"
    )
    p = parse_tflite_benchmark(text)
    assert [o.op for o in p.ops] == ["Convolution (NHWC, F32) IGEMM", "HardSwish (NC)"]
    assert p.ops[0].name == "Delegate/Convolution (NHWC, F32) IGEMM:0"
    assert p.ops[1].measured_s == pytest.approx(3 * 0.0656e-3)  # avg per call x calls


def test_tflite_profile_joins_with_mobilenet_v1_by_operator_index(keras_dir: Path) -> None:
    """The published profile ran Google's mobilenet_v1_1.0_224.tflite; the fixture is the
    Keras MobileNet with the same 27 conv layers and another head (MEAN instead of
    AVERAGE_POOL_2D, RESHAPE instead of SQUEEZE): the rows map by index where the operator
    type agrees, and the two that disagree are named, not mapped."""
    model = keras_dir / "mobilenet_v1_fp32.tflite"
    a = analyze(model)
    j = join(a, read_profile(TFLITE_TXT))
    mapped = [r for r in j.rows if r.layers]
    assert len(mapped) == 29
    assert {r.mapping for r in mapped} == {"index"}
    mism = [n for n in j.notes if "left unmapped" in n]
    assert len(mism) == 2 and "AVERAGE_POOL_2D" in mism[0] and "SQUEEZE" in mism[1]
    assert a.totals.macs / 1e6 == pytest.approx(MOBILENET_V1_MMACS, abs=1)
    # Every MAC of the model is in a mapped row (pooling and reshape carry none).
    assert sum(r.macs or 0 for r in mapped) == a.totals.macs
    # Overall achieved rate = MACs / the tool's Inference (avg).
    assert j.achieved_macs_per_s == pytest.approx(a.totals.macs / 2.95034)
    top = j.hotspots(1)[0]
    assert top.name.endswith("Conv2d_5_pointwise/Relu6]:10") and top.op == "conv"
    assert top.achieved_macs_per_s == pytest.approx(top.macs / 0.277374)
    # % of peak from a plain number: 1 GMAC/s.
    j2 = join(a, read_profile(TFLITE_TXT), peak_macs_per_s=1e9)
    assert j2.pct_of_peak == pytest.approx(100 * j.achieved_macs_per_s / 1e9)


def test_tvm_debug_sample() -> None:
    p = read_profile(TVM_DEBUG)
    assert p.source == "tvm_debug" and len(p.ops) == 9
    total_us = p.ops_total_s * 1e6
    # The tool's Time(%) column is each row's share of the summed times.
    assert sum(o.extra["percent"] for o in p.ops) == pytest.approx(100.0, abs=0.05)
    for o in p.ops:
        assert 100 * o.measured_s * 1e6 / total_us == pytest.approx(o.extra["percent"], abs=0.01)
    assert p.ops[3].name == "_contrib_conv2d_nchwc1"
    assert p.ops[3].measured_s == pytest.approx(213108.6e-6)
    assert p.ops[3].extra["shape"] == "(1, 8, 224, 224, 8)"


def test_tvm_kernel_names_split_into_relax_ops() -> None:
    assert kernel_ops("fused_conv2d1_add1_relu1") == ["conv2d", "add", "relu"]
    assert kernel_ops("fused_conv2d_transpose_add6") == ["conv2d_transpose", "add"]
    assert kernel_ops("adaptive_avg_pool2d3") == ["adaptive_avg_pool2d"]
    assert kernel_ops("fuse___layout_transform___broadcast_add_relu___layout_transform__") == [
        "add",
        "relu",
    ]


def test_ort_profile_without_optimisation_maps_one_to_one(edge_dir: Path) -> None:
    model = edge_dir / "convs_5x5_7x7.onnx"
    g = load(model)
    p = read_profile(ORT_OFF)
    assert p.source == "onnxruntime" and p.runs == 4  # 5 runs, the first dropped
    j = join(analyze(model), p)
    assert len(j.rows) == len(g.nodes)
    assert all(r.mapping == "name" and len(r.layers) == 1 for r in j.rows)
    assert sorted(r.layers[0] for r in j.rows) == [n.index for n in g.nodes]
    assert not j.unaccounted
    # Kernels run inside model_run, one after another: their sum cannot exceed it.
    assert 0.5 < j.sum_vs_profile_whole <= 1.0


def test_ort_profile_with_fusions_maps_back(edge_dir: Path) -> None:
    model = edge_dir / "convs_5x5_7x7.onnx"
    a = analyze(model)
    j = join(a, read_profile(ORT_ALL))
    # ORT's NCHWc transformer renames fused Conv+Relu after the Relu's output tensor
    # ("...Relu:0_nchwc"); the conv is attached to it as fused.
    by_layer = {i: r for r in j.rows for i in r.layers}
    heavy = [ly for ly in a.main_layers() if ly.macs]
    assert heavy and all(ly.index in by_layer for ly in heavy)
    fused = [r for r in j.rows if r.name.endswith("Relu:0_nchwc")]
    assert len(fused) == 4 and all(r.op in ("conv", "depthwise_conv") for r in fused)
    assert sum(r.macs or 0 for r in j.rows) == a.totals.macs
    unmapped = [r.name for r in j.rows if not r.layers]
    assert unmapped and all(n.startswith("ReorderOutput") for n in unmapped)
    assert 0.5 < j.sum_vs_profile_whole <= 1.0


def test_sniff_and_bad_files(tmp_path: Path) -> None:
    assert sniff(ORT_ALL.read_text()) == "ort"
    assert sniff(TFLITE_TXT.read_text()) == "tflite"
    assert sniff(TVM_DEBUG.read_text()) == "tvm-debug"
    bad = tmp_path / "notes.txt"
    bad.write_text("hello\n")
    with pytest.raises(ProfileFormatError, match="not a profile infercast can read"):
        read_profile(bad)
    with pytest.raises(ProfileFormatError, match="no such file"):
        read_profile(tmp_path / "missing.json")
    empty = tmp_path / "p.json"
    empty.write_text(json.dumps([{"cat": "Session", "name": "model_run", "ts": 0, "dur": 5}]))
    with pytest.raises(ProfileFormatError):
        read_profile(empty, "ort")


def test_target_peak_is_half_the_rated_ops() -> None:
    # rpi4-cpu states its fp32 peak in ops/s; a MAC is 2 ops.
    from infercast.targets import load_target

    t = load_target("rpi4-cpu")
    unit = t.accelerator or t.fallback
    ops = unit.peak("fp32")
    assert ops is not None
    assert target_peak_macs_per_s(t, "fp32") == pytest.approx(ops / 2)
    assert target_peak_macs_per_s(t, "fp32", threads=1) == pytest.approx(ops / 2 / unit.cores)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    # tables fit COLUMNS when it is set (some runners set it): piped and unset, every column
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return subprocess.run(
        [sys.executable, "-m", "infercast", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_cli_profile_import(keras_dir: Path, tmp_path: Path) -> None:
    model = keras_dir / "mobilenet_v1_fp32.tflite"
    r = _cli("profile", "import", str(TFLITE_TXT), "--model", str(model), "-f", "json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["schema"] == "infercast.profile/1" and d["source"] == "tflite_benchmark_model"
    assert len(d["profile"]) == 31
    assert {"index", "name", "op", "measured_s", "macs", "achieved_macs_per_s"} <= set(
        d["profile"][0]
    )
    r = _cli("profile", "import", str(TFLITE_TXT), "--model", str(model))
    assert r.returncode == 0 and "Conv2d_5_pointwise" in r.stdout
    r = _cli(
        "profile",
        "import",
        str(TFLITE_TXT),
        "--model",
        str(model),
        "-f",
        "csv",
        "--peak-gmacs",
        "1",
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("index,name,op,measured_s,share,macs")
    assert len(lines) == 32
    first = next(csv.DictReader(lines))
    assert float(first["pct_of_peak"]) == pytest.approx(
        100 * float(first["achieved_macs_per_s"]) / 1e9
    )
    bad = tmp_path / "x.txt"
    bad.write_text("nothing\n")
    r = _cli("profile", "import", str(bad), "--model", str(model))
    assert r.returncode == 2 and "not a profile infercast can read" in r.stderr
    assert "Traceback" not in r.stderr
