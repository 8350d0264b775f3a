"""An ONNX Runtime session on the CPU execution provider.

Shipped to the board as is by :mod:`infercast.bench.remote` (standard library
and numpy, plus the board's ``onnxruntime``; Python 3.8 syntax); the local
adapter (:mod:`infercast.bench.runtimes.ort`) is this class plus reading the
profile, so both run a model the same way.

``opt_level``: the session's graph optimisation level (``all`` =
ORT_ENABLE_ALL; ``extended``; ``basic``; ``disable`` = ORT_DISABLE_ALL, which
keeps the model's nodes one to one). Threads set ``intra_op_num_threads``; the
executor is sequential with one inter-op thread.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import TYPE_CHECKING, Any

from .inputgen import InputSpec, fixed_shape

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    import numpy as np

# onnxruntime type strings -> numpy dtype names.
DTYPES = {
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


class OrtCoreSession:
    def __init__(
        self,
        ort: Any,
        model: str,
        threads: int | None,
        opt_level: str,
        input_shapes: Mapping[str, Sequence[int]],
        error: type[Exception] = ValueError,
    ) -> None:
        self._ort = ort
        self._model = model
        self._threads = threads
        self._level = {
            "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
            "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
            "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
            "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        }[opt_level]
        self._input_shapes = input_shapes
        self._error = error
        self.meta: dict[str, Any] = {}
        self.sess = ort.InferenceSession(
            model, self.make_options(), providers=["CPUExecutionProvider"]
        )

    def make_options(self) -> Any:
        so = self._ort.SessionOptions()
        so.graph_optimization_level = self._level
        so.execution_mode = self._ort.ExecutionMode.ORT_SEQUENTIAL
        so.inter_op_num_threads = 1
        if self._threads:
            so.intra_op_num_threads = self._threads
        so.log_severity_level = 3
        return so

    def input_specs(self) -> tuple[InputSpec, ...]:
        specs = []
        for i in self.sess.get_inputs():
            if i.type not in DTYPES:
                raise self._error(f"input '{i.name}' has type {i.type}, which cannot be fed")
            shape = fixed_shape(i.name, i.shape, self._input_shapes, self._error)
            specs.append(InputSpec(i.name, shape, DTYPES[i.type]))
        return tuple(specs)

    def runner(self, feeds: Mapping[str, np.ndarray[Any, Any]]) -> Callable[[], object]:
        run = self.sess.run
        bound = dict(feeds)

        def once() -> object:
            return run(None, bound)

        return once

    def profile_json(
        self,
        feeds: Mapping[str, np.ndarray[Any, Any]],
        runs: int,
        keep_in: str | None = None,
        optimized_to: str | None = None,
    ) -> str:
        """ORT's profiling JSON of ``runs`` + 1 inferences in a second session (its text).

        ``keep_in``: also copy the file into that folder. ``optimized_to``: also save
        the graph ORT runs (after its fusions) there, to map the kernels it named
        itself (QuickGelu, FusedConv, ...) to the model nodes they replace.
        """
        tmp = tempfile.mkdtemp(prefix="infercast-ort-")
        try:
            so = self.make_options()
            so.enable_profiling = True
            so.profile_file_prefix = os.path.join(tmp, "ort_profile")
            if optimized_to is not None:
                so.optimized_model_filepath = optimized_to
            sess = self._ort.InferenceSession(self._model, so, providers=["CPUExecutionProvider"])
            bound = dict(feeds)
            for _ in range(runs + 1):
                sess.run(None, bound)
            path = sess.end_profiling()
            if keep_in is not None:
                os.makedirs(keep_in, exist_ok=True)
                shutil.copy(path, os.path.join(keep_in, os.path.basename(path)))
            with open(path, encoding="utf-8") as fh:
                return fh.read()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def close(self) -> None:
        self.sess = None
