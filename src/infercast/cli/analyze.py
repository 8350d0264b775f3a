"""``infercast analyze``: per-layer compute, memory, and (with ``--target``) the forecast."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from infercast.cli.common import (
    ByOpt,
    ColumnsOpt,
    CpuThreadsOpt,
    Format,
    FormatOpt,
    InputShapeOpt,
    ModelArg,
    OutOpt,
    Output,
    SortOpt,
    TopNOpt,
    exit_if_incomplete,
    table_options,
)
from infercast.errors import InfercastError

if TYPE_CHECKING:
    from infercast.api import AnalysisResult, EstimateResult, MemoryPlan
    from infercast.report.table import TableOptions

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
    columns: ColumnsOpt = None,
    sort: SortOpt = None,
    top: TopNOpt = None,
    by: ByOpt = None,
    threads: CpuThreadsOpt = None,
) -> None:
    """Per-layer MACs, FLOPs, parameters, weight and activation bytes of MODEL.

    Exit status 4 when some layer's cost is unknown (the output says which).
    """
    import infercast.api as api
    from infercast.frontends import parse_input_shapes
    from infercast.report.analysis import incomplete_message

    if alignment < 1:
        raise InfercastError(
            f"--alignment must be a positive number of bytes, not {alignment}",
            "use --alignment 16 (TFLite Micro) or 1 for none",
        )
    opts = table_options(columns, sort, top)
    tgt = api.load_target(target) if target is not None and not memory_plan else None
    out = Output(output, [model, *(tgt.chain if tgt else ())])
    graph = api.load(model, parse_input_shapes(input_shape or []))
    memory = api.plan_memory(graph, alignment=alignment, in_place=in_place)
    if memory_plan:
        _render_plan(memory, fmt, out)
        return
    result = api.analyze(graph, memory=memory)
    forecast = None
    if tgt is not None:
        forecast = api.estimate(graph, tgt, analysis=result, memory=memory, threads=threads)
    elif threads is not None:
        raise InfercastError(
            "--threads sets the forecast's CPU threads: it needs --target",
            "e.g. infercast analyze MODEL -t imx8mp-cpu --threads 4",
        )
    _render(result, forecast, fmt, out, opts, by is not None)
    exit_if_incomplete(incomplete_message(result))


def _render_plan(memory: MemoryPlan, fmt: Format, out: Output) -> None:
    from infercast.report import memory as rep

    out.result(fmt, memory.to_dict, lambda: rep.render_plan(memory), lambda: rep.plan_csv(memory))


def _render(
    result: AnalysisResult,
    forecast: EstimateResult | None,
    fmt: Format,
    out: Output,
    opts: TableOptions,
    by_op: bool,
) -> None:
    from infercast.report import analysis as rep
    from infercast.report import estimate as est_rep
    from infercast.report.text import csv_text

    if fmt is Format.json:
        doc: dict[str, Any] = result.to_dict()
        if forecast is not None:
            doc["forecast"] = forecast.to_dict()
        out.json(doc)
    elif fmt is Format.csv:
        if forecast is None:
            out.text(rep.to_csv(result, result.memory_plan))
        else:
            rows = est_rep.with_forecast(result.to_records(), forecast)
            out.text(csv_text([*rep.CSV_COLUMNS, *est_rep.FORECAST_COLUMNS], rows))
    elif forecast is None:
        out.rich(rep.render_table(result, result.memory_plan, opts, by_op=by_op))
    else:
        from rich.console import Group

        tables = (
            rep.render_table(result, result.memory_plan, opts, by_op=by_op),
            est_rep.render_table(forecast, opts, by_op=by_op),
        )
        out.rich(Group(*tables))
