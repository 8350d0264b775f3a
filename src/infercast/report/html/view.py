"""The HTML report's content as plain data: cards, tables and chart geometry.

:func:`build_view` turns the results of the pipeline stages (analysis, memory
plan, one forecast per target with its placement, optionally a joined profile
and a what-if result) into dictionaries the templates print. Every string that
comes from the model file goes through :func:`~infercast.report.text.shown`
here and is HTML-escaped by the template engine (autoescape).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from infercast._version import __version__
from infercast.analysis.cost import Analysis, LayerCost
from infercast.analysis.memory import MemoryAnalysis
from infercast.bench.join import INTERNAL, Joined
from infercast.estimate.forecast import Forecast, LayerForecast
from infercast.report.html.charts import (
    Chart,
    Frame,
    Mark,
    Scale,
    bucket_max,
    byte_ticks,
    clip_line_log,
    index_ticks,
    linear_ticks,
    log_ticks,
    r1,
    si,
    x_ticks,
    y_ticks,
)
from infercast.report.names import graph_labels
from infercast.report.placement import crossings_dict
from infercast.report.summaries import group_reasons, split_line
from infercast.report.text import shown
from infercast.report.units import human_bytes, human_count, human_seconds
from infercast.targets.placement import PlacementReport
from infercast.targets.schema import Target

BOUNDS = ("compute", "memory", "overhead", "fallback", "transfer", "unknown")
"""Bounds that carry time, in legend order (``fused`` / ``elided`` carry none)."""
PLACEMENTS = ("accelerator", "partial", "cpu")
MAX_CROSSINGS = 30
MAX_PEAK_TENSORS = 12
TIMELINE_COLUMNS = 480


@dataclass(frozen=True)
class ReportInputs:
    """What the report shows: results of the stages, computed once by the caller."""

    analysis: Analysis
    memory: MemoryAnalysis
    forecasts: Sequence[Forecast] = ()
    joined: Joined | None = None
    profile_source: str = ""
    """Where the profile came from (shown in the roofline caption)."""
    whatif: Sequence[Mapping[str, Any]] = ()
    """What-if results as JSON (``to_dict()``): each one's ``variants`` are tabled."""
    notes: Sequence[str] = field(default_factory=tuple)


def _ops_s(v: float) -> str:
    s = human_count(v)
    return f"{s}op/s" if s[-1].isalpha() else f"{s} op/s"


def _bytes_s(v: float) -> str:
    """Bandwidth in decimal units, as datasheets quote it (12.8 GB/s)."""
    s = human_count(v)
    return f"{s}B/s" if s[-1].isalpha() else f"{s} B/s"


def _plain(v: float) -> str:
    if v >= 1:
        return f"{v:g}"
    return f"{v:.3g}"


# --------------------------------------------------------------------------- #
# Calibration and uncertainty
# --------------------------------------------------------------------------- #


def uncertainty(target: Target) -> dict[str, Any]:
    """How far to trust a forecast on ``target``: {"text", "calibrated", "band"}.

    ``band`` is the median relative error of leave-one-out forecasts (the
    ``calibration`` section of the target file) when the file states it, else None.
    """
    cal = target.calibration
    loo = float(getattr(cal, "loo_median_abs_error", 0.0) or 0.0)
    worst = float(getattr(cal, "loo_worst_ratio", 0.0) or 0.0)
    rows = getattr(cal, "rows", ()) or ()
    if cal.calibrated and worst:
        n = f" on {len(rows)} models" if rows else ""
        return {
            "calibrated": True,
            "band": loo,
            "text": f"±{loo:.0%} median leave-one-out error, worst {worst:.1f}×{n}",
        }
    if cal.calibrated:
        fit = f"fit RMSPE {cal.fit_rmspe:.0%} on its own samples; " if cal.fit_rmspe else ""
        return {
            "calibrated": True,
            "band": None,
            "text": f"calibrated ({cal.runtime or cal.source}); {fit}no leave-one-out error",
        }
    return {
        "calibrated": False,
        "band": None,
        "text": "uncalibrated: datasheet figures, an order of magnitude",
    }


# --------------------------------------------------------------------------- #
# Cards
# --------------------------------------------------------------------------- #


def _fit_rows(fc: Forecast) -> list[Mark]:
    rows: list[Mark] = []
    for f in fc.placement.fit.values():
        parts = ", ".join(
            f"{k.removesuffix('_bytes').replace('_', ' ')} {human_bytes(v)}"
            for k, v in f.parts.items()
        )
        if f.fits:
            badge, state = "fits", "ok"
        elif f.on_overflow == "stream":
            badge, state = f"streams {human_bytes(f.over_by_bytes)}", "warn"
        else:
            badge, state = f"no fit: over by {human_bytes(f.over_by_bytes)}", "bad"
        rows.append(
            {
                "label": f"{shown(fc.target.name)} · {shown(f.memory)}",
                "text": f"{human_bytes(f.required_bytes)} of {human_bytes(f.capacity_bytes)}",
                "sub": parts,
                "badge": badge,
                "state": state,
            }
        )
    return rows


def _time_split(fc: Forecast) -> str:
    total = fc.latency_s or 1.0
    acc = sum(ly.latency_s for ly in fc.layers if ly.placement != "cpu")
    if fc.target.placement.accelerator is None:
        return f"all time on the {fc.target.placement.fallback}"
    return (
        f"{acc / total:.0%} of the time on the {fc.target.placement.accelerator}, "
        f"{(total - acc) / total:.0%} on the {fc.target.placement.fallback}"
    )


