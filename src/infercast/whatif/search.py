"""``--fit``: the largest variant (by MACs) that fits every memory of the target and,
optionally, a latency budget -- searched over the axes' ranges, not only the listed
grid.

* Resolution: every multiple of the model's total stride (input size over its
  smallest feature map; 32 for the MobileNets) between the smallest and largest
  size given, where the stride-2 layers' padding keeps its parity (keras'
  ``correct_pad`` is TF ``SAME`` at those sizes).
* Width: every multiplier where some layer's divisor-rounded channel count
  changes (:func:`width_levels`), between the smallest and largest given.

Fitting and latency grow with both (more pixels, more channels), so each axis is
bisected; with both axes, the width is bisected at each resolution, from the
largest, the frontier narrowing the range as the resolution falls. A variant
that cannot be made (a shape that does not carry) counts as not fitting.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from infercast.ir.graph import Graph, Node
from infercast.ir.views import kernel_dims
from infercast.targets import Target
from infercast.whatif.evaluate import VariantResult, evaluate
from infercast.whatif.ops import make_divisible, total_stride
from infercast.whatif.plan import ChannelPlan
from infercast.whatif.spec import VariantError, VariantSpec


@dataclass(frozen=True)
class FitSearch:
    """The outcome of a ``--fit`` search."""

    best: VariantResult | None
    """The largest variant that fits (None: none in the searched ranges does)."""
    tried: tuple[VariantResult, ...]
    """Every variant evaluated, in the order tried."""
    resolutions: tuple[tuple[int, int], ...]
    """The resolutions searched (empty: the model's own only)."""
    widths: tuple[float, ...]
    """The width multipliers searched (empty: 1.0 only)."""
    budget_s: float | None
    failed: tuple[str, ...] = field(default=())
    """Variants that could not be made, with why."""

    @property
    def found(self) -> bool:
        return self.best is not None


def resolution_steps(graph: Graph, lo: int, hi: int) -> list[int]:
    """Multiples of the total stride in [lo, hi], with lo and hi themselves."""
    s = total_stride(graph)
    out = {lo, hi}
    k = -(-lo // s)
    while k * s <= hi:
        out.add(k * s)
        k += 1
    return sorted(v for v in out if lo <= v <= hi)


def width_levels(graph: Graph, spec: VariantSpec, lo: float, hi: float) -> list[float]:
    """Multipliers in [lo, hi] each giving a different set of divisor-rounded channel
    counts (the smallest multiplier of each set, rounded up to 1e-4)."""
    plan = ChannelPlan(graph, spec.with_(width=0.5))
    counts = sorted(
        {
            _out_channels(graph, n)
            for n in graph.nodes
            if plan.scalable(n) and n.index not in plan.keep and n.index not in plan.expansions
        }
    )
    d = spec.divisor
    cand = {lo, hi}
    for c in counts:
        if c % d:
            # round(c * w) changes at half-integers
            k_lo, k_hi = math.ceil(lo * c - 0.5), math.floor(hi * c + 0.5)
            for k in range(max(k_lo, 0), k_hi + 1):
                cand.add((k + 0.5) / c)
            continue
        for k in range(max(int(lo * c / d) - 1, 0), int(hi * c / d) + 2):
            cand.add((k * d - d / 2) / c)  # int(c w + d/2) crosses k d
            cand.add((k * d) / (0.9 * c))  # the 10% rule flips

    def key(w: float) -> tuple[int, ...]:
        return tuple(
            make_divisible(c * w, d) if c % d == 0 else max(1, round(c * w)) for c in counts
        )

    members: dict[tuple[int, ...], list[float]] = {}
    for w in sorted(cand):
        w = math.ceil(w * 1e4) / 1e4
        if lo <= w <= hi:
            members.setdefault(key(w), []).append(w)
    out = []
    for level, mults in members.items():
        if hi in mults or lo in mults:
            out.append(hi if hi in mults else lo)
            continue
        first = min(mults)
        pick = first
        for digits in (2, 3):  # the roundest multiplier of the level
            r = math.ceil(first * 10**digits) / 10**digits
            if r <= hi and key(r) == level:
                pick = r
                break
        out.append(pick)
    return sorted(set(out))


def _out_channels(graph: Graph, node: Node) -> int:
    if node.op in ("conv", "conv_transpose"):
        wi = int(node.attrs.get("weight_input", 1))
        w = graph.tensors[node.inputs[wi]]
        return kernel_dims(w, str(node.attrs.get("weight_layout", "OIHW"))).out_channels
    w = graph.tensors[node.inputs[1]]
    assert w.shape is not None
    trans = bool(node.attrs.get("transB", 0)) or node.op == "fully_connected"
    return int((w.shape[0] if trans else w.shape[1]) or 0)


def resolution_axis(
    graph: Graph, resolutions: Sequence[tuple[int, int]]
) -> list[tuple[int, int] | None]:
    """The sizes a search tries: the stride multiples the given sizes span (square
    inputs step both sides; otherwise the aspect of the largest is kept)."""
    if not resolutions:
        return [None]
    if len(set(resolutions)) == 1:
        return [resolutions[0]]
    hs = [r[0] for r in resolutions]
    ws = [r[1] for r in resolutions]
    big = max(resolutions, key=lambda r: r[0] * r[1])
    steps = resolution_steps(graph, min(hs), max(hs))
    axis = [(h, h if big[0] == big[1] else round(h * big[1] / big[0])) for h in steps]
    kept: list[tuple[int, int] | None] = [r for r in axis if min(ws) <= r[1] <= max(ws)]
    return kept or list(axis)


Evaluator = Callable[[VariantSpec], VariantResult | None]


def search(
    graph: Graph,
    target: Target,
    base: VariantSpec,
    *,
    resolutions: Sequence[tuple[int, int]] = (),
    widths: Sequence[float] = (),
    budget_s: float | None = None,
    evaluator: Evaluator | None = None,
    accept: Callable[[VariantResult], bool] | None = None,
) -> FitSearch:
    """The largest variant of ``base`` over the ranges of ``resolutions`` and ``widths``
    (each: from its smallest to its largest value; one value fixes the axis) that fits
    the target, ``budget_s`` and ``accept`` (a further condition)."""
    tried: list[VariantResult] = []
    failed: list[str] = []
    cache: dict[VariantSpec, VariantResult | None] = {}

    def run(spec: VariantSpec) -> VariantResult | None:
        if spec in cache:
            return cache[spec]
        try:
            r = evaluator(spec) if evaluator else evaluate(graph, spec, target)
        except VariantError as exc:
            failed.append(f"{spec.label()}: {exc}")
            r = None
        cache[spec] = r
        if r is not None:
            tried.append(r)
        return r

    def ok(spec: VariantSpec) -> bool:
        r = run(spec)
        return r is not None and r.within(budget_s) and (accept is None or accept(r))

    res_axis = resolution_axis(graph, resolutions)
    width_axis = [1.0]
    if widths:
        width_axis = (
            [widths[0]]
            if len(set(widths)) == 1
            else width_levels(graph, base, min(widths), max(widths))
        )

    best: VariantResult | None = None
    top = len(width_axis) - 1
    floor_i = 0  # feasible at a larger resolution: feasible at the smaller ones too
    for res in sorted(res_axis, key=lambda r: (r[0] * r[1]) if r else 0, reverse=True):
        spec_at = [base.with_(resolution=res, width=w) for w in width_axis]
        lo_i, hi_i = floor_i, top
        if ok(spec_at[top]):
            lo_i = top
        elif not ok(spec_at[lo_i]):
            continue
        while lo_i < hi_i:
            mid = (lo_i + hi_i + 1) // 2
            if ok(spec_at[mid]):
                lo_i = mid
            else:
                hi_i = mid - 1
        floor_i = lo_i
        r = cache[spec_at[lo_i]]
        assert r is not None
        if best is None or r.macs > best.macs:
            best = r
        if lo_i == top:
            break  # the widest fits here: smaller inputs only have fewer MACs
    return FitSearch(
        best=best,
        tried=tuple(tried),
        resolutions=tuple(r for r in res_axis if r is not None),
        widths=tuple(width_axis) if widths else (),
        budget_s=budget_s,
        failed=tuple(failed),
    )
