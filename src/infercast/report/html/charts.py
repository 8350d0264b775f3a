"""Chart geometry for the HTML report: scales, ticks, and the marks of each chart as plain data.

The templates draw inline SVG from these records (``x``, ``y``, ``w``, ``h``,
a CSS class, a tooltip); nothing here writes markup. Every chart has a fixed
view box (:data:`WIDTH` units wide) and scales to the width of the page.
Coordinates are rounded to 0.1 unit: the file stays small and the output is
deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

WIDTH = 960
"""View-box width of every chart."""

Mark = dict[str, Any]


def r1(v: float) -> float:
    return round(v, 1)


@dataclass(frozen=True)
class Frame:
    """The plotting area inside a chart of ``width`` x ``height``."""

    width: int = WIDTH
    height: int = 300
    left: int = 70
    right: int = 20
    top: int = 16
    bottom: int = 40

    @property
    def x0(self) -> float:
        return float(self.left)

    @property
    def x1(self) -> float:
        return float(self.width - self.right)

    @property
    def y0(self) -> float:
        """Top of the plotting area."""
        return float(self.top)

    @property
    def y1(self) -> float:
        """Bottom of the plotting area."""
        return float(self.height - self.bottom)

    def box(self) -> Mark:
        return {
            "x": self.x0,
            "y": self.y0,
            "w": r1(self.x1 - self.x0),
            "h": r1(self.y1 - self.y0),
        }


@dataclass(frozen=True)
class Scale:
    """Maps a value in ``[lo, hi]`` to a coordinate in ``[a, b]`` (log10 when ``log``)."""

    lo: float
    hi: float
    a: float
    b: float
    log: bool = False

    def _t(self, v: float) -> float:
        return math.log10(v) if self.log else float(v)

    def __call__(self, v: float) -> float:
        lo, hi = self._t(self.lo), self._t(self.hi)
        if hi == lo:
            return self.a
        if self.log and v <= 0:
            return self.a
        return self.a + (self._t(v) - lo) / (hi - lo) * (self.b - self.a)


def nice_step(span: float, n: int) -> float:
    """A 1-2-5 step that cuts ``span`` into about ``n`` parts."""
    if span <= 0:
        return 1.0
    raw = span / max(n, 1)
    mag = 10.0 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if m * mag >= raw:
            return m * mag
    return 10 * mag


def linear_ticks(hi: float, n: int = 5) -> tuple[float, list[float]]:
    """(axis top, ticks from 0) for values in ``[0, hi]``."""
    if hi <= 0:
        return 1.0, [0.0, 1.0]
    step = nice_step(hi, n)
    top = math.ceil(hi / step - 1e-9) * step
    k = round(top / step)
    return top, [i * step for i in range(k + 1)]


def byte_ticks(hi: float, n: int = 5) -> tuple[float, list[float]]:
    """(axis top, ticks from 0) for bytes in ``[0, hi]``: steps of 1-2-5 x KiB / MiB / GiB,
    so that the labels read 512 KiB, 1 MiB, 1.5 MiB rather than 488.3 KiB."""
    unit = 1.0
    while unit * 1024 <= hi:
        unit *= 1024
    top, ticks = linear_ticks(hi / unit, n)
    return top * unit, [t * unit for t in ticks]


def si(v: float) -> str:
    """A power of ten with an SI prefix: 1e9 -> '1 G', 0.01 -> '0.01'."""
    for div, unit in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return f"{v / div:g} {unit}"
    return f"{v:g}"


def log_ticks(lo: float, hi: float) -> list[float]:
    """Powers of ten in ``[lo, hi]`` (every other one beyond 8 decades)."""
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    every = 1 if b - a <= 8 else 2
    return [10.0**e for e in range(a, b + 1, every) if lo <= 10.0**e <= hi]


def y_ticks(scale: Scale, values: Sequence[float], fmt: Callable[[float], str]) -> list[Mark]:
    return [{"y": r1(scale(v)), "label": fmt(v)} for v in values]


def x_ticks(scale: Scale, values: Sequence[float], fmt: Callable[[float], str]) -> list[Mark]:
    return [{"x": r1(scale(v)), "label": fmt(v)} for v in values]


def index_ticks(n: int, scale: Scale, want: int = 10) -> list[Mark]:
    """Ticks at layer positions 0, step, 2 x step, … (labels are positions)."""
    if n <= 0:
        return []
    step = max(int(nice_step(n, want)), 1)
    return [{"x": r1(scale(i + 0.5)), "label": str(i)} for i in range(0, n, step)]


def clip_line_log(slope_c: float, xs: Scale, ys: Scale) -> tuple[float, float, float, float] | None:
    """Endpoints of ``y = slope_c * x`` on log axes, clipped to the scales' ranges."""
    x_lo, x_hi = xs.lo, xs.hi
    y_lo, y_hi = ys.lo, ys.hi
    # x where the line meets y_lo and y_hi
    xa = max(x_lo, y_lo / slope_c)
    xb = min(x_hi, y_hi / slope_c)
    if xa >= xb:
        return None
    return (r1(xs(xa)), r1(ys(slope_c * xa)), r1(xs(xb)), r1(ys(slope_c * xb)))


@dataclass
class Chart:
    """What a template needs to draw one chart."""

    kind: str
    title: str
    frame: Frame
    marks: list[Mark] = field(default_factory=list)
    lines: list[Mark] = field(default_factory=list)
    labels: list[Mark] = field(default_factory=list)
    xticks: list[Mark] = field(default_factory=list)
    yticks: list[Mark] = field(default_factory=list)
    xlabel: str = ""
    ylabel: str = ""
    legend: list[Mark] = field(default_factory=list)
    caption: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def box(self) -> Mark:
        return self.frame.box()

    @property
    def mark_count(self) -> int:
        return len(self.marks)


def bucket_max(values: Sequence[int], buckets: int) -> list[tuple[int, int, int]]:
    """``values`` cut into at most ``buckets`` runs: (first index, last index, max of run)."""
    n = len(values)
    if n == 0:
        return []
    size = max(math.ceil(n / buckets), 1)
    out = []
    for a in range(0, n, size):
        b = min(a + size, n) - 1
        out.append((a, b, max(values[a : b + 1])))
    return out
