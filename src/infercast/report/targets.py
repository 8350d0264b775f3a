"""Renderers of the built-in target list (``infercast targets list``).

JSON: a list with one object per target (``name``, ``description``,
``accelerator``, ``fallback``, ``file``, ``peak_ops_per_s`` by unit and dtype).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from infercast.report.table import Col, FitTable, Grid, Row, TableOptions, entry
from infercast.report.text import shown
from infercast.report.units import human_count
from infercast.targets.loader import _key, _value
from infercast.targets.schema import Target

SCHEMA = "infercast.targets/1"


def target_dict(t: Target) -> dict[str, Any]:
    return {
        "name": t.name,
        "description": t.description,
        "accelerator": t.placement.accelerator,
        "fallback": t.placement.fallback,
        "file": t.path,
        "peak_ops_per_s": {u.name: dict(u.peak_ops_per_s) for u in t.units.values()},
    }


def records(targets: Sequence[Target]) -> list[dict[str, Any]]:
    """One flat dict per target (peaks of the accelerator, else the CPU, by dtype)."""
    out = []
    for t in targets:
        unit = t.accelerator or t.fallback
        out.append(
            {
                "name": t.name,
                "description": t.description,
                "accelerator": t.placement.accelerator,
                "fallback": t.placement.fallback,
                "file": t.path,
                "peak_int8_ops_per_s": unit.peak("int8"),
                "peak_fp32_ops_per_s": unit.peak("fp32"),
            }
        )
    return out


TARGET_COLUMNS = [
    Col("name", "name", numeric=False, prio=0),
    Col("accelerator", "accelerator", numeric=False, prio=1, short="accel.", min_width=6),
    Col("int8", "peak int8 ops/s", prio=1, short="int8 op/s"),
    Col("fp32", "peak fp32 ops/s", prio=2, short="fp32 op/s"),
    Col("description", "description", numeric=False, prio=1, min_width=16),
]


def render_table(targets: Sequence[Target], opts: TableOptions | None = None) -> Any:
    """The built-in targets: peaks of the accelerator (else the CPU), fitted to the width."""
    rows: list[Row] = []
    for t in targets:
        unit = t.accelerator or t.fallback
        i8, f32 = unit.peak("int8"), unit.peak("fp32")
        rows.append(
            {
                "name": entry(t.name, t.name),
                "accelerator": entry(t.placement.accelerator or "– (CPU only)"),
                "int8": entry(human_count(i8) if i8 else "–", i8 or None),
                "fp32": entry(human_count(f32) if f32 else "–", f32 or None),
                "description": entry(t.description),
            }
        )
    title = "infercast targets (use --target NAME, or --target path/to/your.toml)"
    grid = Grid(list(TARGET_COLUMNS), rows, title=title, noun="targets", more="--format json")
    return FitTable(grid, opts)


# --------------------------------------------------------------------------- #
# ``targets show``: the resolved target as TOML that fits the terminal
# --------------------------------------------------------------------------- #

INDENT = "    "
_UNSAFE = {c: f"\\u{c:04X}" for c in (*range(0x80, 0xA0), 0x2028, 0x2029)}
"""Characters TOML lets stand raw but a terminal may act on (C1 controls, line
separators): written as escapes, which load back to the same string."""


def _str(s: str) -> str:
    """The body of a TOML basic string (JSON's escapes are TOML's), without quotes."""
    return json.dumps(s, ensure_ascii=False)[1:-1].translate(_UNSAFE)


def _flat(v: Any) -> str:
    """``v`` on one line, as :func:`infercast.targets.loader.to_toml` writes it."""
    if isinstance(v, str):
        return f'"{_str(v)}"'
    if isinstance(v, list):
        return "[" + ", ".join(_flat(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_flat(x)}" for k, x in v.items()) + " }"
    return _value(v)


def _atoms(body: str) -> list[str]:
    """A string body cut into characters and whole escape sequences."""
    out: list[str] = []
    i = 0
    while i < len(body):
        if body[i] == "\\":
            n = {"u": 6, "U": 10}.get(body[i + 1], 2)
            out.append(body[i : i + n])
            i += n
        else:
            out.append(body[i])
            i += 1
    return out


def _long_string(s: str, first: int, rest: int) -> list[str]:
    """``s`` as a multi-line basic string: each line but the last ends with a line-ending
    backslash (TOML drops it, the newline and the next line's leading blanks), so a line
    may only be broken before a character that is not a blank. The first line holds
    ``first`` characters of the body at most, the others ``rest``."""
    atoms = _atoms(_str(s))
    pieces: list[str] = []
    start = 0
    while start < len(atoms):
        room = max(first if not pieces else rest, 8)
        end = start
        size = 0
        while end < len(atoms) and size + len(atoms[end]) <= room:
            size += len(atoms[end])
            end += 1
        if end < len(atoms):
            # break after a blank where the next atom is not one; else anywhere before a
            # non-blank; never inside an escape (atoms are whole)
            cut = next(
                (i for i in range(end, start, -1) if atoms[i - 1] == " " and atoms[i] != " "),
                None,
            )
            if cut is None:
                cut = next((i for i in range(end, start, -1) if atoms[i] != " "), end)
            end = max(cut, start + 1)
            while end < len(atoms) and atoms[end] == " ":  # never start a line with a blank
                end += 1
        pieces.append("".join(atoms[start:end]))
        start = end
    return ['"""' + pieces[0] + ("\\" if len(pieces) > 1 else '"""')] + [
        p + ("\\" if i < len(pieces) - 2 else '"""') for i, p in enumerate(pieces[1:])
    ]


