"""Worker process: ``python -m infercast.bench.worker`` < spec.json.

Reads one :class:`~infercast.bench.harness.RunSpec` as JSON on stdin, runs it
(:func:`infercast.bench.protocol.execute`, the steps a board runs too), and
writes JSON lines on stdout: ``{"event": "progress", "phase", "done"}`` while
it works, then one ``{"event": "result", "status": "ok" | "failed", ...}``.
Everything the runtimes print (C++ logs included) goes to stderr: file
descriptor 1 is pointed at stderr before any runtime is imported, and results
are written to a private duplicate of the original stdout.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from infercast.bench import protocol
from infercast.bench.harness import Progress, RunSpec
from infercast.bench.inputs import InputError
from infercast.errors import InfercastError


def execute(spec: RunSpec, progress: Progress | None = None) -> dict[str, Any]:
    """Run one spec; return the result message (never raises for a runtime's failure)."""
    from infercast.bench.runtimes import get_runtime, resolve_options

    out: dict[str, Any] = {"runtime": spec.runtime, "threads": spec.threads}
    state: dict[str, Any] = {}

    def versions() -> dict[str, str]:
        rt = get_runtime(spec.runtime)
        state["opts"] = out["options"] = resolve_options(rt, spec.options)
        state["rt"] = rt
        return rt.versions()

    def open_session() -> Any:
        return state["rt"].open(Path(spec.model), spec.threads, state["opts"], spec.input_shapes)

    def profile(session: Any, feeds: Any) -> dict[str, Any]:
        raw = Path(spec.raw_profile_dir) if spec.raw_profile_dir else None
        return {"profile": session.profile(feeds, spec.profile_runs, raw).to_dict()}

    return protocol.execute(
        out,
        versions,
        open_session,
        timing=spec.timing,
        seed=spec.seed,
        input_files=spec.input_files,
        keep_samples=spec.keep_samples,
        profile=profile if spec.profile else None,
        progress=progress,
        input_error=InputError,
        plain_errors=(InfercastError,),
    )


def main() -> int:
    emit, close = protocol.result_channel()
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
    close()
    return 0 if result["status"] == "ok" else 1


if __name__ == "__main__":
    raise SystemExit(main())
