"""``infercast check``: where each op runs on a target and why; memory fit."""

from __future__ import annotations

from infercast.cli.common import (
    CheckFormat,
    CheckFormatOpt,
    ColumnsOpt,
    InputShapeOpt,
    ModelArg,
    OutOpt,
    Output,
    SortOpt,
    TargetOpt,
    TopNOpt,
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
    from infercast.frontends import parse_input_shapes
    from infercast.report.placement import render_table

    opts = table_options(columns, sort, top)
    tgt = api.load_target(target)
    out = Output(output, [model, tgt.path, *tgt.chain])
    result = api.check(api.load(model, parse_input_shapes(input_shape or [])), tgt)
    if fmt is CheckFormat.json:
        out.json(result.to_dict())
    else:
        out.rich(render_table(result, opts))
    if result.exit_code:
        raise SystemExit(result.exit_code)
