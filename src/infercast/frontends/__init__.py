"""Model file -> Graph. The only code that knows file formats.

The format is decided by the file's content, not its name: a TFLite flatbuffer
carries the identifier ``TFL3`` at byte 4; anything else is tried as ONNX.
"""

from __future__ import annotations

import contextlib
import dataclasses
import mmap
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import BinaryIO

from infercast._gc import paused_gc
from infercast.errors import InputShapeError, ModelFileError, regular_file
from infercast.ir.graph import Graph, Shape

__all__ = ["load", "parse_input_shapes"]

MAX_DIM = 2**31 - 1
"""Largest dimension ``--input-shape`` takes (TFLite stores dimensions as int32)."""
MAX_RANK = 16


MAX_TENSOR_BYTES = 1 << 48
"""Largest tensor a model may hold (256 TiB): beyond it the file is corrupt or crafted."""
MAX_STRUCTURE_BYTES = 64 << 20
"""Largest ONNX graph without its weights (a 100,000-node graph is about 20 MB)."""
MAX_GRAPH_BYTES = 1 << 56
"""Largest sum of all tensors' sizes (the memory planner sums them in int64)."""


@paused_gc()
def load(path: str | os.PathLike[str], input_shapes: Mapping[str, Shape] | None = None) -> Graph:
    """Read a ``.tflite`` or ``.onnx`` model into a :class:`Graph`."""
    graph = _load(Path(path), input_shapes)
    _check_sizes(graph)
    return graph


def _check_sizes(graph: Graph) -> None:
    """Refuse tensors no device holds: sizes that overflow the planner's arithmetic are
    a corrupt file, said in one line, not an overflow later."""
    total = 0
    for _, g in graph.all_graphs():
        for t in g.tensors.values():
            n = t.nbytes or 0
            total += max(n, 0)
            if n > MAX_TENSOR_BYTES or total > MAX_GRAPH_BYTES:
                shape = "x".join("?" if d is None else str(d) for d in t.shape or ())
                raise ModelFileError(
                    f"{graph.path}: tensor '{t.name[:80]}' has shape {shape[:120]} "
                    f"({n} bytes); no device holds that",
                    "the file is corrupt or crafted",
                )


def _load(p: Path, input_shapes: Mapping[str, Shape] | None) -> Graph:
    regular_file(p, ModelFileError)
    try:
        with open(p, "rb") as f:
            head = f.read(8)
            if not head:
                raise ModelFileError(f"{p}: file is empty")
            if len(head) >= 8 and head[4:8] == b"TFL3":
                from infercast.frontends.tflite import load_tflite

                # A memory map: weight buffers are never paged in, only sized.
                with _mapped(f) as data:
                    graph = load_tflite(str(p), data, input_shapes)
                if p.suffix.lower() not in (".tflite", ".lite", ".bin"):
                    named = p.suffix or "without a suffix"
                    note = f"{p.name} is a TFLite flatbuffer (named {named}); read as TFLite"
                    graph = dataclasses.replace(graph, notes=(note, *graph.notes))
                return graph
    except OSError as exc:
        raise ModelFileError(f"{p}: cannot be read ({exc.strerror})") from exc
    if p.suffix.lower() == ".tflite":
        raise ModelFileError(
            f"{p}: has a .tflite name but no TFLite identifier ('TFL3' at byte 4)",
            "the file is truncated, corrupt, or another format",
        )
    from infercast.frontends.onnx import WireError, load_onnx, read_structure

    try:
        structure, _skipped = read_structure(p)
    except WireError as exc:
        raise ModelFileError(
            f"{p}: not a readable ONNX model (protobuf: {exc})",
            "the file is truncated, corrupt, or another format",
        ) from exc
    if len(structure) > MAX_STRUCTURE_BYTES:
        raise ModelFileError(
            f"{p}: its graph is {len(structure)} bytes without the weights; infercast reads "
            f"graphs of at most {MAX_STRUCTURE_BYTES}",
            "the file is corrupt or crafted, or not a model for an edge device",
        )
    return load_onnx(str(p), structure, input_shapes)


@contextlib.contextmanager
def _mapped(f: BinaryIO) -> Iterator[mmap.mmap]:
    """A read-only memory map of ``f``, closed on exit unless a view of it is still
    referenced (a numpy array in an error's traceback): then it stays open until the
    last view goes, so no view ever reads a closed map, and no ``BufferError`` replaces
    the error being raised."""
    data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        yield data
    finally:
        with contextlib.suppress(BufferError):
            data.close()


def parse_input_shapes(specs: list[str] | tuple[str, ...]) -> dict[str, Shape]:
    """Parse ``name=1x3x224x224`` options (several may be given)."""
    out: dict[str, Shape] = {}
    for spec in specs:
        name, sep, dims = spec.rpartition("=")
        if not sep or not name or not dims:
            raise InputShapeError(
                f"--input-shape '{spec}' is not NAME=DIMS",
                "example: --input-shape input=1x3x224x224",
            )
        try:
            shape = tuple(int(d) for d in dims.lower().replace(",", "x").split("x"))
        except ValueError:
            raise InputShapeError(
                f"--input-shape '{spec}': dimensions must be whole numbers separated by 'x'",
                "example: --input-shape input=1x3x224x224",
            ) from None
        if any(d <= 0 for d in shape):
            raise InputShapeError(f"--input-shape '{spec}': every dimension must be positive")
        if any(d > MAX_DIM for d in shape) or len(shape) > MAX_RANK:
            raise InputShapeError(
                f"--input-shape '{spec[:80]}': at most {MAX_RANK} dimensions of at most "
                f"{MAX_DIM} each"
            )
        out[name] = shape
    return out
