"""The board's side of a remote benchmark: runs the runners, enforces timeouts, cleans up.

Started by the bootstrap :data:`infercast.bench.remote.BOOT` (``python -c`` over
SSH) once the files have arrived in a fresh ``mkdtemp`` folder; standard library
only, Python 3.8 syntax. It writes JSON lines on stdout:

* ``{"event": "hello", "environment": {...}}`` -- the board (:mod:`.env`), and
  each delegate library's real path, size, SHA-256 and owning package;
* ``{"event": "progress", "run": i, ...}`` and ``{"event": "result", "run": i, ...}``
  per run; a runner that dies without a result becomes ``status: crashed``
  (with its signal and last stderr lines), one past its timeout ``timeout``;
* ``{"event": "done", "removed": bool}`` after the folder is deleted.

Each runner is ``python -m <pkg>.remote_runner`` in a new session (``setsid``:
its own process group), killed as a group on a timeout, at the end, when this
process gets SIGTERM / SIGHUP / SIGINT, or when its standard input reaches
end of file -- which is how the host going away (its ssh killed, the link
lost) shows on the board. The folder is removed in every one of those cases;
only a SIGKILL of this process itself can leave it behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from typing import Any

from .env import environment


class _Gone(Exception):
    """The host went away (stdout closed or stdin at end of file)."""


def delegate_facts(path: str) -> dict[str, Any]:
    """What can be known of a delegate library on this machine without loading it."""
    facts: dict[str, Any] = {"path": path}
    real = os.path.realpath(path)
    facts["realpath"] = real
    if not os.path.isfile(real):
        facts["exists"] = False
        return facts
    facts["size_bytes"] = os.path.getsize(real)
    h = hashlib.sha256()
    with open(real, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    facts["sha256"] = h.hexdigest()
    facts["package"] = None
    if shutil.which("dpkg-query"):  # Debian-family boards: the package and its version
        try:
            owner = subprocess.run(
                ["dpkg-query", "-S", real], capture_output=True, text=True, timeout=10
            )
            name = owner.stdout.split(":", 1)[0].strip() if owner.returncode == 0 else ""
            if name:
                ver = subprocess.run(
                    ["dpkg-query", "-W", "-f=${Version}", name],
                    capture_output=True,
                    text=True,
                    timeout=10,
                )
                facts["package"] = f"{name} {ver.stdout.strip()}".strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return facts


class Supervisor:
    def __init__(self, base: str, manifest: dict[str, Any]) -> None:
        self.base = base
        self.manifest = manifest
        self.pkg = str(manifest["pkg"])
        self.gone = threading.Event()
        self.child: subprocess.Popen[bytes] | None = None
        self.lock = threading.Lock()

    def emit(self, msg: dict[str, Any]) -> None:
        if self.gone.is_set():
            raise _Gone()
        try:
            sys.stdout.write(json.dumps(msg) + "\n")
            sys.stdout.flush()
        except (BrokenPipeError, OSError):
            self.gone.set()
            raise _Gone() from None

    def kill_child(self) -> None:
        with self.lock:
            child = self.child
        if child is not None and child.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(child.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=10)

    def watch_stdin(self) -> None:
        try:
            while sys.stdin.buffer.read(65536):
                pass
        except (OSError, ValueError):
            pass
        self.gone.set()
        self.kill_child()

    def run_one(self, i: int, spec: dict[str, Any], timeout_s: float) -> None:
        start = time.monotonic()
        env = dict(os.environ)
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        child = subprocess.Popen(
            [sys.executable, "-m", self.pkg + ".remote_runner"],
            cwd=self.base,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            env=env,
        )
        with self.lock:
            self.child = child
        tail: deque[str] = deque(maxlen=40)

        def read_err() -> None:
            assert child.stderr is not None
            for raw in child.stderr:
                line = raw.decode("utf-8", "replace").rstrip()
                if line:
                    tail.append(line)

        lines: deque[dict[str, Any] | None] = deque()
        got = threading.Event()

        def read_out() -> None:
            assert child.stdout is not None
            for raw in child.stdout:
                try:
                    msg = json.loads(raw)
                except (ValueError, UnicodeDecodeError):
                    continue
                if isinstance(msg, dict):
                    lines.append(msg)
                    got.set()
            lines.append(None)
            got.set()

        t_err = threading.Thread(target=read_err, daemon=True)
        t_out = threading.Thread(target=read_out, daemon=True)
        t_err.start()
        t_out.start()
        assert child.stdin is not None
        try:
            child.stdin.write(json.dumps(spec).encode())
            child.stdin.close()
        except BrokenPipeError:
            pass
        result: dict[str, Any] | None = None
        timed_out = False
        ended = False
        while not ended:
            left = timeout_s - (time.monotonic() - start)
            if left <= 0:
                timed_out = True
                break
            if self.gone.is_set():
                break
            got.wait(min(left, 0.25))
            got.clear()
            while lines:
                msg = lines.popleft()
                if msg is None:
                    ended = True
                    break
                if msg.get("event") == "progress":
                    self.emit({**msg, "run": i})
                elif msg.get("event") == "result":
                    result = msg
        if not ended:
            self.kill_child()
        try:
            rc = child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill_child()
            rc = child.wait()
        with self.lock:
            self.child = None
        t_out.join(timeout=2)
        t_err.join(timeout=2)
        wall = time.monotonic() - start
        if self.gone.is_set():
            raise _Gone()
        base = {"event": "result", "run": i, "returncode": rc, "wall_s": wall}
        if timed_out:
            msg = {
                **base,
                "status": "timeout",
                "error": f"no result within the {timeout_s:g} s timeout; "
                "the runner's process group was killed on the board",
                "stderr_tail": list(tail),
            }
        elif result is None:
            how = f"killed by {_signal_name(-rc)}" if rc < 0 else f"exited with code {rc}"
            msg = {
                **base,
                "status": "crashed",
                "error": f"the runner on the board {how} without a result",
                "stderr_tail": list(tail),
            }
        else:
            msg = {**result, **base}
            if result.get("status") != "ok":
                msg["stderr_tail"] = list(tail)
        self.emit(msg)

    def main(self) -> int:
        threading.Thread(target=self.watch_stdin, daemon=True).start()
        env = environment()
        env["delegates"] = [delegate_facts(p) for p in self.manifest.get("delegates", [])]
        self.emit({"event": "hello", "environment": env, "folder": self.base})
        timeout_s = float(self.manifest.get("timeout_s", 600.0))
        for i, spec in enumerate(self.manifest["runs"]):
            t = spec.get("timeout_s")
            self.run_one(i, spec, float(t) if t is not None else timeout_s)
        return 0


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def main(base: str, manifest: dict[str, Any]) -> int:
    """Run every run of ``manifest`` in ``base``; remove ``base``; say so."""
    sup = Supervisor(base, manifest)
    rc = 0
    try:
        rc = sup.main()
    except _Gone:
        rc = 3
    finally:
        sup.kill_child()
        shutil.rmtree(base, ignore_errors=True)
    with contextlib.suppress(_Gone):
        sup.emit({"event": "done", "removed": not os.path.exists(base)})
    return rc
