"""Device targets as data, and accelerator placement with a reason for every op.

* :func:`load_target` -- a built-in target by name, or a user's ``.toml`` by path.
* :func:`place` -- per-node placement of a loaded graph: segments, crossings, memory fit.
"""

from infercast.targets.loader import builtin_names, list_targets, load_target
from infercast.targets.placement import PlacementReport, place
from infercast.targets.schema import Target, TargetError

__all__ = [
    "PlacementReport",
    "Target",
    "TargetError",
    "builtin_names",
    "list_targets",
    "load_target",
    "place",
]
