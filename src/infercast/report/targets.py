"""Renderers of the built-in target list (``infercast targets list``).

JSON: a list with one object per target (``name``, ``description``,
``accelerator``, ``fallback``, ``file``, ``peak_ops_per_s`` by unit and dtype).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from infercast.report.text import cell
from infercast.report.units import human_count
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


def render_table(targets: Sequence[Target]) -> Any:
    from rich.table import Table

    table = Table(title="infercast targets (use --target NAME, or --target path/to/your.toml)")
    for col in ("name", "accelerator", "peak int8 ops/s", "peak fp32 ops/s", "description"):
        table.add_column(col, overflow="fold")
    for t in targets:
        unit = t.accelerator or t.fallback
        i8, f32 = unit.peak("int8"), unit.peak("fp32")
        table.add_row(
            cell(t.name),
            cell(t.placement.accelerator or "– (CPU only)"),
            human_count(i8) if i8 else "–",
            human_count(f32) if f32 else "–",
            cell(t.description),
        )
    return table
