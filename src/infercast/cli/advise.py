"""``infercast advise``: ranked, concrete changes for a model on a target, each with the
layers concerned and the gain its what-if forecasts."""

from __future__ import annotations

from infercast.cli.common import (
    ColumnsOpt,
    Format,
    FormatOpt,
    InputShapeOpt,
    ModelArg,
    OutOpt,
    SortOpt,
    TargetOpt,
    TopNOpt,
    load_on_target,
    table_options,
)


def advise(
    model: ModelArg,
    target: TargetOpt,
    input_shape: InputShapeOpt = None,
    fmt: FormatOpt = Format.table,
    output: OutOpt = None,
    columns: ColumnsOpt = None,
    sort: SortOpt = None,
    top: TopNOpt = None,
) -> None:
    """What to change in MODEL for TARGET, ranked: kernels the accelerator refuses, ops
    that fall back, quantisation the target pays for, channel counts just above its
    vector width, the largest input size or width that fits, weights that stream.

    Every gain (seconds per inference, bytes) comes from running the matching what-if
    through the same stages as the model. Exit status: 0; 2 on bad input.
    """
    from infercast.report import whatif as rep
    from infercast.whatif.advise import advise as run

    opts = table_options(columns, sort, top)
    graph, tgt, out = load_on_target(model, input_shape, target, output)
    result = run(graph, tgt)
    out.result(
        fmt,
        lambda: rep.advice_dict(result),
        lambda: rep.render_advice(result, opts),
        lambda: rep.advice_csv(result),
    )