def cards(inp: ReportInputs) -> list[Mark]:
    a, m = inp.analysis, inp.memory
    t = a.totals
    incomplete = "" if t.complete else " (incomplete: some layers have no cost)"
    out: list[Mark] = [
        {
            "id": "compute",
            "title": "Compute",
            "value": f"{human_count(t.macs)} MACs",
            "sub": [
                f"{t.macs:,} multiply-accumulates{incomplete}",
                f"{human_count(t.flops)} FLOPs ({t.flops:,}; 1 MAC = 2 FLOPs)",
            ],
            "rows": [],
        },
        {
            "id": "weights",
            "title": "Parameters and weights",
            "value": f"{human_count(t.params)} params",
            "sub": [
                f"{human_bytes(t.weight_bytes)} of weights as stored ({t.weight_bytes:,} B)",
                f"{human_bytes(t.runtime_weight_bytes)} at run time (after decoding)",
            ],
            "rows": [],
        },
        {
            "id": "memory",
            "title": "Peak activation",
            "value": human_bytes(m.arena_bytes),
            "sub": [
                f"arena plan ({m.strategy}, {m.alignment}-byte alignment); "
                f"{human_bytes(m.lower_bound_bytes)} alive at once at most",
            ],
            "rows": [r for fc in inp.forecasts for r in _fit_rows(fc)],
        },
    ]
    if inp.forecasts:
        lat_rows = []
        for fc in inp.forecasts:
            u = uncertainty(fc.target)
            band = u["band"]
            text = human_seconds(fc.latency_s)
            if band:
                lo, hi = fc.latency_s * (1 - band), fc.latency_s * (1 + band)
                text += f" ({human_seconds(lo)} – {human_seconds(hi)})"
            lat_rows.append(
                {
                    "label": shown(fc.target.name),
                    "text": text,
                    "sub": u["text"] + f"; first run adds {human_seconds(fc.one_time_s)}"
                    if fc.one_time_s
                    else u["text"],
                    "badge": "calibrated" if u["calibrated"] else "uncalibrated",
                    "state": "ok" if u["calibrated"] else "warn",
                }
            )
        out.append(
            {
                "id": "latency",
                "title": "Forecast latency",
                "value": human_seconds(inp.forecasts[0].latency_s)
                if len(inp.forecasts) == 1
                else "",
                "sub": ["per inference, steady state"],
                "rows": lat_rows,
            }
        )
        out.append(
            {
                "id": "split",
                "title": "Accelerator / CPU",
                "value": "",
                "sub": [],
                "rows": [
                    {
                        "label": shown(fc.target.name),
                        "text": split_line(fc.placement),
                        "sub": _time_split(fc),
                        "badge": "all on accelerator"
                        if fc.placement.has_accelerator and fc.placement.all_on_accelerator
                        else ("falls back" if fc.placement.has_accelerator else "CPU only"),
                        "state": "ok"
                        if fc.placement.all_on_accelerator or not fc.placement.has_accelerator
                        else "bad",
                    }
                    for fc in inp.forecasts
                ],
            }
        )
    fits = [r for r in (_fit_card_row(d) for d in inp.whatif) if r is not None]
    if fits:
        out.append(
            {
                "id": "whatif",
                "title": "What-if: largest that fits",
                "value": "",
                "sub": ["the --fit search (details in What-if)"],
                "rows": fits,
            }
        )
    return out


def _fit_card_row(doc: Mapping[str, Any]) -> Mark | None:
    """The ``--fit`` verdict of an ``infercast.whatif/1`` document, as a card row."""
    fit = doc.get("fit")
    if not isinstance(fit, Mapping):
        return None
    best = fit.get("best")
    target = shown(doc.get("target", ""))
    if not isinstance(best, Mapping):
        return {"label": target, "text": "no variant in the searched ranges",
                "sub": "", "badge": "none fits", "state": "bad"}  # fmt: skip
    t = best.get("totals") or {}
    macs, lat = _num(t.get("macs")), _num(t.get("latency_s"))
    return {
        "label": target,
        "text": shown(best.get("label", "")),
        "sub": ", ".join(
            x
            for x in (
                "" if macs is None else f"{human_count(macs)} MACs",
                "" if lat is None else human_seconds(lat),
            )
            if x
        ),
        "badge": "fits",
        "state": "ok",
    }


# --------------------------------------------------------------------------- #
# Per-layer latency bars
# --------------------------------------------------------------------------- #


def _bound_legend(present: set[str]) -> list[Mark]:
    return [{"cls": f"b-{b}", "label": b, "shape": "box"} for b in BOUNDS if b in present]


OUTLIER_RATIO = 8.0
"""The y axis of the latency bars is cut when the tallest layer takes more than this many
times the time of the layer ranked just below the few tallest (one in twenty, at least
one): otherwise one fallback layer flattens every other bar to a line."""


