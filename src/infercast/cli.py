"""The ``infercast`` command. Thin: parses options, calls the public API, renders.

Exit codes: 0 success; 2 bad input (unreadable model, bad option); 1 an
internal error (a bug: reported on one line, never as a traceback).
"""

from __future__ import annotations

import json
import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from infercast.errors import InfercastError

if TYPE_CHECKING:
    from infercast.analysis.cost import Analysis
    from infercast.estimate.forecast import Forecast
    from infercast.ir.graph import Graph

app = typer.Typer(
    name="infercast",
    help="How a .tflite / .onnx model will fit and run on an edge device.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


class Format(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"


InputShapeOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--input-shape",
        help="Fix an input's shape, NAME=1x3x224x224 (repeat for several inputs).",
    ),
]
FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]
OutOpt = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write to FILE instead of stdout.")
]


@app.callback()
def _root() -> None:
    """How a .tflite / .onnx model will fit and run on an edge device."""


def _emit(text: str, output: Path | None) -> None:
    if output is None:
        sys.stdout.write(text)
        if not text.endswith("\n"):
            sys.stdout.write("\n")
        return
    try:
        output.write_text(text if text.endswith("\n") else text + "\n")
    except OSError as exc:
        raise InfercastError(f"cannot write {output}: {exc.strerror}") from exc


def _render_rich(renderable: object, output: Path | None) -> None:
    from rich.console import Console

    if output is None:
        Console(width=max(Console().width, 160) if not sys.stdout.isatty() else None).print(
            renderable
        )
        return
    buf = Console(record=True, width=200, file=open(os.devnull, "w"))  # noqa: SIM115
    buf.print(renderable)
    _emit(buf.export_text(), output)


@app.command()
def analyze(
    model: Annotated[Path, typer.Argument(help="A .tflite or .onnx model file.")],
    input_shape: InputShapeOpt = None,
    fmt: FormatOpt = Format.table,
    output: OutOpt = None,
    memory_plan: Annotated[
        bool,
        typer.Option(
            "--memory-plan",
            help="Output the activation arena plan (byte offset, size and lifetime of every "
            "tensor) instead of the per-layer table; JSON or CSV with --format.",
        ),
    ] = False,
    alignment: Annotated[
        int,
        typer.Option("--alignment", help="Arena alignment in bytes (TFLite Micro uses 16)."),
    ] = 16,
    in_place: Annotated[
        bool,
        typer.Option(
            "--in-place",
            help="Let elementwise and depthwise ops write over an input that dies there "
            "(lowers the peak; TFLite Micro's default planner does not).",
        ),
    ] = False,
    target: Annotated[
        str | None,
        typer.Option(
            "--target",
            "-t",
            help="Add the latency forecast on this target (a built-in name or a .toml file).",
        ),
    ] = None,
) -> None:
    """Per-layer MACs, FLOPs, parameters, weight and activation bytes of MODEL."""
    from infercast.analysis.cost import analyze as run
    from infercast.analysis.memory import plan_graph
    from infercast.frontends import parse_input_shapes
    from infercast.report import analysis as rep

    if alignment < 1:
        raise InfercastError(
            f"--alignment must be a positive number of bytes, not {alignment}",
            "use --alignment 16 (TFLite Micro) or 1 for none",
        )
    result = run(model, parse_input_shapes(input_shape or []))
    memory = plan_graph(result.graph, alignment=alignment, in_place=in_place)
    if memory_plan:
        from infercast.analysis import memory_export as mx

        if fmt is Format.json:
            _emit(json.dumps(mx.plan_dict(memory), indent=1), output)
        elif fmt is Format.csv:
            _emit(mx.plan_csv(memory), output)
        else:
            _render_rich(mx.render_plan(memory), output)
        return
    forecast = _forecast_for(result.graph, target)  # issue 6: --target adds the forecast
    if fmt is Format.json:
        doc = rep.to_dict(result, memory)
        if forecast is not None:
            from infercast.report import estimate as est_rep

            doc["forecast"] = est_rep.to_dict(forecast)
        _emit(json.dumps(doc, indent=1), output)
    elif fmt is Format.csv:
        text = rep.to_csv(result, memory)
        if forecast is not None:
            from infercast.report import estimate as est_rep

            text = est_rep.join_csv(text, forecast)
        _emit(text, output)
    elif forecast is None:
        _render_rich(rep.render_table(result, memory=memory), output)
    else:
        from rich.console import Group

        from infercast.report import estimate as est_rep

        _render_rich(
            Group(rep.render_table(result, memory=memory), est_rep.render_table(forecast)), output
        )
    _exit_if_incomplete(result)


EXIT_INCOMPLETE = 4
"""``analyze`` finished, but some layer's cost is unknown (an op without a cost rule,
or a shape not known statically): the output says which, and the totals leave them out."""


