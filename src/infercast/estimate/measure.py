"""Timing many small models fairly on a busy machine (what calibration and validation need).

Protocol: every model gets a session first (load and first-run costs are
paid before timing), then timing proceeds in *rounds*: each round runs every
model a few times, so a burst of load from other processes hits all models
alike instead of one. Each model's figure is the **minimum** over all its
runs: on a shared machine interference only ever adds time, so the minimum
is the steady-state cost the forecast models (nn-Meter and LitePred also
report a low statistic of repeated runs). The median is kept beside it.

Two clocks per run: wall time (``time.perf_counter``) and, for single-thread
runs, the CPU time of the calling thread (``time.thread_time``,
``CLOCK_THREAD_CPUTIME_ID``): with one thread, LiteRT's ``invoke()`` and ONNX
Runtime's ``run()`` compute on the calling thread, so its CPU time is the
inference's cost without the time other processes held the core (on a machine
shared by several users the wall-clock minimum is still inflated; the CPU-time
minimum far less). With several threads the work is on pool threads and only
the wall clock is meaningful (``cpu_*`` are None).

The runtimes are the bench harness's adapters (:mod:`infercast.bench.runtimes`);
this module only schedules the runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from infercast.errors import InfercastError

RUNTIMES = ("ort", "litert")
CLOCKS = ("wall", "cpu")


@dataclass(frozen=True)
class Timing:
    path: str
    min_s: float
    median_s: float
    runs: int
    cpu_min_s: float | None = None
    """Minimum CPU time of the calling thread per run (single-thread runs only)."""
    cpu_median_s: float | None = None

    def min_of(self, clock: str) -> float:
        """The minimum by ``clock`` (``wall`` or ``cpu``; ``cpu`` needs a one-thread run)."""
        if clock == "wall":
            return self.min_s
        if clock == "cpu" and self.cpu_min_s is not None:
            return self.cpu_min_s
        raise InfercastError(
            f"no {clock} time for {self.path}",
            "CPU time is measured for single-thread runs only; use the wall clock",
        )


def check_clock(clock: str, threads: int) -> None:
    """A usable clock for ``threads`` (CPU time of one thread needs a one-thread run)."""
    if clock not in CLOCKS:
        raise InfercastError(f"unknown clock '{clock}'", f"use one of {', '.join(CLOCKS)}")
    if clock == "cpu" and threads != 1:
        raise InfercastError(
            f"the cpu clock times one thread; {threads} threads need the wall clock",
            "use --threads 1, or the wall clock",
        )


Runner = Callable[[], object]


def opener(runtime: str) -> Callable[[str | Path, int], Runner]:
    """A function that opens a model with ``runtime`` and returns a one-inference runner.

    Sessions come from the bench harness's runtime adapters
    (:mod:`infercast.bench.runtimes`: ONNX Runtime's CPU provider, LiteRT with
    XNNPACK), with its generated inputs bound before timing; this module only
    schedules the runs (several models interleaved in one process).
    """
    if runtime not in RUNTIMES:
        raise InfercastError(f"unknown runtime '{runtime}'", f"use one of {', '.join(RUNTIMES)}")
    from infercast.bench.inputs import make_inputs
    from infercast.bench.runtimes import get_runtime, resolve_options

    rt = get_runtime(runtime)
    opts = resolve_options(rt, {})

    def open_model(path: str | Path, threads: int) -> Runner:
        try:
            session = rt.open(Path(path), threads, opts, {})
        except InfercastError:
            raise
        except Exception as exc:  # the runtimes raise their own exception types
            raise InfercastError(f"{runtime} cannot load {path}: {exc}") from exc
        feeds, _ = make_inputs(session.input_specs(), seed=0)
        return session.runner(feeds)

    return open_model


def measure(
    paths: Sequence[str | Path],
    runtime: str,
    threads: int = 1,
    *,
    budget_s: float = 60.0,
    warmup: int = 3,
    min_runs: int = 5,
    progress: Callable[[str], None] | None = None,
) -> list[Timing]:
    """Time each model (steady state, min and median seconds) within about ``budget_s``."""
    if threads < 1:
        raise InfercastError(f"--threads must be at least 1, not {threads}")
    open_fn = opener(runtime)
    t_start = time.perf_counter()
    runners: list[Runner] = []
    first_cost: list[float] = []
    for p in paths:
        r = open_fn(p, threads)
        t0 = time.perf_counter()
        for _ in range(warmup):
            r()
        first_cost.append((time.perf_counter() - t0) / max(warmup, 1))
        runners.append(r)
    times: list[list[float]] = [[] for _ in paths]
    cpu: list[list[float]] = [[] for _ in paths]
    tclock = time.thread_time
    spent = time.perf_counter() - t_start
    left = max(budget_s - spent, 0.0)
    # Runs per model per round: about 20 ms of work per model and round.
    per_round = [max(1, min(20, int(0.02 / max(c, 1e-6)))) for c in first_cost]
    round_cost = sum(n * c for n, c in zip(per_round, first_cost, strict=True))
    rounds = max(min_runs, int(left / max(round_cost, 1e-6))) if round_cost else min_runs
    rounds = min(rounds, 200)
    deadline = time.perf_counter() + left
    for rnd in range(rounds):
        for i, r in enumerate(runners):
            for _ in range(per_round[i]):
                c0 = tclock()
                t0 = time.perf_counter()
                r()
                t1 = time.perf_counter()
                cpu[i].append(tclock() - c0)
                times[i].append(t1 - t0)
        if progress is not None and rnd % 5 == 0:
            progress(f"round {rnd + 1}/{rounds}")
        if rnd + 1 >= min_runs and time.perf_counter() > deadline:
            break
    single = threads == 1
    return [
        Timing(
            str(p),
            float(np.min(ts)),
            float(np.median(ts)),
            len(ts),
            float(np.min(cs)) if single else None,
            float(np.median(cs)) if single else None,
        )
        for p, ts, cs in zip(paths, times, cpu, strict=True)
    ]
