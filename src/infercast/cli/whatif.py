"""``infercast whatif``: variants of a model (input size, width, dtype, replaced ops,
threads) through the same stages as the file, side by side; ``--fit`` searches for the
largest one that fits; ``--export`` writes each as a runnable model."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from infercast.cli.common import (
    EXIT_NOT_OK,
    ColumnsOpt,
    Format,
    FormatOpt,
    InputShapeOpt,
    ModelArg,
    OutOpt,
    SortOpt,
    TargetOpt,
    TopNOpt,
    load_on_target,
    progress,
    table_options,
)
from infercast.errors import InfercastError

if TYPE_CHECKING:
    from infercast.ir.graph import Graph
    from infercast.targets import Target
    from infercast.whatif import WhatIfResult

ResolutionOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--resolution",
        "-r",
        help="Input sizes: 128,160,192 (square) or HxW; several allowed.",
    ),
]
WidthOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--width",
        "-w",
        help="Channel multipliers of conv / FC layers, e.g. 0.5,0.75,1.0 (counts rounded "
        "to --divisor; input channels and output classes kept).",
    ),
]
DTypeOpt = Annotated[
    list[str] | None,
    typer.Option("--dtype", help="Re-type weights and activations: int8, fp16, fp32 (a list)."),
]
QuantOpt = Annotated[
    str | None,
    typer.Option("--quant", help="int8 weights quantised per-tensor or per-channel."),
]
ReplaceOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--replace",
        help="Replace an op: HARD_SWISH=RELU6, or a kernel size: DEPTHWISE_CONV_2D:5x5=3x3 "
        "(repeat; all apply to every variant).",
    ),
]
KeepOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--keep",
        help="A layer (name, part of a name, or #index) whose channels --width leaves alone "
        "(repeat), e.g. --keep Conv_1 for MobileNetV2's last conv.",
    ),
]
DivisorOpt = Annotated[
    int, typer.Option("--divisor", help="Round scaled channel counts to a multiple of this.")
]
ThreadsOpt = Annotated[
    list[str] | None,
    typer.Option("--threads", help="CPU threads the forecast assumes, e.g. 1,2,4."),
]
FitOpt = Annotated[
    bool,
    typer.Option(
        "--fit",
        help="Search the ranges the lists span (resolution in steps of the model's stride, "
        "width in steps that change a channel count) for the largest variant (MACs) that "
        "fits every memory of the target (and --budget-ms). Exit 3 when none does.",
    ),
]
BudgetOpt = Annotated[
    float | None,
    typer.Option("--budget-ms", help="With --fit: the forecast latency must not exceed this."),
]
ExportOpt = Annotated[
    Path | None,
    typer.Option(
        "--export",
        help="Write each variant as a runnable model with random weights into DIR "
        "(.onnx for ONNX models; .tflite for TFLite models) for `infercast bench`.",
    ),
]
JobsOpt = Annotated[
    int | None,
    typer.Option("--jobs", "-j", help="Worker processes (default: the machine's cores)."),
]


def whatif(
    model: ModelArg,
    target: TargetOpt,
    resolution: ResolutionOpt = None,
    width: WidthOpt = None,
    dtype: DTypeOpt = None,
    quant: QuantOpt = None,
    replace: ReplaceOpt = None,
    keep: KeepOpt = None,
    divisor: DivisorOpt = 8,
    threads: ThreadsOpt = None,
    fit: FitOpt = False,
    budget_ms: BudgetOpt = None,
    export: ExportOpt = None,
    jobs: JobsOpt = None,
    input_shape: InputShapeOpt = None,
    fmt: FormatOpt = Format.table,
    output: OutOpt = None,
    columns: ColumnsOpt = None,
    sort: SortOpt = None,
    top: TopNOpt = None,
) -> None:
    """What MODEL would take on TARGET at other input sizes, widths, dtypes, with ops
    replaced: MACs, params, weights, activation memory, fit, CPU fallback, forecast.

    Each variant is the model's graph transformed (shapes re-derived by the format's
    rules, weights re-shaped) and run through analysis, memory plan, placement and
    forecast, exactly as a file is. Exit status: 0; 3 with --fit when nothing fits;
    2 on bad input.
    """
    from infercast.report import whatif as rep

    opts = table_options(columns, sort, top)
    options = variant_options(
        resolution, width, dtype, quant, replace, keep, divisor, threads, fit, budget_ms, jobs
    )
    graph, tgt, out = load_on_target(model, input_shape, target, output)
    result = run_variants(graph, tgt, options)
    if export is not None:
        _export(graph, result, export)
    out.result(
        fmt,
        lambda: rep.to_dict(result),
        lambda: rep.render_table(result, opts),
        lambda: rep.to_csv(result),
    )
    if fit and (result.fit is None or result.fit.best is None):
        raise SystemExit(EXIT_NOT_OK)


def variant_options(
    resolution: list[str] | None,
    width: list[str] | None,
    dtype: list[str] | None,
    quant: str | None,
    replace: list[str] | None,
    keep: list[str] | None,
    divisor: int,
    threads: list[str] | None,
    fit: bool,
    budget_ms: float | None,
    jobs: int | None,
) -> dict[str, Any]:
    """The what-if options (``whatif``, ``report``) checked and parsed, as keyword
    arguments of :func:`infercast.whatif.whatif`; bad input raises before any work."""
    from infercast.whatif.spec import (
        parse_dtypes,
        parse_quant,
        parse_replacements,
        parse_resolutions,
        parse_threads,
        parse_widths,
    )

    if budget_ms is not None and not fit:
        raise InfercastError("--budget-ms applies to --fit", "add --fit")
    if budget_ms is not None and budget_ms <= 0:
        raise InfercastError(f"--budget-ms must be positive, not {budget_ms}")
    if jobs is not None and jobs < 1:
        raise InfercastError(f"--jobs must be at least 1, not {jobs}")
    return {
        "resolution": parse_resolutions(resolution),
        "width": parse_widths(width),
        "dtype": parse_dtypes(dtype),
        "quant": parse_quant(quant),
        "replace": parse_replacements(replace),
        "keep": keep or [],
        "divisor": divisor,
        "threads": parse_threads(threads),
        "fit": fit,
        "budget_s": None if budget_ms is None else budget_ms / 1e3,
        "jobs": jobs,
    }


def run_variants(graph: Graph, target: Target, options: dict[str, Any]) -> WhatIfResult:
    """The variants of ``graph`` on ``target``; a sweep where none can be made is bad
    input, single failures are said on stderr."""
    from infercast.whatif import whatif as run

    result = run(graph, target, **options)
    if result.errors and not result.variants and result.fit is None:
        label, why = result.errors[0]
        raise InfercastError(f"no variant could be made: {label}: {why}")
    for label, why in result.errors:
        progress(f"variant {label} not made: {why}")
    return result


def _export(graph: Graph, result: WhatIfResult, directory: Path) -> None:
    """Write the variants (with --fit: the one found) as runnable files."""
    from infercast.whatif.export import export_variants

    chosen = list(result.variants)
    if result.fit is not None:
        chosen = [result.fit.best] if result.fit.best is not None else []
    for path in export_variants(graph, [v.spec for v in chosen], directory):
        progress(f"exported {path}")
