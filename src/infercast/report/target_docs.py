"""Render a target's supported-operators document from the same constraint functions
placement runs (``tools/gen_target_docs.py`` writes ``docs/targets/<name>.md``;
a test regenerates them and compares, so the documents cannot drift)."""

from __future__ import annotations

from pathlib import Path

from infercast.report.units import human_bytes
from infercast.targets import constraints as C
from infercast.targets.loader import DATA_DIR, builtin_names, load_target
from infercast.targets.placement import reason_text
from infercast.targets.schema import Check, Target


def _rate(v: float) -> str:
    for div, unit in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if v >= div:
            return f"{v / div:.3g} {unit}"
    return f"{v:.3g}"


def _check_line(chk: Check, target: Target) -> str:
    if chk.name == "always_rewritten":
        return f"- Always partial: the compiler runs it as {chk.rewrite} (`{chk.name}`)"
    outcome = {
        "cpu": f"else runs on the {target.placement.fallback}",
        "partial": f"else partial: {chk.rewrite}",
        "note": "else still runs, with a note" + (f" (on unit `{chk.unit}`)" if chk.unit else ""),
    }[chk.on_fail]
    return f"- {reason_text(chk, target)} — {outcome} (`{chk.name}`)"


def _units(t: Target) -> list[str]:
    pl = t.placement
    out = [
        "## Compute units",
        "",
        "| unit | kind | description | clock | peak ops/s (1 MAC = 2 ops) | per-op overhead |",
        "|---|---|---|---|---|---|",
    ]
    for u in t.units.values():
        peaks = ", ".join(f"{d}: {_rate(v)}" for d, v in u.peak_ops_per_s.items())
        clock = f"{_rate(u.clock_hz)}Hz" if u.clock_hz else "–"
        role = {pl.accelerator: " (accelerator)", pl.fallback: " (fallback)"}.get(u.name, "")
        out.append(
            f"| `{u.name}`{role} | {u.kind} | {u.description} | {clock} | {peaks} | "
            f"{u.op_overhead_s * 1e6:g} µs |"
        )
    for u in t.units.values():
        if u.kind != "cpu" or u.int8_kernels != "builtin":
            continue
        how = (
            f'the AArch64 instructions they execute (`isa = "{u.isa}"`, '
            "`infercast.estimate.aarch64`) over the clock x `instructions_per_cycle` (stated: "
            f"{u.instructions_per_cycle or 1.0:g}; a fitted value is under Calibration)"
            if u.isa
            else "their MACs at the unit's int8 peak and efficiencies"
        )
        out += ["", f"`{u.name}`: int8 operators run TFLite's built-in kernels, priced by {how}."]
    return out


def _memories(t: Target) -> list[str]:
    out = ["## Memories", ""]
    if not t.memories:
        return [*out, "None declared."]
    out += [
        "| memory | size | bandwidth | holds | if it does not fit |",
        "|---|---|---|---|---|",
    ]
    for m in t.memories.values():
        holds = ", ".join(m.holds) or "– (not a capacity limit)"
        over = "excess streamed" if m.on_overflow == "stream" else "does not fit"
        eff = "" if m.efficiency == 1 else f" (achieved {m.efficiency:.0%})"
        out.append(
            f"| `{m.name}` | {human_bytes(m.size_bytes)} | "
            f"{_rate(m.bandwidth_bytes_per_s)}B/s{eff} | "
            f"{holds} | {over} |"
        )
    return out


def _placement(t: Target) -> list[str]:
    pl = t.placement
    single = pl.segments == "single" and pl.accelerator
    out = [
        "## Placement",
        "",
        "- Accelerator: "
        + (f"`{pl.accelerator}`" if pl.accelerator else "none (every op runs on the fallback)"),
        f"- Fallback processor: `{pl.fallback}`",
        f"- Segments: {pl.segments}"
        + (
            " — " + C.SINGLE_SEGMENT.format(accelerator=pl.accelerator, fallback=pl.fallback)
            if single
            else ""
        ),
        f"- Operator names: {pl.op_names}",
        f"- Crossing accelerator <-> {pl.fallback}: {t.crossing.fixed_s * 1e6:g} µs + bytes / "
        f"{_rate(t.crossing.bytes_per_s)}B/s"
        + (
            f"; weights streamed beyond a cache: {_rate(t.crossing.stream_bytes_per_s)}B/s"
            if t.crossing.stream_bytes_per_s
            else ""
        )
        + (
            f"; {pl.accelerator} -> {pl.fallback} read back at "
            f"{_rate(t.crossing.readback_bytes_per_s)}B/s"
            if t.crossing.readback_bytes_per_s
            else ""
        ),
        f"- One-time graph compilation: {t.graph_compile_s:g} s"
        + (
            f" + {t.graph_compile_s_per_weight_byte * 1e6:g} s per MB of weights on the accelerator"
            if t.graph_compile_s_per_weight_byte
            else ""
        ),
    ]
    if t.quantize_float_to != "none":
        out.append(f"- The compiler quantises float tensors to {t.quantize_float_to}")
    return out


