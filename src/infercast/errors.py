"""Errors a user can act on. The CLI prints ``str(error)`` on one line and exits 2."""

from __future__ import annotations

import errno
import stat
from pathlib import Path


class InfercastError(Exception):
    """Base class: ``message`` says what is wrong, ``hint`` what to do about it."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        text = f"{self.message} ({self.hint})" if self.hint else self.message
        return printable(text)


MAX_NODES = 100_000
"""Most operators (all subgraphs together) a model may have. Issue 9 asks 100,000 in
10 s and 1 GB; issue 14 bounds every command at 20 s and 1.5 GiB. A chain of 140,000
ONNX Relu nodes (3.4 MB) took 13.9 s of CPU and 1.29 GB for ``analyze -f json``
(44 s of wall on the loaded 2-core build machine); 100,000 took 9.2 s and 0.96 GB
(``bench/bench_hostile.py`` runs the largest accepted model). No edge model comes
near: past this, a crafted file or a command running for minutes."""


def too_many_nodes(path: str, n: int) -> ModelFileError:
    return ModelFileError(
        f"{path}: {n} operators; infercast reads models of at most {MAX_NODES}",
        "the file is corrupt or crafted, or not a model for an edge device",
    )


def regular_file(
    path: Path,
    error: type[InfercastError],
    what: str = "",
    *,
    max_bytes: int | None = None,
    hint: str = "",
) -> int:
    """The size of ``path``, or ``error`` (one line) unless it is a regular file of at most
    ``max_bytes``: a FIFO or a device would block in ``open()`` or never end."""
    label = printable(f"{what} {path}".strip())
    try:
        st = path.stat()
    except (OSError, ValueError) as exc:
        if isinstance(exc, ValueError) or exc.errno in (errno.ENOENT, errno.ENOTDIR):
            raise error(f"{label}: no such file", hint) from None
        raise error(f"{label}: cannot be read ({exc.strerror})") from None
    if stat.S_ISDIR(st.st_mode):
        raise error(f"{label}: is a directory, not a file", hint)
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{label}: is not a regular file (a pipe, socket or device)", hint)
    if max_bytes is not None and st.st_size > max_bytes:
        raise error(f"{label}: {st.st_size} bytes; at most {max_bytes} are read", hint)
    return st.st_size


def printable(text: str) -> str:
    """``text`` with control characters written as escapes (``\\n``, ``\\x1b``): one line
    and no terminal codes, whatever names a model file holds."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class ModelFileError(InfercastError):
    """The file is missing, unreadable, of an unknown format, truncated or corrupt."""


class SymbolicShapeError(InfercastError):
    """An input has dimensions that are not fixed and no ``--input-shape`` was given."""


class InputShapeError(InfercastError):
    """An ``--input-shape`` option is malformed or names no input of the model."""
