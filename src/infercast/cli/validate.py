"""``infercast validate``: forecast vs measurement, on this machine or against published figures."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from infercast.cli.common import Format, FormatOpt, OutOpt, Output
from infercast.errors import InfercastError

ModelsArg = Annotated[
    list[Path] | None,
    typer.Argument(help=".onnx (ONNX Runtime) / .tflite (LiteRT); not with --published."),
]
ValidateTargetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--target",
        "-t",
        help="A built-in target name or a .toml file (with --published: only its rows; "
        "repeat -t for several targets).",
    ),
]
ThreadsOpt = Annotated[
    int | None,
    typer.Option(
        "--threads",
        help="Runtime threads (default: the calibration's, else 1); with --published, only "
        "the rows measured with this many threads.",
    ),
]
BudgetOpt = Annotated[
    float, typer.Option("--budget", help="Seconds to spend measuring, all models.")
]
PublishedOpt = Annotated[
    bool,
    typer.Option(
        "--published",
        help="Check the forecasts against the published device measurements shipped with "
        "infercast (per row, per device, leave-one-out for rows a target was fitted on).",
    ),
]
BuildOpt = Annotated[
    bool,
    typer.Option(
        "--build", help="With --published: build missing models first (needs TensorFlow)."
    ),
]


def validate(
    models: ModelsArg = None,
    target: ValidateTargetOpt = None,
    threads: ThreadsOpt = None,
    budget: BudgetOpt = 60.0,
    published: PublishedOpt = False,
    build: BuildOpt = False,
    fmt: FormatOpt = Format.table,
    output: OutOpt = None,
) -> None:
    """Forecast and measure each MODEL on this machine (per-model error, share within ±10%,
    RMSPE, Spearman ρ), or, with --published, forecast every published device measurement
    of the targets and compare."""
    import infercast.api as api
    from infercast.report import validation as rep

    if threads is not None and threads < 1:
        raise InfercastError(f"--threads must be at least 1, not {threads}")
    if published:
        if models:
            raise InfercastError("--published checks the shipped measurements: give no MODEL")
        _published(target, threads, build, fmt, output)
        return
    if not models or not target:
        raise InfercastError(
            "give MODEL... and --target (measure here), or --published",
            "e.g. infercast validate --published --target imx8mp-npu-vx",
        )
    if len(target) > 1:
        raise InfercastError(
            f"measuring here takes one --target, not {len(target)}",
            "several targets are for --published; run validate once per target",
        )
    tgt = api.load_target(target[0])
    out = Output(output, [*models, tgt.path, *tgt.chain])
    v = api.validate(models, tgt, threads=threads, budget_s=budget)
    out.result(fmt, v.to_dict, lambda: rep.render_table(v), lambda: rep.to_csv(v))


def _published(
    targets: list[str] | None,
    threads: int | None,
    build: bool,
    fmt: Format,
    output: Path | None,
) -> None:
    from infercast.estimate.published.check import check_published
    from infercast.estimate.published.data import load_rows
    from infercast.report import published as rep
    from infercast.targets import load_target

    rows = load_rows()
    names: list[str] | None = None
    inputs: list[str] = []
    for target in targets or []:
        tgt = load_target(target)
        names = [*(names or []), tgt.name]
        inputs += [tgt.path, *tgt.chain]
        if not any(r.target == tgt.name for r in rows):
            known = ", ".join(sorted({r.target for r in rows}))
            raise InfercastError(
                f"no published measurements for target '{target}'", f"targets with rows: {known}"
            )
    out = Output(output, inputs)
    if threads is not None:
        rows = [r for r in rows if r.threads == threads]
    check = check_published(names, build=build, rows=rows)
    out.result(fmt, check.to_dict, lambda: rep.render_table(check), lambda: rep.to_csv(check))
