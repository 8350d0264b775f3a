"""Model file -> Graph. The only code that knows file formats.

The format is decided by the file's content, not its name: a TFLite flatbuffer
carries the identifier ``TFL3`` at byte 4; anything else is tried as ONNX.
"""

from __future__ import annotations

import dataclasses
import mmap
import os
from collections.abc import Mapping
from pathlib import Path

from infercast._gc import paused_gc
from infercast.errors import InputShapeError, ModelFileError
from infercast.ir.graph import Graph, Shape

__all__ = ["load", "parse_input_shapes"]


@paused_gc()
def load(path: str | os.PathLike[str], input_shapes: Mapping[str, Shape] | None = None) -> Graph:
    """Read a ``.tflite`` or ``.onnx`` model into a :class:`Graph`."""
    p = Path(path)
    if not p.exists():
        raise ModelFileError(f"{p}: no such file")
    if p.is_dir():
        raise ModelFileError(f"{p}: is a directory, not a model file")
    try:
        with open(p, "rb") as f:
            head = f.read(8)
            if not head:
                raise ModelFileError(f"{p}: file is empty")
            if len(head) >= 8 and head[4:8] == b"TFL3":
                from infercast.frontends.tflite import load_tflite

                # A memory map: weight buffers are never paged in, only sized.
                with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
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
    return load_onnx(str(p), structure, input_shapes)


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
        out[name] = shape
    return out
