"""``infercast calibrate``: fit a target's efficiencies and overheads; write a target file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from infercast.cli.common import CheckFormat, CheckFormatOpt, TargetOpt, emit, progress
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
    driver log, CNN_PERF=1 VIV_VX_DEBUG_LEVEL=1, counts as the model's NPU time), or fit
    whole-model latencies timed on a board (--from-latencies FILE.csv). The file extends
    TARGET with plain fitted numbers; use it as --target FILE.
    """
    from infercast.estimate.calibrate import calibrate_profiles, calibrate_runtime
    from infercast.targets import load_target

    if sum(x is not None and x != [] for x in (runtime, profiles, latencies)) != 1:
        raise InfercastError(
            "give either --runtime (measure here), --from PROFILE (fit a profile) or "
            "--from-latencies FILE.csv (fit whole-model times)",
            "e.g. infercast calibrate --target host --runtime ort -o host-ort.toml",
        )
    tgt = load_target(target)
    if latencies is not None or (profiles and _vx_logs(profiles)):
        _whole_model(tgt, latencies, profiles or [], models or [], params or [], output, fmt)
        return
    if params:
        raise InfercastError("--param applies to whole-model fits (--from-latencies)")
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


def _vx_logs(profiles: list[Path]) -> bool:
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
    output: Path,
    fmt: CheckFormat,
) -> None:
    from infercast.estimate.calibrate import (
        calibrate_latencies,
        loo_median,
        loo_worst,
        read_latencies,
        vx_log_rows,
    )

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
    emit(res.toml, output)
    if fmt is CheckFormat.json:
        emit(json.dumps({**res.summary(), "file": str(output)}, indent=1), None)
        return
    lines = [
        f"calibrated {tgt.name} on {len(rows)} whole-model time(s) -> {output}",
        "  fitted: " + ", ".join(f"{k} = {v:.4g}" for k, v in res.values.items()),
        f"  {'model':40s} {'measured':>10s} {'fit':>10s} {'residual':>9s} "
        f"{'leave-one-out':>13s} {'error':>7s}",
    ]
    for (name, f, m), (_, lf, _) in zip(res.fit, res.loo, strict=True):
        lines.append(
            f"  {name[:40]:40s} {m * 1e3:8.3f}ms {f * 1e3:8.3f}ms {f / m - 1:+9.1%} "
            f"{lf * 1e3:11.3f}ms {lf / m - 1:+7.1%}"
        )
    lines.append(
        f"  leave-one-out: median |error| {loo_median(res.loo):.0%}, "
        f"worst {loo_worst(res.loo):.2f}x"
    )
    emit("\n".join(lines), None)
