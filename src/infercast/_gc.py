"""Pausing Python's cyclic garbage collector while a large acyclic structure is built.

Loading a graph, costing it and planning its memory allocate about ten tracked
objects per node (tensors, nodes, tuples, dicts, per-layer records) and create no
reference cycles. With the collector on, its full collections rescan every live
object each time allocations pass its thresholds, so the time per node grows with
the graph: measured here, building and costing a 100,000-node chain took 24.5 and
21 us per node with the collector on, 13 and 15 us per node with it paused (CPU
time; 13 and 15 at 5,000 nodes either way). Reference counting still frees
everything as usual; only cycle detection waits until the block ends.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """Disable the cyclic collector for the block (nested uses are harmless)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
