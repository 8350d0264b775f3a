"""LiteRT (``ai-edge-litert``) Interpreter on the CPU.

Options: ``xnnpack`` -- on (default): the built-in op resolver, which applies
the XNNPACK delegate by default; off: ``BUILTIN_WITHOUT_DEFAULT_DELEGATES``, the
reference-free optimised builtin kernels alone. Threads: ``num_threads``.
Per-op times: single-op sub-models (:mod:`infercast.bench.runtimes.litert_ops`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from infercast.bench.inputs import InputSpec
from infercast.bench.profiles.base import Profile
from infercast.bench.runtimes import Feeds, OptionSpec, Shapes, fixed_shape, missing


def _import() -> Any:
    from ai_edge_litert import interpreter

    return interpreter


class LiteRtSession:
    def __init__(
        self, mod: Any, model: Path, threads: int | None, xnnpack: bool, input_shapes: Shapes
    ) -> None:
        self._mod = mod
        self._data = model.read_bytes()
        self._threads = threads
        self._resolver = (
            mod.OpResolverType.BUILTIN
            if xnnpack
            else mod.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
        )
        self.interp = self._make(self._data)
        details = self.interp.get_input_details()
        resized = False
        for d in details:
            name = d["name"]
            sig = d.get("shape_signature", d["shape"])
            shape = (
                fixed_shape(name, sig, input_shapes)
                if (name in input_shapes or any(int(x) < 0 for x in sig))
                else tuple(int(x) for x in d["shape"])
            )
            if tuple(int(x) for x in d["shape"]) != shape:
                self.interp.resize_tensor_input(d["index"], list(shape), strict=False)
                resized = True
        self.interp.allocate_tensors()
        if resized:
            details = self.interp.get_input_details()
        self._details = details

    def _make(self, data: bytes) -> Any:
        return self._mod.Interpreter(
            model_content=data,
            num_threads=self._threads,
            experimental_op_resolver_type=self._resolver,
        )

    def input_specs(self) -> tuple[InputSpec, ...]:
        return tuple(
            InputSpec(d["name"], tuple(int(x) for x in d["shape"]), np.dtype(d["dtype"]).name)
            for d in self._details
        )

    def runner(self, feeds: Feeds) -> Callable[[], object]:
        for d in self._details:
            self.interp.set_tensor(d["index"], feeds[d["name"]])
        invoke: Callable[[], object] = self.interp.invoke
        return invoke

    def profile(self, feeds: Feeds, runs: int, raw_dir: Path | None = None) -> Profile:
        from infercast.bench.runtimes.litert_ops import profile_single_ops

        whole = self.runner(feeds)
        return profile_single_ops(self._data, self._make, whole, runs)

    def close(self) -> None:
        self.interp = None


class LiteRtRuntime:
    name = "litert"
    package = "ai-edge-litert"
    extra = ""
    formats = frozenset({"tflite"})
    options: Mapping[str, OptionSpec] = {
        "xnnpack": OptionSpec("xnnpack", bool, True, "apply the XNNPACK delegate (on/off)"),
    }

    def versions(self) -> dict[str, str]:
        try:
            _import()
        except ImportError as exc:
            raise missing(self, exc) from exc
        from importlib.metadata import version

        return {"ai-edge-litert": version("ai-edge-litert")}

    def open(
        self, model: Path, threads: int | None, options: Mapping[str, Any], input_shapes: Shapes
    ) -> LiteRtSession:
        try:
            mod = _import()
        except ImportError as exc:
            raise missing(self, exc) from exc
        return LiteRtSession(mod, model, threads, bool(options.get("xnnpack", True)), input_shapes)
