"""Reading back an ``infercast bench -f json`` result (``infercast.bench/1``): its per-op
profile, the model it measured and the target of the board it ran on -- what
``infercast calibrate --target T --from RESULT.json`` needs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infercast.bench.profiles.base import OpTime, Profile, ProfileFormatError, read_text

SCHEMA = "infercast.bench/1"


@dataclass(frozen=True)
class BenchResult:
    path: str
    model: str
    target: str | None
    """The target of the board it ran on (``environment.remote.target``), if any."""
    profile: Profile | None


def _load(path: str | Path) -> Any:
    text = read_text(path)
    if not text.lstrip().startswith("{"):
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def is_bench_result(path: str | Path) -> bool:
    data = _load(path)
    return isinstance(data, dict) and data.get("schema") == SCHEMA


def read_bench_result(path: str | Path) -> BenchResult:
    """The profiled run's per-op times (``profile`` rows, already mapped to layers)."""
    data = _load(path)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ProfileFormatError(f"{path}: not an infercast bench result ({SCHEMA})")
    remote = (data.get("environment") or {}).get("remote") or {}
    prof: Profile | None = None
    i = data.get("profile_run")
    if isinstance(i, int) and data.get("profile"):
        summary = data["runs"][i].get("profile_summary") or {}
        ops = tuple(
            OpTime(
                name=str(r["name"]),
                op=str(r.get("op", "")),
                measured_s=float(r["measured_s"]),
                count=int(r.get("count") or 1),
                provider=str(r.get("provider") or ""),
                layers=tuple(int(x) for x in r.get("layers") or ()),
                mapping=str(r.get("mapping") or ""),
            )
            for r in data["profile"]
        )
        prof = Profile(
            source=str(summary.get("source") or "infercast_bench"),
            ops=ops,
            whole_s=summary.get("profile_whole_s"),
            runs=int(summary.get("runs") or 0),
            statistic=str(summary.get("statistic") or "median"),
            outside=str(summary.get("outside") or ""),
        )
    return BenchResult(str(path), str(data.get("model", "")), remote.get("target"), prof)


def result_models(paths: Sequence[str | Path], target: str, extends: str | None) -> list[str]:
    """The models of bench results ``paths`` measured on boards of ``target`` ([] unless all
    are bench results); a result from another target's board is an error."""
    if not paths or not all(is_bench_result(p) for p in paths):
        return []
    out = []
    for p in paths:
        r = read_bench_result(p)
        if r.target and r.target not in (target, extends):
            raise ProfileFormatError(
                f"{p} was measured on a board of target {r.target}, not {target}",
                f"calibrate --target {r.target}",
            )
        if r.profile is None:
            raise ProfileFormatError(
                f"{p} holds no per-op profile", "run infercast bench with --profile"
            )
        out.append(r.model)
    return out
