"""``infercast bench`` and ``infercast profile import``: registered on the main app by
:func:`register` (one line in ``infercast/cli.py``), rendered with its helpers.

Exit codes of ``bench``: 0 all runs succeeded; 3 at least one run failed, crashed
or timed out (the others completed and are reported); 2 bad input.
"""

# No "from __future__ import annotations": typer reads these annotations at definition
# time, and some name helpers imported inside register().
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from infercast.errors import InfercastError
from infercast.ir.graph import Shape

EXIT_RUN_FAILED = 3


def _split(values: list[str] | None) -> list[str]:
    out: list[str] = []
    for v in values or []:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


def _threads(values: list[str] | None) -> list[int | None]:
    out: list[int | None] = []
    for v in _split(values) or ["1"]:
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


def peak_for_cli(
    target: str | None, peak_gmacs: float | None, model: str, input_shapes: Mapping[str, Shape]
) -> Any:
    """A function spec -> peak MAC/s, from ``--peak-gmacs`` or ``--target`` (None: no peak)."""
    if peak_gmacs is not None:
        if peak_gmacs <= 0:
            raise InfercastError("--peak-gmacs must be positive")
        return lambda spec: peak_gmacs * 1e9
    if target is None:
        return None
    from infercast.analysis.cost import analyze
    from infercast.bench.join import model_compute_dtype, target_peak_macs_per_s

    dtype = model_compute_dtype(analyze(model, input_shapes or None))
    target_peak_macs_per_s(target, dtype)  # validate now: a bad target is bad input
    return lambda spec: target_peak_macs_per_s(target, dtype, spec.threads)