def _value_lines(v: Any, indent: str, used: int, width: int) -> list[str]:
    """``v`` laid out to ``width``: the first line goes after ``used`` characters, the
    others start with ``indent``. Lists break into one item (or several short ones) a
    line; long strings into continued lines; numbers and keys are never broken."""
    flat = _flat(v)
    if used + len(flat) <= width:
        return [flat]
    if isinstance(v, str):
        lines = _long_string(v, width - used - 6, width - len(indent) - 4)
        return [lines[0], *(indent + ln for ln in lines[1:])]
    if isinstance(v, list) and v:
        inner = indent + INDENT
        out = ["["]
        line = ""
        for x in v:
            item = _flat(x) + ","
            if line and len(inner) + len(line) + 1 + len(item) <= width:
                line += " " + item
                continue
            if line:
                out.append(inner + line)
            if len(inner) + len(item) <= width:
                line = item
                continue
            parts = _value_lines(x, inner, len(inner), width)
            parts[-1] += ","
            out.append(inner + parts[0])
            out.extend(parts[1:])
            line = ""
        if line:
            out.append(inner + line)
        out.append(indent + "]")
        return out
    return [flat]  # an inline table cannot break between its keys


def _tables_array(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)


def target_toml(raw: Mapping[str, Any], width: int | None = None, header: str = "") -> str:
    """A resolved target as TOML (``targets show``): a valid target file that loads back to
    the same table. With ``width``, no line is wider when it can be helped: long lists
    break into lines, long strings into continued lines, lists of inline tables become
    arrays of tables (``[[support.generic]]``); ``header`` is a comment, wrapped too.
    Without ``width`` (a pipe, a file): one line per key."""
    import textwrap

    lines: list[str] = []
    limit = width or 1_000_000
    if header:
        wrapped = textwrap.wrap(shown(header), width=limit - 2, break_on_hyphens=False)
        lines += [f"# {ln}" for ln in wrapped]

    def name(path: list[str]) -> str:
        return ".".join(_key(p) for p in path)

    def emit(table: Mapping[str, Any], path: list[str], element: bool = False) -> None:
        arrays = {
            k: v
            for k, v in table.items()
            if width is not None and _tables_array(v) and len(f"{_key(k)} = {_flat(v)}") > width
        }
        scalars = {k: v for k, v in table.items() if not isinstance(v, dict) and k not in arrays}
        tables = {k: v for k, v in table.items() if isinstance(v, dict)}
        if element:
            lines.extend(["", f"[[{name(path)}]]"])
        elif path and (scalars or not (tables or arrays)):
            lines.extend(["", f"[{name(path)}]"])
        for k, v in scalars.items():
            key = f"{_key(k)} = "
            vl = _value_lines(v, "", len(key), limit)
            lines.append(key + vl[0])
            lines.extend(vl[1:])
        for k, v in tables.items():
            emit(v, [*path, k])
        for k, v in arrays.items():
            for x in v:
                emit(x, [*path, k], element=True)

    emit({"name": raw.get("name"), **raw} if "name" in raw else raw, [])
    if lines and lines[0] == "":
        lines = lines[1:]
    return "\n".join(lines) + "\n"
