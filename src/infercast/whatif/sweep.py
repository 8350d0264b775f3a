"""Many variants at once, over the machine's cores.

Workers are forked with the model's :class:`Graph` and the :class:`Target` already
in memory (frozen objects, never mutated); each receives variant specs and returns
slim results (no graphs), so nothing large crosses between processes. Where fork is
not available the graph and target are pickled once per worker.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor

from infercast.errors import InfercastError
from infercast.ir.graph import Graph
from infercast.targets import Target
from infercast.whatif.evaluate import VariantResult, evaluate
from infercast.whatif.spec import VariantError, VariantSpec

Outcome = VariantResult | VariantError

_STATE: dict[str, object] = {}


def _init(graph: Graph, target: Target) -> None:
    _STATE["graph"] = graph
    _STATE["target"] = target


def _run(specs: Sequence[VariantSpec]) -> list[Outcome]:
    graph = _STATE["graph"]
    target = _STATE["target"]
    assert isinstance(graph, Graph) and isinstance(target, Target)
    return [_one(graph, s, target) for s in specs]


def _one(graph: Graph, spec: VariantSpec, target: Target) -> Outcome:
    try:
        return evaluate(graph, spec, target).slim()
    except VariantError as exc:
        return exc
    except InfercastError as exc:
        return VariantError(f"{spec.label()}: {exc}")


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def sweep(
    graph: Graph,
    specs: Sequence[VariantSpec],
    target: Target,
    *,
    jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[Outcome]:
    """Evaluate every spec (in order); a variant the model cannot carry comes back as
    its :class:`VariantError`, the others as :class:`VariantResult`."""
    n = len(specs)
    jobs = min(jobs or default_jobs(), n)
    if jobs <= 1 or n < 4:
        out = []
        for i, s in enumerate(specs):
            out.append(_one(graph, s, target))
            if progress:
                progress(i + 1, n)
        return out
    methods = mp.get_all_start_methods()
    ctx = mp.get_context("fork" if "fork" in methods else "spawn")
    # A few chunks per worker: balanced, and few round trips.
    size = max(1, -(-n // (jobs * 4)))
    chunks = [list(specs[i : i + size]) for i in range(0, n, size)]
    results: list[Outcome] = []
    with ProcessPoolExecutor(
        max_workers=jobs, mp_context=ctx, initializer=_init, initargs=(graph, target)
    ) as pool:
        done = 0
        for part in pool.map(_run, chunks):
            results.extend(part)
            done += len(part)
            if progress:
                progress(done, n)
    return results