def register(app: typer.Typer) -> None:
    """Add ``bench`` and the ``profile`` group to ``app``."""
    from infercast.cli import Format, FormatOpt, InputShapeOpt, OutOpt

    @app.command()
    def bench(
        model: Annotated[Path, typer.Argument(help="A .tflite or .onnx model file.")],
        runtime: Annotated[
            list[str] | None,
            typer.Option(
                "--runtime",
                "-r",
                help="Runtimes, comma-separated: ort, litert, tvm (default: ort for .onnx, "
                "litert for .tflite).",
            ),
        ] = None,
        threads: Annotated[
            list[str] | None,
            typer.Option(
                "--threads",
                help="Thread counts to compare, e.g. 1,2,4 ('default': the "
                "runtime's own choice). Default 1.",
            ),
        ] = None,
        ort_opt: Annotated[
            list[str] | None,
            typer.Option(
                "--ort-opt",
                help="ONNX Runtime graph optimisation levels to compare: "
                "all, extended, basic, disable (disable: 1:1 per-op view).",
            ),
        ] = None,
        xnnpack: Annotated[
            list[str] | None,
            typer.Option("--xnnpack", help="LiteRT XNNPACK delegate: on, off (both: on,off)."),
        ] = None,
        tvm_tune_trials: Annotated[
            list[str] | None,
            typer.Option(
                "--tvm-tune-trials",
                help="TVM MetaSchedule trials (0: no tuning); the time budget is --timeout.",
            ),
        ] = None,
        profile: Annotated[
            bool,
            typer.Option(
                "--profile", help="Also measure per-op times and join them with the MACs."
            ),
        ] = False,
        profile_runs: Annotated[
            int, typer.Option(help="Inferences per-op times are taken over.")
        ] = 20,
        save_profile: Annotated[
            Path | None,
            typer.Option("--save-profile", help="Keep the runtimes' raw profile files in DIR."),
        ] = None,
        warmup: Annotated[int, typer.Option(help="Warm-up inferences (at least).")] = 3,
        min_runs: Annotated[int, typer.Option(help="Timed inferences (at least).")] = 10,
        min_time: Annotated[
            float, typer.Option(help="Seconds of timed inferences (at least).")
        ] = 1.0,
        max_time: Annotated[
            float, typer.Option(help="Stop timing after this many seconds.")
        ] = 60.0,
        timeout: Annotated[
            float,
            typer.Option(
                help="Seconds a run may take in all (load, compile, tune, measure); past it the "
                "run is killed and reported."
            ),
        ] = 600.0,
        inputs: Annotated[
            list[str] | None,
            typer.Option(
                "--input", help="Feed NAME from FILE.npy (repeat); other inputs are generated."
            ),
        ] = None,
        input_shape: InputShapeOpt = None,
        seed: Annotated[int, typer.Option(help="Seed of the generated inputs.")] = 0,
        target: Annotated[
            str | None,
            typer.Option(
                "--target", "-t", help="Report % of this target's peak (built-in name or .toml)."
            ),
        ] = None,
        peak_gmacs: Annotated[
            float | None,
            typer.Option(
                "--peak-gmacs", help="Report % of this peak, in GMAC/s (overrides --target)."
            ),
        ] = None,
        top: Annotated[int, typer.Option(help="Hotspots listed per profile (table).")] = 10,
        remote: Annotated[
            str | None,
            typer.Option(
                "--remote",
                help="Run on a board over SSH: a board of ~/.config/infercast/boards.toml or "
                "[user@]host[:port]. Runtimes there: litert, tflite_runtime, ort.",
            ),
        ] = None,
        remote_python: Annotated[
            str | None,
            typer.Option("--remote-python", help="The board's Python (default: python3)."),
        ] = None,
        delegate: Annotated[
            str | None,
            typer.Option(
                "--delegate",
                help="With --remote: an external delegate library on the board, e.g. "
                "/usr/lib/libvx_delegate.so or libedgetpu.so.1.",
            ),
        ] = None,
        delegate_option: Annotated[
            list[str] | None,
            typer.Option("--delegate-option", help="KEY=VALUE for the delegate (repeat)."),
        ] = None,
        connect_timeout: Annotated[
            float, typer.Option(help="With --remote: seconds to wait for the SSH connection.")
        ] = 15.0,
        fmt: FormatOpt = Format.table,
        output: OutOpt = None,
    ) -> None:
        """Time MODEL on real runtimes side by side; with --profile, where the time goes.

        Each run (runtime x threads x options) is a separate process with a timeout:
        a runtime that fails, crashes or hangs is reported and the others still run.
        Exit status 3 when any run failed.
        """
        from infercast import cli as main_cli
        from infercast.bench import bench as run_bench
        from infercast.bench import plan_runs
        from infercast.bench import report as rep
        from infercast.bench.harness import TimingConfig
        from infercast.bench.inputs import parse_input_files
        from infercast.bench.progress import BenchProgress
        from infercast.frontends import parse_input_shapes

        if not model.is_file():
            raise InfercastError(f"{model}: no such file")
        shapes = parse_input_shapes(input_shape or [])
        sweeps: dict[str, list[str]] = {}
        if ort_opt:
            sweeps["ort.opt_level"] = _split(ort_opt)
        if xnnpack:
            sweeps["litert.xnnpack"] = _split(xnnpack)
        if tvm_tune_trials:
            sweeps["tvm.tune_trials"] = _split(tvm_tune_trials)
        names = _split(runtime) or None
        if names is None and sweeps:
            names = sorted({k.split(".", 1)[0] for k in sweeps})
        timing = TimingConfig(
            warmup_runs=warmup, min_runs=max(min_runs, 1), min_time_s=min_time, max_time_s=max_time
        )
        common = dict(
            input_shapes=shapes,
            input_files=parse_input_files(inputs or []),
            seed=seed,
            timing=timing,
            profile=profile,
            profile_runs=profile_runs,
            raw_profile_dir=str(save_profile) if save_profile else None,
            keep_samples=False,
        )
        if remote is None:
            if delegate or delegate_option or remote_python:
                raise InfercastError(
                    "--delegate, --delegate-option and --remote-python need --remote"
                )
            specs = plan_runs(model, names, _threads(threads), sweeps, **common)
            peak = peak_for_cli(target, peak_gmacs, str(model), shapes)
        else:
            from infercast.bench.remote_cli import plan

            board, specs, target = plan(
                model,
                remote,
                remote_python=remote_python,
                runtimes=names,
                threads=_threads(threads) if threads else None,
                sweeps=sweeps,
                delegate=delegate,
                delegate_options=delegate_option or [],
                target=target,
                common=common,
            )
            peak = peak_for_cli(target, peak_gmacs, str(model), shapes)
        bar = BenchProgress(len(specs))
        try:
            if remote is None:
                result = run_bench(specs, timeout_s=timeout, peak_for=peak, on_progress=bar.update)
            else:
                from infercast.bench.remote import bench_remote

                result = bench_remote(
                    specs,
                    board,
                    timeout_s=timeout,
                    connect_timeout_s=connect_timeout,
                    peak_for=peak,
                    on_progress=bar.update,
                )
        finally:
            bar.close()
        if fmt is Format.json:
            main_cli._emit(json.dumps(rep.to_dict(result), indent=1), output)
        elif fmt is Format.csv:
            main_cli._emit(rep.to_csv(result), output)
        else:
            from rich.console import Group

            main_cli._render_rich(Group(*rep.render_tables(result, top=top)), output)
        if result.failed:
            if remote is not None:
                from infercast.bench.remote_cli import failure_lines

                for line in failure_lines(result):
                    print(f"infercast: {line}", file=sys.stderr)
            raise SystemExit(EXIT_RUN_FAILED)

    profile_app = typer.Typer(help="Per-op profiles measured elsewhere.", no_args_is_help=True)
    app.add_typer(profile_app, name="profile")

    @profile_app.command("import")
    def profile_import(
        file: Annotated[
            Path,
            typer.Argument(
                help="ONNX Runtime profile JSON, TFLite benchmark_model output, or TVM debug table."
            ),
        ],
        model: Annotated[Path, typer.Option("--model", "-m", help="The model it measured.")],
        kind: Annotated[
            str | None,
            typer.Option("--kind", help="ort | tflite | tvm-debug (default: from the content)."),
        ] = None,
        skip_runs: Annotated[
            int, typer.Option(help="ONNX Runtime: leading runs to drop (lazy initialisation).")
        ] = 1,
        input_shape: InputShapeOpt = None,
        target: Annotated[
            str | None, typer.Option("--target", "-t", help="Report % of this target's peak.")
        ] = None,
        peak_gmacs: Annotated[
            float | None, typer.Option("--peak-gmacs", help="Report % of this peak, in GMAC/s.")
        ] = None,
        threads: Annotated[
            int | None,
            typer.Option(help="Threads the profile was taken with (scales a CPU target's peak)."),
        ] = None,
        top: Annotated[int, typer.Option(help="Hotspots listed (table).")] = 10,
        fmt: FormatOpt = Format.table,
        output: OutOpt = None,
    ) -> None:
        """Join a per-op profile measured elsewhere with MODEL's static cost."""
        from infercast import cli as main_cli
        from infercast.analysis.cost import analyze
        from infercast.bench import report as rep
        from infercast.bench.harness import RunSpec
        from infercast.bench.join import join
        from infercast.bench.profiles import KINDS, read_profile
        from infercast.frontends import parse_input_shapes

        if kind is not None and kind not in KINDS:
            raise InfercastError(f"--kind '{kind}' is not one of {', '.join(KINDS)}")
        shapes = parse_input_shapes(input_shape or [])
        prof = read_profile(file, kind, skip_runs=skip_runs)
        analysis = analyze(model, shapes or None)
        peak_fn = peak_for_cli(target, peak_gmacs, str(model), shapes)
        peak = peak_fn(RunSpec(str(model), "imported", threads)) if peak_fn else None
        joined = join(analysis, prof, peak_macs_per_s=peak)
        if fmt is Format.json:
            main_cli._emit(
                json.dumps(rep.joined_to_dict(joined, str(model), str(file)), indent=1), output
            )
        elif fmt is Format.csv:
            main_cli._emit(rep.joined_to_csv(joined), output)
        else:
            from rich.console import Group

            main_cli._render_rich(
                Group(*rep.render_join(joined, title=f"{file.name} on {model.name}", top=top)),
                output,
            )
