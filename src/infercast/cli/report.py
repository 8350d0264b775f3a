"""``infercast report``: one self-contained HTML file (summary, charts, placement, layers)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from infercast.cli.common import InputShapeOpt, ModelArg, Output, progress
from infercast.cli.whatif import (
    BudgetOpt,
    DivisorOpt,
    DTypeOpt,
    FitOpt,
    JobsOpt,
    KeepOpt,
    QuantOpt,
    ReplaceOpt,
    ResolutionOpt,
    ThreadsOpt,
    WidthOpt,
)
from infercast.errors import InfercastError

TargetsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--target",
        "-t",
        help="A built-in target name or a .toml file; repeat for targets side by side.",
    ),
]
ProfileOpt = Annotated[
    Path | None,
    typer.Option(
        "--profile",
        help="A per-op profile of the model (ONNX Runtime JSON, TFLite benchmark_model output, "
        "TVM debug table): measured points on the roofline and a measured column.",
    ),
]
WhatifOpt = Annotated[
    Path | None,
    typer.Option(
        "--whatif",
        help="A what-if result (JSON, `infercast whatif -f json`): adds the table of its "
        "variants. Or give the what-if options (--resolution, --width, --dtype, --replace, "
        "--threads, --fit, ...) and the report runs the variants on each --target itself.",
    ),
]
HtmlOutOpt = Annotated[Path, typer.Option("--output", "-o", help="The HTML file to write.")]


def report(
    model: ModelArg,
    output: HtmlOutOpt,
    target: TargetsOpt = None,
    input_shape: InputShapeOpt = None,
    profile: ProfileOpt = None,
    whatif: WhatifOpt = None,
    resolution: ResolutionOpt = None,
    width: WidthOpt = None,
    dtype: DTypeOpt = None,
    quant: QuantOpt = None,
    replace: ReplaceOpt = None,
    keep: KeepOpt = None,
    divisor: DivisorOpt = 8,
    threads: ThreadsOpt = None,
    fit: FitOpt = False,
    budget_ms: BudgetOpt = None,
    jobs: JobsOpt = None,
) -> None:
    """Write an HTML report of MODEL (on each TARGET): one file, no network needed to view it.

    Summary cards (compute, weights, peak memory against each device memory,
    forecast latency, accelerator / CPU split), latency per layer coloured by
    bound, a roofline, the memory timeline, the placement map with its reasons,
    and a sortable, filterable table of layers. With the what-if options (as
    `infercast whatif` takes them), the variants on each target, side by side in a
    table (with --fit, the one found highlighted); or --whatif FILE for a saved run.
    """
    from infercast.cli.whatif import run_variants, variant_options
    from infercast.frontends import parse_input_shapes

    if output.suffix.lower() not in (".html", ".htm"):
        raise InfercastError(
            f"-o {output}: the report is an HTML file", "name it with .html, e.g. -o report.html"
        )
    axes = any((resolution, width, dtype, quant, replace, threads, fit))
    if whatif is not None and axes:
        raise InfercastError(
            "--whatif FILE shows a saved what-if run; the what-if options run one",
            "give either --whatif FILE or options such as --resolution / --width",
        )
    if (keep or budget_ms is not None or jobs is not None or divisor != 8) and not axes:
        raise InfercastError(
            "--keep, --divisor, --budget-ms and --jobs shape what-if variants",
            "add an axis, e.g. --width 0.5,0.75 or --resolution 128,160 (or --fit)",
        )
    options = None
    if axes:
        options = variant_options(
            resolution, width, dtype, quant, replace, keep, divisor, threads, fit, budget_ms, jobs
        )
        if not target:
            raise InfercastError(
                "the what-if variants are forecast on a target: give --target",
                "e.g. infercast report MODEL -t k210-kpu --resolution 128,160 -o report.html",
            )
    import infercast.api as api

    targets = [api.load_target(t) for t in dict.fromkeys(target or [])]
    chains = [p for t in targets for p in (t.path, *t.chain)]
    out = Output(output, [model, profile, whatif, *chains])
    graph = api.load(model, parse_input_shapes(input_shape or []))
    runs: list[dict[str, Any]] = []
    if options is not None:
        from infercast.report.whatif import to_dict

        for t in targets:
            progress(f"what-if variants on {t.name}")
            runs.append(to_dict(run_variants(graph, t, options)))
    text = api.html_report(
        graph, targets, profile=profile, whatif=runs if options is not None else whatif
    )
    out.text(text)
    progress(f"wrote {output} ({len(text.encode()):,} bytes)")
