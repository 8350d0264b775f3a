"""``infercast validate``: forecast vs measurement on this machine, with error metrics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from infercast.cli.common import Format, FormatOpt, OutOpt, TargetOpt, emit, render
from infercast.errors import InfercastError

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
    from infercast.estimate.validate import validate as run_validation
    from infercast.report import estimate as est_rep
    from infercast.targets import load_target

    tgt = load_target(target)
    if threads is not None and threads < 1:
        raise InfercastError(f"--threads must be at least 1, not {threads}")
    v = run_validation(tgt, models, threads=threads, budget_s=budget, progress=None)
    if fmt is Format.json:
        emit(json.dumps(v.to_dict(), indent=1), output)
    elif fmt is Format.csv:
        emit(est_rep.validation_csv(v), output)
    else:
        render(est_rep.render_validation(v), output)
