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

**Cold runs** (``cold_bytes``): a model run over and over keeps everything it
touches in the core's L2 cache, which no layer of a whole model enjoys -- by the
time a layer runs again, the rest of the model has evicted its weights (a
MobileNetV2 has 14 MB of fp32 weights; this host's L2 is 2 MB). Measured here
(LiteRT 1.x + XNNPACK, one thread, CPU time): MobileNetV2's 66 operators cut
into single-op models sum to 4.4 ms when each is timed warm, 5.9 ms when an
8 MB buffer is written before each run, against 6.2-6.4 ms for the whole model;
ResNet50 (102 MB of weights): warm sum 58.8 ms, whole 76.7 ms. So with
``cold_bytes`` > 0 each round times every model twice: once right after writing
a scratch buffer of that many bytes (``cold_*``: its L2 holds nothing of the
model, as a layer inside a whole model finds it), once right after (warm, the
other fields). The buffer write is outside the timed window.

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
    cold_min_s: float | None = None
    """Minimum wall time of runs after the cache was flushed (``measure(cold_bytes=...)``)."""
    cold_cpu_min_s: float | None = None

    def min_of(self, clock: str, cold: bool = False) -> float:
        """The minimum by ``clock`` (``wall`` or ``cpu``; ``cpu`` needs a one-thread run), of
        the cold runs when ``cold`` (those need ``measure(cold_bytes=...)``)."""
        v = {
            ("wall", False): self.min_s,
            ("cpu", False): self.cpu_min_s,
            ("wall", True): self.cold_min_s,
            ("cpu", True): self.cold_cpu_min_s,
        }.get((clock, cold))
        if v is None:
            raise InfercastError(
                f"no {clock}{' cold' if cold else ''} time for {self.path}",
                "CPU time is measured for single-thread runs only, cold runs with cold_bytes",
            )
        return v


def cold_floor_s(timings: Sequence[Timing], clock: str) -> float:
    """The cold-run cost that is no data: the smallest ``cold - warm`` difference of a set.

    A flushed cache also evicts the runtime's code and per-call structures, which a layer
    inside a whole model finds warm (the same kernels run for every layer); a kernel that
    touches almost no data (a 10-way softmax, a 128x10 FC) pays only that: ~2 us per call
    here (LiteRT + XNNPACK, one thread), where the largest micro-kernels pay 100-440 us for
    their data. Calibration subtracts this floor from every cold run."""
    diffs = [t.min_of(clock, True) - t.min_of(clock) for t in timings]
    return max(min(diffs), 0.0) if diffs else 0.0


def cold_times(timings: Sequence[Timing], clock: str) -> list[float]:
    """Each timing's cold minimum less the set's :func:`cold_floor_s`."""
    floor = cold_floor_s(timings, clock)
    return [t.min_of(clock, True) - floor for t in timings]


def l2_bytes(default: int = 2 << 20) -> int:
    """Size of the first CPU's level-2 cache (Linux sysfs), else ``default``."""
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    try:
        for d in sorted(base.glob("index*")):
            if (d / "level").read_text().strip() == "2":
                return parse_cache_size((d / "size").read_text())
    except (OSError, ValueError):
        pass
    return default


def parse_cache_size(text: str) -> int:
    """Bytes of a sysfs cache size (``2048K``, ``4M``, ``512``)."""
    t = text.strip().upper()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:], 1)
    return int(t.rstrip("KMG")) * mult


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


LAYOUT_OPS = ("ReorderInput", "ReorderOutput")
"""ONNX Runtime's NCHWc layout conversions (``NchwcTransformer``, MLAS ``ReorderInput`` /
``ReorderOutput``): in a one-op conv model ORT converts the input to its blocked layout
before the conv and back after it; in a whole model it converts once at the model's edges."""


def layout_shares(profile_json: str) -> float:
    """Share of the node time of an ONNX Runtime profile (its JSON text) spent in the layout
    conversions :data:`LAYOUT_OPS`: per node the median of its ``kernel_time`` events, then
    the conversions' sum over all nodes' sum (0 when the profile holds no node)."""
    import json

    events = json.loads(profile_json)
    per: dict[tuple[str, str], list[float]] = {}
    for e in events if isinstance(events, list) else []:
        if e.get("cat") != "Node" or not str(e.get("name", "")).endswith("_kernel_time"):
            continue
        op = str(e.get("args", {}).get("op_name", ""))
        per.setdefault((str(e["name"]), op), []).append(float(e.get("dur", 0.0)))
    med = {k: float(np.median(v)) for k, v in per.items()}
    total = sum(med.values())
    if total <= 0:
        return 0.0
    return sum(v for (_, op), v in med.items() if op in LAYOUT_OPS) / total


def ort_layout_share(path: str | Path, threads: int, runs: int = 30) -> float:
    """Share of ``path``'s time that ONNX Runtime spends converting layouts
    (:func:`layout_shares` of a profile of ``runs`` inferences with ``threads`` threads).

    Measured on this project's conv micro-kernels (ORT 1.x, one thread): 2-4% of a 3x3
    conv's time, 25-53% of a 1x1 conv's, 48-66% of a depthwise conv's, none for convs ORT
    leaves in NCHW (channel counts not a multiple of its block: 17, 30, 22)."""
    import onnxruntime

    from infercast.bench.inputs import make_inputs
    from infercast.bench.ort_session import OrtCoreSession

    session = OrtCoreSession(onnxruntime, str(path), threads, "all", {})
    feeds, _ = make_inputs(session.input_specs(), seed=0)
    try:
        return layout_shares(session.profile_json(feeds, runs))
    finally:
        session.close()


def measure(
    paths: Sequence[str | Path],
    runtime: str,
    threads: int = 1,
    *,
    budget_s: float = 60.0,
    warmup: int = 3,
    min_runs: int = 5,
    progress: Callable[[str], None] | None = None,
    cold_bytes: int = 0,
) -> list[Timing]:
    """Time each model (steady state, min and median seconds) within about ``budget_s``;
    with ``cold_bytes``, cold runs beside warm ones (see the module docstring)."""
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
    cold: list[list[float]] = [[] for _ in paths]
    cold_cpu: list[list[float]] = [[] for _ in paths]
    scratch = np.zeros(max(cold_bytes, 0) // 8)
    tclock = time.thread_time
    spent = time.perf_counter() - t_start
    left = max(budget_s - spent, 0.0)
    if cold_bytes > 0:  # a cold run, its buffer write (~5 GB/s) and a warm run
        first_cost = [2 * c + cold_bytes / 5e9 for c in first_cost]
    # Runs per model per round: about 20 ms of work per model and round.
    per_round = [max(1, min(20, int(0.02 / max(c, 1e-6)))) for c in first_cost]
    round_cost = sum(n * c for n, c in zip(per_round, first_cost, strict=True))
    rounds = max(min_runs, int(left / max(round_cost, 1e-6))) if round_cost else min_runs
    rounds = min(rounds, 200)
    deadline = time.perf_counter() + left
    for rnd in range(rounds):
        for i, r in enumerate(runners):
            for _ in range(per_round[i]):
                if cold_bytes > 0:
                    scratch += 1.0  # writes every line of the buffer: evicts the model
                    c0 = tclock()
                    t0 = time.perf_counter()
                    r()
                    t1 = time.perf_counter()
                    cold_cpu[i].append(tclock() - c0)
                    cold[i].append(t1 - t0)
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
            float(np.min(cw)) if cw else None,
            float(np.min(cc)) if cc and single else None,
        )
        for p, ts, cs, cw, cc in zip(paths, times, cpu, cold, cold_cpu, strict=True)
    ]
