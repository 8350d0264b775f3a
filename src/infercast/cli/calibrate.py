"""``infercast calibrate``: fit a target's efficiencies and overheads; write a target file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from infercast.cli.common import CheckFormat, CheckFormatOpt, TargetOpt, emit, progress
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
        "JSON or benchmark_model --enable_op_profiling output); repeat.",
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
    from infercast.estimate.calibrate import calibrate_profiles, calibrate_runtime
    from infercast.targets import load_target

    if (runtime is None) == (not profiles):
        raise InfercastError(
            "give either --runtime (measure here) or --from PROFILE (fit a profile)",
            "e.g. infercast calibrate --target host --runtime ort -o host-ort.toml",
        )
    tgt = load_target(target)
    if profiles:
        ms = list(models or [])
        if not ms or (len(ms) != 1 and len(ms) != len(profiles)):
            raise InfercastError(
                f"--from needs the model each profile was measured on: {len(profiles)} "
                f"profile(s), {len(ms)} --model",
                "pass one --model for all profiles, or one per profile in the same order",
            )
        pairs = [(ms[0] if len(ms) == 1 else ms[i], p) for i, p in enumerate(profiles)]
        result = calibrate_profiles(tgt, pairs)
    else:
        assert runtime is not None
        result = calibrate_runtime(
            tgt, runtime, threads=threads, budget_s=budget, progress=progress
        )
    emit(result.toml, output)
    if fmt is CheckFormat.json:
        emit(json.dumps({**result.summary(), "file": str(output)}, indent=1), None)
        return
    f = result.fit
    effs = ", ".join(f"{k} {v:.3g}" for k, v in sorted(f.efficiency.items()))
    bws = ", ".join(f"{k} {v / 1e9:.3g} GB/s" for k, v in f.bandwidth.items())
    emit(
        f"calibrated {tgt.name} ({result.runtime}"
        + (f", {result.threads} thread(s)" if result.threads else "")
        + f") on {result.samples} samples in {result.elapsed_s:.0f} s -> {output}\n"
        f"  unit {f.unit}: efficiency {effs}\n"
        f"  op_overhead_s {f.op_overhead_s:.3g}, channel_multiple {f.channel_multiple}, "
        f"invoke_overhead_s {f.invoke_overhead_s:.3g}"
        + (f", bandwidth {bws}" if bws else "")
        + f"\n  fit RMSPE on its own samples: {f.rmspe:.1%}",
        None,
    )