def _axis_cut(values: Sequence[float]) -> float | None:
    """The value above which bars are cut (None: draw everything to scale)."""
    v = sorted((x for x in values if x > 0), reverse=True)
    k = max(1, len(v) // 20)
    if len(v) < 8 or v[0] <= OUTLIER_RATIO * v[k]:
        return None
    return OUTLIER_RATIO / 2 * v[k]


def latency_bars(fc: Forecast, labels: Mapping[int, str]) -> Chart:
    fr = Frame(height=230, bottom=36)
    layers = list(fc.layers)
    n = len(layers)
    cut = _axis_cut([ly.latency_s for ly in layers])
    shown_max = max(
        (ly.latency_s for ly in layers if cut is None or ly.latency_s <= cut), default=0.0
    )
    top, ticks = linear_ticks(shown_max or 1e-6)
    xs = Scale(0, max(n, 1), fr.x0, fr.x1)
    ys = Scale(0, top, fr.y1, fr.y0)
    step = (fr.x1 - fr.x0) / max(n, 1)
    gap = min(step * 0.15, 1.0) if step > 2 else 0.0
    marks: list[Mark] = []
    breaks: list[Mark] = []
    tall: list[Mark] = []
    present: set[str] = set()
    total = fc.latency_s or 1.0
    for i, ly in enumerate(layers):
        if ly.latency_s <= 0:
            continue
        present.add(ly.bound)
        over = ly.latency_s > top
        y = fr.y0 if over else ys(ly.latency_s)
        x, w = r1(xs(i) + gap / 2), r1(max(step - gap, 0.4))
        who = f"#{ly.index} {labels.get(ly.index, shown(ly.name))}"
        marks.append(
            {
                "x": x,
                "y": r1(y),
                "w": w,
                "h": r1(max(fr.y1 - y, 0.6)),
                "cls": f"b-{ly.bound}" + (" over" if over else ""),
                "title": f"{who} ({ly.op}) on "
                f"{ly.unit}: {human_seconds(ly.latency_s)}, {ly.latency_s / total:.1%}, "
                f"{ly.bound}-bound",
            }
        )
        if over:
            breaks.append({"x": x, "y": r1(fr.y0 + 8), "w": w, "h": 4})
            tall.append(
                {
                    "x": x,
                    "w": w,
                    "text": f"{who} {human_seconds(ly.latency_s)}",
                    "caption": f"{who} {human_seconds(ly.latency_s)} "
                    f"({ly.bound}, {ly.latency_s / total:.0%} of the time)",
                }
            )
    # labels of the cut bars, one line each from the top, beside their bar
    mid = (fr.x0 + fr.x1) / 2
    left_edge = min((t["x"] for t in tall if t["x"] > mid), default=fr.x1)
    right_edge = max((t["x"] + t["w"] for t in tall if t["x"] <= mid), default=fr.x0)
    texts: list[Mark] = []
    for j, t in enumerate(tall[:6]):
        right = t["x"] > mid
        texts.append(
            {
                "x": r1(left_edge - 3 if right else right_edge + 3),
                "y": r1(fr.y0 + 12 + 13 * j),
                "anchor": "end" if right else "start",
                "text": t["text"],
            }
        )
    caption = (
        f"{human_seconds(fc.latency_s)} per inference over {n} layers; colour: what "
        "bounds each layer."
    )
    if fc.invoke_s > 0:
        caption += (
            f" The total includes {human_seconds(fc.invoke_s)} of per-inference call "
            "overhead that belongs to no layer (grey in the bar below)."
        )
    if tall:
        caption += (
            f" The axis is cut at {human_seconds(top)}: "
            + "; ".join(t["caption"] for t in tall)
            + " (bars with a gap near the top)."
        )
    return Chart(
        kind="bars",
        title=f"Forecast latency per layer on {shown(fc.target.name)}",
        frame=fr,
        marks=marks,
        labels=texts,
        xticks=index_ticks(n, xs),
        yticks=y_ticks(ys, ticks, human_seconds),
        xlabel="layer (execution order; fused ops carry no time of their own)",
        ylabel="seconds" + (" (axis cut)" if tall else ""),
        legend=_bound_legend(present),
        caption=caption,
        extra={"breaks": breaks},
    )


def bound_split(fc: Forecast) -> list[Mark]:
    """Stacked-bar segments (percent widths) of the time by bound."""
    total = fc.latency_s or 1.0
    by = fc.by_bound()
    out = []
    x = 0.0
    for b in BOUNDS:
        v = by.get(b, 0.0)
        if v <= 0:
            continue
        w = 100.0 * v / total
        out.append(
            {
                "x": round(x, 2),
                "w": round(w, 2),
                "cls": f"b-{b}",
                "label": b,
                "title": f"{b}: {human_seconds(v)} ({v / total:.0%})",
            }
        )
        x += w
    call = fc.invoke_s
    if call > 0:  # the runtime's per-inference call, in no layer
        out.append(
            {
                "x": round(x, 2),
                "w": round(100.0 * call / total, 2),
                "cls": "b-call",
                "label": "per-call",
                "title": f"per-inference call overhead (no layer): {human_seconds(call)} "
                f"({call / total:.0%})",
            }
        )
    return out


# --------------------------------------------------------------------------- #
# Roofline
# --------------------------------------------------------------------------- #


def _roofs(fc: Forecast) -> tuple[list[tuple[str, float]], list[tuple[str, float, bool]]]:
    """(compute roofs [(label, ops/s)], bandwidth roofs [(label, bytes/s, is_link)])."""
    t = fc.target
    used: dict[tuple[str, str], None] = {}
    for _k, w in fc.works:
        if w.dtype is not None and w.ops > 0:
            used[(w.unit, w.dtype)] = None
    compute = []
    for unit, dt in used:
        peak = t.units[unit].peak_ops_per_s.get(dt)
        if peak:
            compute.append((f"{shown(unit)} {dt} peak {_ops_s(peak)}", float(peak)))
    bw: list[tuple[str, float, bool]] = []
    seen: set[float] = set()
    for mem in t.memories.values():
        b = mem.bandwidth_bytes_per_s
        if mem.holds and b not in seen:
            seen.add(b)
            bw.append((f"{shown(mem.name)} {_bytes_s(b)}", float(b), False))
    if t.placement.accelerator is not None and t.crossing.bytes_per_s not in seen:
        bw.append((f"link {_bytes_s(t.crossing.bytes_per_s)}", t.crossing.bytes_per_s, True))
    return compute, bw


def roofline(
    fc: Forecast, labels: Mapping[int, str], analysis: Analysis, joined: Joined | None
) -> Chart:
    fr = Frame(width=640, height=440, left=78, right=20, bottom=44)
    pts: list[tuple[float, float, LayerForecast]] = []
    for ly in fc.layers:
        if ly.ops and ly.bytes and ly.latency_s > 0:
            pts.append((ly.ops / ly.bytes, ly.ops / ly.latency_s, ly))
    measured: list[tuple[float, float, str]] = []
    if joined is not None:
        cost = {c.index: c for c in analysis.main_layers()}
        for r in joined.rows:
            if r.provider == INTERNAL or not r.flops or r.measured_s <= 0:
                continue
            cov: list[LayerCost] = [cost[i] for i in r.layers if i in cost]
            moved = sum(c.bytes_moved or 0 for c in cov)
            if moved <= 0:
                continue
            who = labels.get(r.index, shown(r.name)) if r.index is not None else shown(r.name)
            measured.append(
                (
                    r.flops / moved,
                    r.flops / r.measured_s,
                    f"measured {who} ({r.op}): {human_seconds(r.measured_s)}, "
                    f"{_ops_s(r.flops / r.measured_s)}",
                )
            )
    compute, bw = _roofs(fc)
    xs_all = [p[0] for p in pts] + [p[0] for p in measured]
    ys_all = [p[1] for p in pts] + [p[1] for p in measured] + [c[1] for c in compute]
    if not xs_all:
        xs_all, ys_all = [1.0], ys_all or [1.0]
    for _label, peak in compute:
        for _l, b, _link in bw:
            xs_all.append(peak / b)  # ridge points
    x_lo = 10 ** math.floor(math.log10(min(xs_all) / 1.5))
    x_hi = 10 ** math.ceil(math.log10(max(xs_all) * 1.5))
    y_lo = 10 ** math.floor(math.log10(min(ys_all) / 1.5))
    y_hi = 10 ** math.ceil(math.log10(max(ys_all) * 1.5))
    xs = Scale(x_lo, x_hi, fr.x0, fr.x1, log=True)
    ys = Scale(y_lo, y_hi, fr.y1, fr.y0, log=True)
    lines: list[Mark] = []
    labels_out: list[Mark] = []
    for label, peak in compute:
        y = r1(ys(peak))
        lines.append({"x1": fr.x0, "y1": y, "x2": fr.x1, "y2": y, "cls": "roof", "title": label})
        labels_out.append({"x": fr.x1 - 4, "y": r1(y - 4), "anchor": "end", "text": label})
    for label, b, link in bw:
        seg = clip_line_log(b, xs, ys)
        if seg is None:
            continue
        x1, y1, x2, y2 = seg
        cls = "roof link" if link else "roof"
        lines.append({"x1": x1, "y1": y1, "x2": x2, "y2": y2, "cls": cls, "title": label})
        labels_out.append(
            {
                "x": r1(x1 + 6),
                "y": r1(y1 - 6),
                "anchor": "start",
                "text": label,
                "rotate": r1(math.degrees(math.atan2(y2 - y1, x2 - x1))),
            }
        )
    marks: list[Mark] = []
    present: set[str] = set()
    for ai, perf, ly in pts:
        present.add(ly.bound)
        marks.append(
            {
                "shape": "circle",
                "x": r1(xs(ai)),
                "y": r1(ys(perf)),
                "cls": f"b-{ly.bound}",
                "title": f"#{ly.index} {labels.get(ly.index, shown(ly.name))} ({ly.op}): "
                f"{_plain(ai)} op/B, forecast {_ops_s(perf)}, {ly.bound}-bound",
            }
        )
    for ai, perf, title in measured:
        marks.append(
            {"shape": "diamond", "x": r1(xs(ai)), "y": r1(ys(perf)), "cls": "measured",
             "title": title}
        )  # fmt: skip
    legend = _bound_legend(present)
    if measured:
        legend.append({"cls": "measured", "label": "measured", "shape": "diamond"})
    caption = (
        "Each kernel's arithmetic intensity (ops per byte it moves: activations in and out, "
        "weights) against its forecast throughput; lines: the target's compute peaks and "
        "memory / link bandwidths. A kernel under a diagonal is bandwidth-limited there."
    )
    shares = sorted(
        perf / roof
        for _ai, perf, ly in pts
        if ly.bound == "compute"
        and ly.dtype is not None
        and ly.unit in fc.target.units
        and (roof := fc.target.units[ly.unit].peak_ops_per_s.get(ly.dtype))
    )
    if shares and shares[len(shares) // 2] < 0.2:
        caption += (
            f" Compute-bound kernels reach a median {100 * shares[len(shares) // 2]:.2g}% of "
            "their unit's peak here: the target's efficiencies and per-kernel slowdowns (see the "
            "placement notes) set the rate it can attain, well under the datasheet peak."
        )
    if measured:
        caption += (
            f" Diamonds: measured by {shown(joined.source) if joined else ''} on the machine "
            "that took the profile (not necessarily this target); intensity from the layers "
            "each profiled kernel covers."
        )
    return Chart(
        kind="roofline",
        title=f"Roofline on {shown(fc.target.name)}",
        frame=fr,
        marks=marks,
        lines=lines,
        labels=labels_out,
        xticks=x_ticks(xs, log_ticks(x_lo, x_hi), _plain),
        yticks=y_ticks(ys, log_ticks(y_lo, y_hi), si),
        xlabel="arithmetic intensity, op/byte (1 MAC = 2 ops)",
        ylabel="op/s",
        legend=legend,
        caption=caption,
    )


# --------------------------------------------------------------------------- #
# Memory timeline
# --------------------------------------------------------------------------- #


def memory_timeline(
    m: MemoryAnalysis, targets: Sequence[Target], labels: Mapping[tuple[str, int], str]
) -> Chart:
    fr = Frame(height=260, left=78, right=24)
    tl = list(m.timeline)
    n = len(tl)
    data_hi = max([*tl, m.arena_bytes, 1])
    mems: list[tuple[str, int]] = []
    for t in targets:
        for mem in t.memories.values():
            if {"activations", "layer_io"} & set(mem.holds):
                mems.append((f"{shown(t.name)} · {shown(mem.name)}", mem.size_bytes))
    on_scale = [(lbl, s) for lbl, s in mems if s <= 4 * data_hi]
    off_scale = [(lbl, s) for lbl, s in mems if s > 4 * data_hi]
    top, ticks = byte_ticks(max([data_hi, *(s for _l, s in on_scale)]) * 1.05)
    xs = Scale(0, max(n, 1), fr.x0, fr.x1)
    ys = Scale(0, top, fr.y1, fr.y0)
    steps = m.lifetimes.steps

    def step_name(i: int) -> str:
        s = steps[i]
        if s.node_index < 0:
            return f"{shown(s.graph)} entry"
        return f"#{s.node_index} " + labels.get((s.graph, s.node_index), shown(s.node_name))

    cols = bucket_max(tl, TIMELINE_COLUMNS)
    pts = [f"{fr.x0},{r1(fr.y1)}"]
    marks: list[Mark] = []
    for a, b, v in cols:
        xa, xb, y = r1(xs(a)), r1(xs(b + 1)), r1(ys(v))
        pts.append(f"{xa},{y}")
        pts.append(f"{xb},{y}")
        where = max(range(a, b + 1), key=lambda i: tl[i])
        span = f"step {a}" if a == b else f"steps {a}–{b}"
        marks.append(
            {
                "x": xa,
                "y": fr.y0,
                "w": r1(max(xb - xa, 0.5)),
                "h": r1(fr.y1 - fr.y0),
                "title": f"{span}: {human_bytes(v)} alive (most at {step_name(where)})",
            }
        )
    pts.append(f"{fr.x1 if n else fr.x0},{r1(fr.y1)}")
    lines: list[Mark] = []
    labels_out: list[Mark] = []

    def hline(value: int, cls: str, text: str, left: bool = False) -> None:
        y = r1(ys(value))
        lines.append({"x1": fr.x0, "y1": y, "x2": fr.x1, "y2": y, "cls": cls, "title": text})
        x, anchor = (fr.x0 + 4, "start") if left else (fr.x1 - 4, "end")
        labels_out.append({"x": x, "y": r1(y - 4), "anchor": anchor, "text": text})

    # the arena's label above the end of the timeline whose steps are lower (a CNN's peak
    # is usually early), unless a device memory's label (at the right) sits close above
    quarter = max(n // 4, 1)
    head, tail = max(tl[:quarter], default=0), max(tl[-quarter:], default=0)
    near = any(abs(ys(s) - ys(m.arena_bytes)) < 16 for _l, s in on_scale)
    left = near or head < tail
    hline(m.arena_bytes, "arena", f"arena plan {human_bytes(m.arena_bytes)}", left=left)
    for lbl, s in on_scale:
        hline(s, "devmem", f"{lbl} {human_bytes(s)}")
    peak = m.peak
    peak_mark = None
    if n:
        peak_mark = {
            "x": r1(xs(peak.step + 0.5)),
            "y": r1(ys(peak.live_bytes)),
            "title": f"peak: {human_bytes(peak.live_bytes)} at step {peak.step}",
        }
    caption = (
        f"Activation bytes alive at each of {n} steps (the execution order, subgraph "
        f"bodies included); the arena plan holds them in {human_bytes(m.arena_bytes)}."
    )
    if off_scale:
        caption += " Off the scale: " + "; ".join(
            f"{lbl} {human_bytes(s)} ({s / max(m.arena_bytes, 1):,.0f}× the arena)"
            for lbl, s in off_scale
        )
        caption += "."
    return Chart(
        kind="timeline",
        title="Memory timeline",
        frame=fr,
        marks=marks,
        lines=lines,
        labels=labels_out,
        xticks=index_ticks(n, xs),
        yticks=y_ticks(ys, ticks, human_bytes),
        xlabel="step",
        ylabel="live bytes",
        caption=caption,
        extra={"area": " ".join(pts), "peak": peak_mark},
    )


def peak_tensors(m: MemoryAnalysis) -> list[Mark]:
    out = []
    for t in m.peak.tensors[:MAX_PEAK_TENSORS]:
        out.append(
            {
                "name": shown(t.tensor),
                "shape": "x".join(str(d) for d in t.shape) or "scalar",
                "dtype": t.dtype,
                "bytes": human_bytes(t.nbytes),
                "life": f"{t.first}–{t.last}",
            }
        )
    return out


# --------------------------------------------------------------------------- #
# Placement map
# --------------------------------------------------------------------------- #


def placement_map(report: PlacementReport, labels: Mapping[int, str]) -> Chart:
    fr = Frame(height=76, left=20, right=20, top=14, bottom=22)
    layers = report.inference_layers
    n = len(layers)
    xs = Scale(0, max(n, 1), fr.x0, fr.x1)
    pos = {ly.index: i for i, ly in enumerate(layers)}
    marks: list[Mark] = []
    present: set[str] = set()
    step = (fr.x1 - fr.x0) / max(n, 1)
    for i, ly in enumerate(layers):
        present.add(ly.placement)
        why = "; ".join(r.text for r in ly.reasons[:2])
        marks.append(
            {
                "x": r1(xs(i)),
                "y": fr.y0,
                "w": r1(max(step, 0.5)),
                "h": r1(fr.y1 - fr.y0),
                "cls": f"p-{ly.placement}",
                "title": f"#{ly.index} {labels.get(ly.index, shown(ly.name))} "
                f"({shown(ly.native_op)}): {ly.placement} on {shown(ly.unit)}"
                + (f" — {why}" if why else ""),
            }
        )
    labels_out: list[Mark] = []
    for s in report.segments:
        a, b = pos.get(s.first_layer), pos.get(s.last_layer)
        if a is None or b is None:
            continue
        x0, x1 = xs(a), xs(b + 1)
        if x1 - x0 >= 60:
            labels_out.append(
                {
                    "x": r1((x0 + x1) / 2),
                    "y": fr.y1 + 15,
                    "anchor": "middle",
                    "text": f"{shown(s.unit)} {s.first_layer}–{s.last_layer}",
                }
            )
    lines: list[Mark] = []
    for c in report.internal_crossings():
        at = min(c.consumers) if c.consumers else c.producer
        if at is None or at not in pos:
            continue
        x = r1(xs(pos[at]))
        lines.append(
            {
                "x1": x,
                "y1": fr.y0 - 8,
                "x2": x,
                "y2": fr.y1,
                "cls": "crossing",
                "title": f"{shown(c.tensor)}: {human_bytes(c.bytes or 0)} "
                f"{c.source} → {c.destination}",
            }
        )
    cr = crossings_dict(report)
    legend = [{"cls": f"p-{p}", "label": p, "shape": "box"} for p in PLACEMENTS if p in present]
    if lines:
        legend.append({"cls": "crossing", "label": "crossing", "shape": "line"})
    return Chart(
        kind="placement",
        title=f"Placement on {shown(report.target.name)}",
        frame=fr,
        marks=marks,
        lines=lines,
        labels=labels_out,
        legend=legend,
        caption=f"{split_line(report)}. {len(report.segments)} segment(s); {cr['count']} "
        f"accelerator↔CPU crossing(s) moving {human_bytes(cr['bytes'])} per inference; model "
        f"inputs/outputs {human_bytes(cr['boundary_bytes'])}.",
    )


def crossings_table(report: PlacementReport, labels: Mapping[int, str]) -> list[Mark]:
    items = sorted(report.internal_crossings(), key=lambda c: -(c.bytes or 0))
    out = []
    for c in items[:MAX_CROSSINGS]:
        out.append(
            {
                "tensor": shown(c.tensor),
                "direction": f"{c.source} → {c.destination}",
                "bytes": human_bytes(c.bytes or 0) if c.bytes is not None else "unknown",
                "v": c.bytes or 0,
                "from": "input" if c.producer is None else f"#{c.producer}",
                "to": ", ".join(f"#{i}" for i in c.consumers) or "output",
            }
        )
    return out


def reason_groups(report: PlacementReport, labels: Mapping[int, str]) -> list[Mark]:
    out = []
    for g in group_reasons(report):
        names = [f"#{i} {labels.get(i, '')}" for i in g.layers[:6]]
        more = f" … and {g.count - 6} more" if g.count > 6 else ""
        out.append(
            {
                "count": g.count,
                "outcome": g.outcome,
                "text": shown(g.text),
                "detail": shown(g.detail),
                "examples": [shown(e) for e in g.examples],
                "layers": ", ".join(names) + more,
            }
        )
    return out


# --------------------------------------------------------------------------- #
# The layer table
# --------------------------------------------------------------------------- #


def _cell(text: str, v: float | str | None = None, cls: str = "", title: str = "") -> Mark:
    return {"text": text, "v": "" if v is None else v, "cls": cls, "title": title}


def _head(text: str, num: bool, target: bool = False, prio: int = 1) -> Mark:
    """A column heading; ``prio`` 2 and 3: columns a narrow window drops (CSS)."""
    return {"text": text, "num": num, "target": target, "prio": prio}


def _shape(ly: LayerCost) -> str:
    return ", ".join(
        "?" if s is None else "x".join("?" if d is None else str(d) for d in s) or "scalar"
        for s in ly.output_shapes
    )


def layer_table(inp: ReportInputs, labels: Mapping[tuple[str, int], str]) -> dict[str, Any]:
    a, m = inp.analysis, inp.memory
    main = a.graph.name
    head: list[Mark] = [
        _head("#", True),
        _head("layer", False),
        _head("op", False),
        _head("output", False, prio=2),
        _head("MACs", True),
        _head("params", True, prio=2),
        _head("weights", True, prio=3),
        _head("live", True),
        _head("op/B", True, prio=3),
    ]
    per_target = [{ly.index: ly for ly in fc.layers} for fc in inp.forecasts]
    for fc in inp.forecasts:
        head.append(_head(shown(fc.target.name), True, target=True))
    measured: dict[int, tuple[float, int]] = {}
    if inp.joined is not None:
        head.append(_head("measured", True))
        for r in inp.joined.rows:
            if r.provider == INTERNAL or not r.layers:
                continue
            at = r.index if r.index is not None else min(r.layers)
            prev = measured.get(at, (0.0, 0))
            measured[at] = (prev[0] + r.measured_s, prev[1] + len(r.layers))
    rows = []
    for ly in a.layers:
        label = labels.get((ly.subgraph, ly.index), shown(ly.name))
        ai = ly.arithmetic_intensity
        live = m.layer_live_bytes(ly.subgraph, ly.index)
        op = shown(ly.op)
        cells = [
            _cell(str(ly.index), ly.index),
            _cell(label, label, "name", shown(ly.name)),
            _cell(op, op, "", shown(ly.native_op)),
            _cell(_shape(ly), None, "shape"),
            _cell("?" if ly.macs is None else human_count(ly.macs), ly.macs, "",
                  "" if ly.macs is None else f"{ly.macs:,}"),
            _cell(human_count(ly.params) if ly.params else "", ly.params),
            _cell(human_bytes(ly.weight_bytes) if ly.weight_bytes else "", ly.weight_bytes),
            _cell("" if live is None else human_bytes(live), live),
            _cell("" if ai is None else f"{ai:.1f}", ai),
        ]  # fmt: skip
        bounds: list[str] = []
        for lf in per_target:
            f = lf.get(ly.index) if ly.subgraph == main else None
            if f is None:
                cells.append(_cell("", None))
                continue
            bounds.append(f.bound)
            if f.bound in ("fused", "elided"):
                txt = f"{f.bound} → #{f.kernel}" if f.bound == "fused" else "elided"
                cells.append(_cell(txt, 0.0, f"t b-{f.bound}", f"{f.placement} on {f.unit}"))
            else:
                cells.append(
                    _cell(
                        human_seconds(f.latency_s),
                        f.latency_s,
                        f"t b-{f.bound}",
                        f"{f.bound}-bound, {f.placement} on {f.unit}",
                    )
                )
        if inp.joined is not None:
            mm = measured.get(ly.index) if ly.subgraph == main else None
            cells.append(
                _cell("", None)
                if mm is None
                else _cell(
                    human_seconds(mm[0]),
                    mm[0],
                    "",
                    f"covers {mm[1]} layer(s)" if mm[1] > 1 else "",
                )
            )
        status = ly.status if ly.status != "ok" else ""
        rows.append(
            {
                "cells": cells,
                "bounds": " ".join(sorted(set(bounds))),
                "status": status,
                "cls": f"st-{status}" if status else "",
            }
        )
    present = sorted({b for r in rows for b in str(r["bounds"]).split()})
    return {"head": head, "rows": rows, "bounds": present}


# --------------------------------------------------------------------------- #
# Targets side by side; what-if variants
# --------------------------------------------------------------------------- #


def comparison(forecasts: Sequence[Forecast]) -> list[Mark]:
    out = []
    for fc in forecasts:
        p = fc.placement
        c = p.counts()
        cr = crossings_dict(p)
        u = uncertainty(fc.target)
        out.append(
            {
                "target": shown(fc.target.name),
                "description": shown(fc.target.description),
                "latency": human_seconds(fc.latency_s),
                "v": fc.latency_s,
                "uncertainty": u["text"],
                "split": f"{c['accelerator']} / {c['partial']} / {c['cpu']}",
                "crossings": f"{cr['count']} ({human_bytes(cr['bytes'])})",
                "fits": "yes" if p.fits else "no",
                "fit_state": "ok" if p.fits else "bad",
                "by_bound": bound_split(fc),
            }
        )
    return out


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, str | int | float | bool)


def _fmt_value(key: str, v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float | int):
        if key.endswith("_s"):
            return human_seconds(float(v))
        if key.endswith("_bytes"):
            return human_bytes(float(v))
        if key in ("macs", "flops", "params") or key.endswith(("_macs", "_flops", "_params")):
            return human_count(float(v))
        if isinstance(v, float):
            return f"{v:.4g}"
        return f"{v:,}"
    return shown(v)


def _generic_whatif(result: Mapping[str, Any]) -> dict[str, Any] | None:
    """A JSON document with a list of flat variant records under ``variants``: one row
    each, one column per scalar key; nested values are left out."""
    variants = result.get("variants")
    if not isinstance(variants, list) or not variants:
        return None
    cols: list[str] = []
    for v in variants:
        if isinstance(v, Mapping):
            for k, x in v.items():
                if _scalar(x) and k not in cols:
                    cols.append(str(k))
    rows = []
    for v in variants:
        if not isinstance(v, Mapping):
            continue
        rows.append(
            [
                _cell(
                    _fmt_value(c, v.get(c)),
                    v.get(c) if isinstance(v.get(c), int | float) else shown(v.get(c) or ""),
                )
                for c in cols
            ]
        )
    return {
        "head": [_head(shown(c), False) for c in cols],
        "rows": [{"cells": r, "bounds": "", "status": "", "cls": ""} for r in rows],
        "title": shown(result.get("title", "What-if variants")),
        "lines": [],
        "caption": "",
    }


def _num(v: Any) -> float | None:
    """A number of a JSON document (an integer stays one: it is written as it was)."""
    return v if isinstance(v, int | float) and not isinstance(v, bool) else None


def _res_text(r: Any) -> str:
    if isinstance(r, list) and len(r) == 2:
        return f"{r[0]}×{r[1]}"
    return "–" if r is None else str(r)


def _variant_row(v: Mapping[str, Any], mems: Sequence[str], label: str, cls: str) -> dict[str, Any]:
    t = v.get("totals") or {}
    res = v.get("resolution")
    size = res[0] * res[1] if isinstance(res, list) and len(res) == 2 else _num(res)
    dtype = shown(v.get("dtype") or "")
    if v.get("quant") == "per-channel" and dtype.startswith("int"):
        dtype += "/ch"
    width = _num(v.get("width"))
    cells = [
        _cell(label, label, "txt"),
        _cell(_res_text(res), size),
        _cell("" if width is None else f"{width:g}", width),
        _cell(dtype, dtype, "txt"),
    ]
    for key, fmt in (
        ("macs", human_count), ("params", human_count), ("weight_bytes", human_bytes),
        ("peak_activation_bytes", human_bytes),
    ):  # fmt: skip
        x = _num(t.get(key))
        cells.append(_cell("" if x is None else fmt(x), x))
    memories = v.get("memories") or {}
    for m in mems:
        f = memories.get(m)
        if not isinstance(f, Mapping):
            cells.append(_cell("–", None))
            continue
        need = _num(f.get("required_bytes")) or 0.0
        if f.get("fits"):
            mark, c = "fits", "ok"
        elif f.get("on_overflow") == "stream":
            mark, c = "streams", "warn"
        else:
            mark, c = "no fit", "bad"
        cap = _num(f.get("capacity_bytes"))
        of = f" of {human_bytes(cap)}" if cap is not None else ""
        cells.append(_cell(f"{human_bytes(need)} {mark}", need, c, f"{human_bytes(need)}{of}"))
    fits = t.get("fits")
    cells.append(_cell("yes" if fits else "no", 1 if fits else 0, "txt ok" if fits else "txt bad"))
    cpu = v.get("fallback_layers") or []
    cells.append(_cell(str(len(cpu)), len(cpu)))
    lat = _num(t.get("latency_s"))
    bound_s = {str(k): _num(x) or 0.0 for k, x in (v.get("bound_s") or {}).items()}
    total = sum(bound_s.values()) or 1.0
    mix = ", ".join(
        f"{b} {x / total:.0%}"
        for b, x in sorted(bound_s.items(), key=lambda kv: -kv[1])[:2]
        if x / total >= 0.05
    )
    cells.append(_cell("" if lat is None else human_seconds(lat), lat, "", mix))
    cells.append(_cell(mix, mix, "txt"))
    return {"cells": cells, "bounds": "", "status": "", "cls": cls}


def whatif_table(result: Mapping[str, Any]) -> dict[str, Any] | None:
    """The variants of a what-if result, one row each. An ``infercast.whatif/1``
    document (``infercast whatif -f json``, or variants run by ``report`` itself): the
    model as it is, then each variant with its totals, the need in each device memory,
    the fit, layers on the CPU and the forecast; the variant ``--fit`` found is
    highlighted. Any other document with a ``variants`` list: its flat fields."""
    from infercast.report.whatif import WHATIF_SCHEMA

    if result.get("schema") != WHATIF_SCHEMA:
        return _generic_whatif(result)
    base = result.get("base") or {}
    variants = [v for v in result.get("variants") or [] if isinstance(v, Mapping)]
    fit = result.get("fit") if isinstance(result.get("fit"), Mapping) else None
    best = (fit or {}).get("best") or {}
    best_label = best.get("label") if isinstance(best, Mapping) else None
    mems = [str(m) for m in (base.get("memories") or {})]
    target = shown(result.get("target", ""))
    head = [
        _head("variant", False),
        _head("input", True),
        _head("width", True, prio=2),
        _head("dtype", False, prio=2),
        _head("MACs", True),
        _head("params", True, prio=3),
        _head("weights", True, prio=2),
        _head("arena", True),
        *(_head(shown(m), True) for m in mems),
        _head("fits", False),
        _head("CPU layers", True, prio=2),
        _head("latency", True),
        _head("time by bound", False, prio=3),
    ]
    rows = [_variant_row(base, mems, "model as it is", "base")]
    for v in variants:
        label = shown(v.get("label", ""))
        is_best = best_label is not None and v.get("label") == best_label
        rows.append(_variant_row(v, mems, label, "best" if is_best else ""))
    lines: list[dict[str, str]] = []
    if fit is not None:
        budget = _num(fit.get("budget_s"))
        within = f" and {human_seconds(budget)}" if budget is not None else ""
        n = fit.get("evaluated", len(variants))
        if best_label is not None:
            macs = _num(best.get("totals", {}).get("macs"))
            lat = _num(best.get("totals", {}).get("latency_s"))
            lines.append(
                {
                    "cls": "ok",
                    "text": f"--fit: the largest variant that fits every memory of {target}"
                    f"{within} is {shown(best_label)}"
                    + (f" ({human_count(macs)} MACs" if macs is not None else " (")
                    + (f", {human_seconds(lat)})" if lat is not None else ")")
                    + f", highlighted; {n} variant{'' if n == 1 else 's'} evaluated.",
                }
            )
        else:
            lines.append(
                {
                    "cls": "bad",
                    "text": f"--fit: no variant in the searched ranges fits {target}{within} "
                    f"({n} evaluated).",
                }
            )
    for e in result.get("errors") or []:
        if isinstance(e, Mapping):
            lines.append(
                {
                    "cls": "warn",
                    "text": f"not made: {shown(e.get('variant', ''))}: {shown(e.get('error', ''))}",
                }
            )
    return {
        "head": head,
        "rows": rows,
        "title": f"What-if on {target}" if target else "What-if variants",
        "lines": lines,
        "caption": "Each variant is the model's graph transformed (input size, channel "
        "width, dtype, replaced ops) and run through the same analysis, memory plan, "
        "placement and forecast. Arena: the planned activation memory; memory columns: "
        "what the variant needs in each memory of the target; CPU layers: layers on the "
        "fallback CPU. Click a column to sort.",
    }


def whatif_tables(results: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for r in results:
        t = whatif_table(r)
        if t is not None:
            out.append(t)
    return out


# --------------------------------------------------------------------------- #
# The whole page
# --------------------------------------------------------------------------- #


def build_view(inp: ReportInputs) -> dict[str, Any]:
    a = inp.analysis
    g = a.graph
    labels = graph_labels(g)
    main_labels = {i: lbl for (sub, i), lbl in labels.items() if sub == g.name}
    targets = []
    for fc in inp.forecasts:
        rep = fc.placement
        targets.append(
            {
                "name": shown(fc.target.name),
                "description": shown(fc.target.description),
                "bars": latency_bars(fc, main_labels),
                "split": bound_split(fc),
                "roofline": roofline(fc, main_labels, a, inp.joined),
                "placement": placement_map(rep, main_labels) if rep.has_accelerator else None,
                "cpu_only": not rep.has_accelerator,
                "segments": [
                    {
                        "processor": s.processor,
                        "unit": shown(s.unit),
                        "range": f"#{s.first_layer}–#{s.last_layer}",
                        "layers": s.layers,
                    }
                    for s in rep.segments
                ],
                "crossings": crossings_table(rep, main_labels),
                "more_crossings": max(len(rep.internal_crossings()) - MAX_CROSSINGS, 0),
                "reasons": reason_groups(rep, main_labels),
                "notes": [shown(n) for n in (*rep.notes, *fc.notes)],
            }
        )
    notes = [shown(n) for n in (*a.notes, *inp.memory.notes, *inp.notes)]
    if inp.joined is not None:
        notes.extend(shown(n) for n in inp.joined.notes)
    return {
        "version": __version__,
        "model": {
            "name": shown(g.name),
            "path": shown(g.path or g.name),
            "file": shown((g.path or g.name).replace("\\", "/").rsplit("/", 1)[-1]),
            "format": g.format,
            "layers": len(a.layers),
            "inputs": [
                f"{shown(n)} {g.tensors[n].shape_str()} {g.tensors[n].dtype.value}"
                for n in g.inputs
            ],
        },
        "complete": a.totals.complete,
        "unsupported": [f"{shown(u.native_op)} ×{u.count}" for u in a.unsupported],
        "cards": cards(inp),
        "targets": targets,
        "comparison": comparison(inp.forecasts) if len(inp.forecasts) > 1 else [],
        "timeline": memory_timeline(inp.memory, [fc.target for fc in inp.forecasts], labels),
        "peak": {
            "bytes": human_bytes(inp.memory.peak.live_bytes),
            "step": inp.memory.peak.step,
            "layer": f"#{inp.memory.peak.node_index} "
            + labels.get(
                (inp.memory.peak.graph, inp.memory.peak.node_index),
                shown(inp.memory.peak.node_name),
            ),
            "tensors": peak_tensors(inp.memory),
            "more": max(len(inp.memory.peak.tensors) - MAX_PEAK_TENSORS, 0),
        },
        "table": layer_table(inp, labels),
        "whatif": whatif_tables(inp.whatif),
        "profile": shown(inp.profile_source) if inp.joined is not None else "",
        "notes": notes,
    }
