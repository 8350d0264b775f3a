"""The timing harness: what runs inside a worker process, and how the parent runs workers.

Timing (inside the worker): ``load_s`` is the session's creation (parsing,
graph optimisation, and for TVM the whole compilation); then
:func:`infercast.bench.timing.measure` -- first inference, warm-up, steady
state -- the same module a board runs (:mod:`infercast.bench.remote`).

Isolation (in the parent, :func:`run_isolated`): each run is a fresh
``python -m infercast.bench.worker`` in its own process group, given a JSON
spec on stdin; it writes JSON lines (progress events, then one result) on
stdout. A run that exceeds its timeout has its process group killed; one that
exits without a result (a crash, a signal) becomes a failure record with the
last lines of its stderr. Other runs carry on.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from infercast.bench.profiles.base import Profile
from infercast.bench.stats import Summary, summarize
from infercast.bench.timing import Timing, TimingConfig, measure

Progress = Callable[[str, float], None]
"""``progress(phase, fraction_done)``."""


# --------------------------------------------------------------------------- #
# Parent side
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class RunSpec:
    """One benchmark run: a model on a runtime with threads and options."""

    model: str
    runtime: str
    threads: int | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    input_shapes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    input_files: Mapping[str, str] = field(default_factory=dict)
    seed: int = 0
    timing: TimingConfig = field(default_factory=TimingConfig)
    profile: bool = False
    profile_runs: int = 20
    raw_profile_dir: str | None = None
    keep_samples: bool = True
    timeout_s: float | None = None
    """This run's timeout; None: the one given to :func:`run_isolated` / ``bench``."""

    def to_json(self) -> str:
        d = asdict(self)
        d["options"] = dict(self.options)
        d["input_shapes"] = {k: list(v) for k, v in self.input_shapes.items()}
        d["input_files"] = dict(self.input_files)
        return json.dumps(d)

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> RunSpec:
        return RunSpec(
            model=str(d["model"]),
            runtime=str(d["runtime"]),
            threads=None if d.get("threads") is None else int(d["threads"]),
            options=dict(d.get("options") or {}),
            input_shapes={
                k: tuple(int(x) for x in v) for k, v in (d.get("input_shapes") or {}).items()
            },
            input_files=dict(d.get("input_files") or {}),
            seed=int(d.get("seed", 0)),
            timing=TimingConfig(**(d.get("timing") or {})),
            profile=bool(d.get("profile", False)),
            profile_runs=int(d.get("profile_runs", 20)),
            raw_profile_dir=d.get("raw_profile_dir"),
            keep_samples=bool(d.get("keep_samples", True)),
            timeout_s=None if d.get("timeout_s") is None else float(d["timeout_s"]),
        )

    @property
    def label(self) -> str:
        opts = ",".join(f"{k}={v}" for k, v in sorted(self.options.items()))
        thr = "default" if self.threads is None else str(self.threads)
        return f"{self.runtime} threads={thr}" + (f" {opts}" if opts else "")


@dataclass(frozen=True)
class RunResult:
    spec: RunSpec
    status: str
    """``ok`` | ``failed`` (the runtime raised) | ``timeout`` | ``crashed`` (no result)."""
    error: str = ""
    phase: str = ""
    """Where a failure happened: ``load``, ``inputs``, ``first``, ``measure``, ``profile``."""
    returncode: int | None = None
    stderr_tail: tuple[str, ...] = ()
    load_s: float | None = None
    first_s: float | None = None
    warmup: Summary | None = None
    summary: Summary | None = None
    samples_s: tuple[float, ...] = ()
    inputs: tuple[dict[str, Any], ...] = ()
    versions: Mapping[str, str] = field(default_factory=dict)
    resolved_options: Mapping[str, Any] = field(default_factory=dict)
    profile: Profile | None = None
    profile_error: str = ""
    runtime_meta: Mapping[str, Any] = field(default_factory=dict)
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _worker_env() -> dict[str, str]:
    env = dict(os.environ)
    pkg_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = pkg_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return env


Events = queue.Queue[dict[str, Any] | None]
"""A worker's JSON messages, then None when its stdout closes."""


