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
from typing import Annotated

import typer

from infercast.errors import InfercastError

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
    if fmt is Format.json:
        _emit(json.dumps(rep.to_dict(result, memory), indent=1), output)
    elif fmt is Format.csv:
        _emit(rep.to_csv(result, memory), output)
    else:
        _render_rich(rep.render_table(result, memory=memory), output)


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
            t.name, t.placement.accelerator or "– (CPU only)",
            human_count(i8) if i8 else "–", human_count(f32) if f32 else "–", t.description,
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
