"""Showing strings that come from model files.

Layer, tensor, op and subgraph names are chosen by whoever made the file: shown
through :func:`shown`, control characters, escape sequences and line breaks are
written as ``\\n``, ``\\x1b``, … so that a name stays one line and cannot drive
the terminal.
"""

from __future__ import annotations

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_ESCAPES = {c: _NAMED.get(chr(c), f"\\x{c:02x}") for c in (*range(0x20), *range(0x7F, 0xA0))} | {
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}


def shown(s: object) -> str:
    """``s`` as one line of text: control characters and line breaks escaped."""
    return str(s).translate(_ESCAPES)
