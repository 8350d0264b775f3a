"""Target files are validated whole: every key, from the dataclass field types, all
problems in one error; values finite and in range; reading bounded (size, depth,
``extends`` chain, files beside the target only)."""

from __future__ import annotations

import dataclasses
import os
import typing
from pathlib import Path

import pytest

from infercast.cli import main
from infercast.targets import TargetError, load_target
from infercast.targets import schema as S
from infercast.targets.loader import MAX_CHAIN, MAX_DEPTH
from infercast.targets.validate import Problems, _Ctx, convert

BASE = 'extends = "k210-kpu"\n'


def _problems(tmp_path: Path, text: str, name: str = "bad.toml") -> tuple[str, ...]:
    f = tmp_path / name
    f.write_text(text)
    with pytest.raises(TargetError) as exc:
        load_target(str(f))
    return exc.value.problems or (exc.value.message,)


def test_every_problem_is_listed_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Keys after the first problem are still checked (issue 9 item 5): quantize_float_to
    used to fail later as an internal error, a negative compile time became 0."""
    text = (
        BASE
        + '[compile]\nquantize_float_to = "fp8"\n'
        + "[one_time]\ngraph_compile_s = -5\n"
        + "[units.kpu]\npeak_int8_ops_per_s = inf\nefficiency = { conv = 1.5, convv = 0.5 }\n"
        + '[memories.kpu_ram]\nsize_bytes = "2MB"\nbandwidth_bytes_per_s = 5e-324\n'
        + "[calibration]\nthreads = -1\nfit_rmspe = nan\n"
    )
    problems = _problems(tmp_path, text)
    assert sorted(problems) == sorted(
        (
            "units.kpu.peak_int8_ops_per_s must be a finite number (a positive number), got inf",
            "units.kpu.efficiency.conv must be a fraction in (0, 1], got 1.5",
            "units.kpu.efficiency.convv is not a known key (did you mean 'conv'?)",
            "memories.kpu_ram.size_bytes must be a positive integer, got '2MB'",
            "memories.kpu_ram.bandwidth_bytes_per_s must be at least 1, got 5e-324",
            "one_time.graph_compile_s must be a non-negative number, got -5",
            "compile.quantize_float_to must be one of none, uint8, int8, got 'fp8'",
            "calibration.threads must be a non-negative integer, got -1",
            "calibration.fit_rmspe must be a finite number (a non-negative number), got nan",
        )
    )
    f = tmp_path / "bad.toml"
    model = tmp_path / "m.onnx"
    model.write_bytes(b"\0" * 16)
    for argv in (
        ["targets", "show", str(f)],
        ["check", str(model), "-t", str(f)],
        ["estimate", str(model), "-t", str(f), "-f", "json"],
    ):
        assert main(argv) == 2
        out, err = capsys.readouterr()
        assert out == ""
        assert err.count("\n") == 1 and err.startswith("infercast: error: bad.toml: ")
        assert "quantize_float_to" in err and "graph_compile_s" in err


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (BASE + "[units.kpu]\npeak_int8_ops_per_s = 1e308\n", "must be at most 1e+21, got 1e+308"),
        (BASE + "[units.kpu]\nclock_hz = 0.5\n", "units.kpu.clock_hz must be at least 1"),
        (BASE + "[units.kpu.efficiency]\nconv = 1e-300\n", "efficiency.conv must be at least"),
        (
            BASE + "[units.kpu]\ncores = 1e400\n",
            "units.kpu.cores must be a positive integer, got inf",
        ),
        (BASE + "[units.kpu]\ncores = 10000000000000000000\n", "must be at most 1e+15"),
        (BASE + "[crossing]\nfixed_s = -1e-9\n", "crossing.fixed_s must be a non-negative number"),
        (BASE + "[crossing]\nbytes_per_s = 0\n", "crossing.bytes_per_s must be a positive number"),
        (BASE + "detect = 1\n", "detect must be true or false, got 1"),
        (BASE + "[toolchain]\nversion = 3\n", "toolchain.version must be a string, got 3"),
        (BASE + 'description = ["a"]\n', "description must be a string, got ['a']"),
        (BASE + "[calibration]\ndate = 2024-01-01\n", "calibration.date must be a string"),
        (BASE + '[memories.kpu_ram]\nholds = ["weights", "cache"]\n', "has 'cache'; allowed"),
        (BASE + "units = 3\n", "units must be a table, got 3"),
        (BASE + "[units]\nkpu = 3\n", "units.kpu must be a table, got 3"),
        (
            BASE + '[support.rules.conv]\nchecks = [{ check = "stride_in", lo = 1, hi = inf }]\n',
            "checks[0].hi must be int, got inf",
        ),
        (
            BASE + '[support.rules.conv]\nchecks = [{ check = "stride_in", lo = 1, hi = 1e300 }]\n',
            "checks[0].hi must be int, got 1e+300",
        ),
        (
            BASE + '[support.rules.softmax]\nchecks = [{ check = "single_axis_max", elements = '
            "99999999999999999 }]\n",
            "must be a finite int of at most 15 digits",
        ),
        (
            "name = 4\n[units.cpu]\nkind='cpu'\npeak_fp32_ops_per_s=1e9\n[placement]\n"
            "fallback='cpu'\n",
            "name must be a string, got 4",
        ),
        (
            BASE + "[calibration]\npaired = true\n",
            "calibration.paired is true but calibration.values_from names no target",
        ),
        (
            BASE + '[units."\\u001b[31mred"]\nkind = "cpu"\n',
            "units.\\x1b[31mred.peak_<dtype>_ops_per_s is required",
        ),
    ],
)
def test_values_are_finite_and_in_range(tmp_path: Path, text: str, expected: str) -> None:
    problems = _problems(tmp_path, text)
    assert any(expected in p for p in problems), problems
    assert all(p.isprintable() for p in problems)


def test_built_in_targets_pass_and_each_field_type_is_checkable() -> None:
    """Every field type of every dataclass is one the validator reads: adding a key to a
    target file is adding one typed field (a type it cannot read fails here, not in use)."""
    seen: set[type] = set()
    todo: list[type] = [S.Target]
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        for f in dataclasses.fields(cls):
            if f.metadata.get("derived") or f.metadata.get("from_key"):
                continue
            tp = typing.get_type_hints(cls, include_extras=True)[f.name]
            ctx = _Ctx(Problems("x.toml"), ())
            convert(tp, object(), f.name, ctx)  # a value of no TOML type: one problem
            assert len(ctx.errs.items) == 1, (cls.__name__, f.name, ctx.errs.items)
            for arg in (*typing.get_args(tp), tp):
                for inner in (arg, *typing.get_args(arg)):
                    if dataclasses.is_dataclass(inner) and isinstance(inner, type):
                        todo.append(inner)
    assert {S.ComputeUnit, S.Memory, S.Calibration, S.OneTime, S.Compile} <= seen


@pytest.mark.parametrize(
    "ext",
    ["/etc/passwd", "../base.toml", "sub/base.toml", "~/base.toml", "./../base.toml"],
)
def test_extends_names_built_ins_or_files_beside_only(tmp_path: Path, ext: str) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "base.toml").write_text(BASE)
    (tmp_path.parent / "base.toml").write_text(BASE)
    (problem,) = _problems(tmp_path / "sub", f'extends = "{ext}"\n')
    assert "may extend a built-in target or a file in its own directory only" in problem


def test_extends_a_file_beside(tmp_path: Path) -> None:
    (tmp_path / "base.toml").write_text(BASE + "[memories.kpu_ram]\nsize_bytes = 1048576\n")
    for ext in ("base.toml", "./base.toml"):
        (tmp_path / "mine.toml").write_text(f'extends = "{ext}"\n')
        t = load_target(str(tmp_path / "mine.toml"))
        assert t.memories["kpu_ram"].size_bytes == 1048576
        assert [Path(p).name for p in t.chain] == ["mine.toml", "base.toml", "k210-kpu.toml"]


def test_long_extends_chain_is_refused(tmp_path: Path) -> None:
    """1,200 files extending each other used to end in a RecursionError (exit 1)."""
    n = 1200
    for i in range(n):
        (tmp_path / f"t{i}.toml").write_text(f'extends = "t{i + 1}.toml"\n')
    (tmp_path / f"t{n}.toml").write_text(BASE)
    (problem,) = _problems(tmp_path, 'extends = "t0.toml"\n', "top.toml")
    assert problem == f"top.toml: the extends chain is longer than {MAX_CHAIN} files"
    # ok.toml, t{n-13} .. t{n}, k210-kpu.toml: MAX_CHAIN files in all
    (tmp_path / "ok.toml").write_text(f'extends = "t{n - MAX_CHAIN + 3}.toml"\n')
    assert load_target(str(tmp_path / "ok.toml")).name == "ok"


@pytest.mark.parametrize(
    "text",
    [
        "a = " + "[" * 5000 + "]" * 5000 + "\n",
        "a = " + "{b = " * 3000 + "1" + "}" * 3000 + "\n",
        "a." * 3000 + "b = 1\n",
        "[" + "a." * (MAX_DEPTH + 1) + "b]\nc = 1\n",
    ],
)
def test_deep_nesting_is_refused(tmp_path: Path, text: str) -> None:
    (problem,) = _problems(tmp_path, text)
    assert problem == f"bad.toml: nested too deeply (at most {MAX_DEPTH} levels)"


def test_huge_integer_and_binary_files(tmp_path: Path) -> None:
    (problem,) = _problems(tmp_path, "x = " + "9" * 5000 + "\n")
    assert "a number of thousands of digits" in problem
    f = tmp_path / "bin.toml"
    f.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(TargetError, match="not UTF-8"):
        load_target(str(f))
    big = tmp_path / "big.toml"
    big.write_text("# " + "x" * (2 << 20) + "\n")
    with pytest.raises(TargetError, match="bytes; at most"):
        load_target(str(big))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
def test_fifo_target_is_refused_not_read(tmp_path: Path) -> None:
    fifo = tmp_path / "t.toml"
    os.mkfifo(fifo)
    with pytest.raises(TargetError, match="is not a regular file"):
        load_target(str(fifo))
    (tmp_path / "x.toml").write_text('extends = "t.toml"\n')
    with pytest.raises(TargetError, match="is not a regular file"):
        load_target(str(tmp_path / "x.toml"))
