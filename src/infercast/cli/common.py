"""What every command shares: option types, exit codes, and the output writer."""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Iterable
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
        """Print a rich renderable to the terminal, or its plain text to the file."""
        from rich.console import Console

        if self.path is None:
            width = max(Console().width, 160) if not sys.stdout.isatty() else None
            Console(width=width).print(renderable)
            return
        with open(os.devnull, "w") as sink:
            buf = Console(record=True, width=200, file=sink)
            buf.print(renderable)
        self.text(buf.export_text())


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


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` through a temporary file in the same directory."""
    real = Path(os.path.realpath(path))
    try:
        mode = stat.S_IMODE(os.stat(real).st_mode)
    except FileNotFoundError:
        mask = os.umask(0)
        os.umask(mask)
        mode = 0o666 & ~mask
    except OSError as exc:
        raise InfercastError(f"cannot write {path}: {exc.strerror}") from exc
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, real)
        tmp = None
    except OSError as exc:
        raise InfercastError(f"cannot write {path}: {exc.strerror or exc}") from exc
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def progress(msg: str) -> None:
    print(f"infercast: {msg}", file=sys.stderr, flush=True)


def exit_if_incomplete(message: str | None) -> None:
    """Say on stderr why the totals are incomplete, and exit 4 (``message`` None: go on)."""
    if message is None:
        return
    from infercast.report.text import one_line

    print(f"infercast: {one_line(message)} (exit {EXIT_INCOMPLETE})", file=sys.stderr)
    raise SystemExit(EXIT_INCOMPLETE)
