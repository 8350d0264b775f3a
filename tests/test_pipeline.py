"""One pipeline: each command loads the model once and runs each stage once; no import
points back up the layers; the public façade returns plain data with ``to_records()``
and ``to_dict()``; ``-o`` never destroys an input; model strings are shown escaped."""

from __future__ import annotations

import ast
import functools
import importlib
import json
import os
import pkgutil
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import infercast
import infercast.analysis.cost
import infercast.analysis.memory
import infercast.frontends
from infercast.cli import main
from infercast.report.text import dumps, shown

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "infercast"
PROFILE = REPO / "tests" / "data" / "profiles" / "ort_convs_opt_all.json"


# --------------------------------------------------------------------------- #
# Each stage once per command
# --------------------------------------------------------------------------- #

STAGES: dict[str, Callable[..., Any]] = {
    "load": infercast.frontends.load,
    "analyze_graph": infercast.analysis.cost.analyze_graph,
    "plan_graph": infercast.analysis.memory.plan_graph,
}


@pytest.fixture
def stage_calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts calls of the frontend's load and the two analysis stages, wherever a module
    holds a reference to them (imported by name or looked up on their module)."""
    for info in pkgutil.walk_packages(infercast.__path__, "infercast."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
    counts = dict.fromkeys(STAGES, 0)
    for name, original in STAGES.items():

        @functools.wraps(original)
        def counted(*a: Any, _f: Callable[..., Any] = original, _n: str = name, **k: Any) -> Any:
            counts[_n] += 1
            return _f(*a, **k)

        for mod_name, mod in list(sys.modules.items()):
            if mod is None or not mod_name.startswith("infercast"):
                continue
            for attr, value in list(vars(mod).items()):
                if value is original:
                    monkeypatch.setattr(mod, attr, counted)
    return counts


def _commands(edge: Path) -> dict[str, tuple[list[str], dict[str, int]]]:
    m = str(edge / "convs_5x5_7x7_int8.tflite")
    onnx_model = str(edge / "convs_5x5_7x7.onnx")
    once = {"load": 1, "analyze_graph": 1, "plan_graph": 1}
    return {
        "analyze": (["analyze", m], once),
        "analyze --memory-plan": (
            ["analyze", m, "--memory-plan"],
            {"load": 1, "analyze_graph": 0, "plan_graph": 1},
        ),
        "analyze -t": (["analyze", m, "-t", "ethos-u55-128"], once),
        "check": (["check", m, "-t", "ethos-u55-128"], {**once, "analyze_graph": 0}),
        "estimate": (["estimate", m, "-t", "ethos-u55-128"], once),
        "profile import -t": (
            ["profile", "import", str(PROFILE), "--model", onnx_model, "-t", "rpi4-cpu"],
            {**once, "plan_graph": 0},
        ),
        "bench -t": (
            [
                *("bench", onnx_model, "-r", "ort", "--warmup", "0", "--min-runs", "1"),
                *("--min-time", "0", "-t", "rpi4-cpu"),
            ],
            {**once, "plan_graph": 0},
        ),
    }


@pytest.mark.parametrize(
    "command",
    [
        "analyze",
        "analyze --memory-plan",
        "analyze -t",
        "check",
        "estimate",
        "profile import -t",
        "bench -t",
    ],
)
def test_each_stage_runs_once_per_command(
    command: str,
    edge_dir: Path,
    stage_calls: dict[str, int],
    tmp_path: Path,
) -> None:
    argv, expected = _commands(edge_dir)[command]
    assert main([*argv, "-f", "json", "-o", str(tmp_path / "out.json")]) == 0
    assert stage_calls == expected
    assert json.loads((tmp_path / "out.json").read_text())["schema"].startswith("infercast.")


# --------------------------------------------------------------------------- #
# Layers: no import points back up
# --------------------------------------------------------------------------- #

# DESIGN.md's data flow: frontends -> IR -> analysis -> targets -> bench (measures) ->
# estimate (forecast, and calibration from bench's measurements) -> report -> api -> cli.
# ir and ops sit below the frontends (a frontend builds ir and asks ops for shape rules);
# errors, the version and the worker isolation of untrusted model content at the bottom.
LAYERS = [
    {"errors", "_version", "isolation", "_gc", "_records", "files"},
    {"ir"},
    {"ops"},
    {"frontends"},
    {"analysis"},
    {"targets"},
    {"bench"},
    {"estimate"},
    {"whatif"},
    {"report"},
    {"api"},
    {"cli"},
    {"__init__", "__main__"},
]
RANK = {part: i for i, layer in enumerate(LAYERS) for part in layer}


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path, module: str) -> list[tuple[int, str]]:
    """(line, absolute module) of every import in the file, function-level ones included."""
    out = []
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            out.append((node.lineno, target))
    return [(line, t) for line, t in out if t == "infercast" or t.startswith("infercast.")]


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out.append((".".join(parts), path))
    return out


def test_every_module_imports_and_no_import_points_back_up() -> None:
    up: list[str] = []
    for module, path in _modules():
        if not module.endswith("__main__"):
            importlib.import_module(module)
        src = _part(module) if module != "infercast" else "__init__"
        assert src in RANK, f"{module}: place its package in LAYERS"
        for line, target in _imports(path, module):
            dst = _part(target) if target != "infercast" else "__init__"
            assert dst in RANK, f"{module}:{line} imports {target}: place it in LAYERS"
            if dst != src and RANK[dst] > RANK[src]:
                up.append(f"{module}:{line} -> {target}")
    assert not up, "imports pointing up the layers:\n" + "\n".join(up)


# --------------------------------------------------------------------------- #
# The façade
# --------------------------------------------------------------------------- #


def _flat(records: list[dict[str, Any]]) -> bool:
    return all(
        isinstance(v, int | float | str | bool) or v is None for r in records for v in r.values()
    )


def _cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    main([*argv, "-f", "json"])
    return json.loads(capsys.readouterr().out)


def test_facade_analyze_on_a_path_or_a_graph(
    example_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graph = infercast.load(example_model)
    by_path = infercast.analyze(example_model)
    by_graph = infercast.analyze(graph)
    # Keras MobileNetV2 1.0 224 at 1000 classes: 300,774,272 MACs (README; the published
    # 300 M of the MobileNetV2 paper's Table 4 counts the same multiply-adds).
    assert by_path.totals.macs == by_graph.totals.macs == 300_774_272
    records = by_graph.to_records()
    assert len(records) == len(by_graph.layers) and _flat(records)
    assert sum(r["macs"] for r in records if r["subgraph"] == graph.name) == 300_774_272
    assert by_graph.to_dict() == _cli_json(capsys, "analyze", str(example_model))
    with pytest.raises(infercast.InfercastError, match="already loaded"):
        infercast.analyze(graph, {"input": (1, 224, 224, 3)})


def test_facade_memory_check_estimate_match_the_cli(
    edge_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = edge_dir / "convs_5x5_7x7_int8.tflite"
    graph = infercast.load(path)
    plan = infercast.plan_memory(graph)
    assert plan.to_dict() == _cli_json(capsys, "analyze", str(path), "--memory-plan")
    rows = plan.to_records()
    assert len(rows) == len(plan.lifetimes.tensors) and _flat(rows)
    assert max(r["end"] for r in rows) == plan.arena_bytes
    placed = infercast.check(graph, "ethos-u55-128", memory=plan)
    assert placed.to_dict() == _cli_json(capsys, "check", str(path), "-t", "ethos-u55-128")
    assert [r["placement"] for r in placed.to_records()] == [ly.placement for ly in placed.layers]
    analysis = infercast.analyze(graph, memory=plan)
    fc = infercast.estimate(graph, "ethos-u55-128", analysis=analysis, placement=placed)
    assert fc.to_dict() == _cli_json(capsys, "estimate", str(path), "-t", "ethos-u55-128")
    rows = fc.to_records()
    assert _flat(rows) and sum(r["latency_s"] for r in rows) + fc.invoke_s == pytest.approx(
        fc.latency_s
    )
    # The ops the forecast charges are the analysis's FLOPs (1 MAC = 2 ops).
    assert sum(r["ops"] for r in rows) == analysis.totals.flops


def test_facade_profile_and_targets(edge_dir: Path) -> None:
    joined = infercast.profile_import(PROFILE, edge_dir / "convs_5x5_7x7.onnx")
    doc = joined.to_dict()
    assert doc["schema"] == "infercast.profile/1" and doc["file"] == str(PROFILE)
    rows = joined.to_records()
    assert _flat(rows) and len(rows) == len(joined.rows)
    assert sum(r["measured_s"] for r in rows) == pytest.approx(joined.ops_total_s)
    targets = infercast.list_targets()
    from infercast.targets import builtin_names

    assert [r["name"] for r in targets.to_records()] == builtin_names()
    assert _flat(targets.to_records()) and targets.to_dict()["schema"] == "infercast.targets/1"


def test_estimate_says_incomplete_and_exits_4(
    mediapipe_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(mediapipe_dir / "selfie_segmentation.tflite")
    assert main(["estimate", path, "-t", "rpi4-cpu", "-f", "json"]) == 4
    out, err = capsys.readouterr()
    totals = json.loads(out)["totals"]
    assert totals["complete"] is False and totals["unknown_layers"] == 1
    assert totals["incomplete"] == "incomplete: 1 layer unknown"
    assert len(err.strip().splitlines()) == 1 and "Convolution2DTransposeBias" in err
    assert main(["estimate", path, "-t", "rpi4-cpu"]) == 4
    assert "incomplete: 1 layer unknown" in capsys.readouterr().out


# --------------------------------------------------------------------------- #
# -o: atomic, never over an input
# --------------------------------------------------------------------------- #


def _one_error_line(capsys: pytest.CaptureFixture[str], *needles: str) -> None:
    _, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("infercast: error: "), err
    for n in needles:
        assert n in lines[0]


def test_output_over_an_input_is_refused(
    edge_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / "m.tflite"
    model.write_bytes((edge_dir / "convs_5x5_7x7_int8.tflite").read_bytes())
    before = model.read_bytes()
    assert main(["analyze", str(model), "-f", "json", "-o", str(model)]) == 2
    _one_error_line(capsys, "input of this command")
    link = tmp_path / "hard.json"
    os.link(model, link)
    assert main(["estimate", str(model), "-t", "rpi4-cpu", "-f", "json", "-o", str(link)]) == 2
    _one_error_line(capsys, "input of this command")
    target = tmp_path / "t.toml"
    target.write_text('extends = "rpi4-cpu"\n')
    assert main(["check", str(model), "-t", str(target), "-f", "json", "-o", str(target)]) == 2
    _one_error_line(capsys, "input of this command")
    assert target.read_text() == 'extends = "rpi4-cpu"\n'
    prof = tmp_path / "p.json"
    prof.write_bytes(PROFILE.read_bytes())
    argv = ["calibrate", "-t", "host", "--from", str(prof), "--model", str(model)]
    assert main([*argv, "-o", str(prof)]) == 2
    _one_error_line(capsys, "input of this command")
    assert prof.read_bytes() == PROFILE.read_bytes() and model.read_bytes() == before


def test_output_must_be_a_regular_file(
    edge_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = str(edge_dir / "convs_5x5_7x7_int8.tflite")
    assert main(["analyze", model, "-o", str(tmp_path)]) == 2
    _one_error_line(capsys, "not a regular file")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert main(["analyze", model, "-o", str(fifo)]) == 2  # refused, not blocked in open()
    _one_error_line(capsys, "not a regular file")


def test_output_is_replaced_atomically(
    edge_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = str(edge_dir / "convs_5x5_7x7_int8.tflite")
    out = tmp_path / "out.json"
    out.write_text("old")
    out.chmod(0o640)
    assert main(["analyze", model, "-f", "json", "-o", str(out)]) == 0
    assert json.loads(out.read_text())["schema"] == "infercast.analysis/1"
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]

    def full_disk(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    assert main(["analyze", model, "-f", "csv", "-o", str(out)]) == 2
    _one_error_line(capsys, "No space left on device")
    assert json.loads(out.read_text())["schema"] == "infercast.analysis/1"  # the old file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]  # no temporary left


# --------------------------------------------------------------------------- #
# Strings from models
# --------------------------------------------------------------------------- #

HOSTILE = "[/bold]"
ESCAPED = "evil\x1b[31mred\nnext"


def _named_model(path: Path, input_name: str = "x", dims: list[Any] | None = None) -> Path:
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), name="[red]w[/red]")
    nodes = [
        helper.make_node("Conv", [input_name, "[red]w[/red]"], [ESCAPED], name=HOSTILE),
        helper.make_node("Relu", [ESCAPED], ["y"], name=ESCAPED),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(input_name, TensorProto.FLOAT, dims or [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, path)
    return path


@pytest.mark.parametrize(
    "argv",
    [
        ["analyze"],
        ["analyze", "--memory-plan"],
        ["analyze", "-t", "rpi4-cpu"],
        ["check", "-t", "k210-kpu"],
        ["estimate", "-t", "imx8mp-npu-vx"],
    ],
)
def test_model_strings_are_shown_literally_and_escaped(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _named_model(tmp_path / "names.onnx")
    code = main([argv[0], str(path), *argv[1:]])
    out, err = capsys.readouterr()
    assert code in (0, 3), err
    assert "\x1b" not in out and "\x1b" not in err
    if argv != ["analyze", "--memory-plan"]:
        assert HOSTILE in out  # the node's name, not a Rich closing tag
    assert shown(ESCAPED) in out


def test_errors_are_one_escaped_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    name = "in\x1b[2Jput\nx"
    path = _named_model(tmp_path / "sym.onnx", input_name=name, dims=[1, 3, "height", 8])
    assert main(["analyze", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "\x1b" not in err
    assert len(err.strip().splitlines()) == 1 and shown(name) in err


def test_json_is_strict() -> None:
    doc = {"a": float("nan"), "b": [float("inf"), -float("inf"), 1.5], "c": np.float32(2.0)}
    text = dumps({**doc, "d": b"\xffraw", "e": np.int64(3)})
    assert json.loads(text) == {
        "a": None,
        "b": [None, None, 1.5],
        "c": 2.0,
        "d": "\\xffraw",
        "e": 3,
    }
    assert "NaN" not in text and "Infinity" not in text


def test_every_data_file_of_the_package_is_installed() -> None:
    """A non-editable install (the README's `pip install .`) ships only what
    pyproject's package-data names: every non-Python file under src/infercast must match
    one of its patterns (the published-latency CSV once did not, and `validate
    --published` failed after `pip install .`)."""
    import fnmatch
    import tomllib

    root = Path(__file__).resolve().parents[1]
    patterns = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["infercast"]
    pkg = root / "src" / "infercast"
    data = [
        p.relative_to(pkg).as_posix()
        for p in pkg.rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts
    ]
    assert data
    missing = [f for f in data if not any(fnmatch.fnmatchcase(f, pat) for pat in patterns)]
    assert not missing, f"not in [tool.setuptools.package-data]: {missing}"
