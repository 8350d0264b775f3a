"""The board's runner: one benchmark run, as ``python -m <pkg>.remote_runner`` < spec.json.

Copied to a temporary folder on the board with the other modules it imports
(:mod:`.protocol`, :mod:`.timing`, :mod:`.stats`, :mod:`.inputgen`,
:mod:`.tflite_session`, :mod:`.ort_session`, :mod:`.opcuts`) by
:mod:`infercast.bench.remote`; it needs the standard library, numpy and the
board's runtime, nothing of infercast. Started by :mod:`.remote_supervisor`
in a process group of its own. Output: JSON lines on stdout like the local
worker's (progress events, then one result); the runtimes' own printing goes
to stderr.

The spec (a dict; paths relative to the folder): ``model``, ``runtime``
(``litert`` | ``tflite_runtime`` | ``ort``), ``threads``, ``options``
(``xnnpack``; ``opt_level``; ``delegate``: a library path on the board and
``delegate_options``), ``input_shapes``, ``input_files``, ``seed``, ``timing``,
``keep_samples``, ``profile``, ``profile_runs`` and, for a TFLite profile,
``cuts`` (``[index, op, file or null]``) and ``relu`` (the overhead model).
A profile comes back raw (``profile_raw``: ORT's JSON text, or the single-op
times) and is read on the host with the same code as a local one.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from .protocol import execute, result_channel
from .timing import TimingConfig

TFLITE = ("litert", "tflite_runtime")
PACKAGES = {"litert": "ai-edge-litert", "tflite_runtime": "tflite-runtime", "ort": "onnxruntime"}


def _read(base: str, rel: str) -> bytes:
    with open(os.path.join(base, rel), "rb") as fh:
        return fh.read()


def run(spec: dict[str, Any], base: str, progress: Any = None) -> dict[str, Any]:
    """Run ``spec`` with the board's runtime; the result message (never raises)."""
    runtime = str(spec["runtime"])
    opts = dict(spec.get("options") or {})
    threads = spec.get("threads")
    shapes = {k: tuple(v) for k, v in (spec.get("input_shapes") or {}).items()}
    files = {k: os.path.join(base, v) for k, v in (spec.get("input_files") or {}).items()}
    out: dict[str, Any] = {"runtime": runtime, "threads": threads, "options": opts}
    state: dict[str, Any] = {}

    def versions() -> dict[str, str]:
        try:
            if runtime in TFLITE:
                from .tflite_session import import_interpreter, runtime_version

                state["mod"] = import_interpreter(runtime)
                return {PACKAGES[runtime]: runtime_version(runtime)}
            if runtime == "ort":
                import onnxruntime

                state["mod"] = onnxruntime
                return {"onnxruntime": str(onnxruntime.__version__)}
        except ImportError as exc:
            raise RuntimeError(
                f"runtime '{runtime}' needs {PACKAGES[runtime]} on the board, which cannot be "
                f"imported by {sys.executable} ({type(exc).__name__}: {exc})"
            ) from None
        raise RuntimeError(f"unknown runtime '{runtime}'")

    def open_session() -> Any:
        mod = state["mod"]
        model = os.path.join(base, str(spec["model"]))
        if runtime == "ort":
            from .ort_session import OrtCoreSession

            return OrtCoreSession(mod, model, threads, str(opts.get("opt_level", "all")), shapes)
        from .tflite_session import TfliteSession

        delegates = []
        if opts.get("delegate"):
            d_opts = {str(k): str(v) for k, v in (opts.get("delegate_options") or {}).items()}
            delegates.append(mod.load_delegate(str(opts["delegate"]), d_opts or None))
        with open(model, "rb") as fh:
            data = fh.read()
        return TfliteSession(mod, data, threads, bool(opts.get("xnnpack", True)), shapes, delegates)

    def profile(session: Any, feeds: Any) -> dict[str, Any]:
        runs = int(spec.get("profile_runs", 20))
        if runtime == "ort":
            return {"profile_raw": {"kind": "ort", "json": session.profile_json(feeds, runs)}}
        cuts = [
            (int(i), str(name), _read(base, f) if f else None)
            for i, name, f in spec.get("cuts") or []
        ]
        label = os.path.basename(str(opts["delegate"])) if opts.get("delegate") else ""
        times = session.op_times(feeds, cuts, _read(base, str(spec["relu"])), runs, label)
        return {"profile_raw": {"kind": "litert_single_op", "times": times}}

    return execute(
        out,
        versions,
        open_session,
        timing=TimingConfig(**(spec.get("timing") or {})),
        seed=int(spec.get("seed", 0)),
        input_files=files,
        keep_samples=bool(spec.get("keep_samples", True)),
        profile=profile if spec.get("profile") else None,
        progress=progress,
    )


def main() -> int:
    emit, close = result_channel()

    def progress(phase: str, done: float) -> None:
        emit({"event": "progress", "phase": phase, "done": round(done, 3)})

    spec = json.loads(sys.stdin.read())
    result = run(spec, os.getcwd(), progress)
    emit(result)
    close()
    return 0 if result["status"] == "ok" else 1


if __name__ == "__main__":
    raise SystemExit(main())
