"""Per-op profile records, and mapping a profiler's node names back to the model's nodes.

A runtime measures what it executes, which is not always what the model file
holds: ONNX Runtime fuses Conv+Relu and rewrites convolutions into its NCHWc
layout (``<output>_nchwc``), inserts ``ReorderInput``/``ReorderOutput`` nodes;
TVM fuses operators into ``fused_conv2d_add_relu``; a TFLite delegate runs many
ops as one node. Each measured entry therefore carries the model nodes it covers
(``layers``, the first being the *anchor*) and how that was decided
(``mapping``); entries that match no model node keep ``layers == ()`` and are
reported as unmapped with their time, never dropped.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from infercast.errors import MAX_NODES, InfercastError, printable, regular_file
from infercast.ir.graph import Graph


class ProfileFormatError(InfercastError):
    """A profile file is not in the format it claims (or any format infercast reads)."""


MAX_PROFILE_BYTES = 64 << 20
"""Largest profile file read (an ONNX Runtime trace of 1,000 nodes x 100 runs is ~30 MB).
A 95 MiB trace of 3,000 runs took 5.2 s of CPU and 706 MB to import; every command
ends within 20 s and 1.5 GiB (issue 14)."""
MAX_PROFILE_OPS = MAX_NODES
"""Most distinct operators a profile may name: no more than the largest model read has
(a 30 MB trace naming 300,000 took 17 s of CPU and 1.4 GB to import)."""
MAX_SECONDS = 1e6
"""Largest time a profile may state for one op or one inference (11.6 days)."""
MAX_COUNT = 10**9
"""Largest call or run count a profile may state."""


def read_text(path: str | Path) -> str:
    """A profile file's text, or a :class:`ProfileFormatError` saying why not.

    Only regular files of at most :data:`MAX_PROFILE_BYTES` are read (a FIFO or a
    device would block or never end)."""
    p = Path(path)
    regular_file(p, ProfileFormatError, max_bytes=MAX_PROFILE_BYTES)
    try:
        return p.read_text(errors="replace")
    except OSError as exc:
        raise ProfileFormatError(f"{p}: cannot be read ({exc.strerror})") from None


def number(
    value: object, what: str, where: str, *, integer: bool = False, hi: float = MAX_SECONDS
) -> float:
    """``value`` (a JSON number or a table cell) as a finite number in [0, hi], or a
    :class:`ProfileFormatError` naming ``what`` (NaN, negative times, 5,000-digit
    integers and words are not times)."""
    v: float | None = None
    if isinstance(value, bool):
        v = None
    elif isinstance(value, int):
        v = float(value) if abs(value) <= 10**18 else math.inf
    elif isinstance(value, float):
        v = value
    elif isinstance(value, str) and len(value.strip()) <= 64:
        try:
            v = float(value.strip())
        except ValueError:
            v = None
    if v is None or not math.isfinite(v) or v < 0 or v > hi or (integer and v != int(v)):
        shown = (
            repr(value) if not isinstance(value, int) or abs(value) < 10**18 else "a huge number"
        )
        kind = "a non-negative integer" if integer else "a non-negative number"
        raise ProfileFormatError(
            f"{where}: {what} must be {kind} of at most {hi:g}, got {printable(shown[:40])}",
            "the profile is corrupt or edited; re-export it from the runtime",
        )
    return v


def count(value: object, what: str, where: str) -> int:
    """A call or run count: a non-negative integer of at most :data:`MAX_COUNT`."""
    return int(number(value, what, where, integer=True, hi=MAX_COUNT))


def check_op_count(n: int, where: str) -> None:
    """Refuse a profile naming more than :data:`MAX_PROFILE_OPS` operators."""
    if n > MAX_PROFILE_OPS:
        raise ProfileFormatError(
            f"{where}: names {n} operators; profiles of at most {MAX_PROFILE_OPS} are read",
            "the profile is corrupt or of another model; re-export it from the runtime",
        )


def check_profile(profile: Profile, where: str) -> Profile:
    """``profile`` if every figure in it is a finite, non-negative, sane number."""
    check_op_count(len(profile.ops), where)
    for i, op in enumerate(profile.ops):
        row = f"entry {i + 1} ({op.name[:40]!r})"
        number(op.measured_s, f"{row}: the time", where)
        number(op.count, f"{row}: the call count", where, integer=True, hi=MAX_COUNT)
        if op.first_s is not None:
            number(op.first_s, f"{row}: the first-run time", where)
    if profile.whole_s is not None:
        number(profile.whole_s, "the whole-inference time", where)
    number(profile.runs, "the run count", where, integer=True, hi=MAX_COUNT)
    return profile


MAPPING_KINDS = {
    "name": "profiler node name equals the model node's name",
    "output": "profiler node name is (derived from) the name of the model node's output tensor",
    "fused_output": "a runtime-made (fused) kernel, mapped by the tensor it writes, which is "
    "the output of the last model node it replaced",
    "order": "matched by operator type in execution order (the profiler keeps no model names)",
    "index": "the profiler reports the model's operator index",
    "": "not mapped to a model node (inserted by the runtime, or an unknown name)",
}


@dataclass(frozen=True)
class OpTime:
    """Time of one measured unit (a kernel, a fused function, a delegate node) per inference."""

    name: str
    op: str
    measured_s: float
    count: int = 1
    """Times the unit ran per inference (in a loop body, more than once)."""
    provider: str = ""
    """Execution provider, delegate or device that ran it (``CPUExecutionProvider``...)."""
    layers: tuple[int, ...] = ()
    """Model node indices covered; the first is the anchor. Empty: unmapped."""
    mapping: str = ""
    fused: tuple[int, ...] = ()
    """Of ``layers``, those absorbed because the runtime fused them into this unit."""
    first_s: float | None = None
    """Time of this unit in the first inference, where the profiler reports it."""
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "name": self.name,
            "op": self.op,
            "measured_s": self.measured_s,
            "count": self.count,
            "provider": self.provider,
            "layers": list(self.layers),
            "mapping": self.mapping,
            "fused": list(self.fused),
        }
        if self.first_s is not None:
            d["first_s"] = self.first_s
        if self.extra:
            d["extra"] = self.extra
        return d

    @staticmethod
    def from_dict(d: dict[str, Any]) -> OpTime:
        return OpTime(
            name=str(d["name"]),
            op=str(d.get("op", "")),
            measured_s=float(d["measured_s"]),
            count=int(d.get("count", 1)),
            provider=str(d.get("provider", "")),
            layers=tuple(int(i) for i in d.get("layers", ())),
            mapping=str(d.get("mapping", "")),
            fused=tuple(int(i) for i in d.get("fused", ())),
            first_s=None if d.get("first_s") is None else float(d["first_s"]),
            extra=dict(d.get("extra") or {}),
        )


@dataclass(frozen=True)
class Profile:
    """What one profiler said about one model: per-unit times per inference, in seconds."""

    source: str
    """``onnxruntime`` | ``tflite_benchmark_model`` | ``tvm_vm_instrument`` | ``tvm_debug`` |
    ``litert_single_op``."""
    ops: tuple[OpTime, ...]
    whole_s: float | None = None
    """Whole-inference time measured by the same profiler in the same runs, if it reports one."""
    runs: int = 0
    """Inferences the per-op figures are taken over (0: not stated by the source)."""
    statistic: str = "median"
    """How per-run times were combined: ``median`` (ours) or ``mean`` (as the tool reports)."""
    outside: str = ""
    """What ``whole_s`` holds besides the listed ops (copies, fences, executor overhead)."""
    notes: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def ops_total_s(self) -> float:
        return sum(o.measured_s for o in self.ops)

    @property
    def sum_vs_whole(self) -> float | None:
        """Sum of per-op times divided by the whole-inference time (1.0 = all accounted for)."""
        if not self.whole_s:
            return None
        return self.ops_total_s / self.whole_s

    def unmapped(self) -> list[OpTime]:
        return [o for o in self.ops if not o.layers]

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "whole_s": self.whole_s,
            "runs": self.runs,
            "statistic": self.statistic,
            "ops_total_s": self.ops_total_s,
            "sum_vs_whole": self.sum_vs_whole,
            "outside": self.outside,
            "notes": list(self.notes),
            "meta": self.meta,
            "ops": [o.to_dict() for o in self.ops],
        }

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Profile:
        return Profile(
            source=str(d["source"]),
            ops=tuple(OpTime.from_dict(o) for o in d.get("ops", ())),
            whole_s=None if d.get("whole_s") is None else float(d["whole_s"]),
            runs=int(d.get("runs", 0)),
            statistic=str(d.get("statistic", "median")),
            outside=str(d.get("outside", "")),
            notes=tuple(d.get("notes", ())),
            meta=dict(d.get("meta") or {}),
        )


# --------------------------------------------------------------------------- #
# Name mapping
# --------------------------------------------------------------------------- #

# Suffixes ONNX Runtime appends when it rewrites a node (NCHWc layout transformer,
# fusions that name the new node after the old one, graph partitioning tokens).
_RUNTIME_SUFFIXES = re.compile(r"(_nchwc|_token_\d+|_fused|/fused|/[A-Za-z]+Fusion/?)+$")
"""``/QuickGeluFusion/``, ``/GatherSliceToSplitFusion``: ORT's transformers name a fused
node ``<replaced node's name>/<Transformer name>/`` (onnxruntime/core/optimizer/
quick_gelu_fusion.cc and siblings name it with ``graph.GenerateNodeName``)."""


def _candidates(name: str) -> list[str]:
    out = [name]
    stripped = _RUNTIME_SUFFIXES.sub("", name)
    if stripped != name:
        out.append(stripped)
    return out


def map_by_name(ops: Sequence[OpTime], graph: Graph) -> list[OpTime]:
    """Set ``layers`` of each entry whose name is a node's name or one of its outputs'."""
    by_name = {n.name: n.index for n in graph.nodes}
    by_output = {out: n.index for n in graph.nodes for out in n.outputs if out}
    result: list[OpTime] = []
    taken: set[int] = set()
    for op in ops:
        if op.layers:
            result.append(op)
            taken.update(op.layers)
            continue
        idx: int | None = None
        how = ""
        for cand in _candidates(op.name):
            if cand in by_name and by_name[cand] not in taken:
                idx, how = by_name[cand], "name"
                break
            if cand in by_output and by_output[cand] not in taken:
                idx, how = by_output[cand], "output"
                break
        if idx is None:
            # A fused kernel the runtime named itself (ORT's QuickGelu, FusedConv, ...)
            # writes the tensor of the last node it replaced: map it there; the other
            # replaced nodes are absorbed into it by absorb_fused.
            for out in (c for o in op.extra.get("outputs", ()) for c in _candidates(str(o))):
                if out in by_output and by_output[out] not in taken:
                    idx, how = by_output[out], "fused_output"
                    break
        if idx is None:
            result.append(op)
        else:
            taken.add(idx)
            result.append(replace(op, layers=(idx,), mapping=how))
    return result


def absorb_fused(ops: Sequence[OpTime], graph: Graph) -> tuple[list[OpTime], list[int]]:
    """Attach model nodes the profile does not list to the measured unit they were fused into.

    A node absent from the profile is taken as fused into a neighbour when the
    neighbour is measured and the two are joined by a private edge: either all
    of the node's (non-constant) outputs are read only by nodes of one measured
    unit (it was fused *forward*: Conv into a Conv+Relu named after the Relu), or
    it reads only outputs of one measured unit that nobody else reads (fused
    *backward*: Relu into a FusedConv named after the Conv). Repeated to a fixed
    point, so chains (Conv -> BatchNorm -> Relu) are absorbed whole. Returns the
    updated entries and the model nodes still unaccounted for.
    """
    owner: dict[int, int] = {}
    for k, op in enumerate(ops):
        for i in op.layers:
            owner[i] = k
    extra: dict[int, list[int]] = {k: [] for k in range(len(ops))}
    consumers = graph.consumers
    producers = graph.producers
    outputs = set(graph.outputs)

    def _is_activation(name: str) -> bool:
        t = graph.tensors.get(name)
        return bool(name) and t is not None and not t.is_constant

    changed = True
    while changed:
        changed = False
        for node in graph.nodes:
            if node.index in owner:
                continue
            outs = [o for o in node.outputs if _is_activation(o)]
            readers = {c for o in outs for c in consumers.get(o, ())}
            owners = {owner.get(c) for c in readers}
            if (
                outs
                and readers
                and None not in owners
                and len(owners) == 1
                and not (set(outs) & outputs)
            ):
                fwd = next(iter(owners))
                assert fwd is not None
                owner[node.index] = fwd
                extra[fwd].append(node.index)
                changed = True
                continue
            ins = [i for i in node.inputs if _is_activation(i) and i in producers]
            srcs = {producers[i] for i in ins}
            src_owners = {owner.get(s) for s in srcs}
            if (
                ins
                and None not in src_owners
                and len(src_owners) == 1
                and all(set(consumers.get(i, ())) == {node.index} for i in ins)
            ):
                back = next(iter(src_owners))
                assert back is not None
                owner[node.index] = back
                extra[back].append(node.index)
                changed = True
    result = []
    for k, op in enumerate(ops):
        if extra[k]:
            fused = tuple(sorted(extra[k]))
            result.append(replace(op, layers=(*op.layers, *fused), fused=(*op.fused, *fused)))
        else:
            result.append(op)
    missing = [n.index for n in graph.nodes if n.index not in owner]
    return result, missing


def map_profile(profile: Profile, graph: Graph, *, fuse: bool = True) -> tuple[Profile, list[int]]:
    """Map ``profile`` onto ``graph`` by names, then absorb fused nodes (see :func:`absorb_fused`).

    Returns the mapped profile and the indices of model nodes the profile does not
    account for (neither measured nor fused into a measured unit).
    """
    ops = map_by_name(profile.ops, graph)
    if fuse:
        ops, missing = absorb_fused(ops, graph)
    else:
        covered = {i for o in ops for i in o.layers}
        missing = [n.index for n in graph.nodes if n.index not in covered]
    return replace(profile, ops=tuple(ops)), missing


def merge_counts(ops: Iterable[OpTime]) -> list[OpTime]:
    """Combine entries with the same name (a node run several times per inference)."""
    acc: dict[str, OpTime] = {}
    order: list[str] = []
    for op in ops:
        if op.name in acc:
            prev = acc[op.name]
            acc[op.name] = replace(
                prev, measured_s=prev.measured_s + op.measured_s, count=prev.count + op.count
            )
        else:
            acc[op.name] = op
            order.append(op.name)
    return [acc[n] for n in order]
