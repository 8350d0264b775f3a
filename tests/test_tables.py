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
import tomllib
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


def folded_cell(text: str, start: str) -> str:
    """The table cell that begins with ``start``, its folded lines joined again."""
    lines = text.splitlines()
    i = next(i for i, ln in enumerate(lines) if start in ln)
    col = lines[i].index(start)
    out = lines[i][col:].split("  ")[0]
    for ln in lines[i + 1 :]:
        if ln[:col].strip() or len(ln) <= col or ln[col] == " ":
            break
        out += ln[col:].split("  ")[0]
    return out


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
    named = "[/bold][red]x\\x1b[2J\\x07\\nname"
    bench = ["bench", str(model), "--runtime", "ort", "--warmup", "1", "--min-runs", "3"]
    bench += ["--min-time", "0.05", "--max-time", "2", "--profile"]
    m = str(model)
    cases: list[tuple[list[str], bool, bool]] = [  # argv, names the conv, names the relu
        (["analyze", m], True, True),
        (["analyze", m, "--memory-plan"], False, False),  # tensors; the peak names layer 1
        (["analyze", m, "--by", "op"], False, False),
        (["estimate", m, "-t", "k210-kpu"], True, True),
        (["estimate", m, "-t", "k210-kpu", "--by", "op"], False, False),
        (["check", m, "-t", "k210-kpu"], True, True),
        (["check", m, "-t", "k210-kpu", "--sort", "name", "--top", "1"], True, False),
        (["check", m, "-t", "edgetpu-usb"], False, False),  # ONNX on the Edge TPU: no rows
        (["whatif", m, "-t", "k210-kpu", "-r", "8,16"], False, False),
        (["whatif", m, "-t", "rpi4-cpu", "-r", "8,16", "--fit"], False, False),
        (["advise", m, "-t", "k210-kpu"], False, False),
        (bench, True, False),  # ORT's profile names the conv's kernel after the node
    ]
    for width in (80, 100):
        for argv, evil, bold in cases:
            code, text = run(argv, monkeypatch, width)
            assert code in (0, 3), argv
            assert_fits(text, width)
            assert not evil or folded_cell(text, "[/bold][red]x") == named, argv
            assert not bold or "[bold]" in text, argv
            assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text


# --------------------------------------------------------------------------- #
# check --sort / --top; targets show; whatif, advise, validate, calibrate
# --------------------------------------------------------------------------- #


def table_rows(text: str) -> list[str]:
    """Lines of a per-layer table: they begin with the layer index."""
    return [ln for ln in text.splitlines() if re.match(r"^\s*\d+\s\s", ln)]


