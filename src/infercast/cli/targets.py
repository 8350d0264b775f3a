"""``infercast targets list|show``: the built-in device targets."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from infercast.cli.common import CheckFormat, CheckFormatOpt, emit, render

app = typer.Typer(
    help="Device targets: list the built-in ones, show one with every value resolved.",
    invoke_without_command=True,
)


class ShowFormat(StrEnum):
    toml = "toml"
    json = "json"


@app.callback()
def _root(ctx: typer.Context) -> None:
    """Device targets: list the built-in ones, show one with every value resolved."""
    if ctx.invoked_subcommand is None:
        emit(ctx.get_help(), None)


@app.command("list")
def targets_list(fmt: CheckFormatOpt = CheckFormat.table) -> None:
    """The built-in targets: accelerator, fallback, peak int8 / fp32 ops/s."""
    from infercast.targets import list_targets

    targets = list_targets()
    if fmt is CheckFormat.json:
        rows = [
            {
                "name": t.name,
                "description": t.description,
                "accelerator": t.placement.accelerator,
                "fallback": t.placement.fallback,
                "file": t.path,
                "peak_ops_per_s": {u.name: dict(u.peak_ops_per_s) for u in t.units.values()},
            }
            for t in targets
        ]
        emit(json.dumps(rows, indent=1), None)
        return
    from rich.table import Table

    from infercast.report.units import human_count

    table = Table(title="infercast targets (use --target NAME, or --target path/to/your.toml)")
    for col in ("name", "accelerator", "peak int8 ops/s", "peak fp32 ops/s", "description"):
        table.add_column(col, overflow="fold")
    for t in targets:
        unit = t.accelerator or t.fallback
        i8, f32 = unit.peak("int8"), unit.peak("fp32")
        table.add_row(
            t.name,
            t.placement.accelerator or "– (CPU only)",
            human_count(i8) if i8 else "–",
            human_count(f32) if f32 else "–",
            t.description,
        )
    render(table, None)


@app.command("show")
def targets_show(
    name: Annotated[str, typer.Argument(help="A built-in target name or a .toml file.")],
    fmt: Annotated[ShowFormat, typer.Option("--format", "-f", help="Output format.")] = (
        ShowFormat.toml
    ),
) -> None:
    """Print a target with `extends` merged and host values detected (valid as a target file)."""
    from infercast.targets import load_target
    from infercast.targets.loader import to_toml

    t = load_target(name)
    if fmt is ShowFormat.json:
        emit(json.dumps(t.raw, indent=1), None)
        return
    header = f"# {t.name}: resolved from {', '.join(Path(p).name for p in t.chain)}\n"
    emit(header + to_toml(dict(t.raw)), None)
