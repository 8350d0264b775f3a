"""The one intermediate representation that both frontends produce.

A :class:`Graph` is a list of :class:`Node` in execution order over named
:class:`Tensor` objects. Everything is frozen: analyses derive new objects, they
never edit a graph. Only the frontends know file formats; everything after
them sees this module alone.

Layouts are recorded, not normalised: TFLite activations are NHWC and its conv
weights OHWI (depthwise 1HWO), ONNX activations NCHW and conv weights OIHW.
Handlers read dimensions through :mod:`infercast.ir.views`, which uses these
layout strings, so no handler indexes a shape by position.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, cast

import numpy as np

from infercast.ir.dtypes import DType

Dim = int | None
"""One dimension: an int, or None where it is not known statically."""
Shape = tuple[Dim, ...]

ConstantLoader = Callable[[str], "np.ndarray[Any, Any] | None"]
"""Reads the stored value of a constant tensor by name, on demand (None: not available)."""


@dataclass(frozen=True)
class Quantization:
    """Affine quantisation ``real = scale * (q - zero_point)``.

    One scale means per-tensor; several mean per-channel along ``axis``.
    """

    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    axis: int | None = None

    @property
    def per_channel(self) -> bool:
        return len(self.scale) > 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "scheme": "per_channel" if self.per_channel else "per_tensor",
            "axis": self.axis,
            "scale": list(self.scale) if len(self.scale) <= 4 else f"{len(self.scale)} values",
            "zero_point": list(self.zero_point)
            if len(self.zero_point) <= 4
            else f"{len(self.zero_point)} values",
        }


_Sizes = tuple[bool, int | None, int | None]
_SIZES: dict[tuple[DType, Shape | None], _Sizes] = {}
"""(dtype, shape) -> (is_static, elements, nbytes), shared by the tensors of every graph."""
_SIZES_MAX = 1 << 16


def nbytes_of(dtype: DType, shape: Shape | None) -> int | None:
    """:attr:`Tensor.nbytes` of a tensor of ``dtype`` and ``shape``, without making one."""
    try:
        return _SIZES[dtype, shape][2]
    except (KeyError, TypeError):
        return Tensor("", dtype, shape).nbytes


def _sizes(dtype: DType, shape: Shape | None, remember: bool = True) -> _Sizes:
    n: int | None = None
    if shape is not None and None not in shape:
        dims = cast(tuple[int, ...], shape)
        if not dims or min(dims) >= 0:
            n = math.prod(dims)
    sizes = (n is not None, n, None if n is None else (n * dtype.bits + 7) // 8)
    if remember:
        if len(_SIZES) >= _SIZES_MAX:
            _SIZES.clear()
        _SIZES[dtype, shape] = sizes
    return sizes


@dataclass(frozen=True, eq=False, init=False)
class Tensor:
    """A value flowing through the graph, or a constant stored in the file.

    ``storage_bytes`` is what the file holds for a constant (by its storage
    dtype; for a constant derived by a decode op such as DEQUANTIZE or DENSIFY,
    the bytes of the stored source). ``value`` is kept for small constants
    only (at most 4096 elements: shape arguments, axes, quantisation scales).
    """

    name: str
    dtype: DType
    shape: Shape | None
    layout: str | None = None
    is_constant: bool = False
    is_variable: bool = False
    quant: Quantization | None = None
    storage_bytes: int = 0
    sparse: bool = False
    derived_from: str | None = None
    value: np.ndarray[Any, Any] | None = field(default=None, repr=False)

    @property
    def rank(self) -> int | None:
        return None if self.shape is None else len(self.shape)

    # Derived once at construction (frozen objects; read in every cost rule).
    is_static: bool = field(init=False, repr=False)
    """True when every dimension is known."""
    elements: int | None = field(init=False, repr=False)
    """Number of elements, or None if any dimension is unknown."""
    nbytes: int | None = field(init=False, repr=False)
    """Bytes of the tensor as the runtime holds it (by its dtype), or None if unknown."""

    def __init__(
        self,
        name: str,
        dtype: DType,
        shape: Shape | None,
        layout: str | None = None,
        is_constant: bool = False,
        is_variable: bool = False,
        quant: Quantization | None = None,
        storage_bytes: int = 0,
        sparse: bool = False,
        derived_from: str | None = None,
        value: np.ndarray[Any, Any] | None = None,
    ) -> None:
        # A frozen object's fields are written to its __dict__ once, here: a frozen
        # dataclass's generated __init__ calls object.__setattr__ per field, which costs
        # more than the rest of building a graph's tensors. Sizes are derived once per
        # distinct (dtype, shape) (many tensors share one).
        try:
            sizes = _SIZES[dtype, shape]
        except KeyError:
            sizes = _sizes(dtype, shape)
        except TypeError:  # an unhashable shape (a list): derived, not remembered
            sizes = _sizes(dtype, tuple(shape) if shape is not None else None, remember=False)
        d = self.__dict__
        d["name"] = name
        d["dtype"] = dtype
        d["shape"] = shape
        d["layout"] = layout
        d["is_constant"] = is_constant
        d["is_variable"] = is_variable
        d["quant"] = quant
        d["storage_bytes"] = storage_bytes
        d["sparse"] = sparse
        d["derived_from"] = derived_from
        d["value"] = value
        d["is_static"], d["elements"], d["nbytes"] = sizes

    def shape_str(self) -> str:
        if self.shape is None:
            return "?"
        return "x".join("?" if d is None else str(d) for d in self.shape) or "scalar"


@dataclass(frozen=True, eq=False, init=False)
class Node:
    """One operator invocation.

    ``op`` is the canonical name handlers are registered under; ``native_op``
    the name in the file (``CONV_2D``, ``Conv``, ``custom:Convolution2DTransposeBias``).
    ``inputs`` holds tensor names, ``""`` for an omitted optional input.
    ``attrs`` holds the operator's attributes with canonical keys.
    ``folded``: every input is a constant (or the op generates a constant), so a
    runtime computes the outputs once at load time (TFLite's DEQUANTIZE / DENSIFY
    of stored weights, ONNX constant subgraphs); it costs nothing per inference.
    """

    index: int
    name: str
    op: str
    native_op: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: Mapping[str, Any] = field(default_factory=dict)
    subgraphs: tuple[str, ...] = ()
    domain: str = ""
    folded: bool = False

    def __init__(
        self,
        index: int,
        name: str,
        op: str,
        native_op: str,
        inputs: tuple[str, ...],
        outputs: tuple[str, ...],
        attrs: Mapping[str, Any] | None = None,
        subgraphs: tuple[str, ...] = (),
        domain: str = "",
        folded: bool = False,
    ) -> None:
        # Fields written once to the frozen object's __dict__ (see Tensor.__init__).
        d = self.__dict__
        d["index"] = index
        d["name"] = name
        d["op"] = op
        d["native_op"] = native_op
        d["inputs"] = inputs
        d["outputs"] = outputs
        d["attrs"] = {} if attrs is None else attrs
        d["subgraphs"] = subgraphs
        d["domain"] = domain
        d["folded"] = folded


@dataclass(frozen=True, eq=False)
class Graph:
    """A model (or one subgraph of it) in execution order."""

    name: str
    format: str
    layout: str
    tensors: Mapping[str, Tensor]
    nodes: tuple[Node, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    path: str | None = None
    subgraphs: Mapping[str, Graph] = field(default_factory=dict)
    metadata: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    constants: ConstantLoader | None = field(default=None, repr=False)
    """Reads a constant's stored value when asked (attached by the frontend: the buffer
    in a TFLite file, the initializer of an ONNX file); None for a graph built in memory."""

    def constant_value(self, name: str) -> np.ndarray[Any, Any] | None:
        """The value of constant tensor ``name``, or None when it is not available.

        Small constants carry their value (:attr:`Tensor.value`); others are read through
        :attr:`constants`, only now. The value must match the tensor as the graph
        describes it (element type and shape): a constant whose dtype or shape a
        transform changed, or one derived at load time (``derived_from``: DEQUANTIZE /
        DENSIFY outputs), has no stored value and gives None.
        """
        t = self.tensors.get(name)
        if t is None or not t.is_constant:
            return None
        value = t.value
        if value is None and self.constants is not None and t.derived_from is None:
            value = self.constants(name)
        if value is None:
            return None
        arr = np.asarray(value)
        if t.dtype.numpy is None or arr.dtype != t.dtype.numpy or not t.is_static:
            return None
        shape = tuple(int(d or 0) for d in t.shape or ())
        if arr.shape != shape:
            if arr.size != t.elements:
                return None
            arr = arr.reshape(shape)
        return arr

    def with_tensors(self, tensors: Mapping[str, Tensor]) -> Graph:
        """The same graph over replaced tensors (re-typed, re-shaped)."""
        return replace(self, tensors=tensors)

    def tensor(self, name: str) -> Tensor:
        return self.tensors[name]

    def input_tensors(self, node: Node) -> list[Tensor | None]:
        return [self.tensors[n] if n else None for n in node.inputs]

    def output_tensors(self, node: Node) -> list[Tensor]:
        """The node's outputs that exist (an omitted optional output is ``""``)."""
        return [self.tensors[n] for n in node.outputs if n]

    @cached_property
    def producers(self) -> Mapping[str, int]:
        """Tensor name -> index of the node that writes it."""
        return {out: node.index for node in self.nodes for out in node.outputs if out}

    @cached_property
    def consumers(self) -> Mapping[str, tuple[int, ...]]:
        """Tensor name -> indices of the nodes that read it, in execution order."""
        acc: dict[str, list[int]] = {}
        for node in self.nodes:
            for name in dict.fromkeys(node.inputs):
                if name:
                    acc.setdefault(name, []).append(node.index)
        return {k: tuple(v) for k, v in acc.items()}

    def all_graphs(self) -> list[tuple[str, Graph]]:
        """This graph and every subgraph (recursively), main graph first."""
        out: list[tuple[str, Graph]] = [(self.name, self)]
        for sub in self.subgraphs.values():
            out.extend(sub.all_graphs())
        return out
