"""TVM per-op profiles: the graph debug executor's table, and mapping TVM kernels to model nodes.

* **Debug executor** (``tvm.contrib.debugger.debug_executor.GraphModuleDebug``
  with ``dump_root``; apache/tvm ``docs/arch/debugger.rst``, "Sample Output"):
  a whitespace-aligned table ``Node Name  Ops  Time(us)  Time(%)  [Start Time
  End Time]  Shape  Inputs  Outputs``, one row per fused kernel of one run.
  Columns are cut at the header's label positions (the Shape column holds spaces).
* **Relax VM** (apache-tvm >= 0.21 has no graph executor and no ``vm.profile``
  in its wheels): infercast times every VM call through
  ``VirtualMachine.set_instrument`` (see ``bench/runtimes/tvm.py``).

TVM keeps no model node names: its kernels are named after the Relax ops they
fuse (``fused_conv2d_add_relu``, ``conv2d1``, ``mean``). :func:`map_by_order`
aligns them with the model's nodes by operator type in execution order (the
importer preserves the model's order), then fused neighbours are absorbed as
for any runtime.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from infercast.bench.profiles.base import (
    MAX_SECONDS,
    OpTime,
    Profile,
    ProfileFormatError,
    check_profile,
    number,
    read_text,
)
from infercast.errors import printable
from infercast.ir.graph import Graph

DEBUG_HEADER = re.compile(r"^\s*Node Name\s+Ops\s+Time\(us\)\s+Time\(%\)")

# Relax op name (as it appears in kernel names) -> ONNX op types it implements.
# From tvm/python/tvm/relax/frontend/onnx/onnx_frontend.py converters.
TVM_TO_ONNX: dict[str, frozenset[str]] = {
    "conv2d_transpose": frozenset({"convtranspose"}),
    "conv1d_transpose": frozenset({"convtranspose"}),
    "conv2d": frozenset({"conv"}),
    "conv1d": frozenset({"conv"}),
    "conv3d": frozenset({"conv"}),
    "matmul": frozenset({"matmul", "gemm"}),
    "dense": frozenset({"matmul", "gemm"}),
    "add": frozenset({"add", "sum", "gemm", "batchnormalization"}),
    "subtract": frozenset({"sub", "batchnormalization"}),
    "multiply": frozenset({"mul", "batchnormalization"}),
    "divide": frozenset({"div"}),
    "relu": frozenset({"relu"}),
    "clip": frozenset({"clip", "relu"}),
    "sigmoid": frozenset({"sigmoid", "hardsigmoid"}),
    "tanh": frozenset({"tanh"}),
    "exp": frozenset({"exp"}),
    "sqrt": frozenset({"sqrt"}),
    "mean": frozenset({"globalaveragepool", "reducemean"}),
    "sum": frozenset({"reducesum"}),
    "max": frozenset({"reducemax", "globalmaxpool"}),
    "adaptive_avg_pool2d": frozenset({"globalaveragepool", "averagepool"}),
    "avg_pool2d": frozenset({"averagepool"}),
    "max_pool2d": frozenset({"maxpool"}),
    "reshape": frozenset({"reshape", "flatten", "squeeze", "unsqueeze"}),
    "squeeze": frozenset({"squeeze"}),
    "expand_dims": frozenset({"unsqueeze"}),
    "transpose": frozenset({"transpose"}),
    "concatenate": frozenset({"concat"}),
    "split": frozenset({"split"}),
    "strided_slice": frozenset({"slice"}),
    "take": frozenset({"gather"}),
    "softmax": frozenset({"softmax"}),
    "log_softmax": frozenset({"logsoftmax"}),
    "pad": frozenset({"pad"}),
    "resize2d": frozenset({"resize", "upsample"}),
    "layer_norm": frozenset({"layernormalization"}),
    "astype": frozenset({"cast"}),
    "where": frozenset({"where"}),
    "power": frozenset({"pow"}),
    "erf": frozenset({"erf"}),
    "minimum": frozenset({"min"}),
    "maximum": frozenset({"max"}),
}
US = MAX_SECONDS * 1e6
_VOCAB = sorted(TVM_TO_ONNX, key=len, reverse=True)
_HEAVY = {"conv2d", "conv2d_transpose", "conv1d", "conv3d", "matmul", "dense", "conv1d_transpose"}


def kernel_ops(name: str) -> list[str]:
    """``fused_conv2d1_add1_relu1`` -> ``["conv2d", "add", "relu"]`` (known Relax ops only)."""
    s = re.sub(r"^(fused_|fuse_+)", "", name)
    out: list[str] = []
    i = 0
    while i < len(s):
        if s[i] == "_":
            i += 1
            continue
        for word in _VOCAB:
            if s.startswith(word, i):
                j = i + len(word)
                while j < len(s) and s[j].isdigit():
                    j += 1
                if j == len(s) or s[j] == "_":
                    out.append(word)
                    i = j
                    break
        else:
            j = s.find("_", i)
            i = len(s) if j < 0 else j
    return out


def map_by_order(ops: Sequence[OpTime], graph: Graph, *, window: int = 16) -> list[OpTime]:
    """Assign each kernel the model nodes it computes, by op type in execution order."""
    nodes = [n for n in graph.nodes if not n.folded]
    taken: set[int] = set()
    cursor = 0
    result: list[OpTime] = []

    def matches(node_idx: int, word: str) -> bool:
        native = nodes[node_idx].native_op.lower()
        return native in TVM_TO_ONNX.get(word, frozenset()) or native == word

    for op in ops:
        words = kernel_ops(op.op or op.name)
        if not words or op.layers:
            result.append(op)
            continue
        order = [w for w in words if w in _HEAVY] + [w for w in words if w not in _HEAVY]
        anchor: int | None = None
        for word in order:
            for k in range(cursor, min(len(nodes), cursor + window)):
                if nodes[k].index not in taken and matches(k, word):
                    anchor = k
                    break
            if anchor is not None:
                break
        if anchor is None:
            result.append(op)
            continue
        cover = [anchor]
        rest = list(words)
        for w in rest:
            if matches(anchor, w):
                rest.remove(w)
                break
        k = anchor + 1
        while rest and k < len(nodes) and k < anchor + 1 + len(words) + 2:
            if nodes[k].index in taken:
                k += 1
                continue
            hit = next((w for w in rest if matches(k, w)), None)
            if hit is None:
                break
            cover.append(k)
            rest.remove(hit)
            k += 1
        for c in cover:
            taken.add(nodes[c].index)
        cursor = anchor + 1
        idx = tuple(nodes[c].index for c in cover)
        result.append(replace(op, layers=idx, mapping="order", fused=idx[1:]))
    return result


def parse_tvm_debug(text: str, *, where: str = "profile") -> Profile:
    """Parse the graph debug executor's per-node table (one run)."""
    lines = text.splitlines()
    try:
        h = next(i for i, ln in enumerate(lines) if DEBUG_HEADER.match(ln))
    except StopIteration:
        raise ProfileFormatError(
            f"{where}: no TVM debug executor table (header 'Node Name  Ops  Time(us)  Time(%)')"
        ) from None
    header = lines[h]
    labels = [
        "Node Name",
        "Ops",
        "Time(us)",
        "Time(%)",
        "Start Time",
        "End Time",
        "Shape",
        "Inputs",
        "Outputs",
    ]
    cols = [(lab, header.find(lab)) for lab in labels if header.find(lab) >= 0]
    cols.sort(key=lambda c: c[1])
    ops: list[OpTime] = []
    for ln in lines[h + 1 :]:
        if not ln.strip():
            if ops:
                break
            continue
        if set(ln.strip()) <= {"-", " "}:
            continue
        cells: dict[str, str] = {}
        for c, (lab, pos) in enumerate(cols):
            end = cols[c + 1][1] if c + 1 < len(cols) else len(ln)
            cells[lab] = ln[pos:end].strip()
        what = f"the row {printable(ln.strip()[:60])!r}:"
        t_us = number(cells.get("Time(us)", "").replace(",", ""), f"{what} Time(us)", where, hi=US)
        extra: dict[str, object] = {}
        if cells.get("Time(%)"):
            extra["percent"] = number(cells["Time(%)"], f"{what} Time(%)", where, hi=1e6)
        if cells.get("Shape"):
            extra["shape"] = cells["Shape"]
        ops.append(
            OpTime(
                name=cells["Node Name"],
                op=cells.get("Ops", ""),
                measured_s=t_us * 1e-6,
                extra=extra,
            )
        )
    if not ops:
        raise ProfileFormatError(f"{where}: the TVM debug table has no rows")
    profile = Profile(
        source="tvm_debug",
        ops=tuple(ops),
        whole_s=None,
        runs=1,
        statistic="single run",
        notes=("the debug executor times one run, kernel by kernel, with a sync after each",),
    )
    return check_profile(profile, where)


def read_tvm_debug(path: str | Path) -> Profile:
    return parse_tvm_debug(read_text(path), where=str(path))
