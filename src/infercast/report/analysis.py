"""Renderers of an :class:`~infercast.analysis.cost.Analysis`: JSON, CSV, terminal table.

The JSON document is a versioned contract (``docs/json-schema.md``):
``schema`` changes its major number when a field changes meaning or goes away;
new fields may appear within a version.
"""

from __future__ import annotations

from typing import Any

from infercast._version import __version__
from infercast.analysis.cost import Analysis, LayerCost
from infercast.analysis.memory import MemoryAnalysis
from infercast.ir.graph import Graph, Shape
from infercast.report.memory import MEMORY_CONVENTIONS, peak_lines, summary_dict
from infercast.report.names import graph_labels
from infercast.report.summaries import op_summary
from infercast.report.table import Col, FitTable, Grid, Row, TableOptions, by_op_grid, entry
from infercast.report.text import cell, csv_text, shown
from infercast.report.units import human_bytes, human_count

SCHEMA = "infercast.analysis/1"

CONVENTIONS = {
    "macs": "multiply-accumulates of conv, depthwise/transposed conv, fully-connected, "
    "MatMul/Gemm/Einsum/attention and recurrent cells; bias adds and fused activations "
    "not counted",
    "flops": "all arithmetic operations, a MAC counted as 2; per-op rules in docs/ops.md",
    "params": "elements of constant weight inputs; a tensor shared by layers counts once",
    "weight_bytes": "bytes stored in the file for the parameters (by storage dtype)",
    "runtime_weight_bytes": "bytes after load-time decoding (fp16 -> fp32, sparse -> dense)",
    "activation_bytes": "bytes of non-constant inputs and outputs of a layer, by dtype",
    "arithmetic_intensity": "FLOPs per byte moved (activations in + out + weights as stored)",
    **MEMORY_CONVENTIONS,
}


def _shape(s: Shape | None) -> list[int | None] | None:
    return None if s is None else list(s)


def layer_dict(ly: LayerCost) -> dict[str, Any]:
    ai = ly.arithmetic_intensity
    return {
        "index": ly.index,
        "subgraph": ly.subgraph,
        "name": ly.name,
        "op": ly.op,
        "native_op": ly.native_op,
        "status": ly.status,
        "output_shapes": [_shape(s) for s in ly.output_shapes],
        "output_dtypes": list(ly.output_dtypes),
        "macs": ly.macs,
        "flops": ly.flops,
        "params": ly.params,
        "weight_bytes": ly.weight_bytes,
        "runtime_weight_bytes": ly.runtime_weight_bytes,
        "input_bytes": ly.input_bytes,
        "output_bytes": ly.output_bytes,
        "arithmetic_intensity": None if ai is None else round(ai, 4),
        "note": ly.note,
    }


def _io(g: Graph, names: tuple[str, ...]) -> list[dict[str, Any]]:
    out = []
    for n in names:
        tensor = g.tensors[n]
        entry: dict[str, Any] = {
            "name": n,
            "shape": _shape(tensor.shape),
            "dtype": tensor.dtype.value,
        }
        if tensor.quant is not None:
            entry["quantization"] = tensor.quant.to_dict()
        out.append(entry)
    return out


def _totals(a: Analysis, mem: MemoryAnalysis) -> dict[str, Any]:
    t = a.totals
    ai = t.arithmetic_intensity
    return {
        "macs": t.macs,
        "flops": t.flops,
        "params": t.params,
        "weight_bytes": t.weight_bytes,
        "runtime_weight_bytes": t.runtime_weight_bytes,
        "input_activation_bytes": t.input_bytes,
        "output_activation_bytes": t.output_bytes,
        "arithmetic_intensity": None if ai is None else round(ai, 4),
        "layers": t.layers,
        "unsupported_layers": t.unsupported_layers,
        "unknown_shape_layers": t.unknown_shape_layers,
        "complete": t.complete,
        "peak_activation_bytes": mem.arena_bytes,
        "activation_lower_bound_bytes": mem.lower_bound_bytes,
    }


