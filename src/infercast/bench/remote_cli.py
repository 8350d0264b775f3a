"""What ``infercast bench --remote`` adds to the bench command: options -> board and runs,
and the one-line failure messages. Kept out of the CLI module so the command stays thin."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from infercast.bench import BenchReport
from infercast.bench.harness import RunSpec
from infercast.bench.remote import REMOTE_RUNTIMES, plan_remote_runs
from infercast.bench.remote_boards import Board, RemoteError, resolve_board


def _bools(values: Sequence[str]) -> list[bool]:
    out = []
    for v in values:
        low = v.strip().lower()
        if low not in ("on", "off", "true", "false", "1", "0", "yes", "no"):
            raise RemoteError(f"--xnnpack '{v}' is not on or off")
        out.append(low in ("on", "true", "1", "yes"))
    return out


def plan(
    model: Path,
    remote: str,
    *,
    remote_python: str | None,
    runtimes: Sequence[str] | None,
    threads: Sequence[int | None] | None,
    sweeps: Mapping[str, Sequence[str]],
    delegate: str | None,
    delegate_options: Sequence[str],
    target: Any,
    common: Mapping[str, Any],
) -> tuple[Board, list[RunSpec], Any]:
    """The board, its runs and the target (``target``: a name, file or Target; else the
    board's target name, or None) of a command."""
    if common.get("raw_profile_dir"):
        raise RemoteError(
            "--save-profile is not available with --remote",
            "the joined profile is in the JSON output (-f json)",
        )
    board = resolve_board(remote)
    if remote_python:
        board = replace(board, python=remote_python)
    names = list(runtimes or ([board.runtime] if board.runtime else []))
    if len(names) > 1:
        raise RemoteError("--remote runs one runtime per command", "give one --runtime")
    extra = sorted(set(sweeps) - {"litert.xnnpack", "ort.opt_level"})
    if extra:
        raise RemoteError(f"{', '.join(extra)} cannot be used with --remote")
    runtime = names[0] if names else None
    opts: dict[str, str] = dict(board.delegate_options)
    for item in delegate_options:
        k, sep, v = item.partition("=")
        if not sep or not k:
            raise RemoteError(f"--delegate-option '{item}' is not KEY=VALUE")
        opts[k] = v
    thr = list(threads) if threads else [board.threads or 1]
    xnn = _bools(sweeps.get("litert.xnnpack", ["on"]))
    if runtime and runtime not in REMOTE_RUNTIMES and runtime not in ("tflite", "onnxruntime"):
        raise RemoteError(
            f"runtime '{runtime}' cannot run on a board",
            f"choose from {', '.join(REMOTE_RUNTIMES)}",
        )
    specs = plan_remote_runs(
        model,
        runtime,
        thr,
        xnnpack=xnn,
        opt_level=list(sweeps.get("ort.opt_level", ["all"])),
        delegate=delegate or board.delegate,
        delegate_options=opts,
        **{k: v for k, v in common.items() if k != "raw_profile_dir"},
    )
    return board, specs, target or board.target


def failure_lines(report: BenchReport) -> list[str]:
    """One stderr line per failed run of a remote report."""
    where = report.environment.get("remote", {})
    board = where.get("board") or where.get("host") or "the board"
    out = []
    for r in report.failed:
        line = f"run on {board} {r.status}: {r.spec.label}"
        if r.phase:
            line += f" during {r.phase}"
        line += f": {r.error}"
        if r.status in ("crashed", "timeout") and r.stderr_tail:
            line += f" | stderr: {r.stderr_tail[-1]}"
        out.append(line)
    return out
