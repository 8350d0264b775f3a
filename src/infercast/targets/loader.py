"""Find, read, merge (``extends``) and validate target files.

Built-in targets live in ``targets/data/*.toml``; files whose name starts with
``_`` are shared bases (``abstract = true``) that other files extend. Anywhere a
target is asked for, a path to a user's own ``.toml`` works too; its
``extends`` may name a built-in target or another file (relative to it).

Merging is recursive over tables; any other value in the extending file
replaces the base's. ``uncertain`` and ``sources`` accumulate along the chain.

Target files come from strangers, so reading one is bounded: a regular file of
at most :data:`MAX_FILE_BYTES`, tables and arrays nested at most
:data:`MAX_DEPTH` deep, an ``extends`` chain of at most :data:`MAX_CHAIN`
files, and ``extends`` names a built-in target or a file *beside* the
extending one (``base.toml`` or ``./base.toml``; no directories, absolute
paths or ``..``).

The ``host`` target is filled in at load time from this machine
(``/proc/cpuinfo``, ``os.cpu_count()``, ``/proc/meminfo``); its figures are
placeholders to be calibrated and are marked uncertain.
"""

from __future__ import annotations

import copy
import json
import os
import platform
import re
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Any

from infercast.errors import printable, regular_file
from infercast.targets.schema import Support, Target, TargetError, build_target
from infercast.targets.validate import show

DATA_DIR = Path(__file__).resolve().parent / "data"
_ACCUMULATE = ("uncertain", "sources")


def builtin_names(include_abstract: bool = False) -> list[str]:
    """Names of the built-in targets (sorted); bases (``_*.toml``) only when asked."""
    names = [p.stem for p in sorted(DATA_DIR.glob("*.toml"))]
    return [n for n in names if include_abstract or not n.startswith("_")]


MAX_FILE_BYTES = 1 << 20
MAX_DEPTH = 12
MAX_CHAIN = 16


def is_path_like(spec: str) -> bool:
    return spec.endswith(".toml") or os.sep in spec or "/" in spec


def _regular_file(p: Path, what: str) -> None:
    regular_file(
        p, TargetError, what, max_bytes=MAX_FILE_BYTES, hint="give a built-in name or a .toml path"
    )


def resolve_spec(spec: str) -> Path:
    """The file a ``--target`` value names: a built-in name or a path."""
    if is_path_like(spec):
        p = Path(spec).expanduser()
        _regular_file(p, "target file")
        return p.resolve()
    p = DATA_DIR / f"{spec}.toml"
    if not p.is_file() or spec.startswith("_"):
        known = ", ".join(builtin_names())
        raise TargetError(
            f"unknown target '{printable(spec)}'",
            f"known targets: {known}; or give the path to your own .toml file",
        )
    return p


def _depth(value: Any) -> int:
    """How deeply tables and arrays nest in ``value`` (iteratively: no recursion)."""
    deepest = 0
    stack = [(value, 0)]
    while stack:
        v, d = stack.pop()
        deepest = max(deepest, d)
        if deepest > MAX_DEPTH:
            break
        if isinstance(v, dict):
            stack.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            stack.extend((x, d + 1) for x in v)
    return deepest


