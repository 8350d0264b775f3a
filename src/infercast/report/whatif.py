"""Renderers of what-if sweeps (``infercast.whatif/1``) and advice (``infercast.advice/1``).

JSON (whatif)::

    {"schema": "infercast.whatif/1", "target", "model", "units",
     "base": VARIANT, "variants": [VARIANT, ...], "errors": [{"variant", "error"}],
     "fit": {"found", "best", "budget_s", "resolutions", "widths", "evaluated"} | null}

    VARIANT = {"label", "resolution" (int when square, else [h, w]), "width", "dtype",
               "quant", "replace", "threads",
               "totals": {"macs", "flops", "params", "weight_bytes",
                          "peak_activation_bytes", "activation_lower_bound_bytes",
                          "latency_s", "fits"},
               "memories": {NAME: {"required_bytes", "capacity_bytes", "fits",
                                   "on_overflow"}},
               "fallback_layers": [names], "bound_s": {BOUND: seconds}, "complete"}

JSON (advice)::

    {"schema": "infercast.advice/1", "target", "model",
     "advice": [{"kind", "message", "layers": [names], "latency_gain_s",
                 "memory_gain_bytes", "variant"}], "notes"}

CSV: one row per variant / per advice item. Table: rich renderables.
"""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING, Any

from infercast.report.names import graph_labels
from infercast.report.table import Cell, Col, FitTable, Grid, Row, TableOptions, entry
from infercast.report.text import cell, shown
from infercast.report.units import human_bytes, human_count, human_seconds, short_name

if TYPE_CHECKING:
    from infercast.whatif import WhatIfResult
    from infercast.whatif.advise import AdviceResult
    from infercast.whatif.evaluate import VariantResult

WHATIF_SCHEMA = "infercast.whatif/1"
ADVICE_SCHEMA = "infercast.advice/1"
UNITS = {
    "macs": "multiply-accumulates",
    "flops": "arithmetic ops (1 MAC = 2 FLOPs)",
    "bytes": "bytes",
    "time": "s",
}


def resolution_value(res: tuple[int, int] | None) -> int | list[int] | None:
    if res is None:
        return None
    return res[0] if res[0] == res[1] else [res[0], res[1]]


def variant_dict(v: VariantResult) -> dict[str, Any]:
    t = v.totals
    return {
        "label": v.label,
        "resolution": resolution_value(v.resolution),
        "width": v.width,
        "dtype": v.dtype,
        "quant": v.quant,
        "replace": list(v.replace),
        "threads": v.threads,
        "totals": {
            "macs": t.macs,
            "flops": t.flops,
            "params": t.params,
            "weight_bytes": t.weight_bytes,
            "peak_activation_bytes": t.peak_activation_bytes,
            "activation_lower_bound_bytes": t.activation_lower_bound_bytes,
            "latency_s": t.latency_s,
            "fits": t.fits,
        },
        "memories": {
            name: {
                "required_bytes": m.required_bytes,
                "capacity_bytes": m.capacity_bytes,
                "fits": m.fits,
                "on_overflow": m.on_overflow,
            }
            for name, m in v.memories.items()
        },
        "fallback_layers": list(v.fallback_layers),
        "bound_s": dict(v.bound_s),
        "complete": v.complete,
    }


def to_dict(result: WhatIfResult) -> dict[str, Any]:
    fit = result.fit
    return {
        "schema": WHATIF_SCHEMA,
        "target": result.target.name,
        "model": result.model,
        "units": UNITS,
        "base": variant_dict(result.base),
        "variants": [variant_dict(v) for v in result.variants],
        "errors": [{"variant": label, "error": err} for label, err in result.errors],
        "fit": None
        if fit is None
        else {
            "found": fit.found,
            "best": variant_dict(fit.best) if fit.best is not None else None,
            "budget_s": fit.budget_s,
            "resolutions": [resolution_value(r) for r in fit.resolutions],
            "widths": list(fit.widths),
            "evaluated": len(fit.tried),
        },
    }


CSV_COLUMNS = (
    "label", "resolution", "width", "dtype", "quant", "replace", "threads", "macs", "flops",
    "params", "weight_bytes", "peak_activation_bytes", "activation_lower_bound_bytes",
    "latency_s", "fits", "fallback_layers", "complete",
)  # fmt: skip


def records(result: WhatIfResult) -> list[dict[str, Any]]:
    """One flat dict per variant (memories as ``<name>_required_bytes`` / ``_fits``)."""
    out = []
    for v in result.variants:
        d = variant_dict(v)
        row: dict[str, Any] = {k: d[k] for k in ("label", "width", "dtype", "quant", "threads")}
        res = v.resolution
        row["resolution"] = (
            "" if res is None else (f"{res[0]}" if res[0] == res[1] else f"{res[0]}x{res[1]}")
        )
        row["replace"] = ";".join(v.replace)
        row.update(d["totals"])
        row["fallback_layers"] = len(v.fallback_layers)
        row["complete"] = v.complete
        for name, m in v.memories.items():
            row[f"{name}_required_bytes"] = m.required_bytes
            row[f"{name}_fits"] = m.fits
        for bound, s in v.bound_s.items():
            row[f"{bound}_s"] = s
        out.append(row)
    return out


