"""Benchmark a model on a board over SSH: the same protocol as a local run, on the board's
runtime, reported as a local run is (``infercast.bench/1``).

One ``ssh`` session per command (the system's OpenSSH client: your
``~/.ssh/config``, agent and known hosts; ``BatchMode=yes`` so it never
prompts; ``ConnectTimeout``; ``ServerAliveInterval`` so a dead link is noticed):

1. the remote shell checks the board's Python (``--remote-python``) and runs
   :data:`BOOT` with it;
2. the files travel on the session's standard input -- a JSON manifest line,
   then each file's bytes: the runner modules (:data:`SHIPPED`, as a package
   :data:`PACKAGE`), the model, ``.npy`` inputs and, for a TFLite profile, the
   single-op sub-models cut here -- into a fresh ``mkdtemp`` folder;
3. :mod:`infercast.bench.remote_supervisor` runs each run in its own process
   group with its timeout and sends back JSON lines (board environment,
   progress, results with raw profiles), then deletes the folder;
4. here, the results become :class:`~infercast.bench.harness.RunResult`\\ s, the
   raw profiles are read with the same code as local ones, and
   :func:`infercast.bench.assemble` joins them with the static cost.

Why files go on stdin rather than by ``scp``: one connection (one
authentication) instead of three or four; no dependence on the board's SFTP
server (OpenSSH >= 9 ``scp`` speaks SFTP; Dropbear boards have none); and the
end of that stdin is how the board learns the host went away, so it can kill
the run and delete its folder.

A run that could not start (address, boards file, ssh refused or unreachable,
no Python on the board) raises :class:`RemoteError` (exit 2); a run that
started and failed (runtime missing on the board, crashed, timed out, link
lost) is a failed :class:`RunResult` (exit 3), as locally.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shlex
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from infercast.bench import BenchReport, assemble, model_format
from infercast.bench.harness import Events, RunResult, RunSpec, _from_message, read_worker_output
from infercast.bench.remote_boards import Board, RemoteError
from infercast.errors import InfercastError

if TYPE_CHECKING:
    from infercast.analysis.cost import Analysis

__all__ = [
    "BOOT",
    "PACKAGE",
    "REMOTE_RUNTIMES",
    "SHIPPED",
    "Board",
    "RemoteError",
    "bench_remote",
    "plan_remote_runs",
    "run_remote",
    "ssh_command",
]

SSH_ENV = "INFERCAST_SSH"
"""The ssh command to run, split like a shell would (default ``ssh``), as git's
``GIT_SSH_COMMAND``: e.g. ``ssh -F ./ssh_config``."""

PACKAGE = "infercast_runner"
"""The package name the shipped modules get in the board's temporary folder."""

SHIPPED = (
    "env.py",
    "inputgen.py",
    "opcuts.py",
    "ort_session.py",
    "protocol.py",
    "remote_runner.py",
    "remote_supervisor.py",
    "stats.py",
    "tflite_session.py",
    "timing.py",
)
"""Modules of :mod:`infercast.bench` copied to the board as they are (standard library,
numpy and the board's runtime only; Python 3.8 syntax; relative imports among themselves
-- tests check all three)."""

REMOTE_RUNTIMES = {"litert": "tflite", "tflite_runtime": "tflite", "ort": "onnx"}
"""Runtimes a board can run, and the model format each takes."""

NO_PYTHON = "infercast-remote: no-python"
OLD_PYTHON = "infercast-remote: python-too-old"