def read_worker_output(
    proc: subprocess.Popen[bytes], events: Events, tail: deque[str]
) -> tuple[threading.Thread, threading.Thread]:
    """Start two daemon threads draining a worker's pipes: every JSON object line of its
    stdout into ``events`` (None at the end; other lines are dropped), its non-empty
    stderr lines into ``tail``. Used for local workers and for the SSH session to a board."""

    def read_stdout() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            try:
                msg = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue
            if isinstance(msg, dict):
                events.put(msg)
        events.put(None)

    def read_stderr() -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip()
            if line:
                tail.append(line)

    readers = (
        threading.Thread(target=read_stdout, daemon=True),
        threading.Thread(target=read_stderr, daemon=True),
    )
    for t in readers:
        t.start()
    return readers


def run_isolated(
    spec: RunSpec,
    timeout_s: float,
    on_progress: Callable[[str, float], None] | None = None,
) -> RunResult:
    """Run ``spec`` in a worker process; every way it can end becomes a :class:`RunResult`."""
    if spec.timeout_s is not None:
        timeout_s = spec.timeout_s
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "infercast.bench.worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env=_worker_env(),
    )
    events: Events = queue.Queue()
    tail: deque[str] = deque(maxlen=40)
    t_out, t_err = read_worker_output(proc, events, tail)
    assert proc.stdin is not None
    try:
        proc.stdin.write(spec.to_json().encode())
        proc.stdin.close()
    except BrokenPipeError:
        pass
    deadline = start + timeout_s
    result: dict[str, Any] | None = None
    timed_out = False
    last = ("start", 0.0)
    while True:
        left = deadline - time.perf_counter()
        if left <= 0:
            timed_out = True
            break
        try:
            msg = events.get(timeout=min(left, 0.25))
        except queue.Empty:
            if on_progress is not None:  # a tick: lets a display appear while the worker is busy
                on_progress(last[0], last[1])
            continue
        if msg is None:
            break
        if msg.get("event") == "progress":
            last = (str(msg.get("phase", "")), float(msg.get("done", 0.0)))
            if on_progress is not None:
                on_progress(*last)
        elif msg.get("event") == "result":
            result = msg
    if timed_out:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    try:
        rc = proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        rc = proc.wait()
    t_out.join(timeout=2)
    t_err.join(timeout=2)
    wall = time.perf_counter() - start
    if timed_out:
        return RunResult(
            spec,
            "timeout",
            error=f"no result within the {timeout_s:g} s timeout; "
            "the worker's process group was killed",
            returncode=rc,
            stderr_tail=tuple(tail),
            wall_s=wall,
            phase=str(result.get("phase", "")) if result else "",
        )
    if result is None:
        how = f"killed by {_signal_name(rc)}" if rc < 0 else f"exited with code {rc}"
        return RunResult(
            spec,
            "crashed",
            error=f"the worker {how} without a result",
            returncode=rc,
            stderr_tail=tuple(tail),
            wall_s=wall,
        )
    return _from_message(spec, result, rc, tuple(tail), wall)


def _from_message(
    spec: RunSpec, msg: dict[str, Any], rc: int, tail: tuple[str, ...], wall: float
) -> RunResult:
    def summ(d: Any) -> Summary | None:
        return Summary(**d) if isinstance(d, dict) else None

    prof = msg.get("profile")
    return RunResult(
        spec=spec,
        status=str(msg.get("status", "failed")),
        error=str(msg.get("error", "")),
        phase=str(msg.get("phase", "")),
        returncode=rc,
        stderr_tail=tail if msg.get("status") != "ok" else (),
        load_s=msg.get("load_s"),
        first_s=msg.get("first_s"),
        warmup=summ(msg.get("warmup")),
        summary=summ(msg.get("summary")),
        samples_s=tuple(msg.get("samples_s") or ()),
        inputs=tuple(msg.get("inputs") or ()),
        versions=dict(msg.get("versions") or {}),
        resolved_options=dict(msg.get("options") or {}),
        profile=Profile.from_dict(prof) if isinstance(prof, dict) else None,
        profile_error=str(msg.get("profile_error", "")),
        runtime_meta=dict(msg.get("runtime_meta") or {}),
        wall_s=wall,
    )


def run_in_process(spec: RunSpec, progress: Progress | None = None) -> RunResult:
    """The worker's work in this process (no isolation): for scripts and fidelity checks."""
    from infercast.bench.worker import execute

    t0 = time.perf_counter()
    msg = execute(spec, progress)
    return _from_message(spec, msg, 0, (), time.perf_counter() - t0)


__all__ = [
    "RunResult",
    "RunSpec",
    "Timing",
    "TimingConfig",
    "measure",
    "run_in_process",
    "run_isolated",
    "summarize",
]
