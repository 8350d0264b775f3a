"""ONNX Runtime, CPU execution provider.

Options: ``opt_level`` -- the session's graph optimisation level
(``all`` = ORT_ENABLE_ALL, the default; ``extended``; ``basic``; ``disable`` =
ORT_DISABLE_ALL, which keeps the model's nodes one to one, so the per-op
profile maps exactly). Threads set ``intra_op_num_threads``; the executor is
sequential with one inter-op thread.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from infercast.bench.inputs import InputSpec
from infercast.bench.profiles.base import Profile
from infercast.bench.profiles.ort import read_ort_profile, with_node_outputs
from infercast.bench.runtimes import (
    Feeds,
    ModelInputError,
    OptionSpec,
    Shapes,
    fixed_shape,
    missing,
)

# onnxruntime type strings -> numpy dtype names.
_DTYPES = {
    "tensor(float)": "float32",
    "tensor(float16)": "float16",
    "tensor(double)": "float64",
    "tensor(int8)": "int8",
    "tensor(uint8)": "uint8",
    "tensor(int16)": "int16",
    "tensor(uint16)": "uint16",
    "tensor(int32)": "int32",
    "tensor(uint32)": "uint32",
    "tensor(int64)": "int64",
    "tensor(uint64)": "uint64",
    "tensor(bool)": "bool",
}
OPT_LEVELS = ("all", "extended", "basic", "disable")


def _import() -> Any:
    import onnxruntime

    return onnxruntime


class OrtSession:
    def __init__(
        self, ort: Any, model: Path, make_options: Callable[[], Any], input_shapes: Shapes
    ) -> None:
        self._ort = ort
        self._model = model
        self._make_options = make_options
        self._input_shapes = input_shapes
        self.sess = ort.InferenceSession(
            str(model), make_options(), providers=["CPUExecutionProvider"]
        )

    def input_specs(self) -> tuple[InputSpec, ...]:
        specs = []
        for i in self.sess.get_inputs():
            if i.type not in _DTYPES:
                raise ModelInputError(f"input '{i.name}' has type {i.type}, which cannot be fed")
            specs.append(
                InputSpec(i.name, fixed_shape(i.name, i.shape, self._input_shapes), _DTYPES[i.type])
            )
        return tuple(specs)

    def runner(self, feeds: Feeds) -> Callable[[], object]:
        run = self.sess.run
        bound = dict(feeds)

        def once() -> object:
            return run(None, bound)

        return once

    def profile(self, feeds: Feeds, runs: int, raw_dir: Path | None = None) -> Profile:
        """A second session with profiling on; ``runs`` + 1 inferences, the first dropped."""
        tmp = Path(tempfile.mkdtemp(prefix="infercast-ort-"))
        try:
            so = self._make_options()
            so.enable_profiling = True
            so.profile_file_prefix = str(tmp / "ort_profile")
            # The graph ORT actually runs (after its fusions), to map kernels it named
            # itself (QuickGelu, FusedConv, ...) to the model nodes they replace.
            so.optimized_model_filepath = str(tmp / "optimized.onnx")
            sess = self._ort.InferenceSession(
                str(self._model), so, providers=["CPUExecutionProvider"]
            )
            bound = dict(feeds)
            for _ in range(runs + 1):
                sess.run(None, bound)
            path = Path(sess.end_profiling())
            if raw_dir is not None:
                raw_dir.mkdir(parents=True, exist_ok=True)
                shutil.copy(path, raw_dir / path.name)
            return with_node_outputs(read_ort_profile(path, skip_runs=1), tmp / "optimized.onnx")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def close(self) -> None:
        self.sess = None


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
        level = {
            "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
            "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
            "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
            "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        }[str(options.get("opt_level", "all"))]

        def make_options() -> Any:
            so = ort.SessionOptions()
            so.graph_optimization_level = level
            so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            so.inter_op_num_threads = 1
            if threads:
                so.intra_op_num_threads = threads
            so.log_severity_level = 3
            return so

        return OrtSession(ort, model, make_options, input_shapes)
