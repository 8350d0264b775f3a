"""LiteRT (``ai-edge-litert``) Interpreter on the CPU.

Options: ``xnnpack`` -- on (default): the built-in op resolver, which applies
the XNNPACK delegate by default; off: ``BUILTIN_WITHOUT_DEFAULT_DELEGATES``, the
reference-free optimised builtin kernels alone. Threads: ``num_threads``.
The session is :class:`infercast.bench.tflite_session.TfliteSession` (what a
board runs too). Per-op times: single-op sub-models
(:mod:`infercast.bench.runtimes.litert_ops`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from infercast.bench.profiles.base import Profile
from infercast.bench.runtimes import Feeds, ModelInputError, OptionSpec, Shapes, missing
from infercast.bench.tflite_session import TfliteSession


def _import() -> Any:
    from ai_edge_litert import interpreter

    return interpreter


class LiteRtSession(TfliteSession):
    def profile(self, feeds: Feeds, runs: int, raw_dir: Path | None = None) -> Profile:
        from infercast.bench.runtimes.litert_ops import (
            cut_single_ops,
            profile_from_times,
            relu_model,
        )

        return profile_from_times(
            self.op_times(feeds, cut_single_ops(self._data), relu_model(), runs)
        )


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
        return LiteRtSession(
            mod,
            model.read_bytes(),
            threads,
            bool(options.get("xnnpack", True)),
            input_shapes,
            error=ModelInputError,
        )