def to_csv(result: WhatIfResult) -> str:
    rows = records(result)
    extra = sorted({k for r in rows for k in r} - set(CSV_COLUMNS))
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=[*CSV_COLUMNS, *extra], lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in [*CSV_COLUMNS, *extra]})
    return buf.getvalue()


def _res(v: VariantResult) -> str:
    r = v.resolution
    if r is None:
        return "-"
    return f"{r[0]}" if r[0] == r[1] else f"{r[0]}x{r[1]}"


def _bound_mix(v: VariantResult) -> str:
    total = sum(v.bound_s.values()) or 1.0
    parts = sorted(v.bound_s.items(), key=lambda kv: -kv[1])[:2]
    return ", ".join(f"{b[:5]} {s / total:.0%}" for b, s in parts if s / total >= 0.05)


def _mem_key(name: str) -> str:
    return f"mem:{name}"


def variant_grid(result: WhatIfResult) -> Grid:
    """The model as it is, then each variant: one row each, the variant ``--fit`` found
    in bold green. Columns: the variant's axes, its totals, each device memory's need
    (ok / stream / NO), layers on the CPU, the forecast and what bounds it."""
    mems = list(result.base.memories)
    cols = [
        Col("variant", "variant", numeric=False, prio=0, min_width=8),
        Col("res", "res", prio=1),
        Col("width", "width", prio=3, short="w"),
        Col("dtype", "dtype", numeric=False, prio=3),
        Col("macs", "MACs", prio=0),
        Col("params", "params", prio=3),
        Col("weights", "weights", prio=3),
        Col("arena", "arena", prio=1),
        Col("bound_bytes", "act. bound", prio=4, short="act.lb"),
        *(Col(_mem_key(m), shown(m), prio=2) for m in mems),
        Col("fits", "fits", numeric=False, prio=0),
        Col("cpu", "CPU", prio=2),
        Col("latency", "latency", prio=0),
        Col("bound", "bound", numeric=False, prio=3, min_width=10),
    ]
    best = result.fit.best if result.fit is not None else None
    rows: list[Row] = []
    styles: list[str] = []
    for i, v in enumerate([result.base, *result.variants]):
        t = v.totals
        dtype = v.dtype + ("/ch" if v.quant == "per-channel" and v.dtype.startswith("int") else "")
        size = v.resolution[0] * v.resolution[1] if v.resolution else None
        row: dict[str, Cell] = {
            "variant": entry("model" if i == 0 else v.label, "" if i == 0 else v.label),
            "res": entry(_res(v), size),
            "width": entry(f"{v.width:g}", v.width),
            "dtype": entry(dtype, dtype),
            "macs": entry(human_count(t.macs), t.macs),
            "params": entry(human_count(t.params), t.params),
            "weights": entry(human_bytes(t.weight_bytes), t.weight_bytes),
            "arena": entry(human_bytes(t.peak_activation_bytes), t.peak_activation_bytes),
            "bound_bytes": entry(
                human_bytes(t.activation_lower_bound_bytes), t.activation_lower_bound_bytes
            ),
            "fits": entry("yes" if t.fits else "NO", int(t.fits), "" if t.fits else "red"),
            "cpu": entry(len(v.fallback_layers), len(v.fallback_layers)),
            "latency": entry(human_seconds(t.latency_s), t.latency_s),
            "bound": entry(_bound_mix(v)),
        }
        for m in mems:
            f = v.memories.get(m)
            if f is None:
                row[_mem_key(m)] = entry("-")
            else:
                mark = "ok" if f.fits else ("stream" if f.on_overflow == "stream" else "NO")
                row[_mem_key(m)] = entry(
                    f"{human_bytes(f.required_bytes)} {mark}", f.required_bytes
                )
        rows.append(row)
        styles.append("bold green" if v is best else ("dim" if i == 0 else ""))
    title = f"{shown(result.model)} on {shown(result.target.name)}"
    return Grid(cols, rows, title=title, row_styles=styles, default_sort="macs", noun="variants")


WHATIF_LEGEND = (
    "MACs = multiply-accumulates; arena: planned activation memory, act. bound: its lower "
    "bound; /ch: per-channel int8 weights; memories: what the variant needs in each (ok, "
    "stream, NO); CPU: layers on the fallback CPU; latency: the target's forecast, with "
    "what bounds it"
)


