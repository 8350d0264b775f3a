"""Run untrusted model content in a long-lived forked worker, with time and memory limits.

A model file comes from a stranger. Whatever *executes* its content -- ONNX's
C++ shape inference and reference evaluator -- can crash (a mutated graph is a
SIGSEGV in ONNX's shape inference), loop (a regular expression that backtracks
for ever) or allocate without bound (a 33 KB file whose constant folding asks
for 5 GB). :func:`call_worker` sends such a step (a ``"module:function"`` name,
JSON arguments and bytes) to a worker process forked at the first call, with
the parent's modules already imported, and forked again after one dies; the
answer is JSON. A crash, a hang or a runaway allocation becomes an
:class:`~infercast.isolation.IsolatedError` the caller turns into one clear
line (or a fallback), never the death of the calling process.

This is the fast counterpart of :func:`infercast.isolation.run_isolated`
(a fresh ``python`` per call, for runtimes such as LiteRT that run a whole
model): every ONNX file is read through here, so a call costs 0.2 ms, not a
Python start or a fork (a fork costs time in proportion to the parent's memory:
20 ms for the CLI, 100 ms and more for a process holding many graphs).

Limits (:class:`WorkerLimits`):

* ``time_s``: wall clock per call; the worker is killed with SIGKILL past it;
* ``memory_bytes``: added to the address space the worker starts with and set
  as its ``RLIMIT_AS`` (never above a limit the parent already has);
* no core files.

The worker's stdout goes to ``/dev/null`` and its stderr to a file the parent
reads only to quote the last lines in an error: chatter never reaches the
terminal. Only JSON crosses back (no pickle): a compromised worker cannot hand
the parent an object that runs code when loaded.

Where ``os.fork`` does not exist the function runs in the calling process, with
no limits.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import select
import signal
import struct
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO

from infercast.isolation import IsolatedError

__all__ = ["IsolatedError", "WorkerLimits", "call_worker"]


@dataclass(frozen=True)
class WorkerLimits:
    """Limits of one call to the worker."""

    time_s: float = 10.0
    memory_bytes: int = 1 << 30
    """Address space the worker may add to what it shares with the parent at the fork."""


# --------------------------------------------------------------------------- #
# Shared by both ways
# --------------------------------------------------------------------------- #


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


def _fork() -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads (3.12+)
        return os.fork()


def _limit_child(memory_bytes: int, base: int, err_fd: int) -> None:  # pragma: no cover
    """In a new child: its address-space limit, no core files, quiet file descriptors."""
    import faulthandler
    import resource

    faulthandler.disable()  # a crash is the parent's to report, on its one line
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    mem = base + memory_bytes
    for cap in (soft, hard):
        if cap != resource.RLIM_INFINITY:
            mem = min(mem, cap)
    resource.setrlimit(resource.RLIMIT_AS, (mem, hard))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    _die_with_parent()
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 1)
    os.dup2(err_fd, 2)


def _die_with_parent() -> None:  # pragma: no cover - runs in a child
    """Linux: SIGKILL this process when its parent dies (Ctrl-C, a kill at a time bound),
    so no computation on a stranger's model outlives the command that started it."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _cpu_budget(seconds: float) -> None:  # pragma: no cover - runs in the worker
    """The next call may use ``seconds`` of CPU more than the worker has used so far."""
    import resource

    used = resource.getrusage(resource.RUSAGE_SELF)
    soft = int(used.ru_utime + used.ru_stime + seconds) + 2
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:  # a limit set from outside (ulimit -t) stays
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def _answer(fn: Callable[..., Any], args: tuple[Any, ...]) -> bytes:  # pragma: no cover
    try:
        reply = {"ok": True, "result": fn(*args)}
    except BaseException as exc:  # every failure becomes an answer
        reply = {"ok": False, "type": type(exc).__name__, "error": str(exc)[:2000]}
    try:
        return json.dumps(reply, allow_nan=False).encode()
    except (TypeError, ValueError) as exc:
        return json.dumps({"ok": False, "type": "TypeError", "error": str(exc)}).encode()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_until(fd: int, n: int | None, deadline: float) -> tuple[bytes, bool]:
    """``n`` bytes (all until EOF when None) from ``fd``; (data, timed out)."""
    chunks: list[bytes] = []
    got = 0
    while n is None or got < n:
        left = deadline - time.monotonic()
        if left <= 0:
            return b"".join(chunks), True
        ready, _, _ = select.select([fd], [], [], None if left == float("inf") else left)
        if not ready:
            continue
        chunk = os.read(fd, 1 << 16 if n is None else min(1 << 16, n - got))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks), False


def _tail(err: BinaryIO) -> str:
    err.seek(0)
    return _one_line(err.read(1 << 16).decode("utf-8", "replace"))


def _decode(raw: bytes, status: int | None, tail: str, limits: WorkerLimits, what: str) -> Any:
    """The result in ``raw``, or the :class:`IsolatedError` that says why there is none."""
    answer: Any = None
    with contextlib.suppress(ValueError):
        answer = json.loads(raw)
    if isinstance(answer, dict) and answer.get("ok") is True:
        return answer.get("result")
    budget = f"{limits.memory_bytes / (1 << 30):g} GiB"
    if isinstance(answer, dict):
        etype = str(answer.get("type", ""))
        if etype == "MemoryError":
            raise IsolatedError(f"{what} needed more than its {budget} of memory", "memory", etype)
        msg = _one_line(str(answer.get("error", "")), last=False) or etype
        raise IsolatedError(f"{what} failed: {msg}", "failed", etype)
    if status is not None and os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        kind = "memory" if sig == signal.SIGABRT and "alloc" in tail else "crashed"
        raise IsolatedError(f"{what} crashed ({name}){': ' + tail if tail else ''}", kind)
    code = os.WEXITSTATUS(status) if status is not None and os.WIFEXITED(status) else "?"
    raise IsolatedError(
        f"{what} ended without a result (exit {code}; memory limit {budget})"
        + (f": {tail}" if tail else ""),
        "crashed",
    )


