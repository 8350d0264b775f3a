"""ONNX Runtime, CPU execution provider.

Options: ``opt_level`` -- the session's graph optimisation level
(``all`` = ORT_ENABLE_ALL, the default; ``extended``; ``basic``; ``disable`` =
ORT_DISABLE_ALL, which keeps the model's nodes one to one, so the per-op
profile maps exactly). Threads set ``intra_op_num_threads``; the executor is
sequential with one inter-op thread. The session is
:class:`infercast.bench.ort_session.OrtCoreSession` (what a board runs too).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from infercast.bench.ort_session import OPT_LEVELS, OrtCoreSession
from infercast.bench.profiles.base import Profile
from infercast.bench.profiles.ort import parse_ort_events, with_node_outputs
from infercast.bench.runtimes import Feeds, ModelInputError, OptionSpec, Shapes, missing


def _import() -> Any:
    import onnxruntime

    return onnxruntime


class OrtSession(OrtCoreSession):
    def profile(self, feeds: Feeds, runs: int, raw_dir: Path | None = None) -> Profile:
        """A second session with profiling on; ``runs`` + 1 inferences, the first dropped."""
        tmp = Path(tempfile.mkdtemp(prefix="infercast-ort-"))
        try:
            optimized = tmp / "optimized.onnx"
            text = self.profile_json(
                feeds, runs, str(raw_dir) if raw_dir is not None else None, str(optimized)
            )
            prof = parse_ort_events(json.loads(text), skip_runs=1, where="ORT profile")
            return with_node_outputs(prof, optimized)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class OrtRuntime:
    name = "ort"
    package = "onnxruntime"
    extra = "ort"
    formats = frozenset({"onnx"})
    options: Mapping[str, OptionSpec] = {
        "opt_level": OptionSpec(
            "opt_level",
            str,
            "all",
            "graph optimisation level (disable: the model's nodes one to one)",
            OPT_LEVELS,
        ),
    }

    def versions(self) -> dict[str, str]:
        try:
            ort = _import()
        except ImportError as exc:
            raise missing(self, exc) from exc
        return {"onnxruntime": str(ort.__version__)}

    def open(
        self, model: Path, threads: int | None, options: Mapping[str, Any], input_shapes: Shapes
    ) -> OrtSession:
        try:
            ort = _import()
        except ImportError as exc:
            raise missing(self, exc) from exc
        return OrtSession(
            ort,
            str(model),
            threads,
            str(options.get("opt_level", "all")),
            input_shapes,
            error=ModelInputError,
        )
