"""Run the ``infercast`` CLI on many inputs fast, each run isolated and limited, and
check the documented contract of every run.

A *fork server* (``python tools/fuzz_driver.py --serve``, started by
:class:`ForkServer`) imports infercast and the libraries it reads models with
once, then for each request forks a child that sets resource limits
(``RLIMIT_AS`` = the memory bound, ``RLIMIT_CPU``, no core files, a file size
cap), points file descriptors 1 and 2 at files, and calls
``infercast.cli.main(argv)`` exactly as the console script does. The server
reaps it with ``wait4`` (exit status, signal, peak RSS), kills its process
group at the time bound, and answers one JSON line. A run therefore costs a
fork and the work, not a Python start (~0.8 s), and a crash, a hang or a
memory bomb in one input shows as what it is without stopping the others.

The contract (README "Exit codes"; ``tests/test_fuzz*.py`` check it for every input):

* the process ends by itself within the time bound and under the memory bound
  (no signal, no kill);
* exit code 0, 2 (bad input), 3 (``check``: something falls back / does not fit)
  or 4 (``analyze``: some layer's cost unknown) — never 1 (an internal error);
* on 2: exactly one stderr line, ``infercast: error: ...``, and nothing on stdout;
  on 4: exactly one stderr line, ``infercast: incomplete: ...``; on 0 and 3:
  only infercast's own status lines (no runtime chatter, no warnings);
* stderr never holds a control character (terminal injection) other than newlines;
* with ``-f json``, stdout on 0 / 3 / 4 is strict JSON (no NaN, no Infinity);
* ``-o FILE`` never overwrites an input of the same command, and what it writes is
  complete (strict JSON with ``-f json``).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MEMORY_BYTES = 1536 * 1024 * 1024
"""The memory bound of one run (address space, ``RLIMIT_AS``): 1.5 GiB."""
TIME_S = 20.0
"""The time bound of one run (wall clock), seconds."""
EXIT_CODES = (0, 2, 3, 4)
INJECTED = "<script>alert(1)</script>"
"""A name the mutators give tensors and nodes; an HTML report must escape it."""
_STDOUT_KEEP = 32 << 20


@dataclass
class Outcome:
    """What one run did."""

    argv: list[str]
    rc: int | None
    """Exit code, None when killed by a signal or at the time bound."""
    signal: int | None
    timed_out: bool
    wall_s: float
    maxrss_bytes: int
    stdout: str
    stderr: str
    files: dict[str, str] = field(default_factory=dict)
    """Contents (first MiBs) of the files the run was asked to write (``-o``)."""
    inputs_changed: list[str] = field(default_factory=list)
    """Inputs of the command whose bytes differ after the run."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def strict_json(text: str) -> str | None:
    """None if ``text`` is one strict JSON document, else why not."""
    try:
        json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        return f"{type(exc).__name__}: {str(exc)[:120]}"
    return None


def _status_line(line: str) -> bool:
    """One of infercast's own progress or status lines (not an error, not chatter)."""
    return line.startswith("infercast: ") and not line.startswith(
        ("infercast: error", "infercast: internal")
    )


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")


def violations(o: Outcome, *, json_out: bool, json_files: bool = False) -> list[str]:
    """How ``o`` breaks the contract (empty: it keeps it). ``json_out``: the command was
    given ``-f json``; ``json_files``: the files it was asked to write are JSON."""
    bad: list[str] = []
    if o.timed_out:
        return [f"did not end within {TIME_S:g} s"]
    if o.signal is not None:
        return [f"killed by signal {o.signal} ({signal.Signals(o.signal).name})"]
    if o.rc not in EXIT_CODES:
        first = o.stderr.strip().splitlines()[:1]
        bad.append(f"exit code {o.rc}: {first[0][:200] if first else '(no stderr)'}")
    lines = o.stderr.splitlines()
    if o.rc == 2:
        if len(lines) != 1 or not lines[0].startswith("infercast: error: "):
            bad.append(f"exit 2 with {len(lines)} stderr line(s): {o.stderr[:300]!r}")
        if o.stdout:
            bad.append("exit 2 with output on stdout")
    elif o.rc == 4:
        if len(lines) != 1 or not lines[0].startswith("infercast: incomplete: "):
            bad.append(f"exit 4 with {len(lines)} stderr line(s): {o.stderr[:300]!r}")
    elif o.rc in (0, 3) and any(
        not ln.startswith("infercast: ")
        or ln.startswith(("infercast: error", "infercast: internal"))
        for ln in lines
    ):
        bad.append(f"exit {o.rc} with stderr: {o.stderr[:300]!r}")
    if "Traceback (most recent call last)" in o.stderr:
        bad.append("a traceback on stderr")
    if _CONTROL.search(o.stderr):
        bad.append(f"a control character on stderr: {o.stderr[:200]!r}")
    if json_out and o.rc in (0, 3, 4) and "-o" not in o.argv:
        why = strict_json(o.stdout)
        if why:
            bad.append(f"-f json output is not strict JSON ({why})")
    for name, text in o.files.items():
        if name.endswith(".html") and INJECTED in text:
            bad.append(f"-o {Path(name).name}: a model's <script> name written as markup")
        if json_files and o.rc in (0, 3, 4) and strict_json(text):
            bad.append(f"-o {Path(name).name}: not strict JSON ({strict_json(text)})")
    if o.inputs_changed:
        bad.append(f"an input was overwritten: {', '.join(o.inputs_changed)}")
    if o.maxrss_bytes > MEMORY_BYTES:
        bad.append(f"peak RSS {o.maxrss_bytes / 2**20:.0f} MiB")
    return bad