# --------------------------------------------------------------------------- #
# A long-lived worker
# --------------------------------------------------------------------------- #

_HEADER = struct.Struct("<QQ")
"""Request: JSON length, blob length; answer: JSON length, 0."""
_CALLS_PER_WORKER = 2000
"""A worker is replaced after this many calls (memory it fragmented is returned)."""


def _serve(rfd: int, wfd: int, err_fd: int) -> None:  # pragma: no cover - the worker
    while True:
        head, _ = _read_until(rfd, _HEADER.size, float("inf"))
        if len(head) < _HEADER.size:
            return
        n_json, n_blob = _HEADER.unpack(head)
        req = json.loads(_read_until(rfd, n_json, float("inf"))[0])
        blob = _read_until(rfd, n_blob, float("inf"))[0] if n_blob else None
        os.ftruncate(err_fd, 0)
        os.lseek(err_fd, 0, os.SEEK_SET)
        _cpu_budget(float(req.get("time_s", 60.0)))
        module, _, name = str(req["target"]).partition(":")
        try:
            fn = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            data = json.dumps({"ok": False, "type": type(exc).__name__, "error": str(exc)})
            out = data.encode()
        else:
            args = list(req["args"]) + ([blob] if blob is not None else [])
            out = _answer(fn, tuple(args))
        _write_all(wfd, _HEADER.pack(len(out), 0) + out)


class _Worker:
    def __init__(self, limits: WorkerLimits) -> None:
        self.limits = limits
        self.err = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the worker
        to_child, self.to_w = os.pipe()
        self.from_w, to_parent = os.pipe()
        base = _address_space()
        self.pid = _fork()
        if self.pid == 0:  # pragma: no cover - the worker
            code = 0
            try:
                os.close(self.to_w)
                os.close(self.from_w)
                _limit_child(limits.memory_bytes, base, self.err.fileno())
                null = os.open(os.devnull, os.O_RDONLY)
                os.dup2(null, 0)
                _serve(to_child, to_parent, self.err.fileno())
            except BaseException:
                code = 70
            os._exit(code)
        os.close(to_child)
        os.close(to_parent)
        self.calls = 0

    def call(self, target: str, args: list[Any], blob: bytes | None, what: str) -> Any:
        call = {"target": target, "args": args, "time_s": self.limits.time_s}
        req = json.dumps(call).encode()
        deadline = time.monotonic() + self.limits.time_s
        self.calls += 1
        try:
            _write_all(self.to_w, _HEADER.pack(len(req), len(blob or b"")) + req + (blob or b""))
            head, timed_out = _read_until(self.from_w, _HEADER.size, deadline)
            raw = b""
            if not timed_out and len(head) == _HEADER.size:
                n, _ = _HEADER.unpack(head)
                raw, timed_out = _read_until(self.from_w, n, deadline)
        except OSError:  # the worker died while we wrote (a broken pipe)
            head, raw, timed_out = b"", b"", False
        if timed_out:
            self.close(kill=True)
            raise IsolatedError(f"{what} did not finish within {self.limits.time_s:g} s", "timeout")
        if len(head) < _HEADER.size or not raw:
            status = self.close(kill=True)  # a zombie keeps the status it died with
            return _decode(b"", status, _tail(self.err), self.limits, what)
        return _decode(raw, None, _tail(self.err), self.limits, what)

    def close(self, *, kill: bool) -> int | None:
        """Stop the worker; its wait status (None if it was still running)."""
        for fd in (self.to_w, self.from_w):
            with contextlib.suppress(OSError):
                os.close(fd)
        if kill:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        _, status = os.waitpid(self.pid, 0)
        self.pid = 0
        return status

    @property
    def alive(self) -> bool:
        return self.pid != 0 and self.calls < _CALLS_PER_WORKER


_WORKERS: dict[WorkerLimits, _Worker] = {}
_OWNER = 0


def _shutdown() -> None:
    for w in list(_WORKERS.values()):
        if w.pid and os.getpid() == _OWNER:
            w.close(kill=True)
    _WORKERS.clear()


atexit.register(_shutdown)


def call_worker(
    target: str,
    *args: Any,
    blob: bytes | None = None,
    limits: WorkerLimits | None = None,
    what: str = "the sandboxed step",
) -> Any:
    """``target(*args, blob)`` (``"module:function"``; ``blob`` appended when given)
    computed by the long-lived worker of ``limits``; arguments and value are JSON.

    Raises :class:`IsolatedError` when no result comes back (the worker is then
    replaced at the next call).
    """
    global _OWNER
    limits = limits or WorkerLimits()
    if not hasattr(os, "fork"):  # pragma: no cover - not POSIX
        module, _, name = target.partition(":")
        fn = getattr(importlib.import_module(module), name)
        return fn(*args, *([blob] if blob is not None else []))
    if os.getpid() != _OWNER:  # a forked copy of a process that had workers: not ours
        _WORKERS.clear()
        _OWNER = os.getpid()
    worker = _WORKERS.get(limits)
    if worker is None or not worker.alive:
        if worker is not None and worker.pid:
            worker.close(kill=True)
        worker = _WORKERS[limits] = _Worker(limits)
    try:
        return worker.call(target, list(args), blob, what)
    finally:
        if not worker.pid:
            _WORKERS.pop(limits, None)
