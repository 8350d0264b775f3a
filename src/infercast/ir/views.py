"""Named views of tensor dimensions, read through the layout the frontend recorded.

Activation layouts are strings such as ``"NHWC"`` or ``"NCHW"`` (``N`` batch,
``C`` channels, any other letter spatial). Weight layouts use ``O`` (output
channels), ``I`` (input channels per group), spatial letters, and ``1`` for a
dimension that is always one (TFLite depthwise weights are ``1HWO``).
Handlers use these views instead of indexing shapes by position, so one cost
rule serves every format.
"""

from __future__ import annotations

import functools

from infercast._records import record
from infercast.ir.graph import Tensor


class ShapeUnknownError(Exception):
    """A dimension a cost rule needs is not known statically."""

    def __init__(self, tensor: str) -> None:
        super().__init__(f"shape of tensor '{tensor}' is not known")
        self.tensor = tensor


def static_shape(t: Tensor) -> tuple[int, ...]:
    """The tensor's shape with every dimension known, else :class:`ShapeUnknownError`."""
    if not t.is_static:
        raise ShapeUnknownError(t.name)
    return tuple(map(int, t.shape))  # type: ignore[arg-type]  # static: no None


def numel(t: Tensor) -> int:
    """Element count, else :class:`ShapeUnknownError`."""
    n = t.elements
    if n is None:
        raise ShapeUnknownError(t.name)
    return int(n)


@record
class ActivationDims:
    batch: int
    channels: int
    spatial: tuple[int, ...]


def activation_dims(t: Tensor, layout: str) -> ActivationDims:
    """Batch, channels and spatial sizes of an N-D activation in ``layout``."""
    shape = static_shape(t)
    if len(shape) != len(layout):
        # Layout strings are written for the 4-D case; other ranks keep N first and
        # C last (channels-last) or second (channels-first).
        if layout.endswith("C"):
            layout = "N" + "S" * (len(shape) - 2) + "C"
        else:
            layout = "NC" + "S" * (len(shape) - 2)
        if len(shape) < 2:
            return ActivationDims(1, shape[0] if shape else 1, ())
    batch = shape[layout.index("N")]
    channels = shape[layout.index("C")]
    spatial = tuple(d for d, axis in zip(shape, layout, strict=True) if axis not in "NC")
    return ActivationDims(batch, channels, spatial)


@record
class KernelDims:
    out_channels: int
    in_channels: int
    """Input channels per group (1 for a depthwise kernel)."""
    spatial: tuple[int, ...]

    @property
    def spatial_size(self) -> int:
        n = 1
        for d in self.spatial:
            n *= d
        return n


def kernel_dims(w: Tensor, layout: str) -> KernelDims:
    """Output channels, input channels per group and spatial extent of a kernel."""
    shape = static_shape(w)
    if len(shape) == len(layout) and "O" in layout:
        out_i, in_i, spatial_i = _kernel_axes(layout)
        return KernelDims(
            shape[out_i],
            shape[in_i] if in_i is not None else 1,
            tuple([shape[i] for i in spatial_i]),
        )
    if len(shape) != len(layout):
        spatial_n = len(shape) - 2
        # Same family of layout, more or fewer spatial axes (Conv1D/3D).
        letters = "".join(c for c in layout if c in "OI1")
        if layout.startswith(letters):
            layout = letters + "S" * spatial_n
        elif layout.endswith(letters):
            layout = "S" * spatial_n + letters
        else:
            layout = letters[0] + "S" * spatial_n + letters[1:]
    out_c = shape[layout.index("O")]
    in_c = shape[layout.index("I")] if "I" in layout else 1
    spatial = tuple(d for d, axis in zip(shape, layout, strict=True) if axis not in "OI1")
    return KernelDims(out_c, in_c, spatial)


@functools.lru_cache(maxsize=256)
def _kernel_axes(layout: str) -> tuple[int, int | None, tuple[int, ...]]:
    """Positions of the output channels, input channels and spatial axes in ``layout``."""
    spatial = tuple(i for i, axis in enumerate(layout) if axis not in "OI1")
    return layout.index("O"), layout.index("I") if "I" in layout else None, spatial


def same_pads(size: int, kernel: int, stride: int, dilation: int) -> tuple[int, int]:
    """TF ``SAME`` padding of one spatial axis (ONNX ``SAME_UPPER``; TFLite's
    ``ComputePaddingHeightWidth``): (leading, trailing), the extra pixel at the end."""
    eff = (kernel - 1) * dilation + 1
    out = -(-size // stride)
    total = max((out - 1) * stride + eff - size, 0)
    return total // 2, total - total // 2