def _support(t: Target) -> list[str]:
    pl = t.placement
    sup = t.support
    out = ["## Checks on every operator", ""]
    out += [_check_line(c, t) for c in sup.generic] or ["None."]
    out += ["", "## Operators the accelerator runs", ""]
    if sup.all_ops:
        out.append("Every operator (`*`), subject to the checks above.")
    for op in sorted(o for o in sup.ops if o != "*"):
        out.append(f"- `{op}`")
        rule = sup.rules.get(op)
        if rule is None:
            continue
        out += ["  " + _check_line(chk, t) for chk in rule.checks]
        if rule.skip_generic:
            out.append(f"  - not subject to: {', '.join(f'`{s}`' for s in rule.skip_generic)}")
    out += [
        "",
        "## Not supported",
        "",
        f"Any operator not listed above runs on the `{pl.fallback}` ("
        + C.NOT_LISTED.format(accelerator=pl.accelerator)
        + ").",
    ]
    if sup.known_unsupported:
        known = ", ".join(f"`{o}`" for o in sorted(sup.known_unsupported))
        out += ["", f"Known unsupported: {known}."]
    return out


def _provenance(t: Target) -> list[str]:
    out: list[str] = []
    if t.uncertain:
        out += ["## Uncertain values", "", *(f"- `{k}`" for k in t.uncertain), ""]
    out += [
        "## Calibration",
        "",
        f"calibrated: {'yes' if t.calibration.calibrated else 'no'}"
        + (f" — {t.calibration.source}" if t.calibration.source else ""),
        *_calibration_lines(t),
    ]
    if t.sources:
        out += ["", "## Sources", "", *(f"- {s}" for s in t.sources)]
    return out


def _calibration_lines(t: Target) -> list[str]:
    """The fitted values, the rows they were fitted on and the leave-one-out uncertainty."""
    cal = t.calibration
    out: list[str] = []
    if cal.values_from:
        out += ["", f"Shares the fitted values of `{cal.values_from}`."]
    if cal.paired and cal.values_from:
        out += [
            "",
            f"Paired fit: `{', '.join(cal.parameters)}` fitted on the difference between each "
            f"row and the same measurement (board, model, quantisation, threads, timing, "
            f"source) on `{cal.values_from}`, over that target's forecast of the model, so "
            f"its error on the model cancels; leave-one-out drops the whole pair (and refits "
            f"`{cal.values_from}` without its row).",
        ]
    if cal.rows and cal.loo_worst_ratio:
        out += [
            "",
            f"Uncertainty (leave-one-out on its {len(cal.rows)} published rows): "
            f"±{cal.loo_median_abs_error:.0%} (median), worst {cal.loo_worst_ratio:.2f}x.",
        ]
    if cal.values:
        out += ["", "Fitted values (the tables above keep the stated ones, the fit's prior):", ""]
        out += [f"- `{k}` = {v:.4g}" for k, v in cal.values.items()]
    if cal.covered:
        out += [
            "",
            "Kernel kinds the fitted rows exercised (at least 5% of some row's forecast); a "
            "forecast with 20% or more of its time in other kinds says it is outside the "
            "fitted evidence"
            + (f" (with those of `{cal.values_from}`)" if cal.values_from else "")
            + ":",
            "",
            ", ".join(f"`{k}`" for k in cal.covered),
        ]
    if cal.outside_rows:
        out += ["", "Checked-only rows outside that evidence (published / forecast):", ""]
        out += [f"- `{r}`: {x:.3g}x" for r, x in cal.outside_rows.items()]
    if cal.rows:
        out += ["", "Rows (infercast/estimate/data/published-latency.csv):", ""]
        pairs = dict(zip(cal.rows, cal.paired_rows, strict=False))
        out += [
            f"- `{r}`" + (f" (paired with `{pairs[r]}`)" if pairs.get(r) else "") for r in cal.rows
        ]
    return out


def render(target: Target) -> str:
    """The Markdown document of one target."""
    t = target
    names = [Path(p).name for p in t.chain]
    files = ", ".join(f"`{n}`" for n in names)
    out = [
        f"# {t.name}",
        "",
        t.description,
        "",
        f"<!-- Generated by tools/gen_target_docs.py from {', '.join(names)}. "
        "Do not edit: edit the target file and regenerate. -->",
        "",
        f"Resolved from {files}. Values marked *uncertain* are starting points to calibrate.",
        "",
        *_units(t),
        "",
        *_memories(t),
        "",
        *_placement(t),
    ]
    if t.placement.accelerator:
        out += ["", *_support(t)]
    if t.notes:
        out += ["", "## Notes", "", *(f"- {n}" for n in t.notes)]
    out += ["", *_provenance(t)]
    return "\n".join(out) + "\n"


def render_all() -> dict[str, str]:
    """``{file name: text}`` for every built-in target, machine detection off."""
    return {
        f"{n}.toml".replace(".toml", ".md"): render(load_target(n, detect=False))
        for n in builtin_names()
    }


__all__ = ["DATA_DIR", "render", "render_all"]
