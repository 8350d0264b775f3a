"""Check a resolved target table against the dataclasses of :mod:`infercast.targets.schema`.

The field types are the schema: ``str``, ``bool``, a ``Literal`` of choices, a
number annotated with its :class:`~infercast.targets.schema.Bound`, ``X | None``
(the key may be left out), ``tuple[X, ...]`` (a TOML array), ``Mapping[K, V]``
(a table of ``V``; with ``Literal`` keys only those), or another dataclass (a
table). Field metadata marks a unit's name as its table key (``FROM_KEY``),
values the loader supplies (``DERIVED``), and keys matched by a pattern
(``peak_<dtype>_ops_per_s``). Every key is checked, unknown keys get the
nearest known one as a suggestion, and nothing stops at the first problem:
:func:`build` raises one :class:`TargetError` listing them all.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import types
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, fields, is_dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

from infercast.errors import printable
from infercast.ops.registry import registered_ops
from infercast.targets import schema as S
from infercast.targets.constraints import REGISTRY, check_param, param_type_name

_BAD: Any = object()
"""A value that failed validation (its problem is recorded)."""

SHOWN = 40
"""Problems written out in the error message; the rest are counted."""


class Problems:
    """Every problem found in one target file, in the order found."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.items: list[str] = []

    def add(self, key: str, problem: str) -> None:
        self.items.append(printable(f"{key} {problem}" if key else problem))

    def raise_if_any(self) -> None:
        if not self.items:
            return
        shown = "; ".join(self.items[:SHOWN])
        more = f" (+{len(self.items) - SHOWN} more)" if len(self.items) > SHOWN else ""
        raise S.TargetError(
            f"{printable(self.file)}: {shown}{more}",
            "fix the target file; `infercast targets show NAME` prints a valid one",
            tuple(self.items),
        )


