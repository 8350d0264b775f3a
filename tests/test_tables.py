"""Terminal tables: they fit 80 and 100 columns without cutting a number, piped output is
plain and one line per row, names are the same short unique labels in every command,
model strings are shown literally, and ``check`` counts each reason once.

Numbers are checked against the command's own JSON output: each layer's row must hold
the humanised figure of that layer, whole.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import infercast
from infercast.cli import main
from infercast.report.names import LABEL_WIDTH, graph_labels, layer_labels
from infercast.report.units import human_bytes, human_count, human_seconds

REPO = Path(__file__).resolve().parents[1]
PROFILE = REPO / "tests" / "data" / "profiles" / "ort_convs_opt_all.json"
GOLDEN = REPO / "tests" / "golden"


def run(argv: Sequence[str], monkeypatch: pytest.MonkeyPatch, width: int | None) -> tuple[int, str]:
    if width is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", str(width))
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(list(argv))
    return code, out.getvalue()


def json_of(argv: Sequence[str], tmp_path: Path) -> Any:
    path = tmp_path / "out.json"
    main([*argv, "--format", "json", "-o", str(path)])
    return json.loads(path.read_text())


CUT = re.compile(r"\d…|…\d|\d\.…")


def assert_fits(text: str, width: int) -> None:
    lines = text.splitlines()
    assert lines, "no output"
    wide = [ln for ln in lines if len(ln) > width]
    assert not wide, f"{len(wide)} line(s) wider than {width}: {wide[0]!r}"
    cut = [ln for ln in lines if CUT.search(ln)]
    assert not cut, f"a number cut short: {cut[0]!r}"
    assert "\x1b" not in text


def row_line(text: str, index: int) -> str:
    """The first line of the table row of layer ``index`` (rows start with the index)."""
    for ln in text.splitlines():
        if re.match(rf"^\s*{index}\s", ln):
            return ln
    raise AssertionError(f"no row for layer {index}")


@pytest.fixture(scope="module")
def long_names(keras_dir: Path) -> Path:
    """Keras MobileNetV2 through the TFLite converter: fused names over 150 characters."""
    return keras_dir / "mobilenet_v2_int8.tflite"


@pytest.mark.parametrize("width", [80, 100])
def test_analyze_fits(
    width: int, long_names: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    code, text = run(["analyze", str(long_names)], monkeypatch, width)
    assert code == 0
    assert_fits(text, width)
    doc = json_of(["analyze", str(long_names)], tmp_path)
    assert max(len(ly["name"]) for ly in doc["layers"]) > 150
    for ly in doc["layers"]:
        line = row_line(text, ly["index"])
        assert f" {human_count(ly['macs'])} " in f"{line} "
        assert human_bytes(ly["live_bytes"]) in line


@pytest.mark.parametrize("width", [80, 100])
def test_estimate_and_check_fit(
    width: int, long_names: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    argv = ["estimate", str(long_names), "--target", "k210-kpu"]
    code, text = run(argv, monkeypatch, width)
    assert code == 0
    assert_fits(text, width)
    doc = json_of(argv, tmp_path)
    for ly in doc["layers"]:
        if ly["bound"] not in ("fused", "elided"):
            assert human_seconds(ly["latency_s"]) in row_line(text, ly["index"])
            assert ly["bound"] in row_line(text, ly["index"])
    code, text = run(["check", str(long_names), "--target", "k210-kpu"], monkeypatch, width)
    assert code == 3
    assert_fits(text, width)


@pytest.mark.parametrize("width", [80, 100])
def test_every_command_fits(
    width: int, long_names: Path, edge_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    onnx_model = edge_dir / "convs_5x5_7x7.onnx"
    commands = [
        ["analyze", str(long_names), "--memory-plan"],
        ["analyze", str(long_names), "--target", "edgetpu-usb"],
        ["analyze", str(long_names), "--by", "op"],
        ["estimate", str(long_names), "-t", "ethos-u55-128", "--by", "op"],
        ["check", str(long_names), "-t", "edgetpu-usb"],
        ["targets", "list"],
        ["profile", "import", str(PROFILE), "--model", str(onnx_model)],
        ["profile", "import", str(PROFILE), "--model", str(onnx_model), "--by", "op"],
        [
            "bench", str(onnx_model), "--runtime", "ort", "--profile", "--warmup", "1",
            "--min-runs", "3", "--min-time", "0.05", "--max-time", "2",
        ],
    ]  # fmt: skip
    for argv in commands:
        code, text = run(argv, monkeypatch, width)
        assert code == 0, argv
        assert_fits(text, width)


def test_piped_output_is_plain_and_unwrapped(
    long_names: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    code, text = run(["analyze", str(long_names)], monkeypatch, None)
    assert code == 0 and "\x1b" not in text
    doc = json_of(["analyze", str(long_names)], tmp_path)
    # every column, one line per layer (no folded names)
    header = next(ln for ln in text.splitlines() if ln.lstrip().startswith("#"))
    for col in ("native op", "output", "FLOPs", "params", "act in", "act out", "FLOP/B"):
        assert col in header
    rows = [ln for ln in text.splitlines() if re.match(r"^\s*\d+\s\s", ln)]
    assert len(rows) == len(doc["layers"])


def test_one_label_per_layer_everywhere(long_names: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    g = infercast.load(long_names)
    labels = graph_labels(g)
    assert len(set(labels.values())) == len(labels)
    assert all(len(v) <= LABEL_WIDTH for v in labels.values())
    outs = [
        run(argv, monkeypatch, None)[1]
        for argv in (
            ["analyze", str(long_names)],
            ["estimate", str(long_names), "-t", "rpi4-cpu"],
            ["check", str(long_names), "-t", "k210-kpu"],
        )
    ]
    for node in g.nodes:
        for text in outs:
            assert labels[(g.name, node.index)] in row_line(text, node.index)


def test_labels_unique_on_every_fixture(
    keras_dir: Path, mediapipe_dir: Path, onnx_light_dir: Path, edge_dir: Path
) -> None:
    files = [*keras_dir.glob("*.tflite"), *keras_dir.glob("*.onnx"), *mediapipe_dir.glob("*")]
    files += [*onnx_light_dir.glob("*.onnx"), *edge_dir.glob("*.tflite")]
    checked = 0
    for f in files:
        if f.suffix not in (".onnx", ".tflite"):
            continue
        try:
            g = infercast.load(f)
        except infercast.InfercastError:
            continue
        labels = graph_labels(g)
        assert len(set(labels.values())) == len(labels), f
        checked += 1
    assert checked > 10
    # repeated names: numbered in execution order
    assert layer_labels(["a/x;b", "a/x;c", "a/x"]) == ["x", "x (2)", "x (3)"]


def test_sort_top_columns(
    long_names: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    doc = json_of(["analyze", str(long_names)], tmp_path)
    code, text = run(
        [
            "analyze",
            str(long_names),
            "--columns",
            "index,name,live",
            "--sort",
            "live",
            "--top",
            "3",
        ],
        monkeypatch,
        None,
    )
    assert code == 0
    rows = [ln.split()[0] for ln in text.splitlines() if re.match(r"^\s*\d+\s\s", ln)]
    want = sorted(doc["layers"], key=lambda ly: -ly["live_bytes"])[:3]
    assert [int(r) for r in rows] == [ly["index"] for ly in want]
    header = next(ln for ln in text.splitlines() if ln.lstrip().startswith("#"))
    assert header.split() == ["#", "layer", "live"]
    code, _ = run(["analyze", str(long_names), "--columns", "index,nope"], monkeypatch, None)
    assert code == 2
    code, _ = run(["analyze", str(long_names), "--top", "0"], monkeypatch, None)
    assert code == 2


def test_by_op(long_names: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    a = infercast.analyze(long_names)
    code, text = run(["analyze", str(long_names), "--by", "op"], monkeypatch, None)
    assert code == 0
    counts = {}
    for ln in text.splitlines():
        m = re.match(r"^(\w+)\s+(\d+)\s", ln)
        if m:
            counts[m.group(1)] = int(m.group(2))
    want: dict[str, int] = {}
    for ly in a.layers:
        want[ly.op] = want.get(ly.op, 0) + 1
    assert counts == want
    # "N mapped to the accelerator, M on the CPU", as edgetpu_compiler and Vela summarise
    argv = ["check", str(long_names), "--target", "k210-kpu"]
    s = json_of(argv, tmp_path)["summary"]
    _code, text = run(
        ["estimate", str(long_names), "-t", "k210-kpu", "--by", "op"], monkeypatch, None
    )
    assert (
        f"{s['accelerator']} mapped to the kpu, {s['partial']} partially mapped, "
        f"{s['cpu']} on the cpu" in text
    )


def test_check_counts_each_reason_once(
    mediapipe_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    model = mediapipe_dir / "selfie_segmentation.tflite"
    argv = ["check", str(model), "--target", "edgetpu-usb"]
    code, text = run(argv, monkeypatch, 100)
    assert code == 3
    doc = json_of(argv, tmp_path)
    by_reason: dict[str, int] = {}
    for ly in doc["layers"]:
        if ly.get("folded"):
            continue
        for r in ly["reasons"]:
            key = r["reason"] + (f": {r['detail']}" if r["check"] == "op_listed" else "")
            by_reason[key] = by_reason.get(key, 0) + 1
    flat = " ".join(text.split())
    for reason, n in by_reason.items():
        assert f"{n} layer{'s' if n != 1 else ''}: {' '.join(reason.split())}" in flat
        assert flat.count(" ".join(reason.split())) == 1  # once, not on every layer


def _hostile(path: Path) -> None:
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    evil = "[/bold][red]x\x1b[2J\x07\nname"
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["y"], name=evil, pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["y"], ["z"], name="[bold]"),
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4, 8, 8])],
        [w],
    )
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def test_model_strings_are_not_markup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = tmp_path / "evil.onnx"
    _hostile(model)
    for argv in (
        ["analyze", str(model)],
        ["analyze", str(model), "--memory-plan"],
        ["estimate", str(model), "-t", "k210-kpu"],
        ["check", str(model), "-t", "k210-kpu"],
    ):
        code, text = run(argv, monkeypatch, 100)
        assert code in (0, 3), argv
        if "--memory-plan" not in argv:  # the plan lists tensors; its peak line names layer 1
            assert "[/bold][red]x\\x1b[2J\\x07\\nname" in text, argv
        assert "\x1b" not in text and "\x07" not in text
        assert "[bold]" in text


# --------------------------------------------------------------------------- #
# Golden tables
# --------------------------------------------------------------------------- #

TABLE_CASES = [
    ("analyze", ["analyze"], 100),
    ("analyze", ["analyze"], 80),
    ("estimate_edgetpu-usb", ["estimate", "-t", "edgetpu-usb"], 100),
    ("check_ethos-u55-128", ["check", "-t", "ethos-u55-128"], 100),
    ("analyze_by_op", ["analyze", "--by", "op"], 100),
]


@pytest.mark.parametrize("fixture", ["mnv2_int8", "convs_int8"])
@pytest.mark.parametrize(("name", "argv", "width"), TABLE_CASES)
def test_golden_tables(
    fixture: str,
    name: str,
    argv: list[str],
    width: int,
    example_model: Path,
    edge_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    update_golden: bool,
) -> None:
    model = example_model if fixture == "mnv2_int8" else edge_dir / "convs_5x5_7x7_int8.tflite"
    monkeypatch.chdir(model.parent)  # a relative path in titles: the same on every machine
    _code, text = run([argv[0], model.name, *argv[1:]], monkeypatch, width)
    path = GOLDEN / f"table__{name}__{fixture}__{width}.txt"
    if update_golden:
        path.write_text(text)
        return
    assert path.exists(), f"no golden file {path.name}: run pytest --update-golden"
    assert text == path.read_text(), f"{path.name} differs (pytest --update-golden regenerates)"
