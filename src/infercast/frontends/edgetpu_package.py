"""What edgetpu_compiler decided, read back from a compiled model's ``edgetpu-custom-op``.

A model compiled for the Coral Edge TPU replaces the layers it maps with one custom op,
``edgetpu-custom-op``, whose options hold the compiled package. Its layout is libedgetpu's
``executable/executable.fbs`` (google-coral/libedgetpu): a short header, then a
``Package`` flatbuffer (file identifier ``DWN1``) whose ``serialized_multi_executable`` is a
``MultiExecutable`` of serialized ``Executable`` flatbuffers. A model whose parameters are
cached on chip carries two executables: a ``PARAMETER_CACHING`` one that loads the cached
parameters once, and an ``EXECUTION_ONLY`` one run every inference, whose own ``parameters``
are those streamed from host memory on every inference; a ``STAND_ALONE`` executable streams
all of its parameters. ``scratch_size_bytes`` is the host buffer for activations that do not
fit on chip, ``used_narrow_memory_bytes_per_tile`` the on-chip activation memory per tile.

These are the compiler's own figures (the "On-chip memory used for caching model
parameters" / "Off-chip memory used for streaming uncached model parameters" lines of its
log), so ``analyze`` reports them for a compiled file; the layers themselves are inside the
package and cannot be counted from it. Every read is bounds-checked: a truncated or foreign
blob gives :class:`PackageError`, never a crash.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

HEADER_SEARCH_BYTES = 64
"""The ``Package`` flatbuffer follows a short header (6 or 8 bytes in the compiled models of
google-coral/test_data); it starts 4 bytes before its identifier ``DWN1``, which is looked
for in the options' first bytes."""
FILE_IDENTIFIER = b"DWN1"

MAX_EXECUTABLES = 64
"""A compiled model carries one or two executables per chip (more when co-compiled)."""
MAX_LIST = 65536
"""Bitstreams, inputs or outputs of one executable."""

EXECUTABLE_TYPES = {0: "STAND_ALONE", 1: "PARAMETER_CACHING", 2: "EXECUTION_ONLY"}
"""``ExecutableType`` (executable.fbs)."""

# Field slots (declaration order in executable.fbs; a union takes two).
_PKG_MULTI_EXECUTABLE, _PKG_COMPILER_VERSION = 1, 4
_MULTI_EXECUTABLES = 0
_EXE_SCRATCH, _EXE_BITSTREAMS, _EXE_PARAMETERS = 4, 5, 6
_EXE_INPUTS, _EXE_OUTPUTS, _EXE_NARROW, _EXE_TYPE = 8, 9, 12, 13
_BITSTREAM_BYTES = 0
_LAYER_NAME, _LAYER_SIZE, _LAYER_Y, _LAYER_X, _LAYER_Z = 0, 1, 2, 3, 4


class PackageError(ValueError):
    """The op's options are not a readable Edge TPU package."""


@dataclass(frozen=True)
class EdgeTpuLayer:
    """An input or output of the compiled executable."""

    name: str
    y: int
    x: int
    z: int
    size_bytes: int
    """Including the layout's padding (executable.fbs); the unpadded size is y * x * z
    elements."""

    @property
    def elements(self) -> int:
        return self.y * self.x * self.z


@dataclass(frozen=True)
class EdgeTpuExecutable:
    kind: str
    """STAND_ALONE, PARAMETER_CACHING or EXECUTION_ONLY."""
    parameter_bytes: int
    scratch_bytes: int
    instruction_bytes: int
    narrow_memory_bytes_per_tile: int
    inputs: tuple[EdgeTpuLayer, ...]
    outputs: tuple[EdgeTpuLayer, ...]