def test_check_sort_top_columns(
    long_names: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    argv = ["check", str(long_names), "-t", "k210-kpu"]
    layers = json_of(argv, tmp_path)["layers"]
    on_cpu = [ly["index"] for ly in layers if ly["placement"] == "cpu"]
    partial = [ly["index"] for ly in layers if ly["placement"] == "partial"]
    assert len(on_cpu) > 5 and partial
    # --top alone: what falls back first (the CPU layers in execution order)
    code, text = run([*argv, "--top", "5"], monkeypatch, 100)
    assert code == 3
    assert [int(r.split()[0]) for r in table_rows(text)] == on_cpu[:5]
    assert f"top 5 of {len(layers)} layers, sorted by placement" in text
    # --sort placement: CPU, then partially mapped, then the accelerator's
    code, text = run([*argv, "--sort", "placement"], monkeypatch, None)
    order = [int(r.split()[0]) for r in table_rows(text)]
    assert order[: len(on_cpu) + len(partial)] == on_cpu + partial
    # --sort -index --columns: newest first, two columns
    code, text = run([*argv, "--sort", "-index", "--columns", "index,placement"], monkeypatch, 80)
    rows = table_rows(text)
    assert [int(r.split()[0]) for r in rows] == sorted((ly["index"] for ly in layers), reverse=True)
    assert all(len(r.split()) == 2 for r in rows)
    assert run([*argv, "--sort", "nope"], monkeypatch, 80)[0] == 2
    assert run([*argv, "--top", "0"], monkeypatch, 80)[0] == 2


def test_targets_show_fits_and_stays_a_target_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from infercast.targets import builtin_names, load_target

    for name in builtin_names():
        want = load_target(name).raw
        piped = run(["targets", "show", name], monkeypatch, None)[1]
        for width in (80, 100):
            code, text = run(["targets", "show", name], monkeypatch, width)
            assert code == 0
            assert_fits(text, width)
            f = tmp_path / f"{name}-{width}.toml"
            f.write_text(text)
            assert tomllib.loads(text) == tomllib.loads(piped)
            assert load_target(str(f)).raw == want, (name, width)
        if max(len(ln) for ln in piped.splitlines()) > 100:
            assert text != piped  # it was broken into lines
    # piped: one line per key, as before
    piped = run(["targets", "show", "imx8mp-npu-vx"], monkeypatch, None)[1]
    assert any(ln.startswith('ops = ["') and ln.endswith("]") for ln in piped.splitlines())


def test_targets_show_breaks_hostile_strings_validly(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from infercast.targets import load_target

    desc = (
        'quote """ and \\ backslash, escape \x1b[2J, bell \x07, newline\nand C1 \x9b, '
        "line sep \u2028, " + "x" * 130 + " then    four blanks and a tail"
    )
    src = 'extends = "k210-kpu"\n' + f"description = {json.dumps(desc)}\n"
    src += "sources = [" + ", ".join(json.dumps("w" * n) for n in (10, 95, 200)) + "]\n"
    f = tmp_path / "hostile.toml"
    f.write_text(src)
    want = load_target(str(f)).raw
    assert want["description"] == desc
    for width in (80, 100):
        code, text = run(["targets", "show", str(f)], monkeypatch, width)
        assert code == 0
        assert_fits(text, width)
        for bad in ("\x07", "\x9b", "\u2028", "\n\n\n"):
            assert bad not in text
        again = tmp_path / f"again-{width}.toml"
        again.write_text(text)
        assert load_target(str(again)).raw == want


def variant_line(text: str, label: str) -> str:
    return next(ln for ln in text.splitlines() if ln.split() and ln.split()[0] == label)


@pytest.mark.parametrize("width", [80, 100])
def test_whatif_and_advise_fit(
    width: int, long_names: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    argv = ["whatif", str(long_names), "-t", "k210-kpu", "-r", "128,224,320", "-w", "0.5,1.0"]
    code, text = run(argv, monkeypatch, width)
    assert code == 0
    assert_fits(text, width)
    doc = json_of(argv, tmp_path)
    assert len(doc["variants"]) == 6
    for v in doc["variants"]:
        line = variant_line(text, v["label"])
        t = v["totals"]
        assert f" {human_count(t['macs'])} " in line and line.endswith(
            human_seconds(t["latency_s"])
        )
        assert ("yes" if t["fits"] else "NO") in line.split()
    assert any(not v["totals"]["fits"] for v in doc["variants"])  # 320 px overflows the KPU
    code, text = run(["advise", str(long_names), "-t", "k210-kpu"], monkeypatch, width)
    assert code == 0
    assert_fits(text, width)
    advice = json_of(["advise", str(long_names), "-t", "k210-kpu"], tmp_path)["advice"]
    assert advice
    for rank, a in enumerate(advice, 1):
        line = row_line(text, rank)
        if a["latency_gain_s"] is not None:
            assert f"-{human_seconds(a['latency_gain_s'])}" in line


def render(renderable: Any, width: int | None, monkeypatch: pytest.MonkeyPatch) -> str:
    """``renderable`` as a command prints it at ``width`` columns (None: piped)."""
    from infercast.cli.common import Output

    if width is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", str(width))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        Output(None).rich(renderable)
    return out.getvalue()


def test_calibrate_and_validate_tables_fit(
    edge_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A real calibration from an ONNX Runtime profile, then a real (short) validation on
    this machine with it: both tables at 80 and 100 columns hold every figure whole."""
    from infercast.estimate.calibrate import calibrate_profiles
    from infercast.report.calibration import render_summary
    from infercast.report.validation import render_table
    from infercast.targets import load_target

    onnx_model = edge_dir / "convs_5x5_7x7.onnx"
    res = calibrate_profiles(load_target("host"), [(onnx_model, PROFILE)])
    cal = tmp_path / "host-cal.toml"
    cal.write_text(res.toml)
    for width in (80, 100):
        text = render(render_summary(res, str(cal)), width, monkeypatch)
        assert_fits(text, width)
        for k, v in res.fit.efficiency.items():
            assert re.search(rf"efficiency\.{k}\s+{v:.4g}\s", text), k
        assert f"{res.fit.rmspe:.1%}" in text
        lines = text.splitlines()
        for _name, pred, meas in res.fit.residuals:  # fit, measured and error whole on a row
            cells = (human_seconds(pred), human_seconds(meas), f"{pred / meas - 1:+.1%}")
            assert any(re.search(r"\s+".join(map(re.escape, cells)) + "$", ln) for ln in lines)
    # the CLI prints the same table
    argv = ["calibrate", "-t", "host", "--from", str(PROFILE), "--model", str(onnx_model)]
    code, text = run([*argv, "-o", str(tmp_path / "cli.toml")], monkeypatch, 80)
    assert code == 0
    assert_fits(text, 80)
    assert "values written" in text and "units.cpu.op_overhead_s" in text

    long = tmp_path / ("a_model_with_a_name_longer_than_any_column_" + "x" * 40 + ".onnx")
    long.write_bytes(onnx_model.read_bytes())
    v = infercast.validate([long, edge_dir / "convs_5x5_7x7.tflite"], str(cal), budget_s=3)
    assert len(v.rows) == 2
    for width in (80, 100, None):
        text = render(render_table(v), width, monkeypatch)
        if width is not None:
            assert_fits(text, width)
        for r in v.rows:
            line = next(ln for ln in text.splitlines() if ln.startswith(Path(r.model).name[:12]))
            for figure in (human_seconds(r.forecast_s), human_seconds(r.measured_s)):
                assert figure in line
            assert f"{r.error:+.1%}" in line
        if width is None:  # piped: every column, one line per model
            assert len([ln for ln in text.splitlines() if ".onnx" in ln]) == 1
            assert "runs" in text.splitlines()[1]


def test_published_and_whole_model_tables_fit(
    published_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``validate --published`` and ``calibrate --from-latencies``: every figure of their
    JSON whole on its row at 80 and 100 columns."""
    monkeypatch.setenv("INFERCAST_PUBLISHED_MODELS", str(published_dir))
    argv = ["validate", "--published"]
    doc = json_of(argv, tmp_path)
    for width in (80, 100):
        code, text = run(argv, monkeypatch, width)
        assert code == 0
        assert_fits(text, width)
        lines = text.splitlines()
        for r in doc["rows"]:
            line = next(ln for ln in lines if ln.split() and ln.split()[0] == r["row_id"])
            assert f"{r['published_s'] * 1e3:.3g}" in line.split()
            if r["loo_error"] is not None:
                assert f"{r['loo_error']:+.0%}" in line.split()
    # whole-model times: 1.3x what the shipped imx8mp-cpu forecasts for three models
    models = sorted(published_dir.glob("*_int8.tflite"))[:3]
    assert len(models) == 3
    csv_file = tmp_path / "times.csv"
    times = {m: infercast.estimate(m, "imx8mp-cpu").latency_s * 1.3 for m in models}
    csv_file.write_text("model,ms\n" + "".join(f"{m},{t * 1e3:.6f}\n" for m, t in times.items()))
    argv = ["calibrate", "-t", "imx8mp-cpu", "--from-latencies", str(csv_file)]
    code, out = run([*argv, "-o", str(tmp_path / "fit.toml"), "-f", "json"], monkeypatch, None)
    fit = json.loads(out)
    for width in (80, 100):
        code, text = run([*argv, "-o", str(tmp_path / "fit.toml")], monkeypatch, width)
        assert code == 0
        assert_fits(text, width)
        for row in fit["rows"]:
            m = row["measured_s"]
            cells = (human_seconds(m), human_seconds(row["fit_s"]))
            loo = f"{row['loo_s'] / m - 1:+.1%}"
            assert any(all(c in ln for c in cells) and ln.endswith(loo) for ln in text.splitlines())


# --------------------------------------------------------------------------- #
# Golden tables
# --------------------------------------------------------------------------- #

TABLE_CASES = [
    ("analyze", ["analyze"], 100),
    ("analyze", ["analyze"], 80),
    ("estimate_edgetpu-usb", ["estimate", "-t", "edgetpu-usb"], 100),
    ("check_ethos-u55-128", ["check", "-t", "ethos-u55-128"], 100),
    ("analyze_by_op", ["analyze", "--by", "op"], 100),
    ("check_k210-kpu", ["check", "-t", "k210-kpu"], 80),
    ("whatif_k210-kpu", ["whatif", "-t", "k210-kpu", "-w", "0.5,1.0"], 80),
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