def signature(o: Outcome, why: Sequence[str]) -> str:
    """A short key that groups failures with the same cause (numbers and paths cut)."""
    text = why[0] if why else ""
    text = re.sub(r"(/[^\s:'\"]+)+", "<path>", text)
    text = re.sub(r"\d+", "N", text)
    return text[:160]


# --------------------------------------------------------------------------- #
# The server (runs in its own process)
# --------------------------------------------------------------------------- #


def _warm() -> None:
    """Import what runs use, once, before any fork."""
    import numpy  # noqa: F401
    import onnx.reference  # noqa: F401
    import rich.console  # noqa: F401

    import infercast.cli
    import infercast.frontends.onnx  # noqa: F401
    import infercast.frontends.tflite as tfl

    with contextlib.suppress(Exception):
        tfl._names(tfl._schema())
    from infercast.cli import main

    saved = os.dup(1), os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        for argv in (["--help"], ["analyze", "--help"], ["targets", "list", "-f", "json"]):
            with contextlib.suppress(BaseException):
                main(argv)  # typer builds its commands and imports lazily on a first call
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(null)
    for name in (
        "infercast.analysis.memory",
        "infercast.analysis.memory_export",
        "infercast.estimate",
        "infercast.targets",
        "infercast.report.analysis",
        "infercast.report.estimate",
        "infercast.bench.profiles",
        "infercast.bench.join",
    ):
        with contextlib.suppress(Exception):
            __import__(name)


def _child(req: dict[str, Any], out: str, err: str) -> None:
    """In the forked child: limits, redirections, then the CLI. Never returns."""
    code = 1
    try:
        os.setpgid(0, 0)
        mem = int(req.get("memory_bytes", MEMORY_BYTES))
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        cpu = int(float(req.get("time_s", TIME_S))) + 5
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (256 << 20, 256 << 20))
        if req.get("cwd"):
            os.chdir(req["cwd"])
        fd_in = os.open(os.devnull, os.O_RDONLY)
        fd_out = os.open(out, os.O_WRONLY | os.O_TRUNC)
        fd_err = os.open(err, os.O_WRONLY | os.O_TRUNC)
        os.dup2(fd_in, 0)
        os.dup2(fd_out, 1)
        os.dup2(fd_err, 2)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        from infercast.cli import main

        code = main(list(req["argv"]))
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException as exc:  # the contract check reports it; never let it unwind
        with contextlib.suppress(BaseException):
            os.write(2, f"fuzz_driver: {type(exc).__name__}: {exc}\n".encode())
        code = 1 if not isinstance(exc, SystemExit) else int(exc.code or 0)
    os._exit(code)


def _snapshot(paths: Iterable[str]) -> dict[str, tuple[int, int, int]]:
    out = {}
    for p in paths:
        with contextlib.suppress(OSError):
            st = os.stat(p)
            out[p] = (st.st_size, st.st_mtime_ns, st.st_ino)
    return out


def _serve_one(req: dict[str, Any], tmp: str) -> dict[str, Any]:
    out = os.path.join(tmp, "stdout")
    err = os.path.join(tmp, "stderr")
    for p in (out, err):
        open(p, "wb").close()
    outputs = [str(p) for p in req.get("outputs", [])]
    for p in outputs:
        if p not in req.get("inputs", []):
            with contextlib.suppress(OSError):
                os.unlink(p)
    before = _snapshot(req.get("inputs", []))
    limit = float(req.get("time_s", TIME_S))
    sys.stdout.flush()
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        _child(req, out, err)
    status = 0
    usage: Any = None
    timed_out = False
    delay = 0.0005
    while True:
        wpid, status, usage = os.wait4(pid, os.WNOHANG)
        if wpid == pid:
            break
        if time.perf_counter() - t0 > limit:
            timed_out = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            _, status, usage = os.wait4(pid, 0)
            break
        time.sleep(delay)
        delay = min(delay * 2, 0.02)
    wall = time.perf_counter() - t0
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)  # workers it left behind
    rc = os.WEXITSTATUS(status) if os.WIFEXITED(status) and not timed_out else None
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) and not timed_out else None
    with open(out, "rb") as f:
        stdout = f.read(_STDOUT_KEEP).decode("utf-8", "replace")
    with open(err, "rb") as f:
        stderr = f.read(1 << 20).decode("utf-8", "replace")
    files = {}
    for p in outputs:
        with contextlib.suppress(OSError), open(p, "rb") as f:
            files[p] = f.read(_STDOUT_KEEP).decode("utf-8", "replace")
    after = _snapshot(req.get("inputs", []))
    changed = [p for p in before if after.get(p) != before[p]]
    return asdict(
        Outcome(
            argv=list(req["argv"]),
            rc=rc,
            signal=sig,
            timed_out=timed_out,
            wall_s=wall,
            maxrss_bytes=int(usage.ru_maxrss) * 1024 if usage is not None else 0,
            stdout=stdout,
            stderr=stderr,
            files=files,
            inputs_changed=changed,
        )
    )


