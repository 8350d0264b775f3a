"""``infercast report``: one self-contained HTML file (summary, charts, placement, layers)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from infercast.cli.common import InputShapeOpt, ModelArg, Output, progress

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
    typer.Option("--whatif", help="A what-if result (JSON): adds the table of its variants."),
]
HtmlOutOpt = Annotated[Path, typer.Option("--output", "-o", help="The HTML file to write.")]


def report(
    model: ModelArg,
    output: HtmlOutOpt,
    target: TargetsOpt = None,
    input_shape: InputShapeOpt = None,
    profile: ProfileOpt = None,
    whatif: WhatifOpt = None,
) -> None:
    """Write an HTML report of MODEL (on each TARGET): one file, no network needed to view it.

    Summary cards (compute, weights, peak memory against each device memory,
    forecast latency, accelerator / CPU split), latency per layer coloured by
    bound, a roofline, the memory timeline, the placement map with its reasons,
    and a sortable, filterable table of layers.
    """
    from infercast.frontends import parse_input_shapes

    if output.suffix.lower() not in (".html", ".htm"):
        from infercast.errors import InfercastError

        raise InfercastError(
            f"-o {output}: the report is an HTML file", "name it with .html, e.g. -o report.html"
        )
    import infercast.api as api

    targets = [api.load_target(t) for t in dict.fromkeys(target or [])]
    chains = [p for t in targets for p in (t.path, *t.chain)]
    out = Output(output, [model, profile, whatif, *chains])
    text = api.html_report(
        model,
        targets,
        input_shapes=parse_input_shapes(input_shape or []),
        profile=profile,
        whatif=whatif,
    )
    out.text(text)
    progress(f"wrote {output} ({len(text.encode()):,} bytes)")
