"""``infercast check``: where each op runs on a target and why; memory fit."""

from __future__ import annotations

from infercast.cli.common import (
    EXIT_INCOMPLETE,
    CheckFormat,
    CheckFormatOpt,
    ColumnsOpt,
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


def check(
    model: ModelArg,
    target: TargetOpt,
    input_shape: InputShapeOpt = None,
    fmt: CheckFormatOpt = CheckFormat.table,
    output: OutOpt = None,
    columns: ColumnsOpt = None,
    sort: SortOpt = None,
    top: TopNOpt = None,
) -> None:
    """Where each op of MODEL runs on TARGET and why; segments, crossings, memory fit.

    Exit status: 0 when everything runs on the accelerator and fits, 3 when
    something falls back to the CPU or does not fit, 4 when nothing falls back but
    some tensor sizes are not known statically (whether it fits is unknown), 2 on
    bad input. With --top N alone the table lists the layers on the CPU first, then
    the partially mapped ones.
    """
    import infercast.api as api
    from infercast.report.placement import incomplete_message, render_table

    opts = table_options(columns, sort, top)
    graph, tgt, out = load_on_target(model, input_shape, target, output)
    result = api.check(graph, tgt)
    out.result(fmt, result.to_dict, lambda: render_table(result, opts))
    if result.exit_code == EXIT_INCOMPLETE:
        exit_if_incomplete(incomplete_message(result))
    if result.exit_code:
        raise SystemExit(result.exit_code)
