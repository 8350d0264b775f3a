"""Showing strings that come from model files; writing strict JSON and CSV.

Layer, tensor, op and subgraph names are chosen by whoever made the file. In a
terminal they are shown through :func:`shown` (control characters, escape
sequences and newlines written as ``\\n``, ``\\x1b``, …) and as
:class:`rich.text.Text` (:func:`cell`), never as Rich markup: a node named
``[/bold]`` is shown as those seven characters.

JSON documents are written by :func:`dumps`: numbers that are not finite (NaN,
±inf) are written as ``null`` (the schemas document the fields that can be
null), bytes as text, NumPy scalars as plain numbers; the result is strict JSON.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.text import Text

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_ESCAPES = {c: _NAMED.get(chr(c), f"\\x{c:02x}") for c in (*range(0x20), *range(0x7F, 0xA0))} | {
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}


def shown(s: object) -> str:
    """``s`` as one line of text: control characters and line breaks escaped."""
    return str(s).translate(_ESCAPES)


def cell(s: object, style: str = "") -> Text:
    """A table cell or line holding ``s`` literally (escaped, never read as markup)."""
    from rich.text import Text

    return Text(shown(s), style=style)


def one_line(message: str) -> str:
    """An error message on one line: surrounding blanks dropped, the rest escaped."""
    return shown(message.strip())


def _plain(v: Any) -> Any:
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_plain(x) for x in v]
    return v


def _default(v: Any) -> Any:
    import numpy as np

    if isinstance(v, bytes | bytearray):
        return bytes(v).decode("utf-8", "backslashreplace")
    if isinstance(v, np.generic):
        return _plain(v.item())
    raise TypeError(f"{type(v).__name__} is not JSON serialisable")


def dumps(doc: Any) -> str:
    """``doc`` as strict JSON (indent 1): non-finite numbers written as null."""
    return json.dumps(_plain(doc), indent=1, allow_nan=False, default=_default)


def csv_text(columns: Sequence[str], records: Iterable[Mapping[str, Any]]) -> str:
    """``records`` as CSV with a header row: None and non-finite numbers as empty cells."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in records:
        w.writerow(["" if _plain(r.get(c)) is None else r.get(c) for c in columns])
    return buf.getvalue()