def serve() -> None:
    """Answer one JSON request per stdin line with one JSON outcome line on stdout."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    _warm()
    reply = os.fdopen(os.dup(1), "w", buffering=1)
    with tempfile.TemporaryDirectory(prefix="infercast-fuzz-") as tmp:
        reply.write(json.dumps({"ready": True}) + "\n")
        for line in sys.stdin:
            if not line.strip():
                continue
            req = json.loads(line)
            try:
                res = _serve_one(req, tmp)
            except Exception as exc:  # the server itself failed: say so, keep serving
                res = {"server_error": f"{type(exc).__name__}: {exc}"}
            reply.write(json.dumps(res) + "\n")


# --------------------------------------------------------------------------- #
# The client
# --------------------------------------------------------------------------- #


class ForkServer:
    """Runs the CLI in forked, limited children of one long-lived server process."""

    def __init__(self, src: Path | None = None) -> None:
        env = dict(os.environ)
        src = src or REPO / "src"
        env["PYTHONPATH"] = os.pathsep.join([str(src), env.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        )
        env.setdefault("OPENBLAS_NUM_THREADS", "1")
        env.setdefault("OMP_NUM_THREADS", "1")
        env["COLUMNS"] = "160"
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
            bufsize=1,
        )
        first = self._read(120.0)
        if not first.get("ready"):
            raise RuntimeError(f"fork server did not start: {first}")

    def _read(self, timeout_s: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout_s)
        if not ready:
            raise RuntimeError("fork server does not answer")
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"fork server ended (exit {self.proc.poll()})")
        data: dict[str, Any] = json.loads(line)
        return data

    def run(
        self,
        argv: Sequence[str],
        *,
        inputs: Sequence[str | Path] = (),
        outputs: Sequence[str | Path] = (),
        time_s: float = TIME_S,
        memory_bytes: int = MEMORY_BYTES,
        cwd: str | Path | None = None,
    ) -> Outcome:
        """Run ``infercast argv``; ``inputs`` are checked for changes, ``outputs`` read back."""
        assert self.proc.stdin is not None
        req = {
            "argv": [str(a) for a in argv],
            "inputs": [str(p) for p in inputs],
            "outputs": [str(p) for p in outputs],
            "time_s": time_s,
            "memory_bytes": memory_bytes,
            "cwd": str(cwd) if cwd else None,
        }
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        res = self._read(time_s + 60.0)
        if "server_error" in res:
            raise RuntimeError(res["server_error"])
        return Outcome(**res)

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> ForkServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_subprocess(
    argv: Sequence[str],
    *,
    time_s: float = TIME_S,
    memory_bytes: int = MEMORY_BYTES,
    cwd: str | Path | None = None,
    src: Path | None = None,
) -> Outcome:
    """The same run as a real ``python -m infercast`` process (limits set before exec);
    ``maxrss_bytes`` from ``wait4``: the largest of the process and the children it
    waited for (the isolated workers)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(src or REPO / "src")

    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.setpgid(0, 0)

    killed: list[bool] = []

    def kill(pid: int) -> None:
        killed.append(True)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(
            [sys.executable, "-m", "infercast", *map(str, argv)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            env=env,
            cwd=cwd,
            preexec_fn=limits,
        )
        timer = threading.Timer(time_s, kill, (p.pid,))
        timer.start()
        _, status, usage = os.wait4(p.pid, 0)
        timer.cancel()
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(p.pid, signal.SIGKILL)  # workers it left behind
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")  # whole: its JSON is checked
        stderr = err.read(1 << 20).decode("utf-8", "replace")
    timed_out = bool(killed)
    rc = p.returncode
    return Outcome(
        argv=[str(a) for a in argv],
        rc=None if timed_out or rc < 0 else rc,
        signal=-rc if rc < 0 and not timed_out else None,
        timed_out=timed_out,
        wall_s=wall,
        maxrss_bytes=int(usage.ru_maxrss) * 1024,
        stdout=stdout,
        stderr=stderr,
    )


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        sys.exit("usage: fuzz_driver.py --serve (started by ForkServer)")
