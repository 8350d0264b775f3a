"""Element types shared by every frontend.

Both file formats name their element types differently (TFLite ``TensorType``,
ONNX ``TensorProto.DataType``); the frontends map them onto :class:`DType`,
whose ``bits`` is what memory and bandwidth figures are computed from.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import numpy as np


class DType(StrEnum):
    """An element type. The value is the lower-case name used in all outputs."""

    FLOAT64 = "float64"
    FLOAT32 = "float32"
    FLOAT16 = "float16"
    BFLOAT16 = "bfloat16"
    FLOAT8 = "float8"
    INT64 = "int64"
    INT32 = "int32"
    INT16 = "int16"
    INT8 = "int8"
    INT4 = "int4"
    INT2 = "int2"
    UINT64 = "uint64"
    UINT32 = "uint32"
    UINT16 = "uint16"
    UINT8 = "uint8"
    UINT4 = "uint4"
    BOOL = "bool"
    STRING = "string"
    COMPLEX64 = "complex64"
    COMPLEX128 = "complex128"
    RESOURCE = "resource"
    VARIANT = "variant"
    UNKNOWN = "unknown"

    @property
    def bits(self) -> int:
        """Storage bits per element (0 where the size is not fixed: strings, handles)."""
        return _BITS[self]

    @property
    def is_float(self) -> bool:
        return self in _FLOATS

    @property
    def is_integer(self) -> bool:
        return self in _INTS

    def nbytes(self, elements: int) -> int:
        """Bytes for ``elements`` values, packed sub-byte types rounded up."""
        return (elements * self.bits + 7) // 8

    @property
    def numpy(self) -> np.dtype[Any] | None:
        """The numpy element type holding one value per element; None for packed
        sub-byte types, 8-bit and 16-bit brain floats, strings and handles."""
        return _NUMPY.get(self)


_BITS: dict[DType, int] = {
    DType.FLOAT64: 64,
    DType.FLOAT32: 32,
    DType.FLOAT16: 16,
    DType.BFLOAT16: 16,
    DType.FLOAT8: 8,
    DType.INT64: 64,
    DType.INT32: 32,
    DType.INT16: 16,
    DType.INT8: 8,
    DType.INT4: 4,
    DType.INT2: 2,
    DType.UINT64: 64,
    DType.UINT32: 32,
    DType.UINT16: 16,
    DType.UINT8: 8,
    DType.UINT4: 4,
    DType.BOOL: 8,
    DType.STRING: 0,
    DType.COMPLEX64: 64,
    DType.COMPLEX128: 128,
    DType.RESOURCE: 0,
    DType.VARIANT: 0,
    DType.UNKNOWN: 0,
}
_NUMPY: dict[DType, np.dtype[Any]] = {
    DType.FLOAT64: np.dtype(np.float64),
    DType.FLOAT32: np.dtype(np.float32),
    DType.FLOAT16: np.dtype(np.float16),
    DType.INT64: np.dtype(np.int64),
    DType.INT32: np.dtype(np.int32),
    DType.INT16: np.dtype(np.int16),
    DType.INT8: np.dtype(np.int8),
    DType.UINT64: np.dtype(np.uint64),
    DType.UINT32: np.dtype(np.uint32),
    DType.UINT16: np.dtype(np.uint16),
    DType.UINT8: np.dtype(np.uint8),
    DType.BOOL: np.dtype(np.bool_),
    DType.COMPLEX64: np.dtype(np.complex64),
    DType.COMPLEX128: np.dtype(np.complex128),
}
_FLOATS = {DType.FLOAT64, DType.FLOAT32, DType.FLOAT16, DType.BFLOAT16, DType.FLOAT8}
_INTS = {
    DType.INT64,
    DType.INT32,
    DType.INT16,
    DType.INT8,
    DType.INT4,
    DType.INT2,
    DType.UINT64,
    DType.UINT32,
    DType.UINT16,
    DType.UINT8,
    DType.UINT4,
}
