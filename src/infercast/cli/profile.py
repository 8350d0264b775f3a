"""``infercast profile import``: join a per-op profile measured elsewhere with the static cost."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from infercast.cli.bench import PeakGmacsOpt
from infercast.cli.common import (
    ByOpt,
    ColumnsOpt,
    Format,
    FormatOpt,
    InputShapeOpt,
    OutOpt,
    Output,
    SortOpt,
    main_labels,
    table_options,
)
from infercast.errors import InfercastError

app = typer.Typer(help="Per-op profiles measured elsewhere.", no_args_is_help=True)

ProfileArg = Annotated[
    Path,
    typer.Argument(
        help="ONNX Runtime profile JSON, TFLite benchmark_model output, or TVM debug table."
    ),
]
ProfileModelOpt = Annotated[Path, typer.Option("--model", "-m", help="The model it measured.")]
KindOpt = Annotated[
    str | None,
    typer.Option("--kind", help="ort | tflite | tvm-debug (default: from the content)."),
]
SkipRunsOpt = Annotated[
    int, typer.Option(help="ONNX Runtime: leading runs to drop (lazy initialisation).")
]
PeakTargetOpt = Annotated[
    str | None, typer.Option("--target", "-t", help="Report % of this target's peak.")
]
ThreadsOpt = Annotated[
    int | None,
    typer.Option(help="Threads the profile was taken with (scales a CPU target's peak)."),
]
TopOpt = Annotated[int, typer.Option(help="Hotspots listed (table).")]


@app.command("import")
def profile_import(
    file: ProfileArg,
    model: ProfileModelOpt,
    kind: KindOpt = None,
    skip_runs: SkipRunsOpt = 1,
    input_shape: InputShapeOpt = None,
    target: PeakTargetOpt = None,
    peak_gmacs: PeakGmacsOpt = None,
    threads: ThreadsOpt = None,
    top: TopOpt = 10,
    fmt: FormatOpt = Format.table,
    output: OutOpt = None,
    columns: ColumnsOpt = None,
    sort: SortOpt = None,
    by: ByOpt = None,
) -> None:
    """Join a per-op profile measured elsewhere with MODEL's static cost."""
    import infercast.api as api
    from infercast.bench.profiles import KINDS
    from infercast.frontends import parse_input_shapes
    from infercast.report import bench as rep

    if kind is not None and kind not in KINDS:
        raise InfercastError(f"--kind '{kind}' is not one of {', '.join(KINDS)}")
    tgt = api.load_target(target) if target is not None and peak_gmacs is None else None
    out = Output(output, [file, model, *(tgt.chain if tgt else ())])
    opts = table_options(columns, sort, None)
    graph = api.load(model, parse_input_shapes(input_shape or []))
    joined = api.profile_import(
        file,
        graph,
        kind=kind,
        skip_runs=skip_runs,
        target=tgt,
        peak_gmacs=peak_gmacs,
        threads=threads,
    )

    def table() -> object:
        from rich.console import Group

        title = f"{file.name} on {model.name}"
        labels = main_labels(graph)
        parts = rep.render_join(
            joined, title=title, top=top, opts=opts, by_op=by is not None, labels=labels
        )
        return Group(*parts)

    out.result(fmt, joined.to_dict, table, lambda: rep.joined_to_csv(joined))
