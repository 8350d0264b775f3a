"""What every command shares: option types, exit codes, and the output writer."""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from infercast.errors import InfercastError

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_BAD_INPUT = 2
EXIT_NOT_OK = 3
"""``check``: something falls back to the CPU or does not fit; ``bench``: a run failed."""
EXIT_INCOMPLETE = 4
"""Some layer's cost is unknown (an op without a cost rule, or a shape not known
statically): the output says which, and the totals leave them out."""


class Format(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"


class CheckFormat(StrEnum):
    table = "table"
    json = "json"


ModelArg = Annotated[Path, typer.Argument(help="A .tflite or .onnx model file.")]
InputShapeOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--input-shape",
        help="Fix an input's shape, NAME=1x3x224x224 (repeat for several inputs).",
    ),
]
FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]
CheckFormatOpt = Annotated[CheckFormat, typer.Option("--format", "-f", help="Output format.")]
OutOpt = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write to FILE instead of stdout.")
]
TargetOpt = Annotated[
    str,
    typer.Option(
        "--target", "-t", help="A built-in target name (see `targets list`) or a .toml file."
    ),
]


def emit(text: str, output: Path | None) -> None:
    """Write ``text`` (newline-terminated) to ``output``, or to stdout."""
    if not text.endswith("\n"):
        text += "\n"
    if output is None:
        sys.stdout.write(text)
        return
    try:
        output.write_text(text)
    except OSError as exc:
        raise InfercastError(f"cannot write {output}: {exc.strerror}") from exc


def render(renderable: object, output: Path | None) -> None:
    """Print a rich renderable to the terminal, or its plain text to ``output``."""
    from rich.console import Console

    if output is None:
        width = max(Console().width, 160) if not sys.stdout.isatty() else None
        Console(width=width).print(renderable)
        return
    with open(os.devnull, "w") as sink:
        buf = Console(record=True, width=200, file=sink)
        buf.print(renderable)
    emit(buf.export_text(), output)


def progress(msg: str) -> None:
    print(f"infercast: {msg}", file=sys.stderr, flush=True)
