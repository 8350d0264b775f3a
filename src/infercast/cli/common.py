"""What every command shares: option types, exit codes, and the output writer."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Iterable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from infercast.errors import InfercastError
from infercast.files import write_atomic

if TYPE_CHECKING:
    from infercast.ir.graph import Graph
    from infercast.targets import Target

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_BAD_INPUT = 2
EXIT_NOT_OK = 3
"""``check``: something falls back to the CPU or does not fit; ``bench``: a run failed."""
EXIT_INCOMPLETE = 4
"""Some layer's cost is unknown (an op without a cost rule, or a shape not known
statically): the output says which, and the totals leave them out. ``check``:
nothing falls back, but tensors of unknown size leave the memory fit unknown."""


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
CpuThreadsOpt = Annotated[
    int | None,
    typer.Option(
        "--threads",
        help="CPU threads the runtime runs with (1 to the target CPU's cores; default 1, "
        "as TFLite's benchmark_model and `infercast bench`).",
    ),
]
TargetOpt = Annotated[
    str,
    typer.Option(
        "--target", "-t", help="A built-in target name (see `targets list`) or a .toml file."
    ),
]


class Output:
    """Where a command's result goes: stdout, or the ``-o`` file.

    The file is checked before any work is done: it must not be one of the
    command's inputs (model, profile, target file: compared by resolved path and
    by inode) and, if it exists, must be a regular file. It is written
    atomically: a temporary file in the same directory, then ``os.replace``, so
    a failed write leaves the old file as it was.
    """

    def __init__(self, path: Path | None, inputs: Iterable[str | Path | None] = ()) -> None:
        self.path = path
        if path is not None:
            _refuse_unsafe(path, [Path(p) for p in inputs if p is not None])

    def text(self, text: str) -> None:
        """Write ``text`` (newline-terminated)."""
        if not text.endswith("\n"):
            text += "\n"
        if self.path is None:
            sys.stdout.write(text)
        else:
            write_atomic(self.path, text)

    def json(self, doc: object) -> None:
        """Write ``doc`` as strict JSON (non-finite numbers as null)."""
        from infercast.report.text import dumps

        self.text(dumps(doc))

    def rich(self, renderable: object) -> None:
        """Print a rich renderable: to the terminal (its width, colours), or as plain text to a
        pipe or the file (unbounded unless ``COLUMNS`` is set: every column, one line a row).
        Model strings are never markup: renderers build Text from escaped strings."""
        from rich.console import Console

        width = output_width(self.path)
        tty = self.path is None and sys.stdout.isatty()
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
        self.text("\n".join(line.rstrip() for line in text.splitlines()))

    def result(
        self,
        fmt: StrEnum,
        doc: Callable[[], object],
        table: Callable[[], object],
        csv: Callable[[], str] | None = None,
    ) -> None:
        """A command's result in ``fmt``: ``doc()`` as JSON, ``csv()`` as CSV, else ``table()``
        (a rich renderable). Only the one asked for is built."""
        if fmt == "json":
            self.json(doc())
        elif fmt == "csv" and csv is not None:
            self.text(csv())
        else:
            self.rich(table())


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


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or os.path.samefile(a, b)
    except OSError:
        return False


def _refuse_unsafe(path: Path, inputs: list[Path]) -> None:
    for inp in inputs:
        if _same_file(path, inp):
            raise InfercastError(
                f"-o {path} is an input of this command ({inp}); it would be overwritten",
                "write the output to another file",
            )
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InfercastError(f"cannot write {path}: {exc.strerror}") from exc
    if not stat.S_ISREG(st.st_mode):
        raise InfercastError(
            f"-o {path} is not a regular file", "give the path of a file to create or replace"
        )


def progress(msg: str) -> None:
    """A status line on stderr (model strings in ``msg`` escaped)."""
    from infercast.report.text import one_line

    print(f"infercast: {one_line(msg)}", file=sys.stderr, flush=True)


def exit_if_incomplete(message: str | None) -> None:
    """Say on stderr why the totals are incomplete, and exit 4 (``message`` None: go on)."""
    if message is None:
        return
    from infercast.report.text import one_line

    print(f"infercast: {one_line(message)} (exit {EXIT_INCOMPLETE})", file=sys.stderr)
    raise SystemExit(EXIT_INCOMPLETE)


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


def main_labels(graph: Any) -> dict[int, str]:
    """Layer index -> its short unique label (:mod:`infercast.report.names`), main graph."""
    from infercast.report.names import graph_labels

    return {i: lbl for (sub, i), lbl in graph_labels(graph).items() if sub == graph.name}


def load_on_target(
    model: Path, input_shape: list[str] | None, target: str, output: Path | None
) -> tuple[Graph, Target, Output]:
    """What a command on a model and a target reads, in the order errors are said: the
    target (``-t``), the ``-o`` file (never one of the inputs: the model, the target file
    and the files it extends), then the model with its ``--input-shape`` fixes."""
    import infercast.api as api
    from infercast.frontends import parse_input_shapes

    tgt = api.load_target(target)
    out = Output(output, [model, tgt.path, *tgt.chain])
    return api.load(model, parse_input_shapes(input_shape or [])), tgt, out
