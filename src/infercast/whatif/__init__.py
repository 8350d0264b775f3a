"""What-if variants of a model, and advice computed from them.

* :mod:`.spec` -- what a variant is (resolution, width, dtype, replacements, threads);
* :mod:`.transform` -- a variant as an IR transform (a new frozen Graph, shapes
  re-derived through the format's shape rules);
* :mod:`.evaluate` -- the variant through analysis, memory plan, placement, forecast;
* :mod:`.sweep` -- many variants over the machine's cores;
* :mod:`.search` -- ``--fit``: the largest variant that fits the target;
* :mod:`.advise` -- ranked advice, each item's gain from the matching what-if;
* :mod:`.export` -- variants as runnable .onnx / .tflite files (random weights).

The functions here take a model (a path or a loaded Graph) and a target (a name,
a .toml path or a loaded Target) and return plain data; the façade
(``infercast.whatif``, ``infercast.advise`` in :mod:`infercast.api`) adds
``to_records()`` and ``to_dict()`` (rendered by :mod:`infercast.report.whatif`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from infercast.ir.graph import Graph, Shape
from infercast.targets import Target, load_target
from infercast.whatif.evaluate import VariantResult, evaluate
from infercast.whatif.plan import ChannelPlan
from infercast.whatif.search import FitSearch, search
from infercast.whatif.spec import (
    DTypeName,
    QuantScheme,
    Replacement,
    VariantError,
    VariantSpec,
    grid,
    parse_replacements,
)
from infercast.whatif.sweep import sweep
from infercast.whatif.transform import transform

ModelLike = str | os.PathLike[str] | Graph
TargetLike = str | os.PathLike[str] | Target


def _graph(model: ModelLike, input_shapes: Mapping[str, Shape] | None) -> Graph:
    if isinstance(model, Graph):
        return model
    from infercast.frontends import load

    return load(model, input_shapes)


def _target(target: TargetLike) -> Target:
    return target if isinstance(target, Target) else load_target(os.fspath(target))


@dataclass(frozen=True)
class WhatIfResult:
    """A sweep (or a ``fit`` search) of variants of one model on one target."""

    target: Target
    model: str
    base: VariantResult
    """The model as it is."""
    variants: tuple[VariantResult, ...]
    errors: tuple[tuple[str, str], ...] = ()
    """(variant label, why it could not be made)."""
    fit: FitSearch | None = None
    graph: Graph | None = field(default=None, repr=False)


def _replacements(replace: Sequence[str | Replacement]) -> list[Replacement]:
    out: list[Replacement] = []
    for r in replace:
        out.extend([r] if isinstance(r, Replacement) else parse_replacements([r]))
    return out


def _check_options(
    graph: Graph, reps: Sequence[Replacement], keep: Sequence[str], quant: QuantScheme | None
) -> None:
    """A bad option (an unknown --keep layer, a replacement that matches nothing, --quant
    on a float model) is an error of the whole command, not of each variant."""
    kernels = tuple(r for r in reps if r.src_kernel is not None)
    activations = tuple(r for r in reps if r.src_kernel is None)
    if keep or kernels:
        ChannelPlan(graph, VariantSpec(keep=tuple(keep), replace=kernels))
    if activations or quant is not None:
        transform(graph, VariantSpec(replace=activations, quant=quant))


def whatif(
    model: ModelLike,
    target: TargetLike,
    input_shapes: Mapping[str, Shape] | None = None,
    *,
    resolution: Sequence[int | tuple[int, int]] = (),
    width: Sequence[float] = (),
    dtype: Sequence[DTypeName] = (),
    quant: QuantScheme | None = None,
    replace: Sequence[str | Replacement] = (),
    keep: Sequence[str] = (),
    divisor: int = 8,
    threads: Sequence[int] = (),
    fit: bool = False,
    budget_s: float | None = None,
    jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> WhatIfResult:
    """Variants of ``model`` on ``target``: the product of the lists (an empty list keeps
    the model's own value), each through analysis, memory plan, placement and forecast.

    ``fit=True`` searches the ranges the lists span for the largest variant (MACs)
    that fits every memory of the target and ``budget_s``.
    """
    graph = _graph(model, input_shapes)
    tgt = _target(target)
    res = [(r, r) if isinstance(r, int) else (int(r[0]), int(r[1])) for r in resolution]
    reps = _replacements(replace)
    specs = grid(
        res or [None],
        list(width) or [1.0],
        list(dtype) or [None],
        list(threads) or [None],
        quant=quant,
        replace=reps,
        keep=keep,
        divisor=divisor,
    )
    _check_options(graph, reps, keep, quant)
    base = evaluate(graph, VariantSpec(), tgt)
    model_name = str(graph.path or graph.name)
    if fit:
        results: list[VariantResult] = []
        errors: list[tuple[str, str]] = []
        best: FitSearch | None = None
        dtype_axis: list[DTypeName | None] = [*dtype] or [None]
        thread_axis: list[int | None] = [*threads] or [None]
        for d in dtype_axis:
            for t in thread_axis:
                spec = VariantSpec(
                    dtype=d, quant=quant, replace=tuple(reps), keep=tuple(keep),
                    divisor=divisor, threads=t,
                )  # fmt: skip
                found = search(
                    graph, tgt, spec, resolutions=res, widths=list(width), budget_s=budget_s
                )
                results.extend(found.tried)
                errors.extend(
                    (f.split(":", 1)[0], f.split(":", 1)[-1].strip()) for f in found.failed
                )
                if best is None or (
                    found.best is not None
                    and (best.best is None or found.best.macs > best.best.macs)
                ):
                    best = found
        results.sort(key=lambda r: r.macs)
        return WhatIfResult(tgt, model_name, base, tuple(results), tuple(errors), best, graph)
    outcomes = sweep(graph, specs, tgt, jobs=jobs, progress=progress)
    ok = tuple(o for o in outcomes if isinstance(o, VariantResult))
    bad = tuple(
        (s.label(), str(o))
        for s, o in zip(specs, outcomes, strict=True)
        if isinstance(o, VariantError)
    )
    return WhatIfResult(tgt, model_name, base, ok, bad, None, graph)


__all__ = [
    "FitSearch",
    "Replacement",
    "VariantError",
    "VariantResult",
    "VariantSpec",
    "WhatIfResult",
    "evaluate",
    "search",
    "sweep",
    "transform",
    "whatif",
]