BOOT = f"""\
import sys, os, json, shutil, signal, tempfile
def _stop(num, frame):
    sys.exit(128 + num)
for _s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
    signal.signal(_s, _stop)
if sys.version_info < (3, 8):
    sys.stderr.write("{OLD_PYTHON} %d.%d\\n" % sys.version_info[:2])
    sys.exit(126)
_r = sys.stdin.buffer
_m = json.loads(_r.readline().decode("utf-8"))
_d = tempfile.mkdtemp(prefix="infercast-bench-")
_rc = 3
try:
    for _name, _size in _m["files"]:
        _p = os.path.join(_d, _name)
        os.makedirs(os.path.dirname(_p), exist_ok=True)
        with open(_p, "wb") as _f:
            _left = _size
            while _left:
                _b = _r.read(min(_left, 1 << 20))
                if not _b:
                    sys.exit("infercast-remote: the transfer ended early")
                _f.write(_b)
                _left -= len(_b)
    sys.path.insert(0, _d)
    from {PACKAGE}.remote_supervisor import main
    _rc = main(_d, _m)
finally:
    shutil.rmtree(_d, ignore_errors=True)
sys.exit(_rc)
"""
"""The bootstrap the board's Python runs (``python -c``): receive the files into a
``mkdtemp`` folder, hand over to the supervisor, delete the folder whatever happens
(SIGTERM, SIGHUP and SIGINT included)."""


def ssh_command(board: Board, remote_command: str, connect_timeout_s: float = 15.0) -> list[str]:
    """The ssh argument vector for one non-interactive session on ``board``."""
    base = shlex.split(os.environ.get(SSH_ENV) or "ssh")
    args = [
        *base,
        "-T",
        "-o",
        "BatchMode=yes",
        "-o",
        f"ConnectTimeout={max(1, round(connect_timeout_s))}",
        "-o",
        "ServerAliveInterval=5",
        "-o",
        "ServerAliveCountMax=3",
        "-o",
        "LogLevel=ERROR",
    ]
    if board.port:
        args += ["-p", str(board.port)]
    if board.user:
        args += ["-l", board.user]
    if board.key:
        args += ["-i", board.key, "-o", "IdentitiesOnly=yes"]
    args += list(board.ssh_options)
    return [*args, "--", board.host, remote_command]


def remote_command(python: str) -> str:
    """The command line the board's login shell runs: find Python, start :data:`BOOT`."""
    script = (
        f"PY={shlex.quote(python)}; "
        'if command -v "$PY" >/dev/null 2>&1; then exec "$PY" -c '
        + shlex.quote(BOOT)
        + f"; fi; echo '{NO_PYTHON}' >&2; exit 127"
    )
    return "sh -c " + shlex.quote(script)


def plan_remote_runs(
    model: str | Path,
    runtime: str | None = None,
    threads: Sequence[int | None] = (1,),
    *,
    xnnpack: Sequence[bool] = (True,),
    opt_level: Sequence[str] = ("all",),
    delegate: str | None = None,
    delegate_options: Mapping[str, str] | None = None,
    **common: Any,
) -> list[RunSpec]:
    """One :class:`RunSpec` per thread count (x XNNPACK on/off, x ORT level) for a board."""
    fmt = model_format(model)
    name = runtime or ("litert" if fmt == "tflite" else "ort")
    name = {"tflite": "litert", "onnxruntime": "ort"}.get(name, name)
    if name not in REMOTE_RUNTIMES:
        raise RemoteError(
            f"unknown board runtime '{runtime}'", f"choose from {', '.join(REMOTE_RUNTIMES)}"
        )
    if REMOTE_RUNTIMES[name] != fmt:
        raise RemoteError(
            f"runtime '{name}' runs {REMOTE_RUNTIMES[name]} models; {Path(model).name} is {fmt}",
            f"for a .{fmt} model use --runtime {'litert' if fmt == 'tflite' else 'ort'}",
        )
    if delegate and fmt != "tflite":
        raise RemoteError("--delegate applies to TFLite runtimes (litert, tflite_runtime)")
    specs: list[RunSpec] = []
    variants: list[dict[str, Any]]
    if fmt == "tflite":
        variants = [{"xnnpack": bool(x)} for x in xnnpack]
    else:
        from infercast.bench.ort_session import OPT_LEVELS

        for lvl in opt_level:
            if lvl not in OPT_LEVELS:
                raise RemoteError(f"ORT opt_level '{lvl}' is not one of {', '.join(OPT_LEVELS)}")
        variants = [{"opt_level": lvl} for lvl in opt_level]
    for opts in variants:
        if delegate:
            opts["delegate"] = delegate
            if delegate_options:
                opts["delegate_options"] = dict(delegate_options)
        for thr in threads:
            specs.append(RunSpec(str(model), name, thr, dict(opts), **common))
    return specs