def to_dict(a: Analysis, memory: MemoryAnalysis) -> dict[str, Any]:
    """The ``infercast.analysis/1`` document of ``a`` with the memory plan ``memory``."""
    g = a.graph
    return {
        "schema": SCHEMA,
        "infercast_version": __version__,
        "model": {
            "path": g.path,
            "format": g.format,
            "name": g.name,
            "layout": g.layout,
            "metadata": dict(g.metadata),
            "inputs": _io(g, g.inputs),
            "outputs": _io(g, g.outputs),
            "subgraphs": list(g.subgraphs),
        },
        "conventions": CONVENTIONS,
        "totals": _totals(a, memory),
        "layers": [
            {**layer_dict(ly), "live_bytes": memory.layer_live_bytes(ly.subgraph, ly.index)}
            for ly in a.layers
        ],
        "memory": summary_dict(memory),
        "unsupported_ops": [
            {"op": u.op, "native_op": u.native_op, "count": u.count, "layers": list(u.layers)}
            for u in a.unsupported
        ],
        "notes": list(a.notes),
    }


CSV_COLUMNS = [
    "index",
    "subgraph",
    "name",
    "op",
    "native_op",
    "status",
    "output_shapes",
    "output_dtypes",
    "macs",
    "flops",
    "params",
    "weight_bytes",
    "runtime_weight_bytes",
    "input_bytes",
    "output_bytes",
    "arithmetic_intensity",
    "note",
    "live_bytes",
]


def incomplete_message(a: Analysis) -> str | None:
    """``incomplete: ...`` saying which layers have no known cost; None when complete."""
    t = a.totals
    if t.complete:
        return None
    what = []
    if a.unsupported:
        ops = ", ".join(u.native_op for u in a.unsupported)
        what.append(f"{t.unsupported_layers} layer(s) of op(s) with no cost rule ({ops})")
    if t.unknown_shape_layers:
        what.append(f"{t.unknown_shape_layers} layer(s) with shapes not known statically")
    return f"incomplete: {'; '.join(what)}; the totals exclude them"


def records(a: Analysis, memory: MemoryAnalysis) -> list[dict[str, Any]]:
    """One flat dict per layer (the CSV's rows): shapes as ``1x3x224x224;…`` text."""
    out = []
    for ly in a.layers:
        row = layer_dict(ly)
        row["output_shapes"] = ";".join(
            "?" if s is None else "x".join("?" if d is None else str(d) for d in s)
            for s in ly.output_shapes
        )
        row["output_dtypes"] = ";".join(ly.output_dtypes)
        row["live_bytes"] = memory.layer_live_bytes(ly.subgraph, ly.index)
        out.append(row)
    return out


def to_csv(a: Analysis, memory: MemoryAnalysis) -> str:
    return csv_text(CSV_COLUMNS, records(a, memory))


def _shape_text(shapes: tuple[Shape | None, ...]) -> str:
    return ", ".join(
        "?" if s is None else "x".join("?" if d is None else str(d) for d in s) or "scalar"
        for s in shapes
    )


ANALYZE_COLUMNS = [
    Col("index", "#", prio=0),
    Col("name", "layer", numeric=False, prio=0, min_width=20),
    Col("op", "op", numeric=False, prio=2, min_width=10),
    Col("native_op", "native op", numeric=False, prio=7, min_width=10),
    Col("output", "output", numeric=False, prio=5, min_width=9),
    Col("macs", "MACs", prio=0),
    Col("flops", "FLOPs", prio=3),
    Col("params", "params", prio=4),
    Col("weights", "weights", prio=2, short="wts"),
    Col("act_in", "act in", prio=6),
    Col("act_out", "act out", prio=6),
    Col("live", "live", prio=1),
    Col("intensity", "FLOP/B", prio=5),
]
"""The analysis table's columns; ``prio``: which go first in a narrow terminal."""


