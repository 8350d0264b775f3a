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


def render_table(result: WhatIfResult) -> Any:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    head = Text()
    head.append(f"{result.model} on {result.target.name}", style="bold")
    head.append(
        "\nMACs = multiply-accumulates; arena: planned activation memory, act. bound: its "
        "lower bound; /ch: per-channel int8 weights; CPU: layers on the fallback CPU; "
        "latency: the target's forecast, with what bounds it"
    )
    mems = list(result.base.memories)
    table = Table()
    for col in ("variant", "res", "width", "dtype", "MACs", "params", "weights", "arena",
                "act. bound", *mems, "CPU", "latency", "bound"):  # fmt: skip
        table.add_column(col, overflow="fold")
    best = result.fit.best if result.fit is not None else None
    rows = [result.base, *result.variants]
    for i, v in enumerate(rows):
        t = v.totals
        style = "bold green" if v is best else ("dim" if i == 0 else "")
        cells = [
            "model" if i == 0 else v.label,
            _res(v),
            f"{v.width:g}",
            v.dtype + ("/ch" if v.quant == "per-channel" and v.dtype.startswith("int") else ""),
            human_count(t.macs),
            human_count(t.params),
            human_bytes(t.weight_bytes),
            human_bytes(t.peak_activation_bytes),
            human_bytes(t.activation_lower_bound_bytes),
        ]
        for m in mems:
            f = v.memories.get(m)
            if f is None:
                cells.append("-")
            else:
                mark = "ok" if f.fits else ("stream" if f.on_overflow == "stream" else "NO")
                cells.append(f"{human_bytes(f.required_bytes)} {mark}")
        cells += [str(len(v.fallback_layers)), human_seconds(t.latency_s), _bound_mix(v)]
        table.add_row(*cells, style=style)
    parts: list[Any] = [head, table]
    if result.fit is not None:
        fit = result.fit
        text = Text()
        budget = f" and {human_seconds(fit.budget_s)}" if fit.budget_s is not None else ""
        if fit.best is not None:
            text.append(
                f"fit: the largest variant that fits every memory of {result.target.name}"
                f"{budget} is {fit.best.label} ({human_count(fit.best.macs)} MACs, "
                f"{human_seconds(fit.best.totals.latency_s)}); {len(fit.tried)} variants "
                "evaluated",
                style="bold green",
            )
        else:
            text.append(
                f"fit: no variant in the searched ranges fits {result.target.name}{budget} "
                f"({len(fit.tried)} evaluated)",
                style="bold red",
            )
        parts.append(text)
    if result.errors:
        err = Text()
        for label, msg in result.errors:
            err.append(f"not made: {label}: {msg}\n", style="yellow")
        parts.append(err)
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


def render_advice(result: AdviceResult) -> Any:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    b = result.base.totals
    head = Text()
    head.append(f"{result.model} on {result.target.name}", style="bold")
    head.append(
        f"\nnow: {human_count(b.macs)} MACs, {human_seconds(b.latency_s)}, "
        f"{len(result.base.fallback_layers)} layer(s) on the CPU, "
        + ("fits" if b.fits else "does NOT fit")
    )
    table = Table()
    for col in ("#", "kind", "advice", "layers", "latency gain", "memory gain"):
        table.add_column(col, overflow="fold")
    for i, a in enumerate(result.advice):
        shown = ", ".join(short_name(n, 30) for n in a.layers[:4])
        if len(a.layers) > 4:
            shown += f" (+{len(a.layers) - 4})"
        table.add_row(
            str(i + 1),
            a.kind,
            a.message,
            shown,
            "-" if a.latency_gain_s is None else f"-{human_seconds(a.latency_gain_s)}",
            "-" if a.memory_gain_bytes is None else f"-{human_bytes(a.memory_gain_bytes)}",
        )
    parts: list[Any] = [head, table]
    if not result.advice:
        parts.append(Text("no advice: nothing the what-ifs tried gains on this target"))
    if result.notes:
        parts.append(Text("\n".join(f"note: {n}" for n in result.notes)))
    return Group(*parts)
