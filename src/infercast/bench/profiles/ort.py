"""ONNX Runtime's profiling JSON -> :class:`Profile`.

Format (``SessionOptions.enable_profiling = True``; ``end_profiling()`` writes
the file; onnxruntime/core/common/profiler.cc): a Chrome-trace JSON array of
events ``{"cat", "pid", "tid", "dur", "ts", "ph": "X", "name", "args"}`` with
times in microseconds. ``cat == "Session"`` events include one ``model_run``
per ``InferenceSession.run``; ``cat == "Node"`` events are named
``<node>_kernel_time`` (plus ``_fence_before`` / ``_fence_after``) and carry
``args.op_name``, ``args.provider``, ``args.node_index``.

Node events are assigned to the ``model_run`` whose interval holds them; each
node's time per inference is the median over the runs kept (the first
``skip_runs`` are dropped: they include lazy initialisation). The whole time
is the median ``model_run`` duration over the same runs.
"""

from __future__ import annotations

import bisect
import json
from pathlib import Path
from typing import Any

import numpy as np

from infercast.bench.profiles.base import (
    MAX_SECONDS,
    OpTime,
    Profile,
    ProfileFormatError,
    check_op_count,
    check_profile,
    number,
    read_text,
)

KERNEL_SUFFIX = "_kernel_time"
OUTSIDE = (
    "model_run also holds feeding inputs and fetching outputs, the executor's "
    "scheduling and the fence events between nodes"
)


def _events(data: Any, where: str) -> list[dict[str, Any]]:
    if isinstance(data, dict) and isinstance(data.get("traceEvents"), list):
        data = data["traceEvents"]
    if not isinstance(data, list) or not all(isinstance(e, dict) for e in data):
        raise ProfileFormatError(
            f"{where}: not an ONNX Runtime profile (expected a JSON array of trace events)"
        )
    return data


def is_ort_profile(data: Any) -> bool:
    try:
        events = _events(data, "")
    except ProfileFormatError:
        return False
    return any(
        e.get("cat") == "Node" and str(e.get("name", "")).endswith(KERNEL_SUFFIX) for e in events
    )


def parse_ort_events(data: Any, *, skip_runs: int = 1, where: str = "profile") -> Profile:
    """Per-node median kernel time per inference, from ORT's trace events."""
    events = _events(data, where)
    kernels = [
        e
        for e in events
        if e.get("cat") == "Node" and str(e.get("name", "")).endswith(KERNEL_SUFFIX)
    ]
    if not kernels:
        raise ProfileFormatError(
            f"{where}: an ORT trace without any '*_kernel_time' node events",
            "profile with SessionOptions.enable_profiling = True and run the model at least once",
        )
    runs = sorted(
        (_us(e, "ts", where), _us(e, "ts", where) + _us(e, "dur", where), _us(e, "dur", where))
        for e in events
        if e.get("cat") == "Session" and e.get("name") == "model_run"
    )
    names: list[str] = []
    info: dict[str, tuple[str, str]] = {}
    per_run: list[dict[str, tuple[float, int]]]
    if runs:
        starts = [r[0] for r in runs]
        per_run = [{} for _ in runs]
        for e in kernels:
            ts = _us(e, "ts", where)
            k = bisect.bisect_right(starts, ts) - 1
            if k < 0 or ts > runs[k][1]:
                continue
            _add(per_run[k], names, info, e, where)
    else:
        # No model_run events (a trimmed trace): a run starts each time the first
        # kernel name comes round again.
        per_run = []
        first = str(kernels[0]["name"])
        for e in kernels:
            if str(e["name"]) == first or not per_run:
                per_run.append({})
            _add(per_run[-1], names, info, e, where)
    check_op_count(len(names), where)  # before a median per name
    n_runs = len(per_run)
    skip = min(skip_runs, n_runs - 1) if n_runs > 1 else 0
    kept = per_run[skip:]
    ops: list[OpTime] = []
    for name in names:
        vals = [r[name][0] for r in kept if name in r]
        counts = [r[name][1] for r in kept if name in r]
        if not vals:
            continue
        op_name, provider = info[name]
        first_s = per_run[0][name][0] * 1e-6 if name in per_run[0] else None
        ops.append(
            OpTime(
                name=name[: -len(KERNEL_SUFFIX)],
                op=op_name,
                measured_s=float(np.median(vals)) * 1e-6,
                count=int(np.median(counts)),
                provider=provider,
                first_s=first_s,
            )
        )
    whole = None
    if runs:
        durs = [r[2] for r in runs[skip:]]
        whole = float(np.median(durs)) * 1e-6 if durs else None
    notes = []
    if skip:
        notes.append(f"the first {skip} of {n_runs} run(s) dropped (lazy initialisation)")
    if not runs:
        notes.append("no model_run events: runs inferred from repeating node names")
    profile = Profile(
        source="onnxruntime",
        ops=tuple(ops),
        whole_s=whole,
        runs=len(kept),
        statistic="median",
        outside=OUTSIDE if whole is not None else "",
        notes=tuple(notes),
    )
    return check_profile(profile, where)


