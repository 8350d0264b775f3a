"""Worker process: ``python -m infercast.bench.worker`` < spec.json.

Reads one :class:`~infercast.bench.harness.RunSpec` as JSON on stdin, runs it,
and writes JSON lines on stdout: ``{"event": "progress", "phase", "done"}``
while it works, then one ``{"event": "result", "status": "ok" | "failed", ...}``.
Everything the runtimes print (C++ logs included) goes to stderr: file
descriptor 1 is pointed at stderr before any runtime is imported, and results
are written to a private duplicate of the original stdout.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import IO, Any

from infercast.bench.harness import Progress, RunSpec, measure
from infercast.bench.inputs import make_inputs
from infercast.bench.stats import summarize
from infercast.errors import InfercastError


def _error_text(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    first = lines[0] if lines else type(exc).__name__
    # ORT and TVM put the useful part of an error on its first lines; keep it short.
    msg = " ".join(lines[:3]) if len(first) < 60 and len(lines) > 1 else first
    if isinstance(exc, InfercastError):
        return str(exc)
    return f"{type(exc).__name__}: {msg[:600]}"


def execute(spec: RunSpec, progress: Progress | None = None) -> dict[str, Any]:
    """Run one spec; return the result message (never raises for a runtime's failure)."""
    from infercast.bench.runtimes import get_runtime, resolve_options

    phase = "load"
    out: dict[str, Any] = {
        "event": "result",
        "status": "failed",
        "runtime": spec.runtime,
        "threads": spec.threads,
    }
    try:
        rt = get_runtime(spec.runtime)
        opts = resolve_options(rt, spec.options)
        out["options"] = opts
        out["versions"] = rt.versions()
        if progress:
            progress("load", 0.0)
        t0 = time.perf_counter()
        session = rt.open(Path(spec.model), spec.threads, opts, spec.input_shapes)
        out["load_s"] = time.perf_counter() - t0
        out["runtime_meta"] = getattr(session, "meta", {})
        phase = "inputs"
        feeds, record = make_inputs(session.input_specs(), spec.seed, spec.input_files)
        out["inputs"] = record
        run = session.runner(feeds)
        phase = "measure"
        if progress:
            progress("first", 0.0)
        timing = measure(run, spec.timing, progress)
        out["first_s"] = timing.first_s
        out["warmup"] = summarize(timing.warmup_s).to_dict() if timing.warmup_s else None
        out["summary"] = summarize(timing.samples_s).to_dict()
        if spec.keep_samples:
            out["samples_s"] = list(timing.samples_s)
        out["status"] = "ok"
        if spec.profile:
            phase = "profile"
            if progress:
                progress("profile", 0.0)
            try:
                raw = Path(spec.raw_profile_dir) if spec.raw_profile_dir else None
                prof = session.profile(feeds, spec.profile_runs, raw)
                out["profile"] = prof.to_dict()
            except Exception as exc:
                out["profile_error"] = _error_text(exc)
        session.close()
    except Exception as exc:
        out["status"] = "failed"
        out["phase"] = phase
        out["error"] = _error_text(exc)
        if not isinstance(exc, InfercastError):
            traceback.print_exc(file=sys.stderr)
    return out


def main() -> int:
    real_stdout_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    channel: IO[str] = os.fdopen(real_stdout_fd, "w", buffering=1)

    def emit(msg: dict[str, Any]) -> None:
        channel.write(json.dumps(msg) + "\n")
        channel.flush()

    try:
        spec = RunSpec.from_dict(json.loads(sys.stdin.read()))
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        emit(
            {
                "event": "result",
                "status": "failed",
                "phase": "spec",
                "error": f"bad worker spec: {exc}",
            }
        )
        return 2

    def progress(phase: str, done: float) -> None:
        emit({"event": "progress", "phase": phase, "done": round(done, 3)})

    result = execute(spec, progress)
    emit(result)
    channel.close()
    return 0 if result["status"] == "ok" else 1


if __name__ == "__main__":
    raise SystemExit(main())
