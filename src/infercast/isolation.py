"""Run a function on untrusted input in a child process, with time and memory limits.

Model files are untrusted: a crafted (or merely unusual) file can crash a
runtime's C++ code, loop, or allocate without bound. Whatever has to *execute*
a file's content (LiteRT's ``allocate_tensors``/``invoke``, ONNX Runtime) runs
through :func:`run_isolated`, so a crash, a hang or a runaway allocation is an
error the caller reports, never the death of the calling process.

The child is ``python -m infercast.isolation``: it reads one JSON request on
stdin (``{"target": "package.module:function", "payload": ...}``), calls the
function with the payload, and writes one JSON answer on its private copy of
stdout. File descriptor 1 is pointed at stderr before the target is imported,
so C++ logs of runtimes never mix with the answer. Limits:

* ``timeout_s``: wall clock; the child's whole process group is killed.
* ``memory_bytes``: ``RLIMIT_AS`` (address space) of the child, set before
  it starts (``resource.setrlimit`` in ``preexec_fn``). A runtime that then
  fails an allocation raises, aborts or is killed: all three are reported.
* ``cpu_s``: ``RLIMIT_CPU``, optional.

Only JSON crosses the boundary (no pickle): the child cannot hand the parent
an object that runs code when loaded.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from infercast.errors import InfercastError

__all__ = ["IsolatedError", "Limits", "run_isolated"]


@dataclass(frozen=True)
class Limits:
    """Limits of one isolated call."""

    timeout_s: float = 120.0
    memory_bytes: int | None = 8 << 30
    """Address-space limit (virtual memory, not resident); runtimes reserve far more
    address space than they touch, so this is a backstop against runaway
    allocation, not a measure of use. None: no limit."""
    cpu_s: int | None = None


class IsolatedError(InfercastError):
    """The isolated call did not return a result.

    ``kind``: ``timeout`` | ``memory`` | ``crashed`` | ``failed`` (the function
    raised; ``error_type`` names the exception).
    """

    def __init__(self, message: str, kind: str, error_type: str = "", hint: str = "") -> None:
        super().__init__(message, hint)
        self.kind = kind
        self.error_type = error_type


def _limit_child(limits: Limits) -> None:  # pragma: no cover - runs in the child
    import resource

    if limits.memory_bytes is not None:
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    if limits.cpu_s is not None:
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(code).name
    except ValueError:
        return f"signal {code}"


def run_isolated(
    target: str,
    payload: Any,
    limits: Limits | None = None,
    *,
    extra_path: Sequence[str] = (),
    what: str = "the isolated worker",
) -> Any:
    """Call ``target`` (``"module:function"``) with ``payload`` in a child process.

    ``payload`` and the function's return value must be JSON-serialisable.
    ``extra_path`` is prepended to the child's ``PYTHONPATH`` (for targets
    outside the installed package). ``what`` names the work in error messages.
    Raises :class:`IsolatedError` when no result comes back.
    """
    limits = limits or Limits()
    env = dict(os.environ)
    paths = [*extra_path, *[p for p in sys.path if p]]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    request = json.dumps({"target": target, "payload": payload})
    proc = subprocess.Popen(
        [sys.executable, "-m", "infercast.isolation"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
        preexec_fn=lambda: _limit_child(limits),
    )
    try:
        out, err = proc.communicate(request.encode(), timeout=limits.timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise IsolatedError(
            f"{what} did not finish within {limits.timeout_s:g} s and was stopped", "timeout"
        ) from None
    answer: dict[str, Any] | None = None
    text = out.decode("utf-8", "replace").strip()
    if text:
        with contextlib.suppress(json.JSONDecodeError):
            answer = json.loads(text.splitlines()[-1])
    if proc.returncode == 0 and isinstance(answer, dict) and answer.get("ok"):
        return answer.get("result")
    tail = " ".join(err.decode("utf-8", "replace").strip().splitlines()[-2:])[-300:]
    mem = (
        f"; its memory limit was {limits.memory_bytes / (1 << 30):g} GiB"
        if limits.memory_bytes
        else ""
    )
    if isinstance(answer, dict) and not answer.get("ok"):
        etype = str(answer.get("type", ""))
        kind = "memory" if etype == "MemoryError" else "failed"
        raise IsolatedError(f"{what} failed: {answer.get('error', '')}", kind, etype)
    if proc.returncode < 0:
        name = _signal_name(-proc.returncode)
        kind = "memory" if name in ("SIGKILL", "SIGABRT") and limits.memory_bytes else "crashed"
        raise IsolatedError(f"{what} crashed ({name}{mem}){': ' + tail if tail else ''}", kind)
    raise IsolatedError(
        f"{what} exited with status {proc.returncode}{mem}{': ' + tail if tail else ''}",
        "crashed",
    )


def _child() -> int:  # pragma: no cover - runs in the child
    # Keep a private copy of stdout for the answer; send everything printed to stderr.
    answer_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    reply: dict[str, Any]
    try:
        request = json.loads(sys.stdin.read())
        module, _, func = str(request["target"]).partition(":")
        fn = getattr(importlib.import_module(module), func)
        reply = {"ok": True, "result": fn(request["payload"])}
    except BaseException as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        reply = {"ok": False, "type": type(exc).__name__, "error": first[:600]}
    with os.fdopen(answer_fd, "w") as fh:
        fh.write(json.dumps(reply) + "\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(_child())
