"""``infercast calibrate``: fit a target's efficiencies and overheads; write a target file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from infercast.cli.common import CheckFormat, CheckFormatOpt, Output, TargetOpt, progress
from infercast.errors import InfercastError

CalOutOpt = Annotated[
    Path, typer.Option("--output", "-o", help="Write the calibrated target file here.")
]
RuntimeOpt = Annotated[
    str | None,
    typer.Option("--runtime", help="Measure micro-kernels on this machine with ort or litert."),
]
ThreadsOpt = Annotated[int, typer.Option("--threads", help="Runtime threads.")]
BudgetOpt = Annotated[
    float,
    typer.Option(
        "--budget",
        help="Seconds to spend measuring (default 240; under 90 measures a reduced kernel set).",
    ),
]
FromOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--from",
        help="Fit from per-op profiles measured elsewhere (ONNX Runtime "
        "JSON, benchmark_model --enable_op_profiling output, or an infercast bench "
        "--profile -f json result, e.g. from --remote: its model is known); repeat.",
    ),
]
ModelsOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--model",
        help="The model each --from profile was measured on (one for "
        "all, or one per profile, in order).",
    ),
]


def calibrate(
    target: TargetOpt,
    output: CalOutOpt,
    runtime: RuntimeOpt = None,
    threads: ThreadsOpt = 1,
    budget: BudgetOpt = 240.0,
    profiles: FromOpt = None,
    models: ModelsOpt = None,
    fmt: CheckFormatOpt = CheckFormat.table,
) -> None:
    """Fit TARGET's efficiencies and overheads to measurements; write a calibrated target file.

    Either measure a generated set of micro-kernels on this machine
    (--runtime ort|litert), or fit per-op profiles from a board (--from PROFILE
    --model MODEL). The file extends TARGET with plain fitted numbers; use it as
    --target FILE.
    """
    import infercast.api as api
    from infercast.report.calibration import render_summary

    tgt = api.load_target(target)
    ms = list(models or [])
    if profiles and not ms:  # bench JSON results (e.g. from --remote) name their model
        from infercast.bench.profiles.result import result_models

        ms = [Path(m) for m in result_models(profiles, tgt.name, tgt.raw.get("extends"))]
    if profiles and (not ms or (len(ms) != 1 and len(ms) != len(profiles))):
        raise InfercastError(
            f"--from needs the model each profile was measured on: {len(profiles)} "
            f"profile(s), {len(ms)} --model",
            "pass one --model for all profiles, or one per profile in the same order",
        )
    pairs = [(ms[0] if len(ms) == 1 else ms[i], p) for i, p in enumerate(profiles or [])]
    out = Output(output, [*ms, *(profiles or []), tgt.path, *tgt.chain])
    result = api.calibrate(
        tgt, runtime=runtime, profiles=pairs, threads=threads, budget_s=budget, progress=progress
    )
    out.text(result.toml)
    stdout = Output(None)
    if fmt is CheckFormat.json:
        stdout.json({**result.to_dict(), "file": str(output)})
    else:
        stdout.rich(render_summary(result, str(output)))
