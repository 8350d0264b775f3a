"""Timing single-operator sub-models (LiteRT's per-op profile): the part that runs where
the model runs.

Shipped to the board as is by :mod:`infercast.bench.remote` (standard library
and numpy only, Python 3.8 syntax). The sub-models are cut from the flatbuffer
on the host (:mod:`infercast.bench.runtimes.litert_ops`, which needs the
TFLite schema); this module only times them, and the host turns the raw times
into a :class:`~infercast.bench.profiles.base.Profile` -- the same code
whether the model ran here or on a board.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from .inputgen import InputSpec, make_inputs

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence


def time_call(invoke: Callable[[], object], runs: int, min_time_s: float) -> float:
    """Median time of ``invoke`` over at least ``runs`` calls and ``min_time_s`` seconds."""
    for _ in range(2):
        invoke()
    samples: list[float] = []
    end = time.perf_counter() + min_time_s
    while len(samples) < runs or time.perf_counter() < end:
        t0 = time.perf_counter_ns()
        invoke()
        samples.append((time.perf_counter_ns() - t0) * 1e-9)
        if len(samples) >= 100 * max(runs, 1):
            break
    return float(np.median(samples))


def delegated_nodes(interp: Any) -> int | None:
    """Nodes of an allocated interpreter's execution plan that a delegate runs (None: unknown).

    LiteRT lists a delegate's node as operator ``DELEGATE`` in ``_get_ops_details``
    (a private method: absent or changed, the answer is unknown).
    """
    try:
        ops = interp._get_ops_details()
    except Exception:
        return None
    return sum(1 for o in ops if o.get("op_name") == "DELEGATE")


def time_single_ops(
    cuts: Sequence[tuple[int, str, bytes | None]],
    relu_model: bytes,
    make_interpreter: Callable[[bytes], Any],
    whole_invoke: Callable[[], object],
    runs: int,
    min_time_s: float = 0.02,
    seed: int = 0,
    default: str = "",
    delegate: str = "",
    probe: Callable[[bytes], Any] | None = None,
) -> dict[str, Any]:
    """Raw times of every cut operator, one ``invoke()`` overhead and the whole model.

    ``cuts`` are ``(operator index, op name, model bytes or None when it cannot
    be cut)``; ``relu_model`` a one-element RELU model whose invoke is the
    overhead. Each op's ``provider`` says what ran it: ``delegate`` (a name) when
    ``probe`` -- an interpreter with the external delegate and no default ones --
    hands the op's node to a delegate; else ``default`` (``XNNPACK``) when the
    timed interpreter did; else ``cpu``; ``""`` when LiteRT does not say.
    """
    base = make_interpreter(relu_model)
    base.allocate_tensors()
    overhead = time_call(base.invoke, runs, min_time_s)
    whole_before = time_call(whole_invoke, runs, min_time_s)
    ops: list[dict[str, Any]] = []
    skipped: list[str] = []
    for i, name, blob in cuts:
        if blob is None:
            skipped.append(f"{i} ({name})")
            continue
        try:
            interp = make_interpreter(blob)
            interp.allocate_tensors()
            details = interp.get_input_details()
            specs = tuple(
                InputSpec(
                    d["name"] or f"in{k}",
                    tuple(int(x) for x in d["shape"]),
                    np.dtype(d["dtype"]).name,
                )
                for k, d in enumerate(details)
            )
            feeds, _ = make_inputs(specs, seed=seed)
            for k, spec in enumerate(specs):  # (zip's strict= needs Python 3.10)
                interp.set_tensor(details[k]["index"], feeds[spec.name])
            t = time_call(interp.invoke, runs, min_time_s)
        except (RuntimeError, ValueError) as exc:
            skipped.append(f"{i} ({name}: {str(exc).splitlines()[0][:120]})")
            continue
        n = delegated_nodes(interp)
        provider = "" if n is None else (default or "delegate") if n else "cpu"
        if probe is not None and n:
            try:
                alone = probe(blob)
                alone.allocate_tensors()
                if delegated_nodes(alone):
                    provider = delegate or "delegate"
            except (RuntimeError, ValueError):
                pass
        ops.append({"index": i, "op": name, "raw_s": t, "provider": provider})
    whole_after = time_call(whole_invoke, runs, min_time_s)
    return {
        "overhead_s": overhead,
        "whole_before_s": whole_before,
        "whole_after_s": whole_after,
        "ops": ops,
        "skipped": skipped,
        "runs": runs,
    }
