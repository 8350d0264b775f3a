"""Run untrusted model content in a child process, with time and memory limits.

A model file comes from a stranger. Whatever *executes* its content -- ONNX's
C++ shape inference and reference evaluator, LiteRT's ``allocate_tensors`` /
``invoke`` -- can crash (a mutated ONNX graph is a SIGSEGV in ONNX's shape
inference, a filter index of -1 one in LiteRT), loop (a regular expression that
backtracks for ever) or allocate without bound (a 33 KB file whose constant
folding asks for 5 GB). Such a step is a ``"module:function"`` name, JSON
arguments and optional bytes, computed in a child; a crash, a hang or a runaway
allocation becomes an :class:`IsolatedError` the caller turns into one clear
line (or a fallback), never the death of the calling process.

One mechanism, two ways to start the child (both speak the same protocol, over
a pipe, and run under the same limits):

* :func:`call_worker`: a long-lived worker forked at the first call, with the
  parent's modules already imported, and forked again after one dies. Every
  ONNX file is read through here, so a call costs 0.2 ms, not a Python start
  (0.5 s) or a fork per call (20 ms for the CLI, 100 ms and more for a process
  holding many graphs). For code that starts no threads of its own.
* :func:`run_isolated`: a fresh ``python -m infercast.isolation`` for one call,
  for runtimes such as LiteRT and ONNX Runtime that own thread pools (a forked
  copy of a process whose runtime has threads can deadlock).

Limits (:class:`Limits`), checked by the parent and the child's kernel:

* ``timeout_s``: wall clock per call; the child (its process group, for a fresh
  one) is killed with SIGKILL past it;
* ``memory_bytes``: added to the address space the child starts with (what it
  shares with the parent at a fork; nothing for a fresh interpreter) and set as
  its ``RLIMIT_AS``, never above a limit the parent already has;
* ``cpu_s``: CPU seconds per call (``RLIMIT_CPU``, a hard limit set from outside
  stays);
* no core files, and the child is killed when its parent dies (PR_SET_PDEATHSIG):
  nothing computed on a stranger's model outlives the command that started it.

The child's stdout and stderr go to a file the parent reads only to quote the
last lines in an error: runtime chatter never reaches the terminal. Only JSON
crosses back (no pickle): a compromised child cannot hand the parent an object
that runs code when loaded.

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
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

from infercast.errors import InfercastError

__all__ = ["IsolatedError", "Limits", "call_worker", "run_isolated"]


@dataclass(frozen=True)
class Limits:
    """Limits of one isolated call."""

    timeout_s: float = 120.0
    memory_bytes: int | None = 8 << 30
    """Address space the child may add to what it starts with (virtual memory, not
    resident: runtimes reserve far more than they touch, so this is a backstop
    against runaway allocation, not a measure of use). None: no limit."""
    cpu_s: float | None = None
    """CPU seconds per call. None: no limit but the wall clock."""


class IsolatedError(InfercastError):
    """The isolated call did not return a result.

    ``kind``: ``timeout`` | ``memory`` | ``crashed`` | ``failed`` (the function
    raised; ``error_type`` names the exception).
    """

    def __init__(self, message: str, kind: str, error_type: str = "", hint: str = "") -> None:
        super().__init__(message, hint)
        self.kind = kind
        self.error_type = error_type


# --------------------------------------------------------------------------- #
# The child's side
# --------------------------------------------------------------------------- #


def _address_space() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _set_limits(memory_bytes: int | None, base: int) -> None:  # pragma: no cover - a child
    """In a new child: its address-space limit, no core files, death with its parent."""
    import resource

    if memory_bytes is not None:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        mem = base + memory_bytes
        for cap in (soft, hard):  # raising a hard limit fails (`prlimit --as` on the command)
            if cap != resource.RLIM_INFINITY:
                mem = min(mem, cap)
        resource.setrlimit(resource.RLIMIT_AS, (mem, hard))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    with contextlib.suppress(Exception):  # Linux: SIGKILL when the parent dies
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _cpu_budget(seconds: float) -> None:  # pragma: no cover - runs in the child
    """The next call may use ``seconds`` of CPU more than the child has used so far."""
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


_HEADER = struct.Struct("<QQ")
"""Request: JSON length, blob length; answer: JSON length, 0."""


def _serve(rfd: int, wfd: int, err_fd: int) -> None:  # pragma: no cover - the child
    """Answer requests on ``rfd`` until it is closed."""
    while True:
        head, _ = _read_until(rfd, _HEADER.size, float("inf"))
        if len(head) < _HEADER.size:
            return
        n_json, n_blob = _HEADER.unpack(head)
        req = json.loads(_read_until(rfd, n_json, float("inf"))[0])
        blob = _read_until(rfd, n_blob, float("inf"))[0] if n_blob else None
        os.ftruncate(err_fd, 0)
        os.lseek(err_fd, 0, os.SEEK_SET)
        sys.path[:0] = [p for p in req.get("path", ()) if p not in sys.path]
        if req.get("cpu_s") is not None:
            _cpu_budget(float(req["cpu_s"]))
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


# --------------------------------------------------------------------------- #
# The parent's side
# --------------------------------------------------------------------------- #


def _one_line(text: str, limit: int = 300, *, last: bool = True) -> str:
    """Non-empty lines of ``text`` (the last three, or from the first) on one line,
    without control characters or LiteRT's INFO chatter."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("INFO:")]
    joined = " ".join(lines[-3:] if last else lines)
    clean = "".join(c if c.isprintable() else " " for c in joined)
    return clean[-limit:] if last else clean[:limit]


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


