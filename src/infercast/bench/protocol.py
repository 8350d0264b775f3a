"""One benchmark run from session to result message: the steps a worker takes, here or on
a board.

Shipped to the board as is by :mod:`infercast.bench.remote` (standard library
and numpy, Python 3.8 syntax). The local worker (:mod:`infercast.bench.worker`)
and the board's runner (:mod:`infercast.bench.remote_runner`) both call
:func:`execute`; they differ only in how a session is opened and what a profile
becomes.

The result message (a JSON-able dict): ``status`` ``ok`` | ``failed``,
``phase`` where it failed (``load``, ``inputs``, ``measure``), ``error``,
``versions``, ``options``, ``load_s``, ``runtime_meta``, ``inputs``,
``first_s``, ``warmup`` and ``summary`` (:class:`.stats.Summary` as dicts),
``samples_s``, and whatever the profile step adds (or ``profile_error``).
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from typing import TYPE_CHECKING, Any

from .inputgen import InputGenerationError, make_inputs
from .stats import summarize
from .timing import TimingConfig, measure

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    import numpy as np

    Feeds = Mapping[str, np.ndarray[Any, Any]]


def error_text(exc: BaseException, plain: tuple[type[BaseException], ...] = ()) -> str:
    """A runtime's exception on one short line (``plain`` types: their message alone)."""
    if plain and isinstance(exc, plain):
        return str(exc)
    text = str(exc).strip() or type(exc).__name__
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    first = lines[0] if lines else type(exc).__name__
    # ORT and TVM put the useful part of an error on its first lines; keep it short.
    msg = " ".join(lines[:3]) if len(first) < 60 and len(lines) > 1 else first
    return f"{type(exc).__name__}: {msg[:600]}"


def execute(
    out: dict[str, Any],
    versions: Callable[[], dict[str, str]],
    open_session: Callable[[], Any],
    *,
    timing: TimingConfig,
    seed: int = 0,
    input_files: Mapping[str, str] | None = None,
    keep_samples: bool = True,
    profile: Callable[[Any, Feeds], dict[str, Any]] | None = None,
    progress: Callable[[str, float], None] | None = None,
    input_error: type[Exception] = InputGenerationError,
    plain_errors: tuple[type[BaseException], ...] = (),
) -> dict[str, Any]:
    """Open, feed, time (:func:`.timing.measure`), summarise, profile; never raises for a
    runtime's failure: it becomes ``status: failed`` in ``out`` (returned)."""
    phase = "load"
    out.update({"event": "result", "status": "failed"})
    try:
        out["versions"] = versions()
        if progress:
            progress("load", 0.0)
        t0 = time.perf_counter()
        session = open_session()
        out["load_s"] = time.perf_counter() - t0
        out["runtime_meta"] = dict(getattr(session, "meta", {}) or {})
        phase = "inputs"
        feeds, record = make_inputs(session.input_specs(), seed, input_files, error=input_error)
        out["inputs"] = record
        run = session.runner(feeds)
        phase = "measure"
        if progress:
            progress("first", 0.0)
        t = measure(run, timing, progress)
        out["first_s"] = t.first_s
        out["warmup"] = summarize(t.warmup_s).to_dict() if t.warmup_s else None
        out["summary"] = summarize(t.samples_s).to_dict()
        if keep_samples:
            out["samples_s"] = list(t.samples_s)
        out["status"] = "ok"
        if profile is not None:
            phase = "profile"
            if progress:
                progress("profile", 0.0)
            try:
                out.update(profile(session, feeds))
            except Exception as exc:
                out["profile_error"] = error_text(exc, plain_errors)
        session.close()
    except Exception as exc:
        out["status"] = "failed"
        out["phase"] = phase
        out["error"] = error_text(exc, plain_errors)
        if not (plain_errors and isinstance(exc, plain_errors)):
            traceback.print_exc(file=sys.stderr)
    return out


def result_channel() -> tuple[Callable[[dict[str, Any]], None], Callable[[], None]]:
    """``(emit, close)`` for a worker's JSON lines: file descriptor 1 is pointed at stderr
    (so what the runtimes print, C++ logs included, goes there) and messages go to a
    private duplicate of the original stdout."""
    real_stdout_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    channel = os.fdopen(real_stdout_fd, "w", buffering=1)

    def emit(msg: dict[str, Any]) -> None:
        channel.write(json.dumps(msg) + "\n")
        channel.flush()

    return emit, channel.close
