"""Read an ONNX file's structure without reading its weights.

An ONNX file is one protobuf ``ModelProto`` (onnx/onnx.proto): the weights are
the data fields of ``TensorProto`` messages -- the initializers inside
``ModelProto.graph`` (field 7) at ``GraphProto.initializer`` (field 5), and the
tensors of ``Constant`` nodes (``GraphProto.node`` 1 -> ``NodeProto.attribute``
5 -> ``AttributeProto.t`` 5 / ``tensors`` 10), also inside control-flow bodies
(``AttributeProto.g`` 6 / ``graphs`` 11). This module walks the protobuf wire
format over a memory map of the file and re-emits the model with the data of
large tensors left out, so the bytes of the weights are never paged in or
parsed (a 200 MB ``Constant`` used to cost 1.2 GB); their sizes follow from
``dims`` and ``data_type``, which are kept. Everything else (nodes, attributes,
value_info, small tensors that shape inference reads) is copied byte for byte.
Messages nested deeper than :data:`MAX_DEPTH` are refused.

Wire format: https://protobuf.dev/programming-guides/encoding/ — each field is
a varint key ``(field_number << 3) | wire_type``; wire type 2 is a varint
length followed by that many bytes.
"""

from __future__ import annotations

import mmap
from pathlib import Path

# TensorProto data fields (float_data 4, int32_data 5, string_data 6, int64_data 7,
# raw_data 9, double_data 10, uint64_data 11).
_TENSOR_DATA_FIELDS = {4, 5, 6, 7, 9, 10, 11}
_CHILDREN: dict[str, dict[int, str]] = {
    "model": {7: "graph"},  # ModelProto.graph
    "graph": {1: "node", 5: "tensor"},  # GraphProto.node, .initializer
    "node": {5: "attribute"},  # NodeProto.attribute
    "attribute": {5: "tensor", 10: "tensor", 6: "graph", 11: "graph"},  # .t .tensors .g .graphs
}
"""Which length-delimited fields of each message hold the messages that may hold weights."""
MAX_DEPTH = 64
LARGE_BYTES = 32 * 1024
"""Data fields longer than this are dropped (small ones are kept for shape inference)."""


class WireError(ValueError):
    """The bytes are not a well-formed protobuf message."""


def _varint(buf: mmap.mmap | bytes, pos: int, end: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise WireError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise WireError("varint too long")


def _encode_varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _skip(buf: mmap.mmap | bytes, pos: int, end: int, wire: int) -> int:
    if wire == 0:
        return _varint(buf, pos, end)[1]
    if wire == 1:
        pos += 8
    elif wire == 2:
        n, pos = _varint(buf, pos, end)
        pos += n
    elif wire == 5:
        pos += 4
    else:
        raise WireError(f"unsupported wire type {wire}")
    if pos > end:
        raise WireError("field runs past the end of its message")
    return pos


def _rewrite(
    buf: mmap.mmap | bytes, start: int, end: int, level: str, stats: list[int], depth: int = 0
) -> bytes:
    """Re-emit the message in ``buf[start:end]``; ``level`` names its type
    (model|graph|node|attribute|tensor)."""
    if depth > MAX_DEPTH:
        raise WireError(f"messages nested more than {MAX_DEPTH} deep")
    children = _CHILDREN.get(level, {})
    parts: list[bytes] = []
    copy_from = start
    pos = start
    while pos < end:
        field_start = pos
        key, pos = _varint(buf, pos, end)
        field, wire = key >> 3, key & 7
        if wire != 2:
            pos = _skip(buf, pos, end, wire)
            continue
        n, data_start = _varint(buf, pos, end)
        data_end = data_start + n
        if data_end > end:
            raise WireError("length-delimited field runs past the end of its message")
        pos = data_end
        replace: bytes | None = None
        if field in children and n > LARGE_BYTES:
            replace = _rewrite(buf, data_start, data_end, children[field], stats, depth + 1)
        elif level == "tensor" and field in _TENSOR_DATA_FIELDS and n > LARGE_BYTES:
            stats[0] += n
            parts.append(buf[copy_from:field_start])
            copy_from = pos
            continue
        if replace is not None:
            parts.append(buf[copy_from:field_start])
            parts.append(_encode_varint(key) + _encode_varint(len(replace)) + replace)
            copy_from = pos
    parts.append(buf[copy_from:end])
    return b"".join(parts)


def read_structure(path: str | Path) -> tuple[bytes, int]:
    """The model's bytes without large initializer data, and how many bytes were left out.

    Raises :class:`WireError` if the file is not a well-formed protobuf message.
    """
    with open(path, "rb") as f:
        size = f.seek(0, 2)
        if size == 0:
            return b"", 0
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            stats = [0]
            data = _rewrite(mm, 0, size, "model", stats)
            return data, stats[0]
