"""Runtime adapters behind one small interface.

Each adapter module imports its runtime library only inside ``open`` (and
``versions``), so ``import infercast`` never fails for a missing runtime; a
missing one raises :class:`RuntimeUnavailable` naming the pip extra to install.

An adapter turns a model file into a :class:`Session`; the harness asks the
session for its inputs, for a zero-argument *runner* that performs exactly one
inference on inputs bound in advance (so the timed call holds no Python-side
copies or conversions), and optionally for a per-op :class:`Profile`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from infercast.bench import inputgen
from infercast.bench.inputs import InputSpec
from infercast.bench.profiles.base import Profile
from infercast.errors import InfercastError

Shapes = Mapping[str, tuple[int, ...]]
Feeds = Mapping[str, np.ndarray[Any, Any]]


class RuntimeUnavailable(InfercastError):
    """The runtime's Python package is not installed (or failed to import)."""


class RuntimeOptionError(InfercastError):
    """A runtime option is unknown or has a bad value."""


class ModelInputError(InfercastError):
    """The model's inputs cannot be fed as they are (symbolic dimensions, odd dtypes)."""


@dataclass(frozen=True)
class OptionSpec:
    name: str
    kind: type
    default: Any
    help: str
    choices: tuple[Any, ...] = ()


class Session(Protocol):
    def input_specs(self) -> tuple[InputSpec, ...]: ...

    def runner(self, feeds: Feeds) -> Callable[[], object]: ...

    def profile(self, feeds: Feeds, runs: int, raw_dir: Path | None = None) -> Profile: ...

    def close(self) -> None: ...


class Runtime(Protocol):
    name: str
    package: str
    """The pip distribution that provides the runtime."""
    extra: str
    """``pip install 'infercast[<extra>]'`` installs it ("" when it is a core dependency)."""
    formats: frozenset[str]
    options: Mapping[str, OptionSpec]

    def versions(self) -> dict[str, str]: ...

    def open(
        self, model: Path, threads: int | None, options: Mapping[str, Any], input_shapes: Shapes
    ) -> Session: ...


_ADAPTERS: dict[str, tuple[str, str]] = {
    "ort": ("infercast.bench.runtimes.ort", "OrtRuntime"),
    "litert": ("infercast.bench.runtimes.litert", "LiteRtRuntime"),
    "tvm": ("infercast.bench.runtimes.tvm", "TvmRuntime"),
}
ALIASES = {"onnxruntime": "ort", "tflite": "litert", "tfl": "litert"}


def runtime_names() -> list[str]:
    return list(_ADAPTERS)


def get_runtime(name: str) -> Runtime:
    key = ALIASES.get(name.lower(), name.lower())
    if key not in _ADAPTERS:
        raise RuntimeOptionError(f"unknown runtime '{name}'", f"choose from {', '.join(_ADAPTERS)}")
    module, cls = _ADAPTERS[key]
    rt: Runtime = getattr(importlib.import_module(module), cls)()
    return rt


def missing(rt: Runtime, exc: BaseException) -> RuntimeUnavailable:
    how = f"pip install 'infercast[{rt.extra}]'" if rt.extra else f"pip install {rt.package}"
    return RuntimeUnavailable(
        f"runtime '{rt.name}' needs {rt.package}, which cannot be imported "
        f"({type(exc).__name__}: {exc})",
        how,
    )


def resolve_options(rt: Runtime, given: Mapping[str, Any]) -> dict[str, Any]:
    """Defaults filled in, values converted to the option's type and checked."""
    out: dict[str, Any] = {}
    for key in given:
        if key not in rt.options:
            known = ", ".join(rt.options) or "none"
            raise RuntimeOptionError(
                f"runtime '{rt.name}' has no option '{key}'", f"its options are: {known}"
            )
    for key, spec in rt.options.items():
        value = given.get(key, spec.default)
        try:
            if spec.kind is bool and isinstance(value, str):
                low = value.strip().lower()
                if low not in ("1", "0", "true", "false", "on", "off", "yes", "no"):
                    raise ValueError(value)
                value = low in ("1", "true", "on", "yes")
            else:
                value = spec.kind(value)
        except (TypeError, ValueError):
            raise RuntimeOptionError(
                f"runtime '{rt.name}' option '{key}' = {value!r} is not a {spec.kind.__name__}"
            ) from None
        if spec.choices and value not in spec.choices:
            raise RuntimeOptionError(
                f"runtime '{rt.name}' option '{key}' = {value!r} is not one of "
                f"{', '.join(map(str, spec.choices))}"
            )
        out[key] = value
    return out


def fixed_shape(name: str, dims: Any, input_shapes: Shapes) -> tuple[int, ...]:
    """A concrete shape for input ``name``: the model's, or ``--input-shape``'s."""
    return inputgen.fixed_shape(name, dims, input_shapes, ModelInputError)
