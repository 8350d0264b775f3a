"""``infercast bench``: time a model on real runtimes side by side; per-op profiles.

Exit status: 0 all runs succeeded; 3 at least one run failed, crashed or timed
out (the others completed and are reported); 2 bad input.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from infercast.cli.common import (
    EXIT_NOT_OK,
    ByOpt,
    ColumnsOpt,
    Format,
    FormatOpt,
    InputShapeOpt,
    ModelArg,
    OutOpt,
    Output,
    SortOpt,
    main_labels,
    progress,
    table_options,
)
from infercast.errors import InfercastError

if TYPE_CHECKING:
    pass

ListOpt = list[str] | None
RuntimeOpt = Annotated[
    ListOpt,
    typer.Option(
        "--runtime",
        "-r",
        help="Runtimes, comma-separated: ort, litert, tvm (default: ort for .onnx, "
        "litert for .tflite).",
    ),
]
ThreadsOpt = Annotated[
    ListOpt,
    typer.Option(
        "--threads",
        help="Thread counts to compare, e.g. 1,2,4 ('default': the runtime's own choice). "
        "Default 1.",
    ),
]
OrtOpt = Annotated[
    ListOpt,
    typer.Option(
        "--ort-opt",
        help="ONNX Runtime graph optimisation levels to compare: "
        "all, extended, basic, disable (disable: 1:1 per-op view).",
    ),
]
XnnpackOpt = Annotated[
    ListOpt, typer.Option("--xnnpack", help="LiteRT XNNPACK delegate: on, off (both: on,off).")
]
TuneOpt = Annotated[
    ListOpt,
    typer.Option(
        "--tvm-tune-trials",
        help="TVM MetaSchedule trials (0: no tuning); the time budget is --timeout.",
    ),
]
ProfileOpt = Annotated[
    bool, typer.Option("--profile", help="Also measure per-op times and join them with the MACs.")
]
ProfileRunsOpt = Annotated[int, typer.Option(help="Inferences per-op times are taken over.")]
SaveProfileOpt = Annotated[
    Path | None,
    typer.Option("--save-profile", help="Keep the runtimes' raw profile files in DIR."),
]
WarmupOpt = Annotated[int, typer.Option(help="Warm-up inferences (at least).")]
MinRunsOpt = Annotated[int, typer.Option(help="Timed inferences (at least).")]
MinTimeOpt = Annotated[float, typer.Option(help="Seconds of timed inferences (at least).")]
MaxTimeOpt = Annotated[float, typer.Option(help="Stop timing after this many seconds.")]
TimeoutOpt = Annotated[
    float,
    typer.Option(
        help="Seconds a run may take in all (load, compile, tune, measure); past it the "
        "run is killed and reported."
    ),
]
InputsOpt = Annotated[
    ListOpt,
    typer.Option("--input", help="Feed NAME from FILE.npy (repeat); other inputs are generated."),
]
SeedOpt = Annotated[int, typer.Option(help="Seed of the generated inputs.")]
PeakTargetOpt = Annotated[
    str | None,
    typer.Option("--target", "-t", help="Report % of this target's peak (built-in name or .toml)."),
]
PeakGmacsOpt = Annotated[
    float | None,
    typer.Option("--peak-gmacs", help="Report % of this peak, in GMAC/s (overrides --target)."),
]
TopOpt = Annotated[int, typer.Option(help="Hotspots listed per profile (table).")]
RemoteOpt = Annotated[
    str | None,
    typer.Option(
        "--remote",
        help="Run on a board over SSH: a board of ~/.config/infercast/boards.toml or "
        "[user@]host[:port]. Runtimes there: litert, tflite_runtime, ort.",
    ),
]
RemotePythonOpt = Annotated[
    str | None, typer.Option("--remote-python", help="The board's Python (default: python3).")
]
DelegateOpt = Annotated[
    str | None,
    typer.Option(
        "--delegate",
        help="With --remote: an external delegate library on the board, e.g. "
        "/usr/lib/libvx_delegate.so or libedgetpu.so.1.",
    ),
]
DelegateOptionOpt = Annotated[
    ListOpt, typer.Option("--delegate-option", help="KEY=VALUE for the delegate (repeat).")
]
ConnectTimeoutOpt = Annotated[
    float, typer.Option(help="With --remote: seconds to wait for the SSH connection.")
]


def split(values: list[str] | None) -> list[str]:
    """``["ort,litert", "tvm"]`` -> ``["ort", "litert", "tvm"]``."""
    out: list[str] = []
    for v in values or []:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


def thread_counts(values: list[str] | None) -> list[int | None]:
    out: list[int | None] = []
    for v in split(values) or ["1"]:
        if v.lower() in ("default", "auto"):
            out.append(None)
            continue
        try:
            n = int(v)
        except ValueError:
            raise InfercastError(
                f"--threads '{v}' is not a whole number", "example: --threads 1,2,4"
            ) from None
        if n < 1:
            raise InfercastError(f"--threads {n}: must be at least 1")
        out.append(n)
    return out


def runtimes_and_sweeps(
    runtime: list[str] | None,
    ort_opt: list[str] | None,
    xnnpack: list[str] | None,
    tvm_tune_trials: list[str] | None,
) -> tuple[list[str] | None, dict[str, list[str]]]:
    """The runtimes to run (None: the model format's default) and the options swept."""
    given = {
        "ort.opt_level": ort_opt,
        "litert.xnnpack": xnnpack,
        "tvm.tune_trials": tvm_tune_trials,
    }
    sweeps = {k: split(v) for k, v in given.items() if v}
    names = split(runtime) or None
    if names is None and sweeps:
        names = sorted({k.split(".", 1)[0] for k in sweeps})
    return names, sweeps


def bench(
    model: ModelArg,
    runtime: RuntimeOpt = None,
    threads: ThreadsOpt = None,
    ort_opt: OrtOpt = None,
    xnnpack: XnnpackOpt = None,
    tvm_tune_trials: TuneOpt = None,
    profile: ProfileOpt = False,
    profile_runs: ProfileRunsOpt = 20,
    save_profile: SaveProfileOpt = None,
    warmup: WarmupOpt = 3,
    min_runs: MinRunsOpt = 10,
    min_time: MinTimeOpt = 1.0,
    max_time: MaxTimeOpt = 60.0,
    timeout: TimeoutOpt = 600.0,
    inputs: InputsOpt = None,
    input_shape: InputShapeOpt = None,
    seed: SeedOpt = 0,
    target: PeakTargetOpt = None,
    peak_gmacs: PeakGmacsOpt = None,
    top: TopOpt = 10,
    remote: RemoteOpt = None,
    remote_python: RemotePythonOpt = None,
    delegate: DelegateOpt = None,
    delegate_option: DelegateOptionOpt = None,
    connect_timeout: ConnectTimeoutOpt = 15.0,
    fmt: FormatOpt = Format.table,
    output: OutOpt = None,
    columns: ColumnsOpt = None,
    sort: SortOpt = None,
    by: ByOpt = None,
) -> None:
    """Time MODEL on real runtimes side by side; with --profile, where the time goes.

    Each run (runtime x threads x options) is a separate process with a timeout:
    a runtime that fails, crashes or hangs is reported and the others still run.
    With --remote, the runs happen on a board over SSH (docs/bench.md).
    Exit status 3 when any run failed.
    """
    import infercast.api as api
    from infercast.bench.harness import TimingConfig
    from infercast.bench.inputs import parse_input_files
    from infercast.cli.progress import BenchProgress
    from infercast.frontends import parse_input_shapes
    from infercast.report import bench as rep

    tgt = api.load_target(target) if target is not None and peak_gmacs is None else None
    files = parse_input_files(inputs or [])
    out = Output(output, [model, *(tgt.chain if tgt else ()), *files.values()])
    names, sweeps = runtimes_and_sweeps(runtime, ort_opt, xnnpack, tvm_tune_trials)
    timing = TimingConfig(
        warmup_runs=warmup, min_runs=max(min_runs, 1), min_time_s=min_time, max_time_s=max_time
    )
    bar = BenchProgress(0)
    try:
        # What a run here and a run on a board take alike.
        run_options: dict[str, Any] = {
            "input_shapes": parse_input_shapes(input_shape or []),
            "target": tgt,
            "peak_gmacs": peak_gmacs,
            "timeout_s": timeout,
            "on_start": bar.start,
            "on_progress": bar.update,
            "input_files": files,
            "seed": seed,
            "timing": timing,
            "profile": profile,
            "profile_runs": profile_runs,
            "raw_profile_dir": str(save_profile) if save_profile else None,
            "keep_samples": False,
        }
        if remote is None:
            if delegate or delegate_option or remote_python:
                raise InfercastError(
                    "--delegate, --delegate-option and --remote-python need --remote"
                )
            result = api.bench(model, names, thread_counts(threads), sweeps, **run_options)
        else:
            result = api.bench_remote(
                model,
                remote,
                names,
                thread_counts(threads) if threads else None,
                sweeps,
                connect_timeout_s=connect_timeout,
                remote_python=remote_python,
                delegate=delegate,
                delegate_options=delegate_option or [],
                **run_options,
            )
    finally:
        bar.close()

    def table() -> object:
        labels = None
        if result.joins:
            labels = main_labels(api.load(model, parse_input_shapes(input_shape or [])))
        opts = table_options(columns, sort, None)
        return rep.render_group(result, top=top, opts=opts, by_op=by is not None, labels=labels)

    out.result(fmt, result.to_dict, table, lambda: rep.to_csv(result))
    if result.failed:
        if remote is not None:
            from infercast.bench.remote_cli import failure_lines

            for line in failure_lines(result):
                progress(line)  # escaped: a board's stderr is not ours to send to the terminal
        raise SystemExit(EXIT_NOT_OK)
