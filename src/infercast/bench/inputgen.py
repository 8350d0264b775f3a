"""Model inputs for a benchmark: generated from the model's signature, or read from ``.npy``.

Shipped to the board as is by :mod:`infercast.bench.remote` (standard library
and numpy only, Python 3.8 syntax), so a board generates exactly the inputs a
local run does. :mod:`infercast.bench.inputs` wraps it with infercast's error
type.

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

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

SMALL_INT_HIGH = 16


class InputGenerationError(Exception):
    """Inputs cannot be made as asked (the default error of this module's functions)."""


@dataclass(frozen=True)
class InputSpec:
    """One model input as the runtime declares it (shape fully known)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    """numpy dtype name: ``float32``, ``int8``, ..."""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "shape": list(self.shape), "dtype": self.dtype}


def generate(spec: InputSpec, rng: np.random.Generator) -> tuple[np.ndarray[Any, Any], str]:
    """Values for ``spec`` (see the module doc) and a description of their range."""
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
    raise InputGenerationError(
        f"input '{spec.name}' has dtype {spec.dtype}, which infercast cannot generate "
        f"(give the data with --input {spec.name}=FILE.npy)"
    )


def load_npy(
    path: str | Path, error: type[Exception] = InputGenerationError
) -> np.ndarray[Any, Any]:
    """One array from a ``.npy`` file; ``error`` is raised with what is wrong."""
    p = Path(path)
    try:
        arr = np.load(p, allow_pickle=False)
    except FileNotFoundError:
        raise error(f"{p}: no such file") from None
    except (OSError, ValueError) as exc:
        raise error(f"{p}: not a readable .npy array ({exc})") from None
    if not isinstance(arr, np.ndarray):
        raise error(f"{p}: holds several arrays (.npz); give one .npy per input")
    return arr


def make_inputs(
    specs: Sequence[InputSpec],
    seed: int = 0,
    files: Mapping[str, str] | None = None,
    error: type[Exception] = InputGenerationError,
) -> tuple[dict[str, np.ndarray[Any, Any]], list[dict[str, Any]]]:
    """Arrays for every input, and a record of where each came from.

    Inputs named in ``files`` are read from those ``.npy`` files (shape and dtype
    checked); the others are generated in the order of ``specs`` from one
    generator seeded with ``seed``. Problems raise ``error``.
    """
    files = dict(files or {})
    names = {s.name for s in specs}
    unknown = sorted(set(files) - names)
    if unknown:
        raise error(
            f"--input names {', '.join(unknown)}, which the model does not have "
            f"(its inputs are: {', '.join(sorted(names))})"
        )
    rng = np.random.default_rng(seed)
    feeds: dict[str, np.ndarray[Any, Any]] = {}
    record: list[dict[str, Any]] = []
    for spec in specs:
        if spec.name in files:
            arr = load_npy(files[spec.name], error)
            if tuple(arr.shape) != spec.shape:
                raise error(
                    f"{files[spec.name]}: shape {list(arr.shape)} does not match input "
                    f"'{spec.name}' of shape {list(spec.shape)}"
                )
            if arr.dtype != np.dtype(spec.dtype):
                raise error(
                    f"{files[spec.name]}: dtype {arr.dtype} does not match input "
                    f"'{spec.name}' of dtype {spec.dtype} (save it with "
                    f"arr.astype('{spec.dtype}'))"
                )
            source = f"file {files[spec.name]}"
        else:
            try:
                arr, source = generate(spec, rng)
            except InputGenerationError as exc:
                raise error(str(exc)) from None
            source = f"{source} seed={seed}"
        feeds[spec.name] = np.ascontiguousarray(arr)
        record.append({**spec.to_dict(), "source": source})
    return feeds, record


def fixed_shape(
    name: str,
    dims: Any,
    input_shapes: Mapping[str, Sequence[int]],
    error: type[Exception] = InputGenerationError,
) -> tuple[int, ...]:
    """A concrete shape for input ``name``: the model's, or ``--input-shape``'s. A leading
    dynamic batch dimension alone is 1, as ``infercast analyze`` defaults it."""
    if name in input_shapes:
        return tuple(int(d) for d in input_shapes[name])

    def fixed(d: Any) -> bool:
        return isinstance(d, (int, np.integer)) and int(d) >= 0

    dims = list(dims)
    if len(dims) > 1 and not fixed(dims[0]) and all(fixed(d) for d in dims[1:]):
        dims = [1, *dims[1:]]
    out = []
    for d in dims:
        if fixed(d):
            out.append(int(d))
        else:
            example = "x".join(str(int(x)) if fixed(x) else "N" for x in dims)
            raise error(
                f"input '{name}' has a dimension that is not fixed ({dims}) "
                f"(give it with --input-shape {name}={example})"
            )
    return tuple(out)