def show(v: Any, limit: int = 60) -> str:
    """A value from the file as an error message quotes it (short, one line)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int) and v.bit_length() > 64:
        return f"an integer of {len(str(v)) if v.bit_length() < 4000 else 'thousands of'} digits"
    if isinstance(v, dict):
        return "a table"
    if isinstance(v, list):
        return f"a list of {len(v)}" if len(repr(v)) > limit else repr(v)
    text = repr(v) if isinstance(v, str) else str(v)
    return printable(text if len(text) <= limit else text[: limit - 1] + "…")


@dataclass
class _Ctx:
    errs: Problems
    units: tuple[str, ...]
    """Names of the target's compute units (what a check's ``unit`` may name)."""


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls, include_extras=True)


def _required(f: dataclasses.Field[Any]) -> bool:
    return f.default is MISSING and f.default_factory is MISSING


def _suggest(key: str, known: list[str], extra: str = "") -> str:
    close = difflib.get_close_matches(key, known, n=1)
    if close:
        return f" (did you mean '{close[0]}'?){extra}"
    return extra or f" (allowed: {', '.join(known)})"


def _dataclass(
    cls: type, table: Mapping[str, Any], prefix: str, ctx: _Ctx, extra: dict[str, Any]
) -> Any:
    """An instance of ``cls`` from ``table`` (its problems recorded), or ``_BAD``."""
    hints = _hints(cls)
    kwargs = dict(extra)
    ok = True
    known: list[str] = []
    patterns = []
    for f in fields(cls):
        if f.metadata.get("derived") or f.metadata.get("from_key"):
            continue
        if "pattern" in f.metadata:
            patterns.append(f)
            continue
        known.append(f.name)
        if f.name not in table:
            if _required(f):
                ctx.errs.add(prefix + f.name, "is required")
                ok = False
            continue
        value = convert(hints[f.name], table[f.name], prefix + f.name, ctx)
        if value is _BAD:
            ok = False
        else:
            kwargs[f.name] = value
    for f in patterns:
        value_type = get_args(hints[f.name])[1]
        found: dict[str, Any] = {}
        for k, v in table.items():
            m = f.metadata["pattern"].match(k)
            if m:
                value = convert(value_type, v, prefix + k, ctx)
                ok = ok and value is not _BAD
                found[m.group(1)] = value
        kwargs[f.name] = found
    extra_hint = "".join(f"; {f.name} keys are {f.metadata['keys']}" for f in patterns)
    for k in table:
        if k in known or any(f.metadata["pattern"].match(k) for f in patterns):
            continue
        ctx.errs.add(prefix + k, f"is not a known key{_suggest(k, known, extra_hint)}")
        extra_hint = ""  # said once per table
    return cls(**kwargs) if ok else _BAD


def _number(b: S.Bound, v: Any, dotted: str, ctx: _Ctx) -> Any:
    if isinstance(v, bool) or not isinstance(v, int if b.integer else int | float):
        ctx.errs.add(dotted, f"must be {b.what}, got {show(v)}")
        return _BAD
    if isinstance(v, float) and not math.isfinite(v):
        ctx.errs.add(dotted, f"must be a finite number ({b.what}), got {show(v)}")
        return _BAD
    if v <= 0 if b.positive else v < 0:
        ctx.errs.add(dotted, f"must be {b.what}, got {show(v)}")
        return _BAD
    if v < b.lo:
        ctx.errs.add(dotted, f"must be at least {b.lo:g}, got {show(v)}")
        return _BAD
    if v > b.hi:
        what = b.what if "]" in b.what else f"at most {b.hi:g}"
        ctx.errs.add(dotted, f"must be {what}, got {show(v)}")
        return _BAD
    return int(v) if b.integer else float(v)


def _item_words(tp: Any) -> str:
    if tp is str or get_origin(tp) is Literal:
        return "strings"
    if tp is S.Check:
        return "check tables"
    return "tables"


def convert(tp: Any, v: Any, dotted: str, ctx: _Ctx) -> Any:
    """``v`` checked against the field type ``tp`` (problems recorded), or ``_BAD``."""
    origin = get_origin(tp)
    if origin is Annotated:
        bound = next(m for m in tp.__metadata__ if isinstance(m, S.Bound))
        return _number(bound, v, dotted, ctx)
    if origin in (Union, types.UnionType):
        (inner,) = [a for a in get_args(tp) if a is not type(None)]
        return convert(inner, v, dotted, ctx)
    if origin is Literal:
        choices = get_args(tp)
        if not isinstance(v, str) or v not in choices:
            ctx.errs.add(dotted, f"must be one of {', '.join(choices)}, got {show(v)}")
            return _BAD
        return v
    if tp is str:
        if not isinstance(v, str):
            ctx.errs.add(dotted, f"must be a string, got {show(v)}")
            return _BAD
        return v
    if tp is bool:
        if not isinstance(v, bool):
            ctx.errs.add(dotted, f"must be true or false, got {show(v)}")
            return _BAD
        return v
    if origin is tuple:
        return _array(get_args(tp)[0], v, dotted, ctx)
    if origin is Mapping:
        return _mapping(tp, v, dotted, ctx)
    if tp is S.Check:
        return parse_check(v, dotted, ctx)
    if is_dataclass(tp):
        if not isinstance(v, dict):
            ctx.errs.add(dotted, f"must be a table, got {show(v)}")
            return _BAD
        return _dataclass(tp, v, dotted + ".", ctx, {})  # type: ignore[arg-type]
    raise TypeError(f"no validation for field type {tp!r} ({dotted})")  # a schema bug


def _array(item: Any, v: Any, dotted: str, ctx: _Ctx) -> Any:
    if not isinstance(v, list) or (item is str and not all(isinstance(x, str) for x in v)):
        ctx.errs.add(dotted, f"must be a list of {_item_words(item)}, got {show(v)}")
        return _BAD
    if get_origin(item) is Literal:
        choices = get_args(item)
        bad = [x for x in v if x not in choices]
        for x in bad:
            ctx.errs.add(dotted, f"has {show(x)}; allowed: {', '.join(choices)}")
        return _BAD if bad else tuple(v)
    if item is str:
        return tuple(v)
    out = [convert(item, x, f"{dotted}[{i}]", ctx) for i, x in enumerate(v)]
    return _BAD if any(x is _BAD for x in out) else tuple(out)


def _mapping(tp: Any, v: Any, dotted: str, ctx: _Ctx) -> Any:
    key_type, value_type = get_args(tp)
    if not isinstance(v, dict):
        ctx.errs.add(dotted, f"must be a table, got {show(v)}")
        return _BAD
    allowed = list(get_args(key_type)) if get_origin(key_type) is Literal else None
    out: dict[str, Any] = {}
    ok = True
    for k, x in v.items():
        key = f"{dotted}.{k}"
        if allowed is not None and k not in allowed:
            ctx.errs.add(key, f"is not a known key{_suggest(k, allowed)}")
            continue
        if is_dataclass(value_type) and value_type is not S.Check:
            if not isinstance(x, dict):
                ctx.errs.add(key, f"must be a table, got {show(x)}")
                ok = False
                continue
            named = {f.name: k for f in fields(value_type) if f.metadata.get("from_key")}
            value = _dataclass(value_type, x, key + ".", ctx, named)  # type: ignore[arg-type]
        else:
            value = convert(value_type, x, key, ctx)
        ok = ok and value is not _BAD
        out[k] = value
    return out if ok else _BAD


CHECK_KEYS = ("check", "on_fail", "rewrite", "unit")


def _sane_param(v: Any) -> bool:
    """Numbers a constraint compares with: finite, and integers of at most 15 digits."""
    if isinstance(v, list):
        return len(v) <= 10_000 and all(_sane_param(x) for x in v)
    if isinstance(v, float):
        return math.isfinite(v)
    if isinstance(v, int) and not isinstance(v, bool):
        return abs(v) <= S._INT_MAX
    return True


def parse_check(t: Any, dotted: str, ctx: _Ctx) -> Any:
    """A :class:`~infercast.targets.schema.Check` from ``{check = "...", params…}``."""
    errs = ctx.errs
    if not isinstance(t, dict):
        errs.add(
            dotted, f'must be a table like {{check = "stride_in", lo = 1, hi = 3}}, got {show(t)}'
        )
        return _BAD
    name = t.get("check")
    if not isinstance(name, str):
        errs.add(dotted + ".check", "is required (the name of a constraint)")
        return _BAD
    c = REGISTRY.get(name)
    if c is None:
        close = difflib.get_close_matches(name, list(REGISTRY), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        errs.add(dotted + ".check", f"names no known constraint: {show(name)}{hint}")
        return _BAD
    ok = True
    params = {k: v for k, v in t.items() if k not in CHECK_KEYS}
    for k in params:
        if k not in c.params:
            allowed = ", ".join(c.params) or "none"
            errs.add(f"{dotted}.{k}", f"is not a parameter of {name} (parameters: {allowed})")
            ok = False
    for k, tp in c.params.items():
        if k not in params:
            errs.add(f"{dotted}.{k}", f"is required by {name} ({param_type_name(tp)})")
            ok = False
        elif not check_param(tp, params[k]) or not _sane_param(params[k]):
            what = param_type_name(tp)
            if check_param(tp, params[k]):
                what = f"a finite {what} of at most 15 digits"
            errs.add(f"{dotted}.{k}", f"must be {what}, got {show(params[k])}")
            ok = False
    on_fail = convert(S.OnFail, t.get("on_fail", "cpu"), dotted + ".on_fail", ctx)
    rewrite = convert(str, t.get("rewrite", ""), dotted + ".rewrite", ctx)
    unit = convert(str, t.get("unit", ""), dotted + ".unit", ctx)
    if on_fail == "partial" and rewrite == "":
        errs.add(
            dotted + ".rewrite",
            'is required when on_fail = "partial" (what the compiler turns the op into)',
        )
        ok = False
    if isinstance(unit, str) and unit and unit not in ctx.units:
        errs.add(
            dotted + ".unit",
            f"names no unit of this target: {show(unit)} (units: {', '.join(ctx.units)})",
        )
        ok = False
    if not ok or _BAD in (on_fail, rewrite, unit):
        return _BAD
    return S.Check(name, params, on_fail, rewrite, unit)


def _lookup(raw: Mapping[str, Any], dotted: str) -> bool:
    cur: Any = raw
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return False
        cur = cur[part]
    return True


def _table(raw: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    v = raw.get(key, {})
    return v if isinstance(v, dict) else {}


def _cross_checks(raw: Mapping[str, Any], ctx: _Ctx) -> None:
    """What one key says about another: placement names units, rules name supported ops, …"""
    errs = ctx.errs
    if raw.get("abstract") is True:
        errs.add(
            "abstract",
            "is true: this file is a shared base that target files extend, not a device "
            '(write a file with extends = "<this file>" and use that)',
        )
    units = _table(raw, "units")
    if not ctx.units:
        errs.add("units", "must define at least one compute unit")
    for name, ut in units.items():
        if isinstance(ut, dict) and not any(isinstance(k, str) and S.PEAK_KEY.match(k) for k in ut):
            errs.add(f"units.{name}.peak_<dtype>_ops_per_s", "is required (at least one dtype)")
    names = ", ".join(ctx.units)
    pl = _table(raw, "placement")
    accel = pl.get("accelerator")
    if isinstance(accel, str) and ctx.units and accel not in ctx.units:
        errs.add(
            "placement.accelerator", f"must name a unit of this target ({names}), got {show(accel)}"
        )
    fallback = pl.get("fallback")
    if fallback is None:
        errs.add("placement.fallback", "is required")
    elif isinstance(fallback, str) and ctx.units and fallback not in ctx.units:
        errs.add(
            "placement.fallback", f"must name a unit of this target ({names}), got {show(fallback)}"
        )
    known_ops = registered_ops()
    for key in ("accelerator_activations", "channels_first_ops", "layout_reset_ops"):
        listed = pl.get(key, [])
        for op in listed if isinstance(listed, list) else []:
            if isinstance(op, str) and op not in known_ops:
                errs.add(
                    f"placement.{key}",
                    f"has {show(op)}, not an infercast op name"
                    + _suggest(op, sorted(known_ops), " (docs/ops.md lists them)"),
                )
    cal = _table(raw, "calibration")
    if cal.get("paired") is True and not cal.get("values_from"):
        errs.add(
            "calibration.paired",
            "is true but calibration.values_from names no target to pair the rows with",
        )
    sup = _table(raw, "support")
    ops = sup.get("ops", [])
    ops = ops if isinstance(ops, list) else []
    if accel is not None and not ops:
        errs.add("support.ops", "is required when placement.accelerator is set")
    for op, rule in _table(sup, "rules").items():
        if ops and "*" not in ops and op not in ops:
            errs.add(f"support.rules.{op}", "has rules but the op is not in support.ops")
        skip = rule.get("skip_generic", []) if isinstance(rule, dict) else []
        for x in skip if isinstance(skip, list) else []:
            if isinstance(x, str) and x not in REGISTRY:
                errs.add(
                    f"support.rules.{op}.skip_generic",
                    f"has {show(x)}; allowed: {', '.join(REGISTRY)}",
                )
    uncertain = raw.get("uncertain", [])
    for key in uncertain if isinstance(uncertain, list) else []:
        if isinstance(key, str) and not _lookup(raw, key):
            errs.add("uncertain", f"lists {show(key)}, which is not a key of this target")


def build(raw: Mapping[str, Any], file: str, path: str, chain: tuple[str, ...]) -> S.Target:
    """The :class:`~infercast.targets.schema.Target` of a resolved table, or a
    :class:`~infercast.targets.schema.TargetError` listing every problem."""
    errs = Problems(file)
    units = _table(raw, "units")
    ctx = _Ctx(errs, tuple(k for k, v in units.items() if isinstance(v, dict)))
    target = _dataclass(S.Target, raw, "", ctx, {"path": path, "chain": chain, "raw": raw})
    _cross_checks(raw, ctx)
    errs.raise_if_any()
    assert isinstance(target, S.Target)  # no problem recorded: every field was built
    return target