def _us(e: dict[str, Any], key: str, where: str) -> float:
    """An event's ``ts`` / ``dur`` in microseconds (``dur`` 0 when absent)."""
    if key == "dur" and key not in e:
        return 0.0
    what = f"the '{key}' of event {str(e.get('name', ''))[:60]!r}"
    return number(e.get(key), what, where, hi=MAX_SECONDS * 1e6 if key == "dur" else 1e18)


def _add(
    run: dict[str, tuple[float, int]],
    names: list[str],
    info: dict[str, tuple[str, str]],
    e: dict[str, Any],
    where: str,
) -> None:
    name = str(e["name"])
    args = e.get("args")
    args = args if isinstance(args, dict) else {}
    if name not in info:
        info[name] = (str(args.get("op_name", "")), str(args.get("provider", "")))
        names.append(name)
    dur, count = run.get(name, (0.0, 0))
    run[name] = (dur + _us(e, "dur", where), count + 1)


def read_ort_profile(path: str | Path, *, skip_runs: int = 1) -> Profile:
    p = Path(path)
    return parse_ort_events(load_json(read_text(p), str(p)), skip_runs=skip_runs, where=str(p))


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def load_json(text: str, where: str) -> Any:
    """Strict JSON (no NaN / Infinity), or a :class:`ProfileFormatError` saying why not."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise ProfileFormatError(f"{where}: JSON nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, NaN, an integer of thousands of digits
        msg = str(exc).split("; use sys.set_int_max_str_digits")[0]
        raise ProfileFormatError(f"{where}: not valid JSON ({msg[:120]})") from None


def with_node_outputs(profile: Profile, optimized_model: str | Path) -> Profile:
    """Attach to each profiled node the output tensor names it has in the graph ORT ran.

    ``optimized_model`` is that graph as ORT saved it
    (``SessionOptions.optimized_model_filepath`` on the profiling session).
    ORT's fusions (onnxruntime/core/optimizer/*_fusion.cc: QuickGelu, FusedConv,
    FusedMatMul, LayerNormalization, Gelu, ...) name the new node themselves but
    give it the output tensor of the last node they replace, so the outputs map a
    fused kernel back to the model (``extra["outputs"]``). Without the file (a
    model ORT cannot save), the profile is returned unchanged.
    """
    from dataclasses import replace

    try:
        import onnx

        model = onnx.load(str(optimized_model), load_external_data=False)
    except Exception:
        return profile
    outputs = {n.name: tuple(o for o in n.output if o) for n in model.graph.node}
    ops = tuple(
        replace(o, extra={**o.extra, "outputs": list(outputs[o.name])}) if o.name in outputs else o
        for o in profile.ops
    )
    return replace(profile, ops=ops)
