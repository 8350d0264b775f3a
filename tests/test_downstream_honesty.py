"""What check, bench and profile joins say about real models, honestly.

* ``check`` of an ONNX model on a target whose accelerator reads TFLite only names
  the format mismatch once (not "does not run this operator" on every layer).
* ONNX Runtime kernels that ORT fused itself (QuickGelu, FusedConv, ...) map to the
  model layers they replace, not "not a model layer" with the replaced layers
  charged to the next conv (NudeNet's YOLOv8n: 57 x*sigmoid(x) activations).
* ``bench --profile``: a dynamic batch defaults to 1 and keeps its profile; a
  profile that fails makes the run fail (exit 3), never a silent exit 0.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

import infercast
from infercast.bench.inputs import make_inputs
from infercast.bench.join import join
from infercast.bench.runtimes.ort import OrtRuntime
from infercast.cli import main


def test_check_onnx_on_a_tflite_only_target_names_the_format_once(
    keras_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = keras_dir / "mobilenet_v2_fp32.onnx"
    rep = infercast.check(model, "edgetpu-usb")
    assert rep.format_mismatch
    assert all(ly.placement == "cpu" and not ly.reasons for ly in rep.layers)
    assert sum("runs TFLite models only" in n for n in rep.notes) == 1
    assert main(["check", str(model), "-t", "edgetpu-usb"]) == 3
    out = capsys.readouterr().out
    assert out.count("runs TFLite models only") == 1
    assert "does not run this operator" not in out
    assert len(out.splitlines()) < 40  # no per-layer table of 123 identical reasons
    # A TFLite model on the same target is still placed layer by layer.
    assert not infercast.check(
        keras_dir / "mobilenet_v2_int8.tflite", "edgetpu-usb"
    ).format_mismatch


def test_ort_fused_kernels_map_to_the_layers_they_replace() -> None:
    from build_fixtures import ensure

    model = ensure("nudenet") / "320n.onnx"
    shapes = {"images": (1, 3, 320, 320)}
    session = OrtRuntime().open(model, 1, {"opt_level": "all"}, shapes)
    feeds, _ = make_inputs(session.input_specs())
    joined = join(infercast.analyze(model, shapes), session.profile(feeds, 1))
    by_op = {r.name: r for r in joined.rows}
    quick = [r for name, r in by_op.items() if "QuickGeluFusion" in name]
    assert len(quick) >= 50
    for r in quick:  # x * sigmoid(x): the Mul it is named after and the Sigmoid it reads
        ops = sorted(joined_layer.op for joined_layer in _layers(r.layers, model, shapes))
        assert ops == ["mul", "sigmoid"], (r.name, ops)
    # Only ORT's layout conversions (NCHWc reorders) map to no model layer.
    unmapped = Counter(r.op for r in joined.rows if not r.layers)
    assert set(unmapped) <= {"ReorderInput", "ReorderOutput"}, unmapped
    # No conv row carries another activation's Mul/Sigmoid: each conv row covers
    # only its own conv, or its conv + its own activation when ORT fused them.
    for r in joined.rows:
        if r.op == "conv":
            assert sum(1 for ly in _layers(r.layers, model, shapes) if ly.op == "conv") == 1


_CACHE: dict[str, list[object]] = {}


def _layers(idx: tuple[int, ...], model: Path, shapes: dict[str, tuple[int, ...]]) -> list:  # type: ignore[type-arg]
    key = str(model)
    if key not in _CACHE:
        _CACHE[key] = list(infercast.analyze(model, shapes).main_layers())
    layers = {ly.index: ly for ly in _CACHE[key]}  # type: ignore[attr-defined]
    return [layers[i] for i in idx]


def test_bench_profile_dynamic_batch_and_failed_profile(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from build_fixtures import ensure

    quick = ["--min-runs", "2", "--max-time", "1", "--profile-runs", "2", "-f", "json"]
    # openWakeWord's embedding model: input [?, 76, 32, 1], a dynamic batch alone.
    emb = ensure("openwakeword") / "embedding_model.tflite"
    assert main(["bench", str(emb), "-r", "litert", "--profile", *quick]) == 0
    doc = json.loads(capsys.readouterr().out)
    (run,) = doc["runs"]
    assert run["status"] == "ok" and "profile_error" not in run
    # microWakeWord's streaming model keeps its state in resource variables, whose
    # single-op sub-models need inputs infercast cannot generate: the profile fails.
    nabu = ensure("microwakeword") / "okay_nabu.tflite"
    assert main(["bench", str(nabu), "-r", "litert", "--profile", *quick]) == 3
    doc = json.loads(capsys.readouterr().out)
    (run,) = doc["runs"]
    assert run["profile_error"]


def test_graph_compile_time_only_when_the_accelerator_runs_something(keras_dir: Path) -> None:
    """The i.MX 8M Plus NPU compiles its graph on the first run (one_time.graph_compile_s
    in its target file): charged when a layer runs there, not for a model that runs
    wholly on the CPU (an ONNX model: its delegate reads TFLite)."""
    from infercast.targets import load_target

    tgt = load_target("imx8mp-npu-vx")
    assert tgt.graph_compile_s_per_weight_byte > 0
    on_npu = infercast.estimate(keras_dir / "mobilenet_v2_int8.tflite", tgt)
    assert on_npu.placement.counts()["accelerator"] > 0
    assert on_npu.one_time_s > 0
    on_cpu = infercast.estimate(keras_dir / "mobilenet_v2_fp32.onnx", tgt)
    assert on_cpu.placement.counts()["accelerator"] == 0
    assert on_cpu.one_time_s == 0.0
