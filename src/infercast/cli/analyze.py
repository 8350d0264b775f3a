"""``infercast analyze``: per-layer compute, memory, and (with ``--target``) the forecast."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from infercast.cli.common import (
    EXIT_INCOMPLETE,
    Format,
    FormatOpt,
    InputShapeOpt,
    ModelArg,
    OutOpt,
    emit,
    render,
)
from infercast.errors import InfercastError

if TYPE_CHECKING:
    from infercast.analysis.cost import Analysis

MemoryPlanOpt = Annotated[
    bool,
    typer.Option(
        "--memory-plan",
        help="Output the activation arena plan (byte offset, size and lifetime of every "
        "tensor) instead of the per-layer table; JSON or CSV with --format.",
    ),
]
AlignmentOpt = Annotated[
    int, typer.Option("--alignment", help="Arena alignment in bytes (TFLite Micro uses 16).")
]
InPlaceOpt = Annotated[
    bool,
    typer.Option(
        "--in-place",
        help="Let elementwise and depthwise ops write over an input that dies there "
        "(lowers the peak; TFLite Micro's default planner does not).",
    ),
]
ForecastTargetOpt = Annotated[
    str | None,
    typer.Option(
        "--target",
        "-t",
        help="Add the latency forecast on this target (a built-in name or a .toml file).",
    ),
]


def analyze(
    model: ModelArg,
    input_shape: InputShapeOpt = None,
    fmt: FormatOpt = Format.table,
    output: OutOpt = None,
    memory_plan: MemoryPlanOpt = False,
    alignment: AlignmentOpt = 16,
    in_place: InPlaceOpt = False,
    target: ForecastTargetOpt = None,
) -> None:
    """Per-layer MACs, FLOPs, parameters, weight and activation bytes of MODEL."""
    from infercast.analysis.cost import analyze as run
    from infercast.analysis.memory import plan_graph
    from infercast.frontends import parse_input_shapes
    from infercast.report import analysis as rep

    if alignment < 1:
        raise InfercastError(
            f"--alignment must be a positive number of bytes, not {alignment}",
            "use --alignment 16 (TFLite Micro) or 1 for none",
        )
    result = run(model, parse_input_shapes(input_shape or []))
    memory = plan_graph(result.graph, alignment=alignment, in_place=in_place)
    if memory_plan:
        from infercast.analysis import memory_export as mx

        if fmt is Format.json:
            emit(json.dumps(mx.plan_dict(memory), indent=1), output)
        elif fmt is Format.csv:
            emit(mx.plan_csv(memory), output)
        else:
            render(mx.render_plan(memory), output)
        return
    forecast = None
    if target is not None:
        from infercast.estimate import estimate as run_forecast
        from infercast.targets import load_target

        forecast = run_forecast(result.graph, load_target(target))
    if fmt is Format.json:
        doc = rep.to_dict(result, memory)
        if forecast is not None:
            from infercast.report import estimate as est_rep

            doc["forecast"] = est_rep.to_dict(forecast)
        emit(json.dumps(doc, indent=1), output)
    elif fmt is Format.csv:
        text = rep.to_csv(result, memory)
        if forecast is not None:
            from infercast.report import estimate as est_rep

            text = est_rep.join_csv(text, forecast)
        emit(text, output)
    elif forecast is None:
        render(rep.render_table(result, memory=memory), output)
    else:
        from rich.console import Group

        from infercast.report import estimate as est_rep

        render(
            Group(rep.render_table(result, memory=memory), est_rep.render_table(forecast)), output
        )
    exit_if_incomplete(result)


def exit_if_incomplete(result: Analysis) -> None:
    t = result.totals
    if t.complete:
        return
    what = []
    if result.unsupported:
        ops = ", ".join(u.native_op for u in result.unsupported)
        what.append(f"{t.unsupported_layers} layer(s) of op(s) with no cost rule ({ops})")
    if t.unknown_shape_layers:
        what.append(f"{t.unknown_shape_layers} layer(s) with shapes not known statically")
    print(
        f"infercast: incomplete: {'; '.join(what)}; the totals exclude them "
        f"(exit {EXIT_INCOMPLETE})",
        file=sys.stderr,
    )
    raise SystemExit(EXIT_INCOMPLETE)
