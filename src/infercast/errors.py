"""Errors a user can act on. The CLI prints ``str(error)`` on one line and exits 2."""

from __future__ import annotations


class InfercastError(Exception):
    """Base class: ``message`` says what is wrong, ``hint`` what to do about it."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        text = f"{self.message} ({self.hint})" if self.hint else self.message
        return printable(text)


MAX_NODES = 150_000
"""Most operators (all subgraphs together) a model may have (issue 9 asks 100,000 in 10 s;
a 4 MB file can hold 150,000): past this, no edge model but a command running for minutes."""


def too_many_nodes(path: str, n: int) -> ModelFileError:
    return ModelFileError(
        f"{path}: {n} operators; infercast reads models of at most {MAX_NODES}",
        "the file is corrupt or crafted, or not a model for an edge device",
    )


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