# --------------------------------------------------------------------------- #
# The session
# --------------------------------------------------------------------------- #


Files = list[tuple[str, Path | bytes]]


def _bundle(specs: Sequence[RunSpec]) -> tuple[Files, list[dict[str, Any]]]:
    """Files to send (name on the board, content) and the runs' specs as the board sees them."""
    here = Path(__file__).resolve().parent
    files: Files = [(f"{PACKAGE}/__init__.py", b"")]
    files += [(f"{PACKAGE}/{m}", here / m) for m in SHIPPED]
    model = Path(specs[0].model)
    files.append((f"model/{model.name}", model))
    cuts: list[list[Any]] = []
    if any(s.profile and REMOTE_RUNTIMES.get(s.runtime) == "tflite" for s in specs):
        from infercast.bench.runtimes.litert_ops import cut_single_ops, relu_model

        for i, name, blob in cut_single_ops(model.read_bytes()):
            rel = f"cuts/op{i}.tflite" if blob is not None else None
            if blob is not None and rel is not None:
                files.append((rel, blob))
            cuts.append([i, name, rel])
        files.append(("cuts/relu.tflite", relu_model()))
    inputs: dict[str, str] = {}
    for k, (name, path) in enumerate(sorted(specs[0].input_files.items())):
        inputs[name] = f"inputs/{k}.npy"
        files.append((inputs[name], Path(path)))
    runs = []
    for s in specs:
        runs.append(
            {
                "model": f"model/{model.name}",
                "runtime": s.runtime,
                "threads": s.threads,
                "options": dict(s.options),
                "input_shapes": {k: list(v) for k, v in s.input_shapes.items()},
                "input_files": inputs,
                "seed": s.seed,
                "timing": s.timing.to_dict(),
                "keep_samples": s.keep_samples,
                "profile": s.profile,
                "profile_runs": s.profile_runs,
                "cuts": cuts,
                "relu": "cuts/relu.tflite",
                "timeout_s": s.timeout_s,
            }
        )
    return files, runs


def _size(content: Path | bytes) -> int:
    return len(content) if isinstance(content, bytes) else content.stat().st_size


def _ssh_failure(board: Board, rc: int, tail: Sequence[str], connect_timeout_s: float) -> str:
    """One line saying why ssh gave up (exit 255), with what to do."""
    where = f"{board.label}"
    last = next((ln for ln in reversed(tail) if ln.strip()), "").strip()
    low = last.lower()
    if "connection refused" in low:
        return (
            f"cannot reach {where}: connection refused "
            f"(is sshd running there, on port {board.port or 22}?)"
        )
    if "timed out" in low:
        return f"cannot reach {where}: no answer within {connect_timeout_s:g} s ({last})"
    if "could not resolve" in low or "no route" in low or "unreachable" in low:
        return f"cannot reach {where}: {last}"
    if "permission denied" in low or "too many authentication failures" in low:
        key = f"key {board.key}" if board.key else "your ssh keys / agent"
        return (
            f"{where} refused the login ({last}): check the user and {key} "
            "(the board's authorized_keys); infercast never asks for a password"
        )
    if "host key verification failed" in low or "host key" in low:
        return (
            f"{where}: the board's host key is unknown or has changed ({last}); "
            "connect once with ssh to check and accept it"
        )
    return f"ssh to {where} failed (exit {rc}): {last or 'no message'}"


def _profile_of(raw: Mapping[str, Any]) -> Any:
    """The :class:`Profile` of a board's raw profile (the local readers)."""
    if raw.get("kind") == "ort":
        from infercast.bench.profiles.ort import parse_ort_events

        data = json.loads(str(raw["json"]))
        return parse_ort_events(data, skip_runs=1, where="board ORT profile")
    from infercast.bench.runtimes.litert_ops import profile_from_times

    return profile_from_times(dict(raw["times"]))