def _decode(raw: bytes, status: int | None, tail: str, limits: Limits, what: str) -> Any:
    """The result in ``raw``, or the :class:`IsolatedError` that says why there is none."""
    answer: Any = None
    with contextlib.suppress(ValueError):
        answer = json.loads(raw)
    if isinstance(answer, dict) and answer.get("ok") is True:
        return answer.get("result")
    budget = f"{limits.memory_bytes / (1 << 30):g} GiB" if limits.memory_bytes is not None else "no"
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
        # SIGKILL not sent by us: the kernel's OOM killer; SIGABRT after std::bad_alloc.
        memory = sig == signal.SIGKILL or (sig == signal.SIGABRT and "alloc" in tail)
        if sig == signal.SIGXCPU:
            raise IsolatedError(f"{what} used more CPU time than it was allowed", "timeout")
        raise IsolatedError(
            f"{what} crashed ({name}){': ' + tail if tail else ''}",
            "memory" if memory else "crashed",
        )
    code = os.WEXITSTATUS(status) if status is not None and os.WIFEXITED(status) else "?"
    raise IsolatedError(
        f"{what} ended without a result (exit {code}; memory limit {budget})"
        + (f": {tail}" if tail else ""),
        "crashed",
    )


def _fork() -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads (3.12+)
        return os.fork()


_CALLS_PER_WORKER = 2000
"""A long-lived worker is replaced after this many calls (memory it fragmented is returned)."""


