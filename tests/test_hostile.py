"""Hostile inputs (issue 14): a reproducer of every class, run through the real CLI
under the bounds of the contract (20 s, 1.5 GiB of address space per run).

The files are in ``tests/data/hostile/``, written by ``tools/make_hostile.py`` (which
also makes the large ones, here, in a temporary directory). Each case states the
exit codes the contract allows for it and a phrase its message holds; every run is
also checked against the whole contract (:func:`fuzz_driver.violations`): exit code
0/2/3/4, exactly one stderr line on 2, nothing on stderr on 0, no control
characters, strict JSON with ``-f json``, inputs never overwritten.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from fuzz_driver import ForkServer, run_subprocess, violations
from make_hostile import CASES, LARGE, OUT, Case, make_large, write_all

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def server() -> Iterator[ForkServer]:
    with ForkServer(REPO / "src") as s:
        yield s


@pytest.fixture(scope="module")
def hostile_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The committed reproducers plus the large ones, side by side in a scratch copy
    (a run must never change the committed files)."""
    d = tmp_path_factory.mktemp("hostile")
    for p in OUT.iterdir():
        shutil.copyfile(p, d / p.name)
    for name in LARGE:
        make_large(name, d)
    return d


def _check(server: ForkServer, case: Case, d: Path) -> None:
    argv = case.argv_in(d)
    inputs = [a for a in argv if Path(a).is_file()]  # each must be unchanged afterwards
    o = server.run(argv, inputs=inputs, cwd=d)
    why = violations(o, json_out=case.json_out)
    assert not why, (case.issue, argv, why)
    assert o.rc in case.rcs, (case.issue, argv, o.rc, o.stderr)
    if case.says:
        where = o.stderr if o.rc == 2 else o.stdout
        assert case.says in where, (case.issue, case.says, where[:500])


def test_committed_reproducers_are_what_the_script_writes(tmp_path: Path) -> None:
    """tests/data/hostile/ is reproducible: the generator writes the same bytes."""
    for p in write_all(tmp_path):
        assert p.read_bytes() == (OUT / p.name).read_bytes(), p.name


@pytest.mark.parametrize(
    "case", CASES, ids=[f"{c.name}-{c.argv[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_reproducer(server: ForkServer, hostile_dir: Path, case: Case) -> None:
    _check(server, case, hostile_dir)


REAL_PROCESS = (
    "tflite_bad_operator_input.tflite",
    "fuzz_onnx_inference_segv.onnx",
    "onnx_regex_redos.onnx",
    "fifo.onnx",
)


@pytest.mark.parametrize("name", REAL_PROCESS)
def test_reproducer_as_a_real_process(hostile_dir: Path, name: str) -> None:
    """The crash, hang and FIFO classes end the same in a real ``python -m infercast``
    under the same limits as in the fork server (no state shared with a parent)."""
    for case in (c for c in CASES if c.name == name):
        o = run_subprocess(case.argv_in(hostile_dir), cwd=hostile_dir, src=REPO / "src")
        assert not violations(o, json_out=case.json_out), (case.issue, o.stderr)
        assert o.rc in case.rcs, (case.issue, o.rc, o.stderr)
