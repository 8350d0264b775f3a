"""Model inputs for a benchmark, with infercast's error type.

The values are made by :mod:`infercast.bench.inputgen` (the module a board runs
too; its docstring says what is generated); this module adds the error class
the CLI reports and the ``--input NAME=FILE.npy`` parser.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from infercast.bench import inputgen
from infercast.bench.inputgen import SMALL_INT_HIGH, InputSpec
from infercast.errors import InfercastError

__all__ = [
    "SMALL_INT_HIGH",
    "InputError",
    "InputSpec",
    "load_npy",
    "make_inputs",
    "parse_input_files",
]


class InputError(InfercastError):
    """An input file is missing, unreadable or does not match the model's signature."""


def make_inputs(
    specs: Sequence[InputSpec],
    seed: int = 0,
    files: Mapping[str, str] | None = None,
) -> tuple[dict[str, np.ndarray[Any, Any]], list[dict[str, Any]]]:
    """Arrays for every input, and a record of where each came from (:class:`InputError`)."""
    return inputgen.make_inputs(specs, seed, files, error=InputError)


def load_npy(path: str | Path) -> np.ndarray[Any, Any]:
    return inputgen.load_npy(path, InputError)


def parse_input_files(specs: list[str] | tuple[str, ...]) -> dict[str, str]:
    """``NAME=FILE.npy`` options -> {name: path}."""
    out: dict[str, str] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise InputError(
                f"--input '{spec}' is not NAME=FILE.npy", "example: --input input=image.npy"
            )
        out[name] = path
    return out
