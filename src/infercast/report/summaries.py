"""Summaries several renderers share: placement reasons grouped, per-op totals.

Vela and the Edge TPU compiler summarise a placement as "N operation(s) will run
on the Edge TPU, M on the CPU" with the reasons counted once each; a per-layer
list repeats the same reason on every layer. :func:`group_reasons` counts each
reason once, with the layers it applies to; :func:`op_summary` totals figures
per op type (as TFLite's ``benchmark_model`` "summary by node type").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from infercast.targets.placement import PlacementReport

T = TypeVar("T")


@dataclass(frozen=True)
class ReasonGroup:
    """One reason and the layers it sends to the CPU (``cpu``), rewrites (``partial``)
    or slows (``note``)."""

    check: str
    outcome: str
    text: str
    detail: str
    """The common detail (the op name for "not in its supported list"); else empty."""
    layers: tuple[int, ...]
    examples: tuple[str, ...]
    """Distinct details of the first layers, where they differ per layer."""
    rewrite: str = ""
    """What the compiler turns a ``partial`` layer into (``Pad + KPU conv + Crop``)."""

    @property
    def count(self) -> int:
        return len(self.layers)

    def line(self) -> str:
        what = f"{self.text}: {self.detail}" if self.detail else self.text
        if self.rewrite:
            what += f" -> {self.rewrite}"
        n = self.count
        return f"{n} layer{'s' if n != 1 else ''}: {what}"


PER_DETAIL = frozenset({"op_listed", "single_segment"})
"""Checks whose detail names the cause itself (the op), so layers group by it."""


def group_reasons(report: PlacementReport, examples: int = 3) -> list[ReasonGroup]:
    """Every reason of ``report`` once, with its layers, the most frequent first.

    Layers folded at load are left out (they are not part of inference).
    """
    order: list[tuple[str, str, str, str, str]] = []
    layers: dict[tuple[str, str, str, str, str], list[int]] = {}
    details: dict[tuple[str, str, str, str, str], list[str]] = {}
    for ly in report.layers:
        if ly.folded:
            continue
        for r in (*ly.reasons, *ly.notes):
            key = (r.check, r.outcome, r.text, r.detail if r.check in PER_DETAIL else "", r.rewrite)
            if key not in layers:
                order.append(key)
                layers[key] = []
                details[key] = []
            layers[key].append(ly.index)
            d = details[key]
            if r.check not in PER_DETAIL and r.detail and r.detail not in d and len(d) < examples:
                d.append(r.detail)
    rank = {"cpu": 0, "partial": 1, "note": 2}
    groups = [
        ReasonGroup(k[0], k[1], k[2], k[3], tuple(layers[k]), tuple(details[k]), k[4])
        for k in order
    ]
    groups.sort(key=lambda g: (rank.get(g.outcome, 3), -g.count))
    return groups


def split_line(report: PlacementReport) -> str:
    """ "58 mapped to the npu, 3 partial, 5 on the cpu" (Vela / edgetpu_compiler style)."""
    t = report.target
    c = report.counts()
    if t.placement.accelerator is None:
        return f"{sum(c.values())} on the {t.placement.fallback} (no accelerator)"
    parts = [f"{c['accelerator']} mapped to the {t.placement.accelerator}"]
    if c["partial"]:
        parts.append(f"{c['partial']} partially mapped")
    parts.append(f"{c['cpu']} on the {t.placement.fallback}")
    folded = sum(1 for ly in report.layers if ly.folded)
    if folded:
        parts.append(f"{folded} folded at load")
    return ", ".join(parts)


@dataclass(frozen=True)
class OpRow:
    """Totals of the layers of one op type."""

    op: str
    count: int
    values: dict[str, float]


def op_summary(
    items: Iterable[T],
    op: Callable[[T], str],
    fields: Sequence[tuple[str, Callable[[T], float | None]]],
) -> list[OpRow]:
    """Per op type, the count of ``items`` and the sums of ``fields`` (None counts as 0);
    sorted by the first field, largest first."""
    rows: dict[str, OpRow] = {}
    for it in items:
        key = op(it)
        row = rows.get(key)
        if row is None:
            row = rows[key] = OpRow(key, 0, {name: 0.0 for name, _ in fields})
        rows[key] = OpRow(
            key,
            row.count + 1,
            {name: row.values[name] + float(f(it) or 0) for name, f in fields},
        )
    first = fields[0][0] if fields else ""
    return sorted(rows.values(), key=lambda r: (-r.values.get(first, 0), -r.count, r.op))
