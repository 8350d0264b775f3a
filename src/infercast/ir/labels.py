"""The closed sets of labels that results carry, defined once.

Every stage's result dataclass types its label fields with these, so a
misspelt label is a type error and renderers can rely on the sets.
"""

from __future__ import annotations

from typing import Literal, get_args

LayerStatus = Literal["ok", "folded", "unsupported", "unknown_shape", "control_flow"]
"""Cost status of a layer (:class:`infercast.analysis.cost.LayerCost`): ``ok``;
``folded`` (a constant computation done once at load); ``unsupported`` (no cost
rule); ``unknown_shape`` (the cost rule needs shapes not known statically);
``control_flow`` (the cost of the called subgraphs)."""

Placement = Literal["accelerator", "partial", "cpu"]
"""Where a layer runs (:class:`infercast.targets.placement.LayerPlacement`): all of
it on the accelerator, rewritten into accelerator work plus CPU steps, or on the
fallback processor."""

Processor = Literal["accelerator", "cpu"]
"""The processor a layer's main work runs on (``partial`` layers: the accelerator)."""

Bound = Literal[
    "compute", "memory", "overhead", "transfer", "fallback", "fused", "elided", "unknown"
]
"""What sets a layer's forecast latency (:class:`infercast.estimate.forecast.LayerForecast`):
the largest term (``compute``, ``memory``, ``overhead``, ``transfer``); ``fallback``
for a layer on the fallback CPU of a target with an accelerator; ``fused`` for a
member of a fused kernel other than its first op; ``elided`` for a transpose the
runtime cancels; ``unknown`` when its arithmetic is not known."""

LAYER_STATUSES: tuple[LayerStatus, ...] = get_args(LayerStatus)
PLACEMENTS: tuple[Placement, ...] = get_args(Placement)
BOUNDS: tuple[Bound, ...] = get_args(Bound)

__all__ = [
    "BOUNDS",
    "LAYER_STATUSES",
    "PLACEMENTS",
    "Bound",
    "LayerStatus",
    "Placement",
    "Processor",
]
