"""Human-readable numbers for terminal output. Machine outputs keep raw integers."""

from __future__ import annotations


def human_count(n: float) -> str:
    """1234567 -> '1.23 M' (decimal prefixes, as MAC and FLOP counts are quoted)."""
    for div, unit in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= div:
            return f"{n / div:.2f} {unit}"
    return f"{int(n)}"


def human_bytes(n: float) -> str:
    """1536 -> '1.5 KiB' (binary prefixes, as memory sizes are quoted)."""
    for div, unit in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if abs(n) >= div:
            return f"{n / div:.1f} {unit}"
    return f"{int(n)} B"


def short_name(name: str, width: int = 40) -> str:
    """A layer name for a table cell. TFLite names its ops after their output tensor,
    which the converter joins from every fused TF op ("a/b/Relu6;a/b/conv;…"): keep
    the first, then its last two path parts. The JSON and CSV keep the full name."""
    first = name.split(";", 1)[0] or name
    parts = first.split("/")
    short = "/".join(parts[-2:]) if len(parts) > 2 else first
    return short if len(short) <= width else "…" + short[-(width - 1) :]


def human_seconds(s: float) -> str:
    """0.0123 -> '12.30 ms' (seconds stay seconds in machine output)."""
    if s >= 1:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    if s >= 1e-6:
        return f"{s * 1e6:.1f} µs"
    if s == 0:
        return "0"
    return f"{s * 1e9:.0f} ns"