class _Child:
    """A child that answers requests on a pipe: forked from this process, or a fresh
    interpreter (``fresh``)."""

    def __init__(self, limits: Limits, *, fresh: bool = False, what: str = "") -> None:
        self.limits = limits
        self.err = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the child
        to_child, self.to_w = os.pipe()
        self.from_w, to_parent = os.pipe()
        self.proc: subprocess.Popen[bytes] | None = None
        self.calls = 0
        try:
            self.pid = (
                self._spawn(to_child, to_parent) if fresh else self._fork(to_child, to_parent)
            )
        except (OSError, subprocess.SubprocessError) as exc:  # no process (EAGAIN, ENOMEM)
            for fd in (self.to_w, self.from_w):
                os.close(fd)
            self.err.close()
            msg = f"{what or 'the isolated step'} could not start: {exc}"
            raise IsolatedError(msg, "crashed") from None
        finally:
            os.close(to_child)
            os.close(to_parent)

    def _spawn(self, to_child: int, to_parent: int) -> int:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(p for p in sys.path if p))
        memory_bytes = self.limits.memory_bytes
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "infercast.isolation", str(to_child), str(to_parent)],
            stdin=subprocess.DEVNULL,
            stdout=self.err,
            stderr=self.err,
            env=env,
            pass_fds=(to_child, to_parent),
            start_new_session=True,
            preexec_fn=lambda: _set_limits(memory_bytes, 0),
        )
        return self.proc.pid

    def _fork(self, to_child: int, to_parent: int) -> int:
        base = _address_space()
        pid = _fork()
        if pid != 0:
            return pid
        code = 0  # pragma: no cover - from here on, the worker
        try:
            os.close(self.to_w)
            os.close(self.from_w)
            import faulthandler

            faulthandler.disable()  # a crash is the parent's to report, on one line
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            _set_limits(self.limits.memory_bytes, base)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(self.err.fileno(), 1)
            os.dup2(self.err.fileno(), 2)
            _serve(to_child, to_parent, self.err.fileno())
        except BaseException:
            code = 70
        os._exit(code)

    def call(
        self,
        target: str,
        args: list[Any],
        blob: bytes | None,
        what: str,
        path: Sequence[str] = (),
    ) -> Any:
        request = {"target": target, "args": args, "cpu_s": self.limits.cpu_s, "path": [*path]}
        req = json.dumps(request).encode()
        deadline = time.monotonic() + self.limits.timeout_s
        self.calls += 1
        try:
            _write_all(self.to_w, _HEADER.pack(len(req), len(blob or b"")) + req + (blob or b""))
            head, timed_out = _read_until(self.from_w, _HEADER.size, deadline)
            raw = b""
            if not timed_out and len(head) == _HEADER.size:
                n, _ = _HEADER.unpack(head)
                raw, timed_out = _read_until(self.from_w, n, deadline)
        except OSError:  # the child died while we wrote (a broken pipe)
            head, raw, timed_out = b"", b"", False
        if timed_out:
            self.close(kill=True)
            raise IsolatedError(
                f"{what} did not finish within {self.limits.timeout_s:g} s and was stopped",
                "timeout",
            )
        if len(head) < _HEADER.size or not raw:
            status = self.close(kill=True)  # a zombie keeps the status it died with
            return _decode(b"", status, _tail(self.err), self.limits, what)
        return _decode(raw, None, _tail(self.err), self.limits, what)

    def close(self, *, kill: bool) -> int | None:
        """Stop the child; its wait status (None if it was still running)."""
        for fd in (self.to_w, self.from_w):
            with contextlib.suppress(OSError):
                os.close(fd)
        if kill:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if self.proc is not None:  # a fresh one leads its own process group
                    os.killpg(self.pid, signal.SIGKILL)
                else:
                    os.kill(self.pid, signal.SIGKILL)
        if self.proc is not None:
            code = self.proc.wait()
            status = (-code & 0x7F) if code < 0 else (code & 0xFF) << 8
        else:
            _, status = os.waitpid(self.pid, 0)
        self.pid = 0
        return status

    @property
    def alive(self) -> bool:
        return self.pid != 0 and self.calls < _CALLS_PER_WORKER


def _in_process(target: str, args: tuple[Any, ...]) -> Any:  # pragma: no cover - not POSIX
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)(*args)


_WORKERS: dict[Limits, _Child] = {}
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
    limits: Limits | None = None,
    what: str = "the isolated step",
) -> Any:
    """``target(*args, blob)`` (``"module:function"``; ``blob`` appended when given)
    computed by the long-lived forked worker of ``limits``; arguments and value are JSON.

    Raises :class:`IsolatedError` when no result comes back (the worker is then
    replaced at the next call).
    """
    global _OWNER
    limits = limits or Limits()
    if not hasattr(os, "fork"):  # pragma: no cover - not POSIX
        return _in_process(target, (*args, *([blob] if blob is not None else [])))
    if os.getpid() != _OWNER:  # a forked copy of a process that had workers: not ours
        _WORKERS.clear()
        _OWNER = os.getpid()
    worker = _WORKERS.get(limits)
    if worker is None or not worker.alive:
        if worker is not None and worker.pid:
            worker.close(kill=True)
        worker = _WORKERS[limits] = _Child(limits, what=what)
    try:
        return worker.call(target, list(args), blob, what)
    finally:
        if not worker.pid:
            _WORKERS.pop(limits, None)


def run_isolated(
    target: str,
    payload: Any,
    limits: Limits | None = None,
    *,
    extra_path: Sequence[str] = (),
    what: str = "the isolated worker",
) -> Any:
    """``target(payload)`` (``"module:function"``) in a fresh interpreter, for one call.

    ``payload`` and the function's return value must be JSON-serialisable.
    ``extra_path`` is put before the child's ``sys.path`` (for targets outside the
    installed package). ``what`` names the work in error messages. Raises
    :class:`IsolatedError` when no result comes back.
    """
    limits = limits or Limits()
    if not hasattr(os, "fork"):  # pragma: no cover - not POSIX
        return _in_process(target, (payload,))
    child = _Child(limits, fresh=True, what=what)
    try:
        return child.call(target, [payload], None, what, extra_path)
    finally:
        if child.pid:
            child.close(kill=True)


def _main(argv: Sequence[str]) -> int:  # pragma: no cover - a fresh child
    """``python -m infercast.isolation RFD WFD``: serve requests on the two pipe ends."""
    _serve(int(argv[0]), int(argv[1]), 2)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(_main(sys.argv[1:]))
