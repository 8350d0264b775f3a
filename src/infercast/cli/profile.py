"""``infercast profile import``: join a per-op profile measured elsewhere with the static cost."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from infercast.cli.bench import PeakGmacsOpt, peak_for
from infercast.cli.common import Format, FormatOpt, InputShapeOpt, OutOpt, emit, render
from infercast.errors import InfercastError

app = typer.Typer(help="Per-op profiles measured elsewhere.", no_args_is_help=True)

ProfileArg = Annotated[
    Path,
    typer.Argument(
        help="ONNX Runtime profile JSON, TFLite benchmark_model output, or TVM debug table."
    ),
]
ProfileModelOpt = Annotated[Path, typer.Option("--model", "-m", help="The model it measured.")]
KindOpt = Annotated[
    str | None,
    typer.Option("--kind", help="ort | tflite | tvm-debug (default: from the content)."),
]
SkipRunsOpt = Annotated[
    int, typer.Option(help="ONNX Runtime: leading runs to drop (lazy initialisation).")
]
PeakTargetOpt = Annotated[
    str | None, typer.Option("--target", "-t", help="Report % of this target's peak.")
]
ThreadsOpt = Annotated[
    int | None,
    typer.Option(help="Threads the profile was taken with (scales a CPU target's peak)."),
]
TopOpt = Annotated[int, typer.Option(help="Hotspots listed (table).")]


@app.command("import")
def profile_import(
    file: ProfileArg,
    model: ProfileModelOpt,
    kind: KindOpt = None,
    skip_runs: SkipRunsOpt = 1,
    input_shape: InputShapeOpt = None,
    target: PeakTargetOpt = None,
    peak_gmacs: PeakGmacsOpt = None,
    threads: ThreadsOpt = None,
    top: TopOpt = 10,
    fmt: FormatOpt = Format.table,
    output: OutOpt = None,
) -> None:
    """Join a per-op profile measured elsewhere with MODEL's static cost."""
    from infercast.analysis.cost import analyze
    from infercast.bench import report as rep
    from infercast.bench.harness import RunSpec
    from infercast.bench.join import join
    from infercast.bench.profiles import KINDS, read_profile
    from infercast.frontends import parse_input_shapes

    if kind is not None and kind not in KINDS:
        raise InfercastError(f"--kind '{kind}' is not one of {', '.join(KINDS)}")
    shapes = parse_input_shapes(input_shape or [])
    prof = read_profile(file, kind, skip_runs=skip_runs)
    analysis = analyze(model, shapes or None)
    peak_fn = peak_for(target, peak_gmacs, str(model), shapes)
    peak = peak_fn(RunSpec(str(model), "imported", threads)) if peak_fn else None
    joined = join(analysis, prof, peak_macs_per_s=peak)
    if fmt is Format.json:
        emit(json.dumps(rep.joined_to_dict(joined, str(model), str(file)), indent=1), output)
    elif fmt is Format.csv:
        emit(rep.joined_to_csv(joined), output)
    else:
        from rich.console import Group

        title = f"{file.name} on {model.name}"
        render(Group(*rep.render_join(joined, title=title, top=top)), output)
