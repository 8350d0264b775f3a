"""``infercast validate``: forecast vs measurement on this machine, with error metrics."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from infercast.cli.common import Format, FormatOpt, OutOpt, Output, TargetOpt

ModelsArg = Annotated[list[Path], typer.Argument(help=".onnx (ONNX Runtime) / .tflite (LiteRT).")]
ThreadsOpt = Annotated[
    int | None,
    typer.Option("--threads", help="Runtime threads (default: the calibration's, else 1)."),
]
BudgetOpt = Annotated[
    float, typer.Option("--budget", help="Seconds to spend measuring, all models.")
]


def validate(
    models: ModelsArg,
    target: TargetOpt,
    threads: ThreadsOpt = None,
    budget: BudgetOpt = 60.0,
    fmt: FormatOpt = Format.table,
    output: OutOpt = None,
) -> None:
    """Forecast and measure each MODEL on this machine; per-model error, share within
    ±10%, RMSPE and Spearman ρ."""
    import infercast.api as api
    from infercast.report import validation as rep

    tgt = api.load_target(target)
    out = Output(output, [*models, tgt.path, *tgt.chain])
    v = api.validate(models, tgt, threads=threads, budget_s=budget)
    if fmt is Format.json:
        out.json(v.to_dict())
    elif fmt is Format.csv:
        out.text(rep.to_csv(v))
    else:
        out.rich(rep.render_table(v))
