"""Errors a user can act on. The CLI prints ``str(error)`` on one line and exits 2."""

from __future__ import annotations


class InfercastError(Exception):
    """Base class: ``message`` says what is wrong, ``hint`` what to do about it."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class ModelFileError(InfercastError):
    """The file is missing, unreadable, of an unknown format, truncated or corrupt."""


class SymbolicShapeError(InfercastError):
    """An input has dimensions that are not fixed and no ``--input-shape`` was given."""


class InputShapeError(InfercastError):
    """An ``--input-shape`` option is malformed or names no input of the model."""
