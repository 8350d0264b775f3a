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
