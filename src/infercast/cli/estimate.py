"""``infercast estimate``: the latency forecast, per layer, with what bounds each layer."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from infercast.cli.common import (
    Format,
    FormatOpt,
    InputShapeOpt,
    ModelArg,
    OutOpt,
    TargetOpt,
    emit,
    render,
)

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
) -> None:
    """Forecast the latency of MODEL on TARGET, per layer, with what bounds each layer.

    Seconds per inference; a layer's bound is compute, memory, overhead,
    transfer (accelerator<->CPU crossings) or fallback (on the CPU of an
    accelerator target). One-time costs (first-run compilation) are reported apart.
    """
    from infercast.estimate import estimate as forecast
    from infercast.frontends import parse_input_shapes
    from infercast.report import estimate as est_rep
    from infercast.targets import load_target

    fc = forecast(
        model, load_target(target), parse_input_shapes(input_shape or []), fuse=not no_fuse
    )
    if fmt is Format.json:
        emit(json.dumps(est_rep.to_dict(fc), indent=1), output)
    elif fmt is Format.csv:
        emit(est_rep.to_csv(fc), output)
    else:
        render(est_rep.render_table(fc), output)
