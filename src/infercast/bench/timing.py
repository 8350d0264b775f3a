"""The timing protocol: first inference, warm-up, steady state.

Shipped to the board as is by :mod:`infercast.bench.remote` (with
:mod:`.stats`, :mod:`.inputgen` and :mod:`.env`), so a local run and a run on a
board time the same way: this module uses the standard library only, and its
syntax stays within Python 3.8 (a test parses it so).

1. the first inference is timed alone (``first_s``: lazy initialisation, kernel
   selection, memory planning -- the OpenVX-graph-compile trap of NPU delegates);
2. warm-up: at least ``warmup_runs`` inferences and ``warmup_time_s`` seconds,
   reported apart;
3. steady state: inferences until both ``min_runs`` and ``min_time_s`` are
   reached (or ``max_runs`` / ``max_time_s``), each timed by ``perf_counter_ns``
   around one call of the runner -- inputs are bound before the loop, so the
   timed call holds no input copies.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable


@dataclass(frozen=True)
class TimingConfig:
    warmup_runs: int = 3
    warmup_time_s: float = 0.1
    min_runs: int = 10
    min_time_s: float = 1.0
    max_runs: int = 100_000
    max_time_s: float = 60.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Timing:
    first_s: float
    warmup_s: tuple[float, ...]
    samples_s: tuple[float, ...]


def measure(
    run: Callable[[], object],
    cfg: TimingConfig,
    progress: Callable[[str, float], None] | None = None,
) -> Timing:
    """First inference, warm-up and steady-state samples of ``run`` (see the module doc)."""
    clock = time.perf_counter_ns
    t0 = clock()
    run()
    first = (clock() - t0) * 1e-9
    warm: list[float] = []
    end = time.perf_counter() + cfg.warmup_time_s
    while len(warm) < cfg.warmup_runs or time.perf_counter() < end:
        t0 = clock()
        run()
        warm.append((clock() - t0) * 1e-9)
        if len(warm) >= cfg.max_runs:
            break
    samples: list[float] = []
    start = time.perf_counter()
    last_report = start
    while True:
        t0 = clock()
        run()
        t1 = clock()
        samples.append((t1 - t0) * 1e-9)
        now = time.perf_counter()
        n = len(samples)
        if (
            (n >= cfg.min_runs and now - start >= cfg.min_time_s)
            or n >= cfg.max_runs
            or (now - start >= cfg.max_time_s and n >= 1)
        ):
            break
        if progress is not None and now - last_report > 0.2:
            last_report = now
            frac = min(n / max(cfg.min_runs, 1), (now - start) / max(cfg.min_time_s, 1e-9), 1.0)
            progress("measure", frac)
    return Timing(first, tuple(warm), tuple(samples))
