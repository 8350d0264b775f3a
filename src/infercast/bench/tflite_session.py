"""A TFLite interpreter session: LiteRT (``ai_edge_litert``) or ``tflite_runtime``.

Shipped to the board as is by :mod:`infercast.bench.remote` (standard library
and numpy, plus the board's runtime; Python 3.8 syntax); the local LiteRT
adapter (:mod:`infercast.bench.runtimes.litert`) is this class plus the
profile's assembly, so both run a model the same way.

``xnnpack`` on: the built-in op resolver, which applies the XNNPACK delegate
by default; off: ``BUILTIN_WITHOUT_DEFAULT_DELEGATES``. ``delegates``: external
delegates (``load_delegate(library, options)``: i.MX ``libvx_delegate.so``,
Edge TPU ``libedgetpu.so.1``), given to the interpreter before its tensors are
allocated; ops they do not take run on the CPU kernels.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .inputgen import InputSpec, fixed_shape
from .opcuts import delegated_nodes, time_single_ops

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

MODULES = {"litert": "ai_edge_litert", "tflite_runtime": "tflite_runtime"}
"""Runtime name -> the Python package whose ``interpreter`` module it is."""
DISTRIBUTIONS = {"litert": "ai-edge-litert", "tflite_runtime": "tflite-runtime"}


def import_interpreter(runtime: str) -> Any:
    """The ``interpreter`` module of ``runtime`` (ImportError when it is not installed)."""
    import importlib

    return importlib.import_module(MODULES[runtime] + ".interpreter")


def runtime_version(runtime: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTIONS[runtime])
    except PackageNotFoundError:
        mod = __import__(MODULES[runtime])
        return str(getattr(mod, "__version__", "unknown"))


class TfliteSession:
    def __init__(
        self,
        mod: Any,
        data: bytes,
        threads: int | None,
        xnnpack: bool,
        input_shapes: Mapping[str, Sequence[int]],
        delegates: Sequence[Any] = (),
        error: type[Exception] = ValueError,
    ) -> None:
        self._mod = mod
        self._data = data
        self._threads = threads
        self._xnnpack = xnnpack
        self._delegates = list(delegates)
        self.interp = self.make(data)
        details = self.interp.get_input_details()
        resized = False
        for d in details:
            name = d["name"]
            sig = d.get("shape_signature", d["shape"])
            shape = (
                fixed_shape(name, sig, input_shapes, error)
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
        self.meta: dict[str, Any] = {}
        n = delegated_nodes(self.interp)
        if n is not None and (self._delegates or n):
            self.meta["delegate_nodes"] = n

    def make(self, data: bytes) -> Any:
        """An interpreter of ``data`` with this session's threads, resolver and delegates."""
        kwargs: dict[str, Any] = {"model_content": data, "num_threads": self._threads}
        if self._delegates:
            kwargs["experimental_delegates"] = self._delegates
        kinds = getattr(self._mod, "OpResolverType", None)  # tflite_runtime < 2.6 lacks it
        if kinds is not None:
            kwargs["experimental_op_resolver_type"] = (
                kinds.BUILTIN if self._xnnpack else kinds.BUILTIN_WITHOUT_DEFAULT_DELEGATES
            )
        elif not self._xnnpack:
            raise ValueError("this runtime cannot turn XNNPACK off (no OpResolverType)")
        return self._mod.Interpreter(**kwargs)

    def input_specs(self) -> tuple[InputSpec, ...]:
        return tuple(
            InputSpec(d["name"], tuple(int(x) for x in d["shape"]), np.dtype(d["dtype"]).name)
            for d in self._details
        )

    def runner(self, feeds: Mapping[str, np.ndarray[Any, Any]]) -> Callable[[], object]:
        for d in self._details:
            self.interp.set_tensor(d["index"], feeds[d["name"]])
        invoke: Callable[[], object] = self.interp.invoke
        return invoke

    def op_times(
        self,
        feeds: Mapping[str, np.ndarray[Any, Any]],
        cuts: Sequence[tuple[int, str, bytes | None]],
        relu_model: bytes,
        runs: int,
        delegate: str = "",
    ) -> dict[str, Any]:
        """Raw single-op times (:func:`.opcuts.time_single_ops`) with this session's setup."""
        kinds = getattr(self._mod, "OpResolverType", None)
        probe = None
        if self._delegates and kinds is not None:

            def probe(data: bytes) -> Any:  # the external delegate alone: does it take the op?
                return self._mod.Interpreter(
                    model_content=data,
                    num_threads=self._threads,
                    experimental_delegates=self._delegates,
                    experimental_op_resolver_type=kinds.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
                )

        return time_single_ops(
            cuts,
            relu_model,
            self.make,
            self.runner(feeds),
            runs,
            default="XNNPACK" if self._xnnpack else "",
            delegate=delegate or "delegate",
            probe=probe,
        )

    def close(self) -> None:
        self.interp = None
