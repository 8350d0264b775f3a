"""Run a function on untrusted model content in a forked child, with time and memory limits.

A model file comes from a stranger. Whatever *executes* its content -- ONNX's
C++ shape inference and reference evaluator, LiteRT's ``allocate_tensors`` --
can crash (a mutated operator index is a SIGSEGV in LiteRT), loop (a regular
expression that backtracks for ever) or allocate without bound (a 33 KB file
whose constant folding asks for 5 GB). :func:`run_forked` runs such a step in a
child made by ``fork()``: it starts in microseconds with the parent's parsed
model already in memory, sets its own limits, and hands back a JSON result; a
crash, a hang or a runaway allocation becomes a :class:`SandboxError` the
caller turns into one clear line (or a fallback), never the death of the CLI.

Limits (:class:`Limits`):

* ``time_s``: wall clock; the child is killed with SIGKILL past it;
* ``memory_bytes``: added to the parent's address space at the fork and set as
  the child's ``RLIMIT_AS`` (never above a limit the parent already has);
* no core files; ``RLIMIT_CPU`` one second past ``time_s``.

The child's stdout goes to ``/dev/null`` and its stderr to a file the parent
reads only to quote the last line in an error: runtime chatter (LiteRT's
"INFO: Created TensorFlow Lite XNNPACK delegate") never reaches the terminal.
Only JSON crosses back (no pickle): a compromised child cannot hand the parent
an object that runs code when loaded.

Where ``os.fork`` does not exist the function runs in the calling process, with
no limits.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from infercast.errors import InfercastError

__all__ = ["Limits", "SandboxError", "run_forked"]


@dataclass(frozen=True)
class Limits:
    """Limits of one sandboxed call."""

    time_s: float = 10.0
    memory_bytes: int = 1 << 30
    """Address space the child may add to what it shares with the parent at the fork."""


class SandboxError(InfercastError):
    """The sandboxed call returned no result.

    ``kind``: ``timeout`` | ``memory`` | ``crashed`` (a signal, an abort) | ``failed``
    (the function raised; ``error_type`` names the exception).
    """

    def __init__(self, message: str, kind: str, error_type: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.error_type = error_type


def _address_space() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _one_line(text: str, limit: int = 300, *, last: bool = True) -> str:
    """Non-empty lines of ``text`` (the last three, or from the first) on one line,
    without control characters or LiteRT's INFO chatter."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("INFO:")]
    joined = " ".join(lines[-3:] if last else lines)
    clean = "".join(c if c.isprintable() else " " for c in joined)
    return clean[-limit:] if last else clean[:limit]


def _child(
    fn: Callable[..., Any], args: tuple[Any, ...], limits: Limits, base: int, wfd: int, err_fd: int
) -> None:
    """In the forked child: limits, silence, the call, one JSON answer. Never returns."""
    code = 0
    try:
        import resource

        signal.signal(signal.SIGINT, signal.SIG_DFL)
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        mem = base + limits.memory_bytes
        for cap in (soft, hard):
            if cap != resource.RLIM_INFINITY:
                mem = min(mem, cap)
        resource.setrlimit(resource.RLIMIT_AS, (mem, hard))
        cpu = int(limits.time_s) + 1
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.dup2(err_fd, 2)
        try:
            reply = {"ok": True, "result": fn(*args)}
        except BaseException as exc:  # every failure becomes an answer
            reply = {"ok": False, "type": type(exc).__name__, "error": str(exc)[:2000]}
        data = json.dumps(reply, allow_nan=False).encode()
        view = memoryview(data)
        while view:
            n = os.write(wfd, view)
            view = view[n:]
    except BaseException:
        code = 70
    os._exit(code)


def _fork_and_wait(
    fn: Callable[..., Any], args: tuple[Any, ...], limits: Limits, err_fd: int
) -> tuple[int, bool, bytes]:
    """Fork, run in the child, read its answer: (wait status, timed out, answer bytes)."""
    rfd, wfd = os.pipe()
    base = _address_space()
    sys.stdout.flush()
    sys.stderr.flush()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads (3.12+)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(rfd)
        _child(fn, args, limits, base, wfd, err_fd)
    os.close(wfd)
    chunks: list[bytes] = []
    deadline = time.monotonic() + limits.time_s
    timed_out = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([rfd], [], [], left)
            if not ready:
                continue
            chunk = os.read(rfd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(rfd)
        if timed_out:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    return status, timed_out, b"".join(chunks)


def run_forked(
    fn: Callable[..., Any],
    *args: Any,
    limits: Limits | None = None,
    what: str = "the sandboxed step",
) -> Any:
    """``fn(*args)`` computed in a forked child under ``limits``; its value must be
    JSON-serialisable (tuples come back as lists). ``what`` names the work in errors.

    Raises :class:`SandboxError` when no result comes back.
    """
    limits = limits or Limits()
    if not hasattr(os, "fork"):  # pragma: no cover - not POSIX
        return json.loads(json.dumps(fn(*args)))
    with tempfile.TemporaryFile() as err:
        status, timed_out, out = _fork_and_wait(fn, args, limits, err.fileno())
        err.seek(0)
        tail = _one_line(err.read(1 << 16).decode("utf-8", "replace"))
    if timed_out:
        raise SandboxError(f"{what} did not finish within {limits.time_s:g} s", "timeout")
    answer: Any = None
    with contextlib.suppress(ValueError):
        answer = json.loads(out)
    if isinstance(answer, dict) and answer.get("ok") is True:
        return answer.get("result")
    budget = f"{limits.memory_bytes / (1 << 30):g} GiB"
    if isinstance(answer, dict):
        etype = str(answer.get("type", ""))
        if etype == "MemoryError":
            raise SandboxError(f"{what} needed more than its {budget} of memory", "memory", etype)
        msg = _one_line(str(answer.get("error", "")), last=False) or etype
        raise SandboxError(f"{what} failed: {msg}", "failed", etype)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        kind = "memory" if sig == signal.SIGABRT and "alloc" in tail else "crashed"
        raise SandboxError(f"{what} crashed ({name}){': ' + tail if tail else ''}", kind)
    raise SandboxError(
        f"{what} ended without a result (exit {os.WEXITSTATUS(status)}; memory limit "
        f"{budget}){': ' + tail if tail else ''}",
        "crashed",
    )