@dataclass(frozen=True)
class EdgeTpuPackage:
    compiler_version: str
    executables: tuple[EdgeTpuExecutable, ...]

    @property
    def cached_parameter_bytes(self) -> int:
        """Parameters loaded into the on-chip cache once (PARAMETER_CACHING)."""
        return sum(e.parameter_bytes for e in self.executables if e.kind == "PARAMETER_CACHING")

    @property
    def streamed_parameter_bytes(self) -> int:
        """Parameters sent from host memory with every inference."""
        return sum(e.parameter_bytes for e in self.executables if e.kind != "PARAMETER_CACHING")

    @property
    def scratch_bytes(self) -> int:
        return max((e.scratch_bytes for e in self.executables), default=0)

    @property
    def instruction_bytes(self) -> int:
        """Instruction bitstreams sent with every inference (the run-time executables)."""
        return sum(e.instruction_bytes for e in self.executables if e.kind != "PARAMETER_CACHING")

    @property
    def narrow_memory_bytes_per_tile(self) -> int:
        return max((e.narrow_memory_bytes_per_tile for e in self.executables), default=0)

    def describe(self) -> str:
        """One line with units, as ``analyze`` prints it."""
        version = self.compiler_version or "version not recorded"
        return (
            f"compiled by edgetpu_compiler ({version}): "
            f"{self.cached_parameter_bytes:,} B of parameters cached on chip, "
            f"{self.streamed_parameter_bytes:,} B streamed from host memory every inference, "
            f"{self.scratch_bytes:,} B of activations in a host scratch buffer, "
            f"{self.narrow_memory_bytes_per_tile:,} B of on-chip activation memory per tile, "
            f"{self.instruction_bytes:,} B of instructions per inference"
        )


class _Buf:
    """Bounds-checked little-endian reads of one flatbuffer."""

    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.what = what

    def _get(self, fmt: str, pos: int) -> int:
        size = struct.calcsize(fmt)
        if pos < 0 or pos + size > len(self.data):
            raise PackageError(
                f"{self.what}: a field at byte {pos} lies outside its {len(self.data)} bytes "
                "(truncated or not an Edge TPU package)"
            )
        return int(struct.unpack_from(fmt, self.data, pos)[0])

    def u32(self, pos: int) -> int:
        return self._get("<I", pos)

    def root(self) -> int:
        return self.u32(0)

    def field(self, table: int, slot: int) -> int:
        """Absolute position of a table's field, 0 when absent."""
        vtable = table - self._get("<i", table)
        vsize = self._get("<H", vtable)
        off = 4 + 2 * slot
        if off + 2 > vsize:
            return 0
        rel = self._get("<H", vtable + off)
        return table + rel if rel else 0

    def scalar(self, table: int, slot: int, fmt: str, default: int = 0) -> int:
        pos = self.field(table, slot)
        return self._get(fmt, pos) if pos else default

    def indirect(self, pos: int) -> int:
        return pos + self.u32(pos)

    def vector(self, table: int, slot: int, elem: int) -> tuple[int, int]:
        """(start, length) of a vector field; (0, 0) when absent."""
        pos = self.field(table, slot)
        if not pos:
            return 0, 0
        vec = self.indirect(pos)
        n = self.u32(vec)
        start = vec + 4
        if start + n * elem > len(self.data):
            raise PackageError(
                f"{self.what}: a vector of {n} elements runs past the end of its "
                f"{len(self.data)} bytes (truncated or not an Edge TPU package)"
            )
        return start, n

    def blob(self, table: int, slot: int) -> bytes:
        start, n = self.vector(table, slot, 1)
        return self.data[start : start + n]

    def tables(self, table: int, slot: int, limit: int) -> list[int]:
        """The tables of a vector field, at most ``limit`` of them: flatbuffer offsets may
        alias (one table listed a million times), so counts are bounded before a walk."""
        start, n = self.vector(table, slot, 4)
        if n > limit:
            raise PackageError(
                f"{self.what}: a list of {n} entries where a compiled model has at most {limit}"
            )
        return [self.indirect(start + 4 * i) for i in range(n)]

    def string(self, table: int, slot: int) -> str:
        start, n = self.vector(table, slot, 1)
        return self.data[start : start + n].decode("utf-8", "replace")

    def strings(self, table: int, slot: int, limit: int) -> list[bytes]:
        out = []
        for pos in self.tables(table, slot, limit):
            n = self.u32(pos)
            if pos + 4 + n > len(self.data):
                raise PackageError(f"{self.what}: a serialized executable runs past the end")
            out.append(self.data[pos + 4 : pos + 4 + n])
        return out


