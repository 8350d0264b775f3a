"""``infercast targets list|show``: the built-in device targets."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from infercast.cli.common import CheckFormat, CheckFormatOpt, Output

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
        Output(None).text(ctx.get_help())


@app.command("list")
def targets_list(fmt: CheckFormatOpt = CheckFormat.table) -> None:
    """The built-in targets: accelerator, fallback, peak int8 / fp32 ops/s."""
    import infercast.api as api
    from infercast.report import targets as rep

    targets = api.list_targets()
    if fmt is CheckFormat.json:
        Output(None).json([rep.target_dict(t) for t in targets])
    else:
        Output(None).rich(rep.render_table(targets.targets))


@app.command("show")
def targets_show(
    name: Annotated[str, typer.Argument(help="A built-in target name or a .toml file.")],
    fmt: Annotated[ShowFormat, typer.Option("--format", "-f", help="Output format.")] = (
        ShowFormat.toml
    ),
) -> None:
    """Print a target with `extends` merged and host values detected (valid as a target file;
    in a terminal, long lists and strings are broken into lines that fit its width)."""
    from infercast.cli.common import output_width
    from infercast.report.targets import target_toml
    from infercast.targets import load_target

    t = load_target(name)
    if fmt is ShowFormat.json:
        Output(None).json(t.raw)
        return
    header = f"{t.name}: resolved from {', '.join(Path(p).name for p in t.chain)}"
    Output(None).text(target_toml(t.raw, output_width(None), header))