def render_table(result: WhatIfResult, opts: TableOptions | None = None) -> Any:
    """A rich renderable: the variant table (fitted to the width it is printed at), what
    its columns mean, the ``--fit`` verdict and the variants that could not be made."""
    from rich.console import Group

    parts: list[Any] = [FitTable(variant_grid(result), opts), cell(WHATIF_LEGEND, style="dim")]
    if result.fit is not None:
        fit = result.fit
        target = shown(result.target.name)
        budget = f" and {human_seconds(fit.budget_s)}" if fit.budget_s is not None else ""
        if fit.best is not None:
            parts.append(
                cell(
                    f"fit: the largest variant that fits every memory of {target}{budget} is "
                    f"{fit.best.label} ({human_count(fit.best.macs)} MACs, "
                    f"{human_seconds(fit.best.totals.latency_s)}); {len(fit.tried)} "
                    f"variant{'' if len(fit.tried) == 1 else 's'} evaluated",
                    style="bold green",
                )
            )
        else:
            parts.append(
                cell(
                    f"fit: no variant in the searched ranges fits {target}{budget} "
                    f"({len(fit.tried)} evaluated)",
                    style="bold red",
                )
            )
    parts.extend(cell(f"not made: {label}: {msg}", style="yellow") for label, msg in result.errors)
    return Group(*parts)


# --------------------------------------------------------------------------- #
# Advice
# --------------------------------------------------------------------------- #


def advice_dict(result: AdviceResult) -> dict[str, Any]:
    return {
        "schema": ADVICE_SCHEMA,
        "target": result.target.name,
        "model": result.model,
        "units": {"time": "s", "bytes": "bytes"},
        "base": variant_dict(result.base),
        "advice": [
            {
                "kind": a.kind,
                "message": a.message,
                "layers": list(a.layers),
                "latency_gain_s": a.latency_gain_s,
                "memory_gain_bytes": a.memory_gain_bytes,
                "variant": a.variant,
            }
            for a in result.advice
        ],
        "notes": list(result.notes),
    }


def advice_records(result: AdviceResult) -> list[dict[str, Any]]:
    return [
        {
            "rank": i + 1,
            "kind": a.kind,
            "message": a.message,
            "layers": ";".join(a.layers),
            "latency_gain_s": a.latency_gain_s,
            "memory_gain_bytes": a.memory_gain_bytes,
            "variant": a.variant,
        }
        for i, a in enumerate(result.advice)
    ]


def advice_csv(result: AdviceResult) -> str:
    rows = advice_records(result)
    cols = ("rank", "kind", "message", "layers", "latency_gain_s", "memory_gain_bytes", "variant")
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if r[k] is None else r[k]) for k in cols})
    return buf.getvalue()


ADVICE_COLUMNS = [
    Col("rank", "#", prio=0),
    Col("kind", "kind", numeric=False, prio=2, min_width=8),
    Col("advice", "advice", numeric=False, prio=0, min_width=24),
    Col("layers", "layers", numeric=False, prio=1, min_width=14),
    Col("latency", "latency change", prio=0, short="Δ latency"),
    Col("memory", "memory change", prio=1, short="Δ memory"),
]


def advice_grid(result: AdviceResult) -> Grid:
    """One row per advice item, ranked; layers by the short labels every command uses."""
    labels: dict[str, str] = {}
    if result.graph is not None:
        g = result.graph
        names = {n.index: n.name for n in g.nodes}
        for (sub, i), lbl in graph_labels(g).items():
            if sub == g.name and i in names:
                labels.setdefault(names[i], lbl)
    rows: list[Row] = []
    for i, a in enumerate(result.advice):
        who = ", ".join(labels.get(n) or short_name(n, 30) for n in a.layers[:4])
        if len(a.layers) > 4:
            who += f" (+{len(a.layers) - 4})"
        lat, mem = a.latency_gain_s, a.memory_gain_bytes
        rows.append(
            {
                "rank": entry(i + 1, i + 1),
                "kind": entry(a.kind, a.kind),
                "advice": entry(a.message),
                "layers": entry(who),
                "latency": entry("-" if lat is None else f"-{human_seconds(lat)}", lat),
                "memory": entry("-" if mem is None else f"-{human_bytes(mem)}", mem),
            }
        )
    return Grid(list(ADVICE_COLUMNS), rows, noun="items", more="--format csv")


def render_advice(result: AdviceResult, opts: TableOptions | None = None) -> Any:
    """A rich renderable: where the model stands now, then the ranked advice (fitted to
    the width it is printed at) and the notes."""
    from rich.console import Group

    b = result.base.totals
    parts: list[Any] = [
        cell(f"{shown(result.model)} on {shown(result.target.name)}", style="bold"),
        cell(
            f"now: {human_count(b.macs)} MACs, {human_seconds(b.latency_s)}, "
            f"{len(result.base.fallback_layers)} layer(s) on the CPU, "
            + ("fits" if b.fits else "does NOT fit")
        ),
    ]
    if result.advice:
        parts.append(FitTable(advice_grid(result), opts))
    else:
        parts.append(cell("no advice: nothing the what-ifs tried gains on this target"))
    parts.extend(cell(f"note: {n}") for n in result.notes)
    return Group(*parts)