def _exit_if_incomplete(result: Analysis) -> None:
    t = result.totals
    if t.complete:
        return
    what = []
    if result.unsupported:
        ops = ", ".join(u.native_op for u in result.unsupported)
        what.append(f"{t.unsupported_layers} layer(s) of op(s) with no cost rule ({ops})")
    if t.unknown_shape_layers:
        what.append(f"{t.unknown_shape_layers} layer(s) with shapes not known statically")
    print(
        f"infercast: incomplete: {'; '.join(what)}; the totals exclude them "
        f"(exit {EXIT_INCOMPLETE})",
        file=sys.stderr,
    )
    raise SystemExit(EXIT_INCOMPLETE)


# --- targets and placement (issue 4) ------------------------------------------ #
targets_app = typer.Typer(
    help="Device targets: list the built-in ones, show one with every value resolved.",
    invoke_without_command=True,
)
app.add_typer(targets_app, name="targets")


@targets_app.callback()
def _targets_root(ctx: typer.Context) -> None:
    """Device targets: list the built-in ones, show one with every value resolved."""
    if ctx.invoked_subcommand is None:
        _emit(ctx.get_help(), None)


class ShowFormat(StrEnum):
    toml = "toml"
    json = "json"


class CheckFormat(StrEnum):
    table = "table"
    json = "json"


CheckFormatOpt = Annotated[CheckFormat, typer.Option("--format", "-f", help="Output format.")]
TargetOpt = Annotated[
    str,
    typer.Option(
        "--target", "-t", help="A built-in target name (see `targets list`) or a .toml file."
    ),
]


@targets_app.command("list")
def targets_list(
    fmt: CheckFormatOpt = CheckFormat.table,
) -> None:
    """The built-in targets: accelerator, fallback, peak int8 / fp32 ops/s."""
    from infercast.targets import list_targets

    targets = list_targets()
    if fmt is CheckFormat.json:
        rows = [
            {
                "name": t.name,
                "description": t.description,
                "accelerator": t.placement.accelerator,
                "fallback": t.placement.fallback,
                "file": t.path,
                "peak_ops_per_s": {u.name: dict(u.peak_ops_per_s) for u in t.units.values()},
            }
            for t in targets
        ]
        _emit(json.dumps(rows, indent=1), None)
        return
    from rich.table import Table

    from infercast.report.units import human_count

    table = Table(title="infercast targets (use --target NAME, or --target path/to/your.toml)")
    for col in ("name", "accelerator", "peak int8 ops/s", "peak fp32 ops/s", "description"):
        table.add_column(col, overflow="fold")
    for t in targets:
        unit = t.accelerator or t.fallback
        i8, f32 = unit.peak("int8"), unit.peak("fp32")
        table.add_row(
            t.name,
            t.placement.accelerator or "– (CPU only)",
            human_count(i8) if i8 else "–",
            human_count(f32) if f32 else "–",
            t.description,
        )
    _render_rich(table, None)


@targets_app.command("show")
def targets_show(
    name: Annotated[str, typer.Argument(help="A built-in target name or a .toml file.")],
    fmt: Annotated[ShowFormat, typer.Option("--format", "-f", help="Output format.")] = (
        ShowFormat.toml
    ),
) -> None:
    """Print a target with `extends` merged and host values detected (valid as a target file)."""
    from infercast.targets import load_target
    from infercast.targets.loader import to_toml

    t = load_target(name)
    if fmt is ShowFormat.json:
        _emit(json.dumps(t.raw, indent=1), None)
        return
    header = f"# {t.name}: resolved from {', '.join(Path(p).name for p in t.chain)}\n"
    _emit(header + to_toml(dict(t.raw)), None)


