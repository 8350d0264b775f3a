"""TFLite / LiteRT ``benchmark_model --enable_op_profiling=true`` output -> :class:`Profile`.

Formats (tensorflow/core/util/stats_calculator.cc, ``HeaderString`` /
``ColumnString``; tensorflow/lite/profiling/profile_summary_formatter.cc;
tensorflow/lite/tools/benchmark/profiling_listener.cc):

* text: after the line ``Operator-wise Profiling Info for Regular Benchmark
  Runs:`` (maybe prefixed ``INFO: ``), a ``Run Order`` table with columns
  ``[node type] [start] [first] [avg ms] [%] [cdf%] [mem KB] [times called]
  [Name]`` (``[start]`` was dropped in later TensorFlow versions);
* CSV (``--op_profiling_output_mode=csv``): the same columns as a header line
  ``node type, start, first, avg_ms, %, cdf%, mem KB, times called, name``.

``avg ms`` is the mean time of *one call* of the node (``rel_end_us.avg()``);
``times called`` the calls per run. The time per inference is their product.
``Name`` is ``[output tensor names]:node index`` for an interpreter node, or
``Delegate/<kernel>:<index>`` for a delegate's internal op. The whole-inference
time is the tool's ``Inference (avg)`` (text output only), averaged over the
same profiled runs.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from infercast.bench.profiles.base import (
    MAX_SECONDS,
    OpTime,
    Profile,
    ProfileFormatError,
    check_profile,
    count,
    number,
    read_text,
)
from infercast.errors import printable
from infercast.ir.graph import Graph

SECTION = "Operator-wise Profiling Info for Regular Benchmark Runs:"
OUTSIDE = (
    "Inference (avg) also holds the interpreter's dispatch between ops and the "
    "profiler's own timing calls"
)
_NUM = r"-?[\d.]+(?:e[-+]?\d+)?"
_ROW_WITH_START = re.compile(
    rf"^\s*(?P<type>.+?)\s+(?P<start>{_NUM})\s+(?P<first>{_NUM})\s+(?P<avg>{_NUM})\s+"
    rf"(?P<pct>{_NUM})%\s+(?P<cdf>{_NUM})%\s+(?P<mem>{_NUM})\s+(?P<called>\d+)\s+(?P<name>\S.*?)\s*$"
)
_ROW = re.compile(
    rf"^\s*(?P<type>.+?)\s+(?P<first>{_NUM})\s+(?P<avg>{_NUM})\s+"
    rf"(?P<pct>{_NUM})%\s+(?P<cdf>{_NUM})%\s+(?P<mem>{_NUM})\s+(?P<called>\d+)\s+(?P<name>\S.*?)\s*$"
)
_INFERENCE_AVG = re.compile(rf"Inference \(avg\):\s*(?P<us>{_NUM})")
_FIRST = re.compile(rf"First inference:\s*(?P<us>{_NUM})")
_TIMINGS = re.compile(r"Timings \(microseconds\):\s*count=(?P<count>\d+)")
_SUBGRAPH = re.compile(r"Subgraph \(index: (?P<i>\d{1,9})\)")
_NODE_INDEX = re.compile(r":(?P<i>\d{1,9})$")
MS = MAX_SECONDS * 1e3
_INIT_KEYS = ("Num threads", "Graph", "Use xnnpack", "#threads used for CPU inference")


def looks_like_tflite_benchmark(text: str) -> bool:
    return SECTION in text


def _strip_info(line: str) -> str:
    return line[6:] if line.startswith("INFO: ") else line


def _op(
    node_type: str,
    first_ms: float,
    avg_ms: float,
    called: int,
    name: str,
    provider: str,
    percent: float | None = None,
) -> OpTime:
    extra: dict[str, object] = {}
    if percent is not None:
        extra["percent"] = percent
    m = _NODE_INDEX.search(name)
    if m and not name.startswith("Delegate/"):
        extra["node_index"] = int(m.group("i"))
    body = name[: m.start()] if m else name
    if body.startswith("[") and body.endswith("]"):
        extra["outputs"] = [s.strip() for s in body[1:-1].split(", ") if s.strip()]
    return OpTime(
        name=name,
        op=node_type.strip(),
        measured_s=avg_ms * called / 1000.0,
        count=called,
        provider=provider,
        first_s=first_ms / 1000.0,
        extra=extra,
    )


def parse_tflite_benchmark(text: str, *, where: str = "profile") -> Profile:
    """Parse the text or CSV output of ``benchmark_model --enable_op_profiling=true``."""
    lines = [_strip_info(ln.rstrip("\n")) for ln in text.splitlines()]
    try:
        start = next(i for i, ln in enumerate(lines) if ln.strip() == SECTION)
    except StopIteration:
        raise ProfileFormatError(
            f"{where}: no '{SECTION}' section",
            "run benchmark_model with --enable_op_profiling=true and save its whole output",
        ) from None
    ops: list[OpTime] = []
    runs = 0
    table: str | None = None
    fmt: str | None = None
    header_cols: list[str] = []
    provider = ""
    subgraph = 0
    for ln in lines[start + 1 :]:
        s = ln.strip()
        if s.startswith("=============================="):
            table = s.strip("= ").strip()
            fmt = None
            continue
        if s.startswith("Delegate internal:"):
            provider = "delegate internal"
            continue
        m = _SUBGRAPH.search(s)
        if m and not s.startswith("Subgraph (index: " + m.group("i") + ") Timings"):
            subgraph = int(m.group("i"))
            continue
        m = _TIMINGS.search(s)
        if m and subgraph == 0 and provider == "":
            runs = max(runs, count(m.group("count"), "Timings count", where))
            continue
        if table != "Run Order" or not s:
            continue
        if s.startswith("[node type]"):
            fmt = "text_start" if "[start]" in s else "text"
            continue
        if s.lower().startswith("node type,"):
            fmt = "csv"
            header_cols = [c.strip().lower() for c in s.split(",")]
            continue
        sub_provider = provider or ("" if subgraph == 0 else f"subgraph {subgraph}")
        if fmt in ("text", "text_start"):
            rx = _ROW_WITH_START if fmt == "text_start" else _ROW
            row = rx.match(ln)
            if row is None:
                raise ProfileFormatError(
                    f"{where}: cannot read the profile row {printable(s[:80])!r}"
                )
            what = f"the row {printable(s[:60])!r}:"
            ops.append(
                _op(
                    row["type"],
                    number(row["first"], f"{what} first", where, hi=MS),
                    number(row["avg"], f"{what} avg ms", where, hi=MS),
                    count(row["called"], f"{what} times called", where),
                    row["name"],
                    sub_provider,
                    number(row["pct"], f"{what} %", where, hi=1e6),
                )
            )
        elif fmt == "csv":
            ops.append(_csv_row(s, header_cols, sub_provider, where))
    if not ops:
        raise ProfileFormatError(f"{where}: the '{SECTION}' section has no Run Order rows")
    whole = None
    first = None
    for ln in lines[:start]:
        m = _INFERENCE_AVG.search(ln)
        if m:
            whole = number(m.group("us"), "Inference (avg)", where, hi=MS * 1e3) * 1e-6
        m = _FIRST.search(ln)
        if m:
            first = number(m.group("us"), "First inference", where, hi=MS * 1e3) * 1e-6
    notes: list[str] = []
    if any(o.provider == "delegate internal" for o in ops):
        notes.append(
            "'Delegate internal' rows are the delegate's own kernels, inside the delegate "
            "node's time: they are not added to the interpreter's rows"
        )
    meta: dict[str, object] = {"first_inference_s": first}
    for ln in lines[:start]:
        for key in _INIT_KEYS:
            if ln.startswith(key + ":"):
                meta[key] = ln.split(":", 1)[1].strip().strip("[]")
    profile = Profile(
        source="tflite_benchmark_model",
        ops=tuple(ops),
        whole_s=whole,
        runs=runs,
        statistic="mean",
        outside=OUTSIDE if whole is not None else "",
        notes=tuple(notes),
        meta=meta,
    )
    return check_profile(profile, where)


def _csv_row(line: str, header: list[str], provider: str, where: str) -> OpTime:
    """One CSV row. The node type may hold commas ("Convolution (NHWC, F32) IGEMM"):
    the row is anchored on its two percentage columns instead of split blindly."""
    parts = line.split(",")  # stats_calculator.cc writes no quotes: split, then re-join text
    try:
        k = header.index("%")
        first_col = header.index("first")
    except ValueError:
        raise ProfileFormatError(f"{where}: CSV header without '%' / 'first' columns") from None
    j = next(
        (
            i
            for i in range(len(parts) - 1)
            if parts[i].strip().endswith("%") and parts[i + 1].strip().endswith("%")
        ),
        None,
    )
    if j is None:
        raise ProfileFormatError(
            f"{where}: cannot read the CSV profile row {printable(line[:80])!r}"
        )
    type_end = j - (k - 1)  # columns between node type and '%' keep their places
    if type_end < 1:
        raise ProfileFormatError(
            f"{where}: cannot read the CSV profile row {printable(line[:80])!r}"
        )
    node_type = ",".join(parts[:type_end]).strip()
    fields = [f.strip() for f in parts[type_end:]]
    raw_fields = parts[type_end:]
    off = first_col - 1
    what = f"the CSV row {printable(line[:60])!r}:"
    try:
        first_ms = number(fields[off], f"{what} first", where, hi=MS)
        avg_ms = number(fields[off + 1], f"{what} avg_ms", where, hi=MS)
        percent = number(fields[k - 1].strip().rstrip("%"), f"{what} %", where, hi=1e6)
        called = count(fields[k - 1 + 3], f"{what} times called", where)
    except IndexError:
        raise ProfileFormatError(
            f"{where}: cannot read the CSV profile row {printable(line[:80])!r}"
        ) from None
    name = ",".join(raw_fields[k - 1 + 4 :]).strip()
    return _op(node_type, first_ms, avg_ms, called, name, provider, percent)


def read_tflite_benchmark(path: str | Path) -> Profile:
    return parse_tflite_benchmark(read_text(path), where=str(path))


def map_tflite(profile: Profile, graph: Graph) -> tuple[Profile, list[str]]:
    """Attach each interpreter node to the model operator it ran.

    A row is mapped by its output tensor names when they are the model's, else by
    its node index when the operator there has the same type (``CONV_2D``...).
    Delegate nodes and their internal kernels stay unmapped. Returns the mapped
    profile and one line per row whose index names an operator of another type.
    """
    by_output = {out: n.index for n in graph.nodes for out in n.outputs if out}
    mismatches: list[str] = []
    out: list[OpTime] = []
    taken: set[int] = set()
    for op in profile.ops:
        names = op.extra.get("outputs")
        idx: int | None = None
        how = ""
        if isinstance(names, list) and names and all(n in by_output for n in names):
            idx, how = by_output[names[0]], "output"
        else:
            ni = op.extra.get("node_index")
            if isinstance(ni, int) and 0 <= ni < len(graph.nodes) and op.provider == "":
                node = graph.nodes[ni]
                if node.native_op == op.op:
                    idx, how = ni, "index"
                else:
                    mismatches.append(
                        f"profile node {ni} is {op.op} but the model's operator {ni} is "
                        f"{node.native_op}: left unmapped (a different model or converter?)"
                    )
        if idx is None or idx in taken:
            out.append(op)
        else:
            taken.add(idx)
            out.append(replace(op, layers=(idx,), mapping=how))
    return replace(profile, ops=tuple(out)), mismatches
