"""The isolated worker (infercast.isolation, long-lived and fresh): a crash, a hang,
a memory bomb or an exception in the worker is an IsolatedError of the right kind,
and the next call gets a fresh worker; answers are JSON."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from infercast.isolation import IsolatedError, Limits, call_worker, run_isolated

FAST = Limits(timeout_s=5.0, memory_bytes=512 << 20)


def test_answers_are_json_and_the_worker_is_reused() -> None:
    assert call_worker("math:hypot", 3, 4, limits=FAST) == 5.0
    assert call_worker("json:loads", blob=b'{"a": [1, 2]}', limits=FAST) == {"a": [1, 2]}
    t0 = time.perf_counter()
    for _ in range(100):
        call_worker("math:hypot", 3, 4, limits=FAST)
    per_call = (time.perf_counter() - t0) / 100
    assert per_call < 0.05  # a pipe round trip, not a process start (~0.5 s)


@pytest.mark.parametrize(
    ("target", "args", "kind", "says"),
    [
        ("ctypes:string_at", [0], "crashed", "SIGSEGV"),
        ("os:abort", [], "crashed", "SIGABRT"),
        ("time:sleep", [30], "timeout", "did not finish within 2 s"),
        ("json:loads", ["{not json"], "failed", "Expecting property name"),
        ("no_such_module:f", [], "failed", "No module named"),
    ],
)
def test_failures_have_a_kind_and_the_next_call_works(
    target: str, args: list[object], kind: str, says: str
) -> None:
    limits = Limits(timeout_s=2.0, memory_bytes=512 << 20)
    t0 = time.perf_counter()
    with pytest.raises(IsolatedError) as exc:
        call_worker(target, *args, limits=limits, what="the step")
    assert exc.value.kind == kind
    assert says in str(exc.value) and str(exc.value).startswith("the step ")
    assert time.perf_counter() - t0 < 10
    assert call_worker("math:hypot", 6, 8, limits=limits) == 10.0  # a fresh worker


def test_memory_bomb_is_stopped_by_the_address_space_limit() -> None:
    limits = Limits(timeout_s=10.0, memory_bytes=256 << 20)
    with pytest.raises(IsolatedError) as exc:
        call_worker("os:urandom", 1 << 30, limits=limits, what="the step")  # 1 GiB
    assert exc.value.kind == "memory"
    assert "needed more than its 0.25 GiB of memory" in str(exc.value)


def test_chatter_on_stderr_never_reaches_ours(capfd: pytest.CaptureFixture[str]) -> None:
    chatter = b"INFO: Created TensorFlow Lite XNNPACK delegate for CPU.\nmore\n"
    assert call_worker("os:write", 2, blob=chatter, limits=FAST) == len(chatter)
    assert call_worker("os:write", 1, blob=chatter, limits=FAST) == len(chatter)
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_the_worker_dies_with_its_parent() -> None:
    """A command killed at its time bound (or by Ctrl-C) leaves no computation on a
    stranger's model running: the worker gets SIGKILL when its parent dies."""
    pid = os.fork()
    if pid == 0:  # a command that starts a 20-minute step
        try:
            call_worker("time:sleep", 1200, limits=Limits(timeout_s=1200))
        finally:
            os._exit(0)
    deadline = time.monotonic() + 30
    workers: list[int] = []
    while not workers and time.monotonic() < deadline:
        time.sleep(0.1)
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            workers = [int(x) for x in f.read().split()]
    assert workers, "the worker did not start"
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    state = "?"
    for _ in range(50):
        try:
            with open(f"/proc/{workers[0]}/status") as f:
                state = f.read().split("State:")[1].split()[0]
        except FileNotFoundError:
            state = "gone"
        if state in ("Z", "gone"):
            break
        time.sleep(0.1)
    assert state in ("Z", "gone"), state  # dead (a zombie until init reaps it)


@pytest.mark.parametrize(
    ("code", "printed"),
    [
        ("print(call_worker('math:hypot', 3, 4))", "5.0"),
        (
            "print(run_isolated('math:sqrt', 16.0, Limits(timeout_s=60, memory_bytes=16 << 30)))",
            "4.0",
        ),
    ],
    ids=["worker", "fresh"],
)
def test_children_run_under_inherited_cpu_and_address_space_limits(code: str, printed: str) -> None:
    """`ulimit -t` / `prlimit --as=3G` on the command: both children keep those limits
    (they may not raise a hard limit) and still answer. The fresh LiteRT child asking
    for 16 GiB under 3 GiB used to fail to start (reported as a corrupt file)."""

    def caps() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (120, 125))
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    code = "from infercast.isolation import Limits, call_worker, run_isolated\n" + code
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, preexec_fn=caps
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == printed


@pytest.mark.parametrize(
    ("target", "payload", "kind", "says"),
    [
        ("ctypes:string_at", 0, "crashed", "SIGSEGV"),
        ("time:sleep", 30, "timeout", "did not finish within 3 s"),
        ("json:loads", "{not json", "failed", "Expecting property name"),
        ("os:urandom", 3 << 30, "memory", "needed more than its 1 GiB of memory"),
        ("os:abort", None, "failed", "takes no arguments"),
    ],
)
def test_a_fresh_child_fails_the_same_ways(
    target: str, payload: object, kind: str, says: str
) -> None:
    """run_isolated (a fresh interpreter, for runtimes with threads) is the same child
    protocol under the same limits as the long-lived worker."""
    t0 = time.perf_counter()
    with pytest.raises(IsolatedError) as exc:
        run_isolated(target, payload, Limits(timeout_s=3.0, memory_bytes=1 << 30), what="the step")
    assert exc.value.kind == kind
    assert says in str(exc.value) and str(exc.value).startswith("the step ")
    assert time.perf_counter() - t0 < 15


def test_a_fresh_childs_chatter_never_reaches_ours(capfd: pytest.CaptureFixture[str]) -> None:
    chatter = "INFO: Created TensorFlow Lite XNNPACK delegate for CPU.\nmore\n"
    assert run_isolated("builtins:print", chatter) is None
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_a_child_that_cannot_start_is_an_isolated_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    before = len(os.listdir("/proc/self/fd"))
    with pytest.raises(IsolatedError) as exc:
        run_isolated("math:sqrt", 4.0, what="LiteRT")
    assert exc.value.kind == "crashed" and str(exc.value).startswith("LiteRT could not start")
    assert len(os.listdir("/proc/self/fd")) == before  # no pipe left open
