"""Offset planners: place buffers with known lifetimes in one arena.

Every strategy is a greedy offset assignment over buffers given as (size,
first step, last step): take the buffers in some order and put each at an
offset where it overlaps in memory no placed buffer that it overlaps in time.
A strategy is an order plus a fit rule:

* ``greedy_by_size`` — Pisarchyk & Lee 2020, "Efficient Memory Management for
  Deep Neural Net Inference" (arXiv:2001.03288), *Greedy by Size for Offset
  Calculation*: largest first (ties: earlier first use); each buffer goes into
  the smallest gap between placed, time-overlapping buffers that fits it (best
  fit), else above them. TFLite's ``ArenaPlanner``
  (``tensorflow/lite/arena_planner.cc``: size order with the allocation node as
  tie-break in ``CreateTensorAllocationVector``, best-fit gap search in
  ``simple_memory_arena.cc``) is of this family.
* ``greedy_by_size_first_fit`` — the same order, the *lowest* gap that fits:
  TFLite Micro's ``GreedyMemoryPlanner``
  (``tensorflow/lite/micro/memory_planner/greedy_memory_planner.cc``).
* ``greedy_by_breadth`` — Pisarchyk & Lee's *Greedy by Breadth*: steps in
  decreasing order of the bytes alive there; at each, its unplaced buffers
  largest first. A buffer is thus taken at the broadest step of its lifetime;
  ties by longer lifetime (Arm Vela's "urgency" order in
  ``ethosu/vela/hillclimb_allocation.py`` is the same key).
* ``greedy_by_first_use`` — execution order, first fit: optimal when all
  buffers have one size (interval partitioning), where size orders are not.

:func:`plan_offsets` runs them and keeps the smallest arena, stopping as soon
as one reaches the lower bound (the most bytes alive at one step: no plan can
be smaller). If none does, an *order search* follows (the idea of Vela's
HillClimb allocator): the buffer that sets the arena's top is moved ahead of
a buffer placed before it that overlaps it in time, the buffers are placed
again, and the order is kept when the arena does not grow; a fixed, seeded
number of tries scaled so that the total work stays bounded (none on graphs so
large that fewer than ``SEARCH_MIN_TRIES`` would fit). Sizes are
rounded up to ``alignment`` and offsets are multiples of it.

A buffer may change size over its lifetime (``segments``): tensors sharing a
buffer (an alias, or an op writing in place over its input) all start at its
offset, so at each step the buffer needs the largest of its tensors alive
then. Such a buffer is a set of time segments placed at one offset (the
lowest offset where every segment fits); a plain buffer is one segment.

Cost: the time-overlap neighbours of each segment are found once (numpy); a
placement is then O(sum of neighbour counts · log), in Python.
``bench/bench_memory.py`` measures 5,000-buffer graphs.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

STRATEGIES = (
    "greedy_by_size",
    "greedy_by_breadth",
    "greedy_by_size_first_fit",
    "greedy_by_first_use",
)
ORDER_SEARCH = "order_search"

SEARCH_WORK = 2_000_000
"""Budget of the order search in work units: a try costs (buffers + time-overlapping
pairs) units, ~0.2 us each here, so the search adds at most ~0.4 s."""
SEARCH_TRIES = 4000
"""At most this many tries of the order search."""
SEARCH_MIN_TRIES = 10
"""Below this many tries per start (very large graphs) the search is not run."""


@dataclass(frozen=True)
class PlanResult:
    offsets: tuple[int, ...]
    """Byte offset of each buffer, in the order given."""
    arena_bytes: int
    strategy: str
    tried: dict[str, int]
    """Arena bytes of every strategy that ran."""
    lower_bound_bytes: int
    """Largest sum of aligned sizes alive at one step: no plan can be smaller."""


Segment = tuple[int, int, int]
"""(bytes, first step, last step), inclusive."""


def align_up(n: int, alignment: int) -> int:
    return -(-n // alignment) * alignment


class _Problem:
    """Buffers as groups of time segments (sizes aligned), with segment neighbours."""

    def __init__(self, segments: Sequence[Sequence[Segment]], alignment: int) -> None:
        seg_size: list[int] = []
        seg_first: list[int] = []
        seg_last: list[int] = []
        seg_group: list[int] = []
        self.groups: list[list[int]] = []
        for g, segs in enumerate(segments):
            if not segs:
                raise ValueError(f"buffer {g} has no segment")
            ids = []
            for nb, f, la in segs:
                if not 0 <= f <= la:
                    raise ValueError("every buffer needs 0 <= first step <= last step")
                ids.append(len(seg_size))
                seg_size.append(align_up(int(nb), alignment))
                seg_first.append(int(f))
                seg_last.append(int(la))
                seg_group.append(g)
            self.groups.append(ids)
        self.seg_size = seg_size
        self.seg_group = seg_group
        first = np.asarray(seg_first, dtype=np.int64)
        last = np.asarray(seg_last, dtype=np.int64)
        size = np.asarray(seg_size, dtype=np.int64)
        diff = np.zeros(int(last.max()) + 2, dtype=np.int64)
        np.add.at(diff, first, size)
        np.add.at(diff, last + 1, -size)
        self.live = np.cumsum(diff[:-1])
        self.bound = int(self.live.max())
        self.nbrs = _overlaps(seg_first, seg_last, seg_group)
        n = len(self.groups)
        # per buffer: envelope (largest segment, first step, last step), for the orders
        self.size = np.zeros(n, dtype=np.int64)
        self.first = np.zeros(n, dtype=np.int64)
        self.last = np.zeros(n, dtype=np.int64)
        for g, ids in enumerate(self.groups):
            self.size[g] = max(seg_size[i] for i in ids)
            self.first[g] = min(seg_first[i] for i in ids)
            self.last[g] = max(seg_last[i] for i in ids)
        self.work = len(seg_size) + sum(len(x) for x in self.nbrs)

    def buffer_neighbours(self, g: int) -> list[int]:
        return sorted({self.seg_group[t] for s in self.groups[g] for t in self.nbrs[s]})

    def place(self, order: Sequence[int], best_fit: bool) -> tuple[list[int], int]:
        size = self.seg_size
        grp = self.seg_group
        nbrs = self.nbrs
        off = [-1] * len(self.groups)
        arena = 0
        for g in order:
            segs = self.groups[g]
            if len(segs) == 1:
                s = segs[0]
                need = size[s]
                placed = sorted(
                    (off[grp[t]], off[grp[t]] + size[t]) for t in nbrs[s] if off[grp[t]] >= 0
                )
                o = -1
                top = 0
                best_gap = -1
                for start, end in placed:
                    gap = start - top
                    if gap >= need and (best_gap < 0 or gap < best_gap):
                        o = top
                        best_gap = gap
                        if not best_fit:
                            break
                    if end > top:
                        top = end
                if o < 0:
                    o = top
            else:
                # lowest offset where every segment fits: o is forbidden inside
                # (placed offset - segment size, placed end) for each neighbour
                need = max(size[s] for s in segs)
                forbidden = sorted(
                    (off[grp[t]] - size[s], off[grp[t]] + size[t])
                    for s in segs
                    for t in nbrs[s]
                    if off[grp[t]] >= 0
                )
                o = 0
                for lo, hi in forbidden:
                    if o <= lo:
                        break
                    if o < hi:
                        o = hi
            off[g] = o
            if o + need > arena:
                arena = o + need
        return off, arena


def _overlaps(first: list[int], last: list[int], group: list[int]) -> list[list[int]]:
    """For each segment, the segments of other buffers alive at a common step (ascending).

    A sweep over the segments in order of first step: the segments still alive when one
    starts are exactly those it overlaps in time (they started no later and end no
    earlier), so the work is the number of overlapping pairs, not its square.
    """
    n = len(first)
    nbrs: list[list[int]] = [[] for _ in range(n)]
    active: list[int] = []
    for s in sorted(range(n), key=first.__getitem__):
        f = first[s]
        active = [j for j in active if last[j] >= f]
        g = group[s]
        mine = nbrs[s]
        for j in active:
            if group[j] != g:
                mine.append(j)
                nbrs[j].append(s)
        active.append(s)
    for lst in nbrs:
        lst.sort()
    return nbrs


def _by_size(p: _Problem) -> list[int]:
    idx = np.arange(len(p.size))
    return [int(i) for i in np.lexsort((idx, p.first, -p.size))]


def _by_first_use(p: _Problem) -> list[int]:
    idx = np.arange(len(p.size))
    return [int(i) for i in np.lexsort((idx, -p.size, p.first))]


def _by_breadth(p: _Problem) -> list[int]:
    """Visiting steps by decreasing breadth (bytes alive), take the buffers alive
    there that are not placed yet: each buffer's key is the broadest step of its
    lifetime (the earliest on ties), a range maximum from a sparse table."""
    live = p.live
    n_steps = len(live)
    enc = live.astype(np.int64) * (n_steps + 1) + (n_steps - np.arange(n_steps))
    table = [enc]
    width = 1
    while width * 2 <= n_steps:
        prev = table[-1]
        table.append(np.maximum(prev[:-width], prev[width:]))
        width *= 2
    first, last = p.first, p.last
    span = last - first + 1
    level = np.floor(np.log2(span)).astype(np.int64)
    key = np.empty(len(first), dtype=np.int64)
    for j in np.unique(level):
        sel = np.flatnonzero(level == j)
        t = table[int(j)]
        key[sel] = np.maximum(t[first[sel]], t[last[sel] - (1 << int(j)) + 1])
    idx = np.arange(len(first))
    return [int(i) for i in np.lexsort((idx, -p.size, -span, -key))]


def _order_search(
    p: _Problem, order: list[int], best_fit: bool, tries: int, rng: random.Random
) -> tuple[list[int], list[int], int]:
    """Local search over the placement order (the idea of Vela's HillClimb
    allocator): the buffer that sets the arena's top is moved ahead of a buffer
    placed before it that overlaps it in time, or two of the buffers that overlap
    it in time swap places in the order; kept when the arena does not grow."""
    off, arena = p.place(order, best_fit)
    best = (order, off, arena)
    size = p.size
    for _ in range(tries):
        if arena <= p.bound:
            break
        top = max(range(len(off)), key=lambda i: (off[i] + int(size[i]), -i))
        pos = {b: k for k, b in enumerate(order)}
        nb = p.buffer_neighbours(top)
        new = list(order)
        if rng.random() < 0.5:
            before = [j for j in nb if pos[j] < pos[top]]
            if not before:
                continue
            j = rng.choice(before)
            new.pop(pos[top])
            new.insert(pos[j], top)
        elif nb:
            a, b = rng.sample([top, *nb], 2)
            new[pos[a]], new[pos[b]] = new[pos[b]], new[pos[a]]
        new_off, new_arena = p.place(new, best_fit)
        if new_arena <= arena:
            order, off, arena = new, new_off, new_arena
            if arena < best[2]:
                best = (order, off, arena)
    return best


def plan_offsets(
    sizes: Sequence[int],
    firsts: Sequence[int],
    lasts: Sequence[int],
    *,
    alignment: int = 16,
    strategies: Sequence[str] = STRATEGIES,
    search: bool = True,
    segments: Sequence[Sequence[Segment]] | None = None,
) -> PlanResult:
    """Offsets for buffers ``i`` of ``sizes[i]`` bytes alive over steps
    ``firsts[i]..lasts[i]`` (inclusive), sharing one arena; or, with
    ``segments``, buffers whose size changes over time (``segments[i]``: the
    (bytes, first, last) pieces of buffer ``i``, placed at one offset; then
    ``sizes`` / ``firsts`` / ``lasts`` are ignored). Runs ``strategies`` (then
    the order search, if ``search``) and keeps the smallest arena."""
    if alignment < 1:
        raise ValueError("alignment must be a positive number of bytes")
    unknown = [s for s in strategies if s not in STRATEGIES]
    if unknown:
        raise ValueError(f"unknown strategy {unknown[0]!r}; choose from {STRATEGIES}")
    if segments is None:
        segments = [[(s, f, la)] for s, f, la in zip(sizes, firsts, lasts, strict=True)]
    n = len(segments)
    if n == 0 or not strategies:
        return PlanResult((0,) * n, 0, "", {}, 0)
    p = _Problem(segments, alignment)
    best: tuple[list[int], list[int], int, str, bool] | None = None
    tried: dict[str, int] = {}
    starts: list[tuple[list[int], bool, int]] = []
    for name in strategies:
        if name == "greedy_by_breadth":
            order = _by_breadth(p)
        elif name == "greedy_by_first_use":
            order = _by_first_use(p)
        else:
            order = _by_size(p)
        fit = name in ("greedy_by_size", "greedy_by_breadth")
        off, arena = p.place(order, fit)
        tried[name] = arena
        starts.append((order, fit, arena))
        if best is None or arena < best[2]:
            best = (order, off, arena, name, fit)
        if arena <= p.bound:
            break
    assert best is not None
    order, off, arena, name, fit = best
    tries = min(SEARCH_TRIES, SEARCH_WORK // p.work) // 2
    if search and arena > p.bound and tries >= SEARCH_MIN_TRIES:
        # Two starts (the two best greedy orders), the budget split between them.
        rng = random.Random(0)
        for start in sorted(starts, key=lambda st: st[2])[:2]:
            o, f, a = _order_search(p, list(start[0]), start[1], tries, rng)
            if a < arena:
                order, off, arena, name = o, f, a, ORDER_SEARCH
            if arena <= p.bound:
                break
        tried[ORDER_SEARCH] = arena
    return PlanResult(tuple(off), arena, name, tried, p.bound)
