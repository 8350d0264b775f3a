"""``infercast check``: where each op runs on a target and why; memory fit."""

from __future__ import annotations

import json

from infercast.cli.common import (
    CheckFormat,
    CheckFormatOpt,
    InputShapeOpt,
    ModelArg,
    OutOpt,
    TargetOpt,
    emit,
    render,
)


def check(
    model: ModelArg,
    target: TargetOpt,
    input_shape: InputShapeOpt = None,
    fmt: CheckFormatOpt = CheckFormat.table,
    output: OutOpt = None,
) -> None:
    """Where each op of MODEL runs on TARGET and why; segments, crossings, memory fit.

    Exit status: 0 when everything runs on the accelerator and fits, 3 when
    something falls back to the CPU or does not fit, 2 on bad input.
    """
    from infercast.frontends import parse_input_shapes
    from infercast.targets import load_target, place
    from infercast.targets.placement import render_table

    tgt = load_target(target)
    report = place(model, tgt, parse_input_shapes(input_shape or []))
    if fmt is CheckFormat.json:
        emit(json.dumps(report.to_dict(), indent=1), output)
    else:
        render(render_table(report), output)
    if report.exit_code:
        raise SystemExit(report.exit_code)