def layer_grid(a: Analysis, memory: MemoryAnalysis) -> Grid:
    """The per-layer table as data (one short unique name per layer: report.names)."""
    mem = memory
    g = a.graph
    labels = graph_labels(g)
    rows: list[Row] = []
    styles: list[str] = []
    for ly in a.layers:
        ai = ly.arithmetic_intensity
        live = mem.layer_live_bytes(ly.subgraph, ly.index)
        at_peak = (ly.subgraph, ly.index) == (mem.peak.graph, mem.peak.node_index)
        rows.append(
            {
                "index": entry(ly.index, ly.index),
                "name": entry(labels.get((ly.subgraph, ly.index), ly.name), ly.name),
                "op": entry(ly.op, ly.op),
                "native_op": entry(ly.native_op, ly.native_op),
                "output": entry(_shape_text(ly.output_shapes)),
                "macs": entry("?" if ly.macs is None else human_count(ly.macs), ly.macs),
                "flops": entry("?" if ly.flops is None else human_count(ly.flops), ly.flops),
                "params": entry(human_count(ly.params) if ly.params else "", ly.params),
                "weights": entry(
                    human_bytes(ly.weight_bytes) if ly.weight_bytes else "", ly.weight_bytes
                ),
                "act_in": entry(
                    "?" if ly.input_bytes is None else human_bytes(ly.input_bytes), ly.input_bytes
                ),
                "act_out": entry(
                    "?" if ly.output_bytes is None else human_bytes(ly.output_bytes),
                    ly.output_bytes,
                ),
                "live": entry(
                    "" if live is None else human_bytes(live) + (" ◀ peak" if at_peak else ""),
                    live,
                ),
                "intensity": entry("" if ai is None else f"{ai:.1f}", ai),
            }
        )
        styles.append(
            "bold magenta"
            if at_peak
            else {"unsupported": "red", "unknown_shape": "yellow", "folded": "dim"}.get(
                ly.status, ""
            )
        )
    t = a.totals
    ai = t.arithmetic_intensity
    total = {
        "name": entry("total"),
        "macs": entry(human_count(t.macs)),
        "flops": entry(human_count(t.flops)),
        "params": entry(human_count(t.params)),
        "weights": entry(human_bytes(t.weight_bytes)),
        "act_in": entry(human_bytes(t.input_bytes)),
        "act_out": entry(human_bytes(t.output_bytes)),
        "live": entry(human_bytes(mem.arena_bytes)),
        "intensity": entry("" if ai is None else f"{ai:.1f}"),
    }
    title = f"{shown(g.path or g.name)}  ({g.format}, {len(a.layers)} layers)"
    return Grid(
        list(ANALYZE_COLUMNS),
        rows,
        title=title,
        total=total,
        row_styles=styles,
        default_sort="macs",
        noun="layers",
    )


def op_grid(a: Analysis) -> Grid:
    """``--by op``: layers, MACs, FLOPs, params and weight bytes per op type."""
    rows = op_summary(
        a.layers,
        lambda ly: ly.op,
        [
            ("macs", lambda ly: ly.macs),
            ("flops", lambda ly: ly.flops),
            ("params", lambda ly: ly.params),
            ("weights", lambda ly: ly.weight_bytes),
        ],
    )
    total = a.totals.macs or 1
    grid = by_op_grid(
        f"{shown(a.graph.path or a.graph.name)}  by op ({len(a.layers)} layers)",
        [(r.op, r.count, {**r.values, "share": r.values["macs"] / total}) for r in rows],
        [
            ("macs", "MACs", human_count),
            ("share", "% MACs", lambda v: f"{100 * v:.1f}"),
            ("flops", "FLOPs", human_count),
            ("params", "params", human_count),
            ("weights", "weights", human_bytes),
        ],
    )
    return grid


def render_table(
    a: Analysis,
    memory: MemoryAnalysis,
    opts: TableOptions | None = None,
    by_op: bool = False,
) -> Any:
    """A rich renderable: per-layer (or per-op) table, totals, the memory peak, unsupported
    ops, notes. Columns fit the width it is printed at (:class:`FitTable`)."""
    mem = memory
    from rich.console import Group

    t = a.totals
    grid = op_grid(a) if by_op else layer_grid(a, mem)
    lines: list[Any] = [
        FitTable(grid, opts),
        cell(
            f"MACs {t.macs:,} (multiply-accumulates)   FLOPs {t.flops:,} (a MAC = 2)   "
            f"params {t.params:,}   weights {t.weight_bytes:,} B stored, "
            f"{t.runtime_weight_bytes:,} B at run time"
        ),
    ]
    lines.extend(cell(line) for line in peak_lines(mem))
    if not t.complete:
        lines.append(cell("totals are INCOMPLETE: see below", style="bold yellow"))
    lines.extend(
        cell(f"unsupported op: {u.native_op} x{u.count} (no cost rule; not in totals)", "red")
        for u in a.unsupported
    )
    lines.extend(cell(f"note: {note}", style="dim") for note in a.notes)
    return Group(*lines)