@app.command()
def check(
    model: Annotated[Path, typer.Argument(help="A .tflite or .onnx model file.")],
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
        _emit(json.dumps(report.to_dict(), indent=1), output)
    else:
        _render_rich(render_table(report), output)
    if report.exit_code:
        raise SystemExit(report.exit_code)


# --- latency forecast, calibration, validation (issue 6) ----------------------- #


def _forecast_for(graph: Graph, target: str | None) -> Forecast | None:
    """The forecast of an already-loaded graph on ``target`` (None when no target)."""
    if target is None:
        return None
    from infercast.estimate import estimate as forecast
    from infercast.targets import load_target

    return forecast(graph, load_target(target))


def _progress(msg: str) -> None:
    print(f"infercast: {msg}", file=sys.stderr, flush=True)


@app.command()
def estimate(
    model: Annotated[Path, typer.Argument(help="A .tflite or .onnx model file.")],
    target: TargetOpt,
    input_shape: InputShapeOpt = None,
    fmt: FormatOpt = Format.table,
    output: OutOpt = None,
    no_fuse: Annotated[
        bool,
        typer.Option("--no-fuse", help="Cost every op as its own kernel (no conv+act fusion)."),
    ] = False,
) -> None:
    """Forecast the latency of MODEL on TARGET, per layer, with what bounds each layer.

    Seconds per inference; a layer's bound is compute, memory, overhead,
    transfer (accelerator<->CPU crossings) or fallback (on the CPU of an
    accelerator target). One-time costs (first-run compilation) are reported apart.
    """
    from infercast.estimate import estimate as forecast
    from infercast.frontends import parse_input_shapes
    from infercast.report import estimate as est_rep
    from infercast.targets import load_target

    fc = forecast(
        model, load_target(target), parse_input_shapes(input_shape or []), fuse=not no_fuse
    )
    if fmt is Format.json:
        _emit(json.dumps(est_rep.to_dict(fc), indent=1), output)
    elif fmt is Format.csv:
        _emit(est_rep.to_csv(fc), output)
    else:
        _render_rich(est_rep.render_table(fc), output)


@app.command()
def calibrate(
    target: TargetOpt,
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Write the calibrated target file here.")
    ],
    runtime: Annotated[
        str | None,
        typer.Option("--runtime", help="Measure micro-kernels on this machine with ort or litert."),
    ] = None,
    threads: Annotated[int, typer.Option("--threads", help="Runtime threads.")] = 1,
    budget: Annotated[
        float,
        typer.Option(
            "--budget",
            help="Seconds to spend measuring (default 240; under 90 "
            "measures a reduced kernel set).",
        ),
    ] = 240.0,
    profiles: Annotated[
        list[Path] | None,
        typer.Option(
            "--from",
            help="Fit from per-op profiles measured elsewhere (ONNX Runtime "
            "JSON, benchmark_model --enable_op_profiling output, or an infercast bench "
            "--profile -f json result, e.g. from --remote: its model is known); repeat.",
        ),
    ] = None,
    models: Annotated[
        list[Path] | None,
        typer.Option(
            "--model",
            help="The model each --from profile was measured on (one for "
            "all, or one per profile, in order).",
        ),
    ] = None,
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
        from infercast.bench.profiles.result import result_models

        ms = list(models or []) or result_models(profiles, tgt.name, tgt.raw.get("extends"))
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
            tgt, runtime, threads=threads, budget_s=budget, progress=_progress
        )
    try:
        output.write_text(result.toml)
    except OSError as exc:
        raise InfercastError(f"cannot write {output}: {exc.strerror}") from exc
    if fmt is CheckFormat.json:
        _emit(json.dumps({**result.summary(), "file": str(output)}, indent=1), None)
        return
    f = result.fit
    effs = ", ".join(f"{k} {v:.3g}" for k, v in sorted(f.efficiency.items()))
    bws = ", ".join(f"{k} {v / 1e9:.3g} GB/s" for k, v in f.bandwidth.items())
    _emit(
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


@app.command()
def validate(
    models: Annotated[list[Path], typer.Argument(help=".onnx (ONNX Runtime) / .tflite (LiteRT).")],
    target: TargetOpt,
    threads: Annotated[
        int | None,
        typer.Option("--threads", help="Runtime threads (default: the calibration's, else 1)."),
    ] = None,
    budget: Annotated[
        float, typer.Option("--budget", help="Seconds to spend measuring, all models.")
    ] = 60.0,
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
        _emit(json.dumps(v.to_dict(), indent=1), output)
    elif fmt is Format.csv:
        _emit(est_rep.validation_csv(v), output)
    else:
        _render_rich(est_rep.render_validation(v), output)


# --- bench and profile import (issue 5): commands live in infercast/bench/cli.py --- #
from infercast.bench.cli import register as _register_bench  # noqa: E402

_register_bench(app)


def main(argv: list[str] | None = None) -> int:
    """Entry point: runs the app, turning every error into one line on stderr."""
    try:
        app(args=argv, standalone_mode=False)
    except InfercastError as exc:
        print(f"infercast: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("infercast: interrupted", file=sys.stderr)
        return 130
    except SystemExit as exc:
        return int(exc.code or 0) if not isinstance(exc.code, str) else 1
    except Exception as exc:
        # Usage errors of the option parser (click, or the copy typer ships).
        fmt = getattr(exc, "format_message", None)
        if callable(fmt) and isinstance(getattr(exc, "exit_code", None), int):
            print(f"infercast: error: {fmt()}", file=sys.stderr)
            return 2
        if type(exc).__name__ == "Abort":
            return 1
        print(
            f"infercast: internal error: {type(exc).__name__}: {exc} "
            "(this is a bug in infercast; please report it with the model)",
            file=sys.stderr,
        )
        return 1
    return 0


def run() -> None:
    """Console-script entry point."""
    raise SystemExit(main())
