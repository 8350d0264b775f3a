"""Model inputs for a benchmark: generated from the model's signature, or read from ``.npy``.

Generated values (fixed seed, so every runtime and every run sees the same data):

* float inputs: uniform in [-1, 1) (the range of normalised images and audio);
* 8- and 16-bit integer inputs (quantised tensors): uniform over the whole type;
* wider integers (indices, token ids, lengths): uniform in [0, 16) -- small,
  non-negative values valid as indices of any dimension of at least 16;
* bool: fair coin.

Latency of the CPU kernels used here does not depend on the values, except for
data-dependent ops (NMS, top-k, control flow); give real data with ``--input``
for those.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from infercast.errors import InfercastError

SMALL_INT_HIGH = 16


class InputError(InfercastError):
    """An input file is missing, unreadable or does not match the model's signature."""


@dataclass(frozen=True)
class InputSpec:
    """One model input as the runtime declares it (shape fully known)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    """numpy dtype name: ``float32``, ``int8``, ..."""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "shape": list(self.shape), "dtype": self.dtype}


def _generate(spec: InputSpec, rng: np.random.Generator) -> tuple[np.ndarray[Any, Any], str]:
    dt = np.dtype(spec.dtype)
    if dt.kind == "f":
        return rng.uniform(-1.0, 1.0, size=spec.shape).astype(dt), "uniform[-1,1)"
    if dt.kind == "b":
        return rng.integers(0, 2, size=spec.shape).astype(dt), "bernoulli(0.5)"
    if dt.kind in "iu":
        if dt.itemsize <= 2:
            info = np.iinfo(dt)
            vals = rng.integers(int(info.min), int(info.max) + 1, size=spec.shape, dtype=np.int64)
            return vals.astype(dt), f"uniform[{info.min},{info.max}]"
        return (
            rng.integers(0, SMALL_INT_HIGH, size=spec.shape).astype(dt),
            f"uniform[0,{SMALL_INT_HIGH})",
        )
    raise InputError(
        f"input '{spec.name}' has dtype {spec.dtype}, which infercast cannot generate",
        f"give the data with --input {spec.name}=FILE.npy",
    )


def make_inputs(
    specs: tuple[InputSpec, ...] | list[InputSpec],
    seed: int = 0,
    files: Mapping[str, str] | None = None,
) -> tuple[dict[str, np.ndarray[Any, Any]], list[dict[str, Any]]]:
    """Arrays for every input, and a record of where each came from."""
    files = dict(files or {})
    names = {s.name for s in specs}
    unknown = sorted(set(files) - names)
    if unknown:
        raise InputError(
            f"--input names {', '.join(unknown)}, which the model does not have",
            f"its inputs are: {', '.join(sorted(names))}",
        )
    rng = np.random.default_rng(seed)
    feeds: dict[str, np.ndarray[Any, Any]] = {}
    record: list[dict[str, Any]] = []
    for spec in specs:
        if spec.name in files:
            arr = load_npy(files[spec.name])
            if tuple(arr.shape) != spec.shape:
                raise InputError(
                    f"{files[spec.name]}: shape {list(arr.shape)} does not match input "
                    f"'{spec.name}' of shape {list(spec.shape)}"
                )
            if arr.dtype != np.dtype(spec.dtype):
                raise InputError(
                    f"{files[spec.name]}: dtype {arr.dtype} does not match input "
                    f"'{spec.name}' of dtype {spec.dtype}",
                    f"save it with arr.astype('{spec.dtype}')",
                )
            source = f"file {files[spec.name]}"
        else:
            arr, source = _generate(spec, rng)
            source = f"{source} seed={seed}"
        feeds[spec.name] = np.ascontiguousarray(arr)
        record.append({**spec.to_dict(), "source": source})
    return feeds, record


def load_npy(path: str | Path) -> np.ndarray[Any, Any]:
    p = Path(path)
    try:
        arr = np.load(p, allow_pickle=False)
    except FileNotFoundError:
        raise InputError(f"{p}: no such file") from None
    except (OSError, ValueError) as exc:
        raise InputError(f"{p}: not a readable .npy array ({exc})") from None
    if not isinstance(arr, np.ndarray):
        raise InputError(f"{p}: holds several arrays (.npz); give one .npy per input")
    return arr


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
