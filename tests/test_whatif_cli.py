"""``infercast whatif`` / ``infercast advise`` on the command line: the JSON contracts,
CSV, exit codes, and one clear line for every bad input."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from infercast.cli import main
from infercast.frontends import load


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def test_whatif_json_contract(keras_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = str(keras_dir / "mobilenet_v1_int8.tflite")
    rc, out, err = run(
        [
            "whatif", model, "-t", "k210-kpu", "--resolution", "128,96x128", "--width", "0.5",
            "--width", "1.0", "-f", "json",
        ],
        capsys,
    )  # fmt: skip
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["schema"] == "infercast.whatif/1" and doc["target"] == "k210-kpu"
    assert [v["resolution"] for v in doc["variants"]] == [128, 128, [96, 128], [96, 128]]
    assert [v["width"] for v in doc["variants"]] == [0.5, 1.0, 0.5, 1.0]
    keys = {
        "macs", "flops", "params", "weight_bytes", "peak_activation_bytes",
        "activation_lower_bound_bytes", "latency_s", "fits",
    }  # fmt: skip
    for v in doc["variants"]:
        assert set(v["totals"]) == keys
        assert {"dtype", "replace", "fallback_layers", "memories", "bound_s"} <= set(v)
        assert set(v["memories"]) == {"kpu_ram", "main_ram"}
        assert v["totals"]["flops"] >= 2 * v["totals"]["macs"]
    # 96x128 has 96*128 / 128^2 of the pixels: MACs of a conv net scale with them.
    r128, r96 = doc["variants"][1]["totals"], doc["variants"][3]["totals"]
    assert r96["macs"] < r128["macs"]
    assert r96["params"] == r128["params"]
    assert doc["base"]["resolution"] == 224


def test_whatif_csv_and_table(keras_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = str(keras_dir / "mobilenet_v2_int8.tflite")
    rc, out, _ = run(
        ["whatif", model, "-t", "ethos-u55-128", "--dtype", "int8,fp16", "-f", "csv"], capsys
    )
    assert rc == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["dtype"] for r in rows] == ["int8", "fp16"]
    assert int(rows[1]["weight_bytes"]) > int(rows[0]["weight_bytes"])
    rc, out, _ = run(["whatif", model, "-t", "ethos-u55-128", "-r", "160"], capsys)
    assert rc == 0 and "r160" in out and "latency" in out


def test_fit_and_export(
    keras_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = str(keras_dir / "mobilenet_v2_fp32.tflite")
    rc, out, err = run(
        [
            "whatif", model, "-t", "ethos-u55-128", "-r", "96,224", "--dtype", "int8", "--fit",
            "-f", "json",
        ],
        capsys,
    )  # fmt: skip
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["fit"]["found"] and doc["fit"]["best"]["totals"]["fits"]
    assert doc["fit"]["best"]["resolution"] in doc["fit"]["resolutions"]
    assert all(r % 32 == 0 for r in doc["fit"]["resolutions"])
    # A budget nothing meets: exit 3, the output still written.
    rc, out, _ = run(
        ["whatif", model, "-t", "ethos-u55-128", "-r", "96,224", "--fit", "--budget-ms", "0.001"],
        capsys,
    )
    assert rc == 3 and "no variant" in out
    # --export writes runnable files that infercast reads back with the variant's shapes.
    rc, _, err = run(
        ["whatif", model, "-t", "rpi4-cpu", "-r", "128", "-w", "0.5", "--export", str(tmp_path)],
        capsys,
    )
    assert rc == 0, err
    files = sorted(tmp_path.iterdir())
    assert [f.name for f in files] == ["mobilenet_v2_fp32__r128_w0.5.tflite"]
    g = load(files[0])
    assert g.tensors[g.inputs[0]].shape == (1, 128, 128, 3)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--width", "abc"], "--width 'abc'"),
        (["--width", "0"], "out of range"),
        (["--resolution", "12y"], "--resolution '12y'"),
        (["--dtype", "int4"], "--dtype 'int4'"),
        (["--quant", "per-row"], "--quant 'per-row'"),
        (["--replace", "HARD_SWISH"], "SRC=DST"),
        (["--replace", "HARD_SWISH=RELU6"], "no HARD_SWISH"),
        (["--replace", "RELU6=SOFTMAX"], "not an activation"),
        (["--width", "0.5", "--keep", "nope"], "--keep 'nope'"),
        (["--budget-ms", "5"], "--fit"),
        (["--threads", "0"], "--threads 0"),
        (["--export", "x.onnx", "--dtype", "fp16"], "re-types"),
    ],
)
def test_bad_options_exit_2_with_one_line(
    keras_dir: Path,
    args: list[str],
    needle: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    model = str(keras_dir / "mobilenet_v2_fp32.onnx")
    args = [str(tmp_path / a) if a.endswith(".onnx") else a for a in args]
    rc, _, err = run(["whatif", model, "-t", "rpi4-cpu", *args], capsys)
    assert rc == 2
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0], err
    assert "Traceback" not in err


def test_no_variant_made_is_bad_input(
    mediapipe_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """MediaPipe's pose detector adds two branches whose sizes agree only at multiples of
    its total stride: 112 is not one, and the error says so."""
    rc, out, err = run(
        ["whatif", str(mediapipe_dir / "pose_detection.tflite"), "-t", "rpi4-cpu", "-r", "112"],
        capsys,
    )
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert "no variant could be made" in err and "total stride, 32" in err


def test_resolution_of_a_model_without_an_image_input(
    silero_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = next(p for p in sorted(silero_dir.glob("*.onnx")))
    rc, _, err = run(["whatif", str(model), "-t", "rpi4-cpu", "-r", "128"], capsys)
    assert rc == 2
    assert "image input" in err or "control flow" in err or "--input-shape" in err


def test_advise_json(whatif_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = str(whatif_dir / "efficientnet_b0_int8.tflite")
    rc, out, err = run(["advise", model, "-t", "k210-kpu", "-f", "json"], capsys)
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["schema"] == "infercast.advice/1"
    assert doc["advice"]
    for a in doc["advice"]:
        assert set(a) >= {"kind", "message", "layers", "latency_gain_s", "memory_gain_bytes"}
        assert isinstance(a["layers"], list)
    gains = [a["latency_gain_s"] for a in doc["advice"] if a["latency_gain_s"] is not None]
    assert gains and all(g > 0 for g in gains)


def test_exported_variant_is_benched(
    keras_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`infercast bench` measures an exported variant on the real runtime."""
    model = str(keras_dir / "mobilenet_v2_int8.tflite")
    rc, _, err = run(
        ["whatif", model, "-t", "rpi4-cpu", "-r", "128", "-w", "0.5", "--export", str(tmp_path)],
        capsys,
    )
    assert rc == 0, err
    (path,) = tmp_path.iterdir()
    rc, out, err = run(
        [
            "bench", str(path), "--warmup", "1", "--min-runs", "3", "--min-time", "0.05",
            "-f", "json",
        ],
        capsys,
    )  # fmt: skip
    assert rc == 0, err
    runs = json.loads(out)["runs"]
    assert runs and all(r["status"] == "ok" and r["median_s"] > 0 for r in runs)
