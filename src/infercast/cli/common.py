"""What every command shares: option types, exit codes, and the output writer."""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

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


UNBOUNDED = 100_000
"""Width of a console with no limit: piped output and files keep every column, one line a row."""


def output_width(output: Path | None) -> int | None:
    """The width tables are laid out to: ``COLUMNS`` when set, else the terminal's; None
    (no limit) for a file or a pipe."""
    if output is not None:
        return None
    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    if sys.stdout.isatty():
        import shutil

        return shutil.get_terminal_size().columns
    return None


def render(renderable: object, output: Path | None) -> None:
    """Print a rich renderable: to the terminal (its width, colours), to a pipe or ``output``
    (plain text; unbounded unless ``COLUMNS`` is set). Model strings are never markup:
    renderers build :class:`rich.text.Text` from escaped strings."""
    from rich.console import Console

    width = output_width(output)
    tty = output is None and sys.stdout.isatty()
    with open(os.devnull, "w") as sink:
        buf = Console(
            record=True,
            width=width or UNBOUNDED,
            file=sink,
            force_terminal=tty,
            no_color=not tty,
            highlight=False,
            emoji=False,
            markup=False,
            soft_wrap=False,
        )
        buf.print(renderable)
        text = buf.export_text(styles=tty)
    text = "\n".join(line.rstrip() for line in text.splitlines())
    emit(text, output)


def progress(msg: str) -> None:
    print(f"infercast: {msg}", file=sys.stderr, flush=True)


class ByWhat(StrEnum):
    op = "op"


ColumnsOpt = Annotated[
    str | None,
    typer.Option(
        "--columns",
        help="Table: the columns to show, comma-separated keys (the error lists them).",
    ),
]
SortOpt = Annotated[
    str | None,
    typer.Option(
        "--sort", help="Table: sort rows by this column key (numbers largest first; -KEY / +KEY)."
    ),
]
TopNOpt = Annotated[
    int | None,
    typer.Option("--top", help="Table: only the N heaviest rows (or the first N by --sort)."),
]
ByOpt = Annotated[
    ByWhat | None,
    typer.Option("--by", help="Table: one row per op type instead of per layer."),
]


def table_options(columns: str | None, sort: str | None, top: int | None) -> Any:
    """``--columns``, ``--sort``, ``--top`` as :class:`~infercast.report.table.TableOptions`."""
    from infercast.report.table import TableOptions

    return TableOptions.parse(columns, sort, top)
