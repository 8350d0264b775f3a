"""Renderers of a :class:`~infercast.bench.BenchReport` (JSON ``infercast.bench/1``, CSV,
terminal tables) and of a per-op profile joined with a model (``infercast.profile/1``).

JSON contract (``docs/bench.md``): ``schema``, ``model``, ``environment``,
``runs`` (one per run: ``runtime``, ``threads``, ``options``, ``status``,
``first_s``, ``median_s``, ``p90_s``, ``n`` and the rest), ``profile`` (the
per-op rows of the fastest profiled run: ``index``, ``name``, ``op``,
``measured_s``, ``macs``, ``achieved_macs_per_s``, ...). New fields may appear
within a version.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from infercast._version import __version__
from infercast.bench import BenchReport
from infercast.bench.harness import RunResult
from infercast.bench.join import INTERNAL, Joined, JoinedRow
from infercast.report.summaries import op_summary
from infercast.report.table import Col, FitTable, Grid, Row, TableOptions, by_op_grid, entry
from infercast.report.text import cell, csv_text, shown
from infercast.report.units import human_count

SCHEMA = "infercast.bench/1"
PROFILE_SCHEMA = "infercast.profile/1"


def row_dict(r: JoinedRow) -> dict[str, Any]:
    """One measured unit of a joined profile."""
    return {
        "index": r.index,
        "name": r.name,
        "op": r.op,
        "measured_s": r.measured_s,
        "share": r.share,
        "macs": r.macs,
        "flops": r.flops,
        "achieved_macs_per_s": r.achieved_macs_per_s,
        "achieved_flops_per_s": r.achieved_flops_per_s,
        "pct_of_peak": r.pct_of_peak,
        "layers": list(r.layers),
        "layer_names": list(r.layer_names),
        "mapping": r.mapping,
        "provider": r.provider,
        "count": r.count,
        "note": r.note,
    }


def join_dict(j: Joined) -> dict[str, Any]:
    """The summary of a joined profile (``profile_summary`` of a bench run)."""
    return {
        "source": j.source,
        "whole_s": j.whole_s,
        "profile_whole_s": j.profile_whole_s,
        "ops_total_s": j.ops_total_s,
        "sum_vs_whole": j.sum_vs_whole,
        "sum_vs_profile_whole": j.sum_vs_profile_whole,
        "mapped_share": j.mapped_share,
        "total_macs": j.total_macs,
        "total_flops": j.total_flops,
        "achieved_macs_per_s": j.achieved_macs_per_s,
        "achieved_flops_per_s": j.achieved_flops_per_s,
        "peak_macs_per_s": j.peak_macs_per_s,
        "pct_of_peak": j.pct_of_peak,
        "runs": j.runs,
        "statistic": j.statistic,
        "outside": j.outside,
        "notes": list(j.notes),
        "hotspots": [r.name for r in j.hotspots()],
        "unaccounted_layers": [
            {"index": u.index, "name": u.name, "op": u.op, "macs": u.macs, "status": u.status}
            for u in j.unaccounted
        ],
    }


def _run_dict(i: int, r: RunResult, rep: BenchReport, fastest: int | None) -> dict[str, Any]:
    s = r.summary
    macs = rep.total_macs
    peak = rep.peaks.get(i)
    ach = (macs / s.median_s) if (s and macs and s.median_s > 0) else None
    d: dict[str, Any] = {
        "runtime": r.spec.runtime,
        "threads": r.spec.threads,
        "options": dict(r.resolved_options or r.spec.options),
        "status": r.status,
        "error": r.error or None,
        "phase": r.phase or None,
        "returncode": r.returncode,
        "load_s": r.load_s,
        "first_s": r.first_s,
        "warmup_n": r.warmup.n if r.warmup else 0,
        "warmup_median_s": r.warmup.median_s if r.warmup else None,
        "median_s": s.median_s if s else None,
        "mean_s": s.mean_s if s else None,
        "p90_s": s.p90_s if s else None,
        "p99_s": s.p99_s if s else None,
        "std_s": s.std_s if s else None,
        "min_s": s.min_s if s else None,
        "ci95_low_s": s.ci_low_s if s else None,
        "ci95_high_s": s.ci_high_s if s else None,
        "ci_coverage": s.ci_coverage if s else None,
        "n": s.n if s else 0,
        "achieved_macs_per_s": ach,
        "achieved_flops_per_s": (rep.total_flops / s.median_s)
        if (s and rep.total_flops and s.median_s > 0)
        else None,
        "peak_macs_per_s": peak,
        "pct_of_peak": (100.0 * ach / peak) if (ach and peak) else None,
        "fastest": i == fastest,
        "versions": dict(r.versions),
        "inputs": list(r.inputs),
        "runtime_meta": dict(r.runtime_meta),
        "wall_s": r.wall_s,
    }
    if not r.ok:
        d["stderr_tail"] = list(r.stderr_tail[-10:])
    if r.profile_error:
        d["profile_error"] = r.profile_error
    j = rep.joins.get(i)
    if j is not None:
        d["profile_summary"] = join_dict(j)
        d["profile"] = [row_dict(row) for row in j.rows]
    return d


def to_dict(rep: BenchReport) -> dict[str, Any]:
    fastest = rep.fastest()
    runs = [_run_dict(i, r, rep, fastest) for i, r in enumerate(rep.runs)]
    prof_run = None
    profiled = [i for i in rep.joins if rep.runs[i].ok]
    if profiled:
        prof_run = fastest if fastest in rep.joins else profiled[0]
    timing = rep.runs[0].spec.timing.to_dict() if rep.runs else {}
    return {
        "schema": SCHEMA,
        "infercast": __version__,
        "model": rep.model,
        "format": rep.format,
        "macs": rep.total_macs,
        "flops": rep.total_flops,
        "environment": dict(rep.environment),
        "timing": {
            **timing,
            "timeout_s": rep.timeout_s,
            "ci": "95% CI of the median, binomial order statistics",
        },
        "runs": runs,
        "fastest_run": fastest,
        "profile_run": prof_run,
        "profile": runs[prof_run]["profile"] if prof_run is not None else [],
        "notes": list(rep.notes),
    }


_PROFILE_COLS = [
    "index",
    "name",
    "op",
    "measured_s",
    "share",
    "macs",
    "flops",
    "achieved_macs_per_s",
    "achieved_flops_per_s",
    "pct_of_peak",
    "mapping",
    "provider",
    "layers",
    "note",
]
_RUN_COLS = [
    "runtime",
    "threads",
    "options",
    "status",
    "first_s",
    "median_s",
    "mean_s",
    "p90_s",
    "p99_s",
    "std_s",
    "ci95_low_s",
    "ci95_high_s",
    "n",
    "achieved_macs_per_s",
    "pct_of_peak",
    "fastest",
    "error",
]


def _flat(v: Any) -> Any:
    if isinstance(v, dict):
        return ";".join(f"{k}={x}" for k, x in v.items())
    if isinstance(v, list):
        return " ".join(str(x) for x in v)
    return v


def run_records(rep: BenchReport) -> list[dict[str, Any]]:
    """One flat dict per run (the CSV's rows without profiles)."""
    return [{c: _flat(run.get(c)) for c in _RUN_COLS} for run in to_dict(rep)["runs"]]


def profile_records(rep: BenchReport) -> list[dict[str, Any]]:
    """One flat dict per measured unit of every profiled run, with the run's identity."""
    out = []
    for i, run in enumerate(to_dict(rep)["runs"]):
        for row in run.get("profile", []):
            out.append(
                {
                    "run": i,
                    "runtime": run["runtime"],
                    "threads": run["threads"],
                    "options": _flat(run["options"]),
                    **{c: _flat(row.get(c)) for c in _PROFILE_COLS},
                }
            )
    return out


def to_csv(rep: BenchReport) -> str:
    """Runs, one per line; with profiles, the per-op rows of every profiled run instead."""
    if rep.joins:
        return csv_text(
            ["run", "runtime", "threads", "options", *_PROFILE_COLS], profile_records(rep)
        )
    return csv_text(_RUN_COLS, run_records(rep))


def _ms(s: float | None) -> str:
    return "-" if s is None else f"{s * 1e3:.3f}"


def _rate(r: float | None) -> str:
    return "-" if r is None else f"{r / 1e9:.2f}"


RUN_COLUMNS = [
    Col("runtime", "runtime", numeric=False, prio=0),
    Col("threads", "threads", prio=0, short="thr"),
    Col("options", "options", numeric=False, prio=3, min_width=8),
    Col("status", "status", numeric=False, prio=0),
    Col("first", "first ms", prio=3),
    Col("median", "median ms", prio=0, short="med ms"),
    Col("ci", "95% CI ms", prio=4),
    Col("p90", "p90 ms", prio=2),
    Col("p99", "p99 ms", prio=4),
    Col("n", "n", prio=2),
    Col("gmacs", "GMAC/s", prio=1),
    Col("peak", "% peak", prio=2),
    Col("note", "", numeric=False, prio=1),
]


def runs_grid(rep: BenchReport) -> Grid:
    fastest = rep.fastest()
    macs = rep.total_macs
    rows: list[Row] = []
    for i, r in enumerate(rep.runs):
        s = r.summary
        ach = (macs / s.median_s) if (s and macs) else None
        peak = rep.peaks.get(i)
        opts = ",".join(f"{k}={v}" for k, v in (r.resolved_options or r.spec.options).items())
        rows.append(
            {
                "runtime": entry(r.spec.runtime),
                "threads": entry("default" if r.spec.threads is None else r.spec.threads),
                "options": entry(opts),
                "status": entry(r.status, r.status, "green" if r.ok else "bold red"),
                "first": entry(_ms(r.first_s), r.first_s),
                "median": entry(_ms(s.median_s if s else None), s.median_s if s else None),
                "ci": entry(f"{_ms(s.ci_low_s)}-{_ms(s.ci_high_s)}" if s else "-"),
                "p90": entry(_ms(s.p90_s if s else None), s.p90_s if s else None),
                "p99": entry(_ms(s.p99_s if s else None), s.p99_s if s else None),
                "n": entry(s.n if s else 0, s.n if s else 0),
                "gmacs": entry(_rate(ach), ach),
                "peak": entry(f"{100 * ach / peak:.1f}" if (ach and peak) else "-"),
                "note": entry("fastest" if i == fastest else "", None, "bold"),
            }
        )
    title = f"{shown(rep.model)}  ({human_count(macs) + 'MAC' if macs else 'MACs unknown'})"
    return Grid(list(RUN_COLUMNS), rows, title=title, default_sort="median", noun="runs")


def render_tables(
    rep: BenchReport,
    top: int = 10,
    opts: TableOptions | None = None,
    by_op: bool = False,
    labels: Mapping[int, str] | None = None,
) -> list[Any]:
    """The runs table, failures, then each per-op profile (top ``top`` by time, or by op)."""

    out: list[Any] = [FitTable(runs_grid(rep))]
    for r in rep.runs:
        if not r.ok:
            line = f"{r.spec.label}: {r.status}"
            if r.phase:
                line += f" during {r.phase}"
            line += f": {r.error}"
            if r.stderr_tail and r.status in ("crashed", "timeout"):
                line += f" | stderr: {r.stderr_tail[-1]}"
            out.append(cell(line, style="red"))
        elif r.profile_error:
            out.append(cell(f"{r.spec.label}: profile failed: {r.profile_error}", style="yellow"))
    for i, j in rep.joins.items():
        out.extend(
            render_join(
                j,
                title=f"per-op profile: {rep.runs[i].spec.label}",
                top=top,
                opts=opts,
                by_op=by_op,
                labels=labels,
            )
        )
    for n in rep.notes:
        out.append(cell(n, style="yellow"))
    return out


def render_group(
    rep: BenchReport,
    top: int = 10,
    opts: TableOptions | None = None,
    by_op: bool = False,
    labels: Mapping[int, str] | None = None,
) -> Any:
    """:func:`render_tables` as one renderable."""
    from rich.console import Group

    return Group(*render_tables(rep, top=top, opts=opts, by_op=by_op, labels=labels))


JOIN_COLUMNS = [
    Col("index", "#", prio=0),
    Col("name", "layer", numeric=False, prio=0, min_width=16),
    Col("op", "op", numeric=False, prio=1, min_width=8),
    Col("ms", "ms", prio=0),
    Col("share", "share %", prio=0, short="%"),
    Col("macs", "MACs", prio=2),
    Col("gmacs", "GMAC/s", prio=1),
    Col("peak", "% peak", prio=2),
    Col("layers", "layers", numeric=False, prio=3, min_width=8),
    Col("kernel", "profiled as", numeric=False, prio=4, min_width=12),
]


def join_grid(j: Joined, labels: Mapping[int, str] | None = None) -> Grid:
    rows: list[Row] = []
    for r in j.rows:
        if r.provider == INTERNAL:
            continue
        name = labels.get(r.index, r.name) if (labels and r.index is not None) else r.name
        rows.append(
            {
                "index": entry("-" if r.index is None else r.index, r.index),
                "name": entry(name, name),
                "op": entry(r.op, r.op),
                "ms": entry(_ms(r.measured_s), r.measured_s),
                "share": entry(f"{100 * r.share:.1f}", r.share),
                "macs": entry(human_count(r.macs) if r.macs is not None else "-", r.macs),
                "gmacs": entry(_rate(r.achieved_macs_per_s), r.achieved_macs_per_s),
                "peak": entry(
                    f"{r.pct_of_peak:.1f}" if r.pct_of_peak is not None else "-", r.pct_of_peak
                ),
                "kernel": entry(r.name, r.name),
                "layers": entry(
                    (r.note or "")
                    if not r.layers
                    else ",".join(map(str, r.layers[:6])) + ("…" if len(r.layers) > 6 else "")
                ),
            }
        )
    return Grid(list(JOIN_COLUMNS), rows, default_sort="ms", noun="measured units")


def join_op_grid(j: Joined) -> Grid:
    """``--by op``: measured time per op type (TFLite benchmark_model's summary by node type)."""
    items = [r for r in j.rows if r.provider != INTERNAL]
    rows = op_summary(items, lambda r: r.op, [("ms", lambda r: r.measured_s)])
    total = j.ops_total_s or 1.0
    return by_op_grid(
        "",
        [(r.op, r.count, {**r.values, "share": r.values["ms"] / total}) for r in rows],
        [("ms", "ms", _ms), ("share", "share %", lambda v: f"{100 * v:.1f}")],
        count_header="kernels",
    )


def render_join(
    j: Joined,
    title: str,
    top: int = 10,
    opts: TableOptions | None = None,
    by_op: bool = False,
    labels: Mapping[int, str] | None = None,
) -> list[Any]:

    parts: list[Any] = []
    summ = (
        f"{title}: {len(j.rows)} measured units ({j.source}, {j.statistic} of {j.runs} runs); "
        f"sum {_ms(j.ops_total_s)} ms"
    )
    if j.sum_vs_whole is not None:
        summ += f" = {100 * j.sum_vs_whole:.1f}% of the whole {_ms(j.whole_s)} ms"
    if j.sum_vs_profile_whole is not None and j.profile_whole_s != j.whole_s:
        summ += (
            f" ({100 * j.sum_vs_profile_whole:.1f}% of the profiled runs' "
            f"{_ms(j.profile_whole_s)} ms)"
        )
    if j.achieved_macs_per_s is not None:
        summ += f"; overall {_rate(j.achieved_macs_per_s)} GMAC/s"
    if j.pct_of_peak is not None:
        summ += f" = {j.pct_of_peak:.1f}% of peak"
    parts.append(cell(summ))
    o = opts or TableOptions()
    if o.top is None:
        o = replace(o, top=top)
    grid = join_op_grid(j) if by_op else join_grid(j, labels)
    parts.append(FitTable(grid, o))
    if j.outside:
        parts.append(cell(f"outside the per-op sum: {j.outside}", style="dim"))
    for n in j.notes:
        parts.append(cell(n, style="dim"))
    return parts


def joined_to_dict(j: Joined, model: str, file: str) -> dict[str, Any]:
    return {
        "schema": PROFILE_SCHEMA,
        "infercast": __version__,
        "model": model,
        "file": file,
        **join_dict(j),
        "profile": [row_dict(r) for r in j.rows],
    }


def joined_records(j: Joined) -> list[dict[str, Any]]:
    """One flat dict per measured unit of a joined profile (the CSV's rows)."""
    return [{c: _flat(v) for c, v in row_dict(r).items() if c in _PROFILE_COLS} for r in j.rows]


def joined_to_csv(j: Joined) -> str:
    return csv_text(_PROFILE_COLS, joined_records(j))