def _result(spec: RunSpec, msg: dict[str, Any]) -> RunResult:
    tail = tuple(str(x) for x in msg.get("stderr_tail") or ())
    rc = msg.get("returncode")
    res = _from_message(spec, msg, rc if isinstance(rc, int) else 0, tail, 0.0)
    res = replace(res, wall_s=float(msg.get("wall_s") or 0.0), returncode=rc)
    raw = msg.get("profile_raw")
    if isinstance(raw, dict):
        try:
            res = replace(res, profile=_profile_of(raw))
        except (InfercastError, KeyError, TypeError, ValueError) as exc:
            res = replace(res, profile_error=f"the board's profile cannot be read: {exc}")
    return res


def _collect(
    events: Events,
    deadline: float,
    run_budget_s: float,
    specs: Sequence[RunSpec],
    on_progress: Callable[[int, RunSpec, str, float], None] | None,
) -> tuple[dict[str, Any] | None, dict[int, dict[str, Any]], dict[str, Any] | None, bool, float]:
    """Read the board's events until ``done``, the end of the stream or the deadline (which
    becomes ``run_budget_s`` from the board's hello)."""
    env: dict[str, Any] | None = None
    results: dict[int, dict[str, Any]] = {}
    done: dict[str, Any] | None = None
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return env, results, done, True, deadline
        try:
            msg = events.get(timeout=min(left, 0.25))
        except queue.Empty:
            continue
        if msg is None:
            break
        kind = msg.get("event")
        if kind == "hello":
            env = dict(msg.get("environment") or {})
            env["folder"] = msg.get("folder")
            deadline = time.monotonic() + run_budget_s
        elif kind == "progress" and on_progress is not None:
            i = int(msg.get("run", 0))
            on_progress(i, specs[i], str(msg.get("phase", "")), float(msg.get("done", 0.0)))
        elif kind == "result":
            results[int(msg.get("run", len(results)))] = msg
        elif kind == "done":
            done = msg
            break
    return env, results, done, False, deadline


