"""``infercast calibrate``: fit a target's efficiencies and overheads; write a target file."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from infercast.cli.common import CheckFormat, CheckFormatOpt, Output, TargetOpt, progress
from infercast.errors import InfercastError

if TYPE_CHECKING:
    from infercast.targets.schema import Target

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

LatenciesOpt = Annotated[
    Path | None,
    typer.Option(
        "--from-latencies",
        help="Fit whole-model latencies measured elsewhere: a CSV with columns model (a path "
        "relative to the file), ms and optionally threads.",
    ),
]
ParamOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--param",
        help="A parameter a whole-model fit may vary, by its dotted key in the target file "
        "(e.g. units.npu.efficiency.conv); repeat. Default: the target's "
        "calibration.parameters.",
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
    latencies: LatenciesOpt = None,
    params: ParamOpt = None,
    fmt: CheckFormatOpt = CheckFormat.table,
) -> None:
    """Fit TARGET's efficiencies and overheads to measurements; write a calibrated target file.

    Measure a generated set of micro-kernels on this machine (--runtime ort|litert),
    fit per-op profiles from a board (--from PROFILE --model MODEL; a VeriSilicon NPU
    driver log, CNN_PERF=1 VIV_VX_DEBUG_LEVEL=1 per-layer times or VIV_VX_PROFILE=1
    per-operation cycle counters, counts as the model's NPU time), or fit
    whole-model latencies timed on a board (--from-latencies FILE.csv). The file extends
    TARGET with plain fitted numbers; use it as --target FILE.
    """
    import infercast.api as api
    from infercast.report.calibration import render_summary

    if sum(bool(x) for x in (runtime, profiles, latencies)) != 1:
        raise InfercastError(
            "give either --runtime (measure here), --from PROFILE (fit a profile) or "
            "--from-latencies FILE.csv (fit whole-model times)",
            "e.g. infercast calibrate --target host --runtime ort -o host-ort.toml",
        )
    tgt = api.load_target(target)
    if latencies is not None or (profiles and _vx_logs(profiles)):
        logs = list(profiles or [])
        ins = [*(models or []), *logs, latencies, tgt.path, *tgt.chain]
        _whole_model(
            tgt, latencies, logs, list(models or []), params or [], Output(output, ins), fmt
        )
        return
    if params:
        raise InfercastError("--param applies to whole-model fits (--from-latencies)")
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


def _vx_logs(profiles: list[Path]) -> bool:
    """True when every --from file is a VeriSilicon NPU driver log (none: per-op profiles)."""
    from infercast.estimate.calibrate import looks_like_vx_perf_log

    flags = []
    for p in profiles:
        try:
            flags.append(looks_like_vx_perf_log(p.read_text(errors="replace")))
        except OSError as exc:
            raise InfercastError(f"cannot read profile {p}: {exc.strerror}") from exc
    if any(flags) and not all(flags):
        raise InfercastError("--from mixes NPU driver logs with per-op profiles: give one kind")
    return all(flags)


def _whole_model(
    tgt: Target,
    latencies: Path | None,
    logs: list[Path],
    models: list[Path],
    params: list[str],
    out: Output,
    fmt: CheckFormat,
) -> None:
    from infercast.estimate.calibrate import calibrate_latencies, read_latencies, vx_log_rows
    from infercast.report.calibration import latency_dict, render_latency

    if latencies is not None:
        rows = read_latencies(latencies)
        label = str(latencies)
    else:
        if len(models) != len(logs):
            raise InfercastError(
                f"each NPU driver log needs the model it ran: {len(logs)} log(s), "
                f"{len(models)} --model",
                "pass one --model per --from log, in the same order",
            )
        rows = vx_log_rows(list(zip(models, logs, strict=True)))
        label = " ".join(str(p) for p in logs)
    res = calibrate_latencies(tgt, rows, params, label=label)
    out.text(res.toml)
    written = str(out.path)
    if fmt is CheckFormat.json:
        Output(None).json({**latency_dict(res), "file": written})
    else:
        Output(None).rich(render_latency(res, written))
