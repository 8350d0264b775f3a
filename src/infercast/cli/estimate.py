"""``infercast estimate``: the latency forecast, per layer, with what bounds each layer."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

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
    SortOpt,
    TargetOpt,
    TopNOpt,
    exit_if_incomplete,
    load_on_target,
    table_options,
)

CompiledOpt = Annotated[
    Path | None,
    typer.Option(
        "--edgetpu-compiled",
        help="The model as edgetpu_compiler compiled it (*_edgetpu.tflite): its parameter "
        "split (cached on chip, streamed every inference) replaces the target's stated cache.",
    ),
]
NoFuseOpt = Annotated[
    bool, typer.Option("--no-fuse", help="Cost every op as its own kernel (no conv+act fusion).")
]


def estimate(
    model: ModelArg,
    target: TargetOpt,
    input_shape: InputShapeOpt = None,
    fmt: FormatOpt = Format.table,
    output: OutOpt = None,
    no_fuse: NoFuseOpt = False,
    columns: ColumnsOpt = None,
    sort: SortOpt = None,
    top: TopNOpt = None,
    by: ByOpt = None,
    threads: CpuThreadsOpt = None,
    edgetpu_compiled: CompiledOpt = None,
) -> None:
    """Forecast the latency of MODEL on TARGET, per layer, with what bounds each layer.

    Seconds per inference; a layer's bound is compute, memory, overhead,
    transfer (accelerator<->CPU crossings) or fallback (on the CPU of an
    accelerator target). One-time costs (first-run compilation) are reported apart.
    The CPU thread count assumed is stated in every output (--threads; default 1).
    Exit status 4 when some layer's cost is unknown (the output says how many).
    """
    import infercast.api as api
    from infercast.report import estimate as rep
    from infercast.report.analysis import incomplete_message

    opts = table_options(columns, sort, top)
    graph, tgt, out = load_on_target(model, input_shape, target, output)
    fc = api.estimate(
        graph, tgt, fuse=not no_fuse, threads=threads, edgetpu_compiled=edgetpu_compiled
    )
    out.result(
        fmt,
        fc.to_dict,
        lambda: rep.render_table(fc, opts, by_op=by is not None),
        lambda: rep.to_csv(fc),
    )
    if not fc.complete:
        message = incomplete_message(fc.analysis) if fc.analysis is not None else None
        exit_if_incomplete(message or rep.incomplete(fc))