def _executable(blob: bytes, index: int) -> EdgeTpuExecutable:
    b = _Buf(blob, f"executable {index}")
    exe = b.root()
    kind = b.scalar(exe, _EXE_TYPE, "<h")
    instr = sum(
        b.vector(t, _BITSTREAM_BYTES, 1)[1] for t in b.tables(exe, _EXE_BITSTREAMS, MAX_LIST)
    )

    def layers(slot: int) -> tuple[EdgeTpuLayer, ...]:
        return tuple(
            EdgeTpuLayer(
                name=b.string(t, _LAYER_NAME),
                y=b.scalar(t, _LAYER_Y, "<i"),
                x=b.scalar(t, _LAYER_X, "<i"),
                z=b.scalar(t, _LAYER_Z, "<i"),
                size_bytes=b.scalar(t, _LAYER_SIZE, "<i"),
            )
            for t in b.tables(exe, slot, MAX_LIST)
        )

    return EdgeTpuExecutable(
        kind=EXECUTABLE_TYPES.get(kind, f"type {kind}"),
        parameter_bytes=b.vector(exe, _EXE_PARAMETERS, 1)[1],
        scratch_bytes=b.scalar(exe, _EXE_SCRATCH, "<i"),
        instruction_bytes=instr,
        narrow_memory_bytes_per_tile=b.scalar(exe, _EXE_NARROW, "<i"),
        inputs=layers(_EXE_INPUTS),
        outputs=layers(_EXE_OUTPUTS),
    )


def read_package(options: bytes) -> EdgeTpuPackage:
    """The compiler's figures from an ``edgetpu-custom-op``'s custom options."""
    at = bytes(options[:HEADER_SEARCH_BYTES]).find(FILE_IDENTIFIER)
    if at < 4:
        raise PackageError(
            f"no '{FILE_IDENTIFIER.decode()}' identifier in the first {HEADER_SEARCH_BYTES} "
            f"of {len(options)} bytes (not an Edge TPU package, or a format this reader "
            "does not know)"
        )
    data = bytes(options[at - 4 :])
    b = _Buf(data, "package")
    pkg = b.root()
    multi = _Buf(b.blob(pkg, _PKG_MULTI_EXECUTABLE), "multi-executable")
    if not multi.data:
        raise PackageError("the package holds no executables")
    blobs = multi.strings(multi.root(), _MULTI_EXECUTABLES, MAX_EXECUTABLES)
    return EdgeTpuPackage(
        compiler_version=b.string(pkg, _PKG_COMPILER_VERSION),
        executables=tuple(_executable(x, i) for i, x in enumerate(blobs)),
    )


def compiled_split(path: str | Path) -> tuple[int, int]:
    """(parameter bytes cached on chip, parameter bytes streamed every inference) summed over
    every ``edgetpu-custom-op`` of a compiled ``.tflite``. Raises
    :class:`~infercast.errors.InfercastError`, saying what to pass, when the file holds none
    or a package does not read."""
    from infercast.errors import InfercastError
    from infercast.frontends import load
    from infercast.frontends.tflite import EDGETPU_OP

    graph = load(path)
    ops = [n for n in graph.nodes if n.native_op == EDGETPU_OP]
    if not ops:
        raise InfercastError(
            f"{path}: no {EDGETPU_OP} in this model: pass the file edgetpu_compiler wrote "
            "(its name ends in _edgetpu.tflite)"
        )
    bad = [n for n in ops if "edgetpu_cached_parameter_bytes" not in n.attrs]
    if bad:
        raise InfercastError(f"{path}: {bad[0].name}: {bad[0].attrs.get('edgetpu_package')}")
    return (
        sum(int(n.attrs["edgetpu_cached_parameter_bytes"]) for n in ops),
        sum(int(n.attrs["edgetpu_streamed_parameter_bytes"]) for n in ops),
    )