def _read(path: Path) -> dict[str, Any]:
    name = printable(path.name)
    _regular_file(path, "target file")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TargetError(f"{name}: cannot be read ({exc.strerror})") from exc
    except UnicodeDecodeError:
        raise TargetError(f"{name}: not UTF-8 text", "target files are TOML") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TargetError(
            f"{name}: not valid TOML: {printable(str(exc))}", "check the line named"
        ) from exc
    except RecursionError:
        raise TargetError(f"{name}: nested too deeply (at most {MAX_DEPTH} levels)") from None
    except ValueError:  # tomllib's int() of thousands of digits
        raise TargetError(f"{name}: not valid TOML: a number of thousands of digits") from None
    if _depth(raw) > MAX_DEPTH:
        raise TargetError(f"{name}: nested too deeply (at most {MAX_DEPTH} levels)")
    return raw


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in over.items():
        if k in _ACCUMULATE and isinstance(v, list) and isinstance(out.get(k), list):
            out[k] = out[k] + [x for x in v if x not in out[k]]
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def _base_path(path: Path, ext: str) -> Path:
    """The file ``extends = ext`` of ``path`` names: a built-in, or a file beside ``path``."""
    name = printable(path.name)
    if "\0" in ext:
        raise TargetError(f"{name}: extends {show(ext)} holds a NUL character")
    if is_path_like(ext):
        bare = ext[2:] if ext.startswith("./") else ext
        if "/" in bare or os.sep in bare or bare in ("", ".", "..") or bare.startswith("~"):
            raise TargetError(
                f"{name}: extends '{printable(ext)}': a target file may extend a built-in "
                "target or a file in its own directory only",
                'copy the base file next to this one and name it as extends = "base.toml"',
            )
        base = path.parent / bare
        if not base.exists():
            raise TargetError(f"{name}: extends '{printable(ext)}', which does not exist")
        _regular_file(base, f"{name}: extends")
        return base.resolve()
    base = DATA_DIR / f"{ext}.toml"
    if not ext or not base.is_file():
        known = ", ".join(builtin_names(include_abstract=True))
        raise TargetError(f"{name}: extends unknown target '{printable(ext)}'", f"known: {known}")
    return base


def _resolve(path: Path, seen: tuple[Path, ...]) -> tuple[dict[str, Any], tuple[str, ...]]:
    if path in seen:
        cycle = " -> ".join(printable(p.name) for p in (*seen, path))
        raise TargetError(f"{printable(path.name)}: extends itself in a cycle ({cycle})")
    if len(seen) >= MAX_CHAIN:
        raise TargetError(
            f"{printable(seen[0].name)}: the extends chain is longer than {MAX_CHAIN} files"
        )
    raw = _read(path)
    raw.setdefault("name", path.stem)
    ext = raw.pop("extends", None)
    if ext is None:
        return raw, (str(path),)
    if not isinstance(ext, str):
        raise TargetError(
            f"{printable(path.name)}: extends must be a target name or a file name, got {show(ext)}"
        )
    base, chain = _resolve(_base_path(path, ext), (*seen, path))
    base.pop("abstract", None)
    base.pop("name", None)
    return _merge(base, raw), (str(path), *chain)


def load_target(spec: str, *, detect: bool = True) -> Target:
    """Load a built-in target by name, or a user's target file by path.

    ``detect=False`` leaves the ``host`` target's machine-dependent values as the
    file states them (the documents are generated that way, so they do not
    depend on the machine that generates them).
    """
    return _load(resolve_spec(spec), detect)


@lru_cache(maxsize=64)
def _load(path: Path, detect: bool) -> Target:
    raw, chain = _resolve(path, ())
    if detect and raw.get("detect"):
        raw = _detect_host(raw)
    return build_target(raw, path.name, str(path), chain)


def base_support(target: Target) -> Support:
    """The operator support of the files ``target`` extends, without its own ``[support]``
    table (its own support when it extends nothing): what an Ethos-U target's vendor fork
    states on top of Arm's rules is dropped (:func:`infercast.estimate.work.vela_view`)."""
    if len(target.chain) < 2:
        return target.support
    base, _ = _resolve(Path(target.chain[1]), ())
    raw = {**target.raw, "support": base.get("support", {})}
    return build_target(raw, Path(target.path).name, target.path, target.chain).support


def list_targets() -> list[Target]:
    return [load_target(n) for n in builtin_names()]


# --------------------------------------------------------------------------- #
# Host detection
# --------------------------------------------------------------------------- #