def run_remote(
    specs: Sequence[RunSpec],
    board: Board,
    *,
    timeout_s: float = 600.0,
    connect_timeout_s: float = 15.0,
    on_progress: Callable[[int, RunSpec, str, float], None] | None = None,
) -> tuple[dict[str, Any], list[RunResult], list[str]]:
    """Run ``specs`` (one model) on ``board``: its environment, the results, notes.

    Raises :class:`RemoteError` when nothing could run (see the module doc).
    """
    if not specs:
        raise InfercastError("nothing to run")
    files, runs = _bundle(specs)
    manifest = {
        "pkg": PACKAGE,
        "files": [[name, _size(c)] for name, c in files],
        "runs": runs,
        "timeout_s": timeout_s,
        "delegates": sorted({str(s.options["delegate"]) for s in specs if "delegate" in s.options}),
    }
    total_bytes = sum(_size(c) for _, c in files)
    cmd = ssh_command(board, remote_command(board.python), connect_timeout_s)
    try:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except OSError as exc:
        raise RemoteError(
            f"cannot run ssh ({cmd[0]}: {exc.strerror})",
            "install the OpenSSH client, or set INFERCAST_SSH to the ssh command to use",
        ) from None
    events: Events = queue.Queue()
    tail: deque[str] = deque(maxlen=40)
    sent = threading.Event()

    def write() -> None:
        assert proc.stdin is not None
        try:
            proc.stdin.write((json.dumps(manifest) + "\n").encode())
            for _, content in files:
                if isinstance(content, bytes):
                    proc.stdin.write(content)
                    continue
                with content.open("rb") as fh:
                    while block := fh.read(1 << 20):
                        proc.stdin.write(block)
            proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass
        sent.set()  # stdin stays open: its end tells the board the host has gone

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    threads = [writer, *read_worker_output(proc, events, tail)]
    start = time.monotonic()
    # Before the board says hello: connecting and sending, at >= 100 kB/s plus a minute.
    deadline = start + connect_timeout_s + total_bytes / 100e3 + 60.0
    per_run = [float(r["timeout_s"]) if r["timeout_s"] is not None else timeout_s for r in runs]
    try:
        env, results, done, host_timeout, deadline = _collect(
            events, deadline, sum(per_run) + 10.0 * len(runs) + 30.0, specs, on_progress
        )
    except BaseException:
        proc.kill()  # Ctrl-C: the board sees its stdin end and cleans up
        raise
    # Closing stdin ends the board's side if it is still there; then ssh itself.
    if proc.stdin is not None:
        with contextlib.suppress(OSError, ValueError):
            proc.stdin.close()
    try:
        rc = proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = proc.wait()
    for t in threads[1:]:
        t.join(timeout=2)
    if env is None:
        text = "\n".join(tail)
        if host_timeout:
            raise RemoteError(
                f"{board.label}: the runner did not start within "
                f"{deadline - start:.0f} s (connecting and copying {total_bytes} bytes)"
            )
        if NO_PYTHON in text:
            raise RemoteError(
                f"no Python '{board.python}' on {board.label}",
                "give the board's interpreter with --remote-python PATH (or python = in "
                "boards.toml); it needs Python >= 3.8 with numpy and the runtime",
            )
        if OLD_PYTHON in text:
            ver = text.split(OLD_PYTHON, 1)[1].split()[0]
            raise RemoteError(
                f"Python {ver} at '{board.python}' on {board.label} is older than 3.8"
            )
        if rc == 255:
            raise RemoteError(_ssh_failure(board, rc, tail, connect_timeout_s))
        last = tail[-1] if tail else "no message"
        raise RemoteError(
            f"the runner did not start on {board.label} with '{board.python}' (exit {rc}): {last}"
        )
    out: list[RunResult] = []
    for i, spec in enumerate(specs):
        if i in results:
            out.append(_result(spec, results[i]))
            continue
        why = (
            "the host's deadline passed"
            if host_timeout
            else f"the connection to the board ended (ssh exit {rc}"
            + (f": {tail[-1]}" if tail else "")
            + ")"
        )
        out.append(
            RunResult(
                spec,
                "timeout" if host_timeout else "crashed",
                error=f"no result from {board.label}: {why}",
                returncode=rc,
                stderr_tail=tuple(tail),
            )
        )
    notes = []
    if done is None or not done.get("removed"):
        notes.append(
            f"{board.label} did not confirm that its temporary folder "
            f"{env.get('folder') or 'infercast-bench-*'} was removed"
        )
    return env, out, notes


def bench_remote(
    specs: Sequence[RunSpec],
    board: Board,
    *,
    timeout_s: float = 600.0,
    connect_timeout_s: float = 15.0,
    peak_for: Callable[[RunSpec], float | None] | None = None,
    on_progress: Callable[[int, RunSpec, str, float], None] | None = None,
    analysis: Analysis | None = None,
    notes: Sequence[str] = (),
) -> BenchReport:
    """:func:`run_remote`, then the report of a local run (profiles joined with
    ``analysis``, the model's static cost): the board's environment (CPU,
    OS, Python, numpy, runtime versions, delegate libraries, the board and its target)."""
    env, results, remote_notes = run_remote(
        specs,
        board,
        timeout_s=timeout_s,
        connect_timeout_s=connect_timeout_s,
        on_progress=on_progress,
    )
    versions: dict[str, str] = {}
    for r in results:
        versions.update(r.versions)
    env["runtime_versions"] = versions
    env["remote"] = board.to_dict()
    return assemble(
        specs,
        results,
        env,
        timeout_s,
        peak_for=peak_for,
        analysis=analysis,
        notes=(*notes, *remote_notes),
    )
