"""Golden outputs: every command's JSON / CSV on a handful of fixtures, locked in files.

As torchinfo does with ``tests/test_output/*.out``: each case runs the real CLI
on a real model and compares the written file with ``tests/golden/<case>.<ext>``
(exit codes in ``tests/golden/exit_codes.json``). Counts and bytes must match
exactly; floats within a relative 1e-9 (sums regrouped by a refactor may differ
in the last bits); absolute paths are replaced by ``<repo>``, ``<targets>`` and
``<fixtures>`` before the comparison.

A change that legitimately alters numbers regenerates the files with
``python -m pytest tests/test_golden.py --update-golden`` and says in its commit
message which figures changed and why.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import infercast.targets
from infercast.cli import main

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "golden"
EXIT_CODES = GOLDEN / "exit_codes.json"
REL_TOL = 1e-9
TARGETS_DIR = Path(infercast.targets.__file__).resolve().parent / "data"

SILERO_SHAPES = ["--input-shape", "input=1x512", "--input-shape", "state=2x1x128"]


@dataclass(frozen=True)
class Model:
    group: str
    """Fixture holding the file (``example_model`` for the bundled example)."""
    file: str
    extra: tuple[str, ...] = ()


MODELS = {
    "mnv2_int8": Model("example_model", "mobilenet_v2_int8.tflite"),
    "mnv1_fp32_onnx": Model("keras_dir", "mobilenet_v1_fp32.onnx"),
    "convs_int8": Model("edge_dir", "convs_5x5_7x7_int8.tflite"),
    "silero": Model("silero_dir", "silero_vad.onnx", tuple(SILERO_SHAPES)),
    "selfie": Model("mediapipe_dir", "selfie_segmentation.tflite"),
}
TARGETS = ("rpi4-cpu", "ethos-u55-128", "edgetpu-usb")


@dataclass(frozen=True)
class Case:
    name: str
    model: str
    argv: Callable[[Path], list[str]]
    formats: tuple[str, ...]


def _cases() -> list[Case]:
    out: list[Case] = []
    for key in MODELS:
        out.append(Case(f"analyze__{key}", key, lambda p: ["analyze", str(p)], ("json", "csv")))
    for key in ("mnv2_int8", "mnv1_fp32_onnx", "convs_int8", "silero"):
        out.append(
            Case(
                f"memory_plan__{key}",
                key,
                lambda p: ["analyze", str(p), "--memory-plan"],
                ("json", "csv"),
            )
        )
        for t in TARGETS:
            out.append(
                Case(
                    f"check__{key}__{t}",
                    key,
                    lambda p, t=t: ["check", str(p), "--target", t],
                    ("json",),
                )
            )
            out.append(
                Case(
                    f"estimate__{key}__{t}",
                    key,
                    lambda p, t=t: ["estimate", str(p), "--target", t],
                    ("json", "csv"),
                )
            )
    out.append(
        Case(
            "estimate__selfie__rpi4-cpu",
            "selfie",
            lambda p: ["estimate", str(p), "--target", "rpi4-cpu"],
            ("json", "csv"),
        )
    )
    out.append(
        Case(
            "analyze_target__convs_int8__ethos-u55-128",
            "convs_int8",
            lambda p: ["analyze", str(p), "--target", "ethos-u55-128"],
            ("json", "csv"),
        )
    )
    return out


CASES = _cases()


def _profile_case(edge: Path) -> list[str]:
    return [
        "profile",
        "import",
        str(REPO / "tests" / "data" / "profiles" / "ort_convs_opt_all.json"),
        "--model",
        str(edge / "convs_5x5_7x7.onnx"),
        "--target",
        "rpi4-cpu",
    ]


def _normalise(text: str, fixture_dir: Path) -> str:
    """Absolute paths out: built-in target files, the fixture group, the checkout."""
    for real, placeholder in (
        (str(TARGETS_DIR), "<targets>"),
        (str(fixture_dir), "<fixtures>"),
        (str(REPO), "<repo>"),
    ):
        text = text.replace(real, placeholder)
    return text


def _same_number(a: float, b: float) -> bool:
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-300)


def _diff_json(want: Any, got: Any, path: str, out: list[str]) -> None:
    if len(out) >= 20:
        return
    number = (int, float)
    if (
        isinstance(want, number)
        and isinstance(got, number)
        and not isinstance(want, bool)
        and not isinstance(got, bool)
    ):
        if not _same_number(want, got):
            out.append(f"{path}: golden {want!r}, now {got!r}")
        return
    if isinstance(want, dict) and isinstance(got, dict):
        if list(want) != list(got):
            out.append(f"{path}: keys golden {list(want)}, now {list(got)}")
        for k in want:
            if k in got:
                _diff_json(want[k], got[k], f"{path}.{k}", out)
        return
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            out.append(f"{path}: {len(want)} items golden, {len(got)} now")
        for i, (w, g) in enumerate(zip(want, got, strict=False)):
            _diff_json(w, g, f"{path}[{i}]", out)
        return
    if type(want) is not type(got) or want != got:
        out.append(f"{path}: golden {want!r}, now {got!r}")


def _cell_number(s: str) -> float | None:
    try:
        return int(s)
    except ValueError:
        pass
    try:
        return float(s)
    except ValueError:
        return None


def _diff_csv(want: str, got: str, out: list[str]) -> None:
    w_rows = list(csv.reader(io.StringIO(want)))
    g_rows = list(csv.reader(io.StringIO(got)))
    if len(w_rows) != len(g_rows):
        out.append(f"{len(w_rows)} rows golden, {len(g_rows)} now")
    for r, (wr, gr) in enumerate(zip(w_rows, g_rows, strict=False)):
        if len(wr) != len(gr):
            out.append(f"row {r}: {len(wr)} cells golden, {len(gr)} now")
        for c, (wc, gc) in enumerate(zip(wr, gr, strict=False)):
            wn, gn = _cell_number(wc), _cell_number(gc)
            same = _same_number(wn, gn) if wn is not None and gn is not None else wc == gc
            if not same:
                out.append(f"row {r} ({wr[0] if wr else ''}) col {c}: golden {wc!r}, now {gc!r}")
        if len(out) >= 20:
            return


def _run(argv: list[str], fmt: str, tmp: Path) -> tuple[int, str]:
    out = tmp / f"out.{fmt}"
    code = main([*argv, "--format", fmt, "--output", str(out)])
    return code, out.read_text() if out.exists() else ""


def _check(name: str, fmt: str, code: int, text: str, update: bool, codes: dict[str, int]) -> None:
    path = GOLDEN / f"{name}.{fmt}"
    key = f"{name}.{fmt}"
    if update:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text)
        codes[key] = code
        return
    assert path.exists(), f"no golden file {path.name}: run pytest --update-golden"
    assert code == codes[key], f"{key}: exit {code}, golden {codes[key]}"
    diffs: list[str] = []
    if fmt == "json":
        _diff_json(json.loads(path.read_text()), json.loads(text), "$", diffs)
    else:
        _diff_csv(path.read_text(), text, diffs)
    assert not diffs, f"{key} differs from the golden file:\n" + "\n".join(diffs)


@pytest.fixture(scope="module")
def exit_codes(update_golden: bool) -> Any:
    codes: dict[str, int] = json.loads(EXIT_CODES.read_text()) if EXIT_CODES.exists() else {}
    yield codes
    if update_golden:
        EXIT_CODES.write_text(json.dumps(dict(sorted(codes.items())), indent=1) + "\n")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden(
    case: Case,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    update_golden: bool,
    exit_codes: dict[str, int],
) -> None:
    m = MODELS[case.model]
    where: Path = request.getfixturevalue(m.group)
    model = where if m.group == "example_model" else where / m.file
    base = model.parent
    for fmt in case.formats:
        code, text = _run([*case.argv(model), *m.extra], fmt, tmp_path)
        assert text, f"{case.name}: nothing written (exit {code})"
        _check(case.name, fmt, code, _normalise(text, base), update_golden, exit_codes)


def test_golden_profile_import(
    edge_dir: Path, tmp_path: Path, update_golden: bool, exit_codes: dict[str, int]
) -> None:
    for fmt in ("json", "csv"):
        code, text = _run(_profile_case(edge_dir), fmt, tmp_path)
        assert text
        _check(
            "profile_import__convs__rpi4-cpu",
            fmt,
            code,
            _normalise(text, edge_dir),
            update_golden,
            exit_codes,
        )
