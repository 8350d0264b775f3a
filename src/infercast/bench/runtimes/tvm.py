"""Apache TVM (``apache-tvm``, Relax): import ONNX, compile for ``llvm`` (this CPU), run on the VM.

Pipeline (apache-tvm 0.27): ``relax.frontend.onnx.from_onnx`` ->
``DecomposeOpsForInference`` -> the ``zero`` pipeline (legalise, fold constants,
fuse ops) -> ``tvm.compile(target=llvm -mcpu=<host> -num-cores=<threads>)`` ->
``relax.VirtualMachine``. With ``tune_trials`` > 0, MetaSchedule tunes the
kernels first (``relax.get_pipeline("static_shape_tuning")``: the step that took
the seed user's YOLOv3 from 39.7 ms to 28.5 ms); the trial budget is the user's,
the time budget is the run's ``--timeout``. Tuning needs ``xgboost``, ``psutil``
and ``cloudpickle`` (``infercast[tvm-tune]``), and apache-tvm-ffi < 0.1.15: with
0.1.15.post2 MetaSchedule's task initialisation segfaults in ``ToJSONGraph``
(reproduced here; the worker process reports it as a crash).

Threads: ``TVM_NUM_THREADS`` is read when TVM's thread pool starts, so it is set
before ``tvm`` is imported (each run is a fresh worker process).

Per-op times: apache-tvm 0.27 wheels have neither the graph debug executor nor
``VirtualMachine.profile``; every VM call is timed through
``VirtualMachine.set_instrument`` (before/after callbacks). A callback costs a
few microseconds, charged to the call it brackets.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from infercast.bench.inputs import InputSpec
from infercast.bench.profiles.base import OpTime, Profile
from infercast.bench.runtimes import (
    Feeds,
    ModelInputError,
    OptionSpec,
    RuntimeOptionError,
    Shapes,
    fixed_shape,
    missing,
)

_ONNX_DTYPES = {
    1: "float32",
    2: "uint8",
    3: "int8",
    5: "int16",
    6: "int32",
    7: "int64",
    9: "bool",
    10: "float16",
    11: "float64",
}
BUILTIN_PREFIX = "vm.builtin."


class TvmSession:
    def __init__(self, tvm: Any, vm: Any, specs: tuple[InputSpec, ...], meta: dict[str, Any]):
        self._tvm = tvm
        self.vm = vm
        self._specs = specs
        self.meta = meta

    def input_specs(self) -> tuple[InputSpec, ...]:
        return self._specs

    def _args(self, feeds: Feeds) -> list[Any]:
        return [self._tvm.runtime.tensor(np.ascontiguousarray(feeds[s.name])) for s in self._specs]

    def runner(self, feeds: Feeds) -> Callable[[], object]:
        args = self._args(feeds)
        main = self.vm["main"]

        def once() -> object:
            return main(*args)

        return once

    def profile(self, feeds: Feeds, runs: int, raw_dir: Path | None = None) -> Profile:
        args = self._args(feeds)
        main = self.vm["main"]
        main(*args)
        per_run: list[dict[str, tuple[float, int]]] = []
        order: list[str] = []
        starts: dict[str, int] = {}
        current: dict[str, tuple[float, int]] = {}
        clock = time.perf_counter_ns

        def instrument(func: Any, symbol: str, before: bool, ret: Any, *a: Any) -> int:
            now = clock()
            if before:
                starts[symbol] = now
            else:
                key = "vm.builtin.*" if symbol.startswith(BUILTIN_PREFIX) else symbol
                dt = (now - starts.pop(symbol, now)) * 1e-9
                t, n = current.get(key, (0.0, 0))
                current[key] = (t + dt, n + 1)
                if key not in order:
                    order.append(key)
            return 0

        wholes: list[float] = []
        self.vm.set_instrument(instrument)
        try:
            for _ in range(runs + 1):
                current = {}
                t0 = clock()
                main(*args)
                wholes.append((clock() - t0) * 1e-9)
                per_run.append(current)
        finally:
            self.vm.set_instrument(_noop)
        kept = per_run[1:] or per_run
        ops: list[OpTime] = []
        for key in order:
            vals = [r[key][0] for r in kept if key in r]
            counts = [r[key][1] for r in kept if key in r]
            ops.append(
                OpTime(
                    name=key,
                    op="vm_builtin" if key == "vm.builtin.*" else key,
                    measured_s=float(np.median(vals)),
                    count=int(np.median(counts)),
                    provider="cpu",
                )
            )
        if raw_dir is not None:
            import json

            raw_dir.mkdir(parents=True, exist_ok=True)
            (raw_dir / "tvm_vm_profile.json").write_text(
                json.dumps(
                    {
                        "runs": [{k: v[0] for k, v in r.items()} for r in per_run],
                        "whole_s": wholes,
                    }
                )
            )
        return Profile(
            source="tvm_vm_instrument",
            ops=tuple(ops),
            whole_s=float(np.median(wholes[1:] or wholes)),
            runs=len(kept),
            statistic="median",
            outside="the Python call into the VM and argument checks; instrument callbacks",
            notes=(
                "each VM call timed by VirtualMachine.set_instrument; 'vm.builtin.*' is the "
                "VM's allocation and shape-check calls together",
            ),
        )

    def close(self) -> None:
        self.vm = None


def _noop(func: Any, symbol: str, before: bool, ret: Any, *a: Any) -> int:
    return 0


class TvmRuntime:
    name = "tvm"
    package = "apache-tvm"
    extra = "tvm"
    formats = frozenset({"onnx"})
    options: Mapping[str, OptionSpec] = {
        "tune_trials": OptionSpec(
            "tune_trials",
            int,
            0,
            "MetaSchedule tuning trials over all kernels (0: no tuning, TVM's default schedules)",
        ),
    }

    def versions(self) -> dict[str, str]:
        try:
            import tvm
        except ImportError as exc:
            raise missing(self, exc) from exc
        from importlib.metadata import PackageNotFoundError, version

        out = {"apache-tvm": str(tvm.__version__)}
        with contextlib.suppress(PackageNotFoundError):
            out["apache-tvm-ffi"] = version("apache-tvm-ffi")
        return out

    def open(
        self, model: Path, threads: int | None, options: Mapping[str, Any], input_shapes: Shapes
    ) -> TvmSession:
        if threads:
            os.environ["TVM_NUM_THREADS"] = str(threads)
        try:
            import onnx
            import tvm
            from tvm import relax
            from tvm.relax.frontend.onnx import from_onnx
            from tvm.target import codegen
        except ImportError as exc:
            raise missing(self, exc) from exc
        trials = int(options.get("tune_trials", 0))
        if trials < 0:
            raise RuntimeOptionError("tvm option tune_trials must be >= 0")
        proto = onnx.load(str(model))
        init = {t.name for t in proto.graph.initializer}
        specs: list[InputSpec] = []
        for vi in proto.graph.input:
            if vi.name in init:
                continue
            tt = vi.type.tensor_type
            if tt.elem_type not in _ONNX_DTYPES:
                raise ModelInputError(
                    f"input '{vi.name}' has ONNX type {tt.elem_type}, which cannot be fed"
                )
            dims = [d.dim_value if d.HasField("dim_value") else -1 for d in tt.shape.dim]
            specs.append(
                InputSpec(
                    vi.name, fixed_shape(vi.name, dims, input_shapes), _ONNX_DTYPES[tt.elem_type]
                )
            )
        shape_dict = {s.name: list(s.shape) for s in specs}
        dtype_dict = {s.name: s.dtype for s in specs}
        mod = from_onnx(
            proto, shape_dict=shape_dict, dtype_dict=dtype_dict, keep_params_in_input=False
        )
        cores = threads or len(os.sched_getaffinity(0))
        target = tvm.target.Target(
            {"kind": "llvm", "mcpu": str(codegen.llvm_get_system_cpu()), "num-cores": cores}
        )
        meta: dict[str, Any] = {"target": str(target), "tune_trials": trials}
        if trials > 0:
            work = Path(tempfile.mkdtemp(prefix="infercast-tvm-tune-"))
            try:
                t0 = time.perf_counter()
                mod = relax.get_pipeline(
                    "static_shape_tuning",
                    total_trials=trials,
                    target=target,
                    work_dir=str(work),
                    max_trials_per_task=max(1, trials // 4),
                )(mod)
                meta["tune_s"] = time.perf_counter() - t0
            finally:
                shutil.rmtree(work, ignore_errors=True)
        else:
            with target:
                mod = relax.get_pipeline("zero")(relax.transform.DecomposeOpsForInference()(mod))
        ex = tvm.compile(mod, target=target)
        vm = relax.VirtualMachine(ex, tvm.cpu())
        return TvmSession(tvm, vm, tuple(specs), meta)