# FLOP per cycle per core for fp32 by the widest SIMD FMA the CPU reports
# (two FMA pipes assumed for AVX2/AVX-512, i.e. 2 x lanes x 2). Uncertain:
# real cores differ in FMA ports; calibrate with `infercast bench`.
_FP32_FLOP_PER_CYCLE = (("avx512f", 64), ("avx2", 32), ("avx", 16), ("asimd", 16), ("neon", 8))


def _cpuinfo() -> dict[str, str]:
    info: dict[str, str] = {}
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return info
    for line in text.splitlines():
        k, sep, v = line.partition(":")
        k = k.strip().lower()
        if sep and k not in info:
            info[k] = v.strip()
    return info


def _max_clock_hz(info: dict[str, str]) -> float | None:
    try:
        khz = Path("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq").read_text().strip()
        return float(khz) * 1e3
    except (OSError, ValueError):
        pass
    if "cpu mhz" in info:
        try:
            return float(info["cpu mhz"]) * 1e6
        except ValueError:
            return None
    m = re.search(r"@\s*([\d.]+)\s*GHz", info.get("model name", ""))
    return float(m.group(1)) * 1e9 if m else None


def _mem_total_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _detect_host(raw: dict[str, Any]) -> dict[str, Any]:
    """Fill the ``host`` target's CPU and memory from this machine (all uncertain)."""
    raw = copy.deepcopy(raw)
    info = _cpuinfo()
    cores = os.cpu_count() or 1
    model = (
        info.get("model name")
        or info.get("hardware")
        or info.get("cpu model")
        or platform.processor()
    )
    flags = set((info.get("flags") or info.get("features") or "").split())
    clock = _max_clock_hz(info)
    per_cycle = next((n for flag, n in _FP32_FLOP_PER_CYCLE if flag in flags), 4)
    units = raw.setdefault("units", {})
    for unit in units.values() if isinstance(units, dict) else ():
        if not isinstance(unit, dict) or unit.get("kind") != "cpu":
            continue
        unit["description"] = f"{model or 'unknown CPU'} ({cores} logical cores, detected)"
        unit["cores"] = cores
        if clock:
            unit["clock_hz"] = clock
            unit["peak_fp32_ops_per_s"] = cores * clock * per_cycle
            # int8 dot products: assumed 4x the fp32 lanes (VNNI / SDOT class); uncertain.
            unit["peak_int8_ops_per_s"] = cores * clock * per_cycle * 4
    mem = _mem_total_bytes()
    mems = raw.get("memories", {})
    for m in mems.values() if isinstance(mems, dict) else ():
        if isinstance(m, dict) and mem:
            m["size_bytes"] = mem
    raw["description"] = (
        f"This machine: {model or 'unknown CPU'}, {cores} logical cores (detected; not calibrated)"
    )
    return raw


# --------------------------------------------------------------------------- #
# Resolved target -> TOML text (``infercast targets show``)
# --------------------------------------------------------------------------- #

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(k: str) -> str:
    return k if _BARE.match(k) else json.dumps(k)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and abs(v) >= 1e5 and float(f"{v:.6g}") == v:
        return f"{v:.6g}"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot write {type(v).__name__} as TOML")


def to_toml(raw: dict[str, Any]) -> str:
    """A resolved target table as TOML (loads back to the same table with tomllib)."""
    lines: list[str] = []

    def emit(table: dict[str, Any], path: list[str]) -> None:
        scalars = {k: v for k, v in table.items() if not isinstance(v, dict)}
        tables = {k: v for k, v in table.items() if isinstance(v, dict)}
        if path and (scalars or not tables):
            lines.append("")
            lines.append("[" + ".".join(_key(p) for p in path) + "]")
        for k, v in scalars.items():
            lines.append(f"{_key(k)} = {_value(v)}")
        for k, v in tables.items():
            emit(v, [*path, k])

    emit({"name": raw.get("name"), **raw} if "name" in raw else raw, [])
    return "\n".join(lines).lstrip("\n") + "\n"
