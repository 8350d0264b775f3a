"""The table of operators, keyed by canonical op name: cost rule and op facts.

A handler is a plain function ``(OpContext) -> OpCost``. Its docstring states
the counting rule (it is what ``docs/ops.md`` is generated from). An op with no
handler is *unsupported*: every output lists it and no total silently counts
it as zero. Ops that really cost no arithmetic (reshape, transpose, …) have a
handler that says so.

Each :class:`Handler` also carries the op's *facts* (family, argument inputs,
alias, control flow, in-place, weight input): the one place every stage (cost
walker, lifetimes, placement constraints, fusion, forecast, the frontends)
reads them from, so no module keeps its own list of op names.

Output-shape rules are format-specific and live with their frontend
(:mod:`infercast.frontends.onnx.shapes`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from infercast._records import record
from infercast.ir.dtypes import DType
from infercast.ir.graph import Graph, Node, Tensor
from infercast.ir.views import numel, static_shape


@record
class OpCost:
    """Arithmetic of one node.

    ``macs``: multiply-accumulates (conv, matmul, recurrent cells only).
    ``flops``: all arithmetic operations; a MAC counts as 2.
    """

    macs: int = 0
    flops: int = 0
    note: str = ""


@dataclass(slots=True)
class OpContext:
    """What a handler sees: the node, its input and output tensors, the graph layout."""

    graph: Graph
    node: Node
    inputs: list[Tensor | None]
    outputs: list[Tensor]
    values: Mapping[str, np.ndarray[Any, Any]] = field(default_factory=dict)
    """Values known statically beyond the constants' own (shape inference propagates
    them, e.g. the output of ``Shape`` on a static tensor)."""
    subgraph_cost: Callable[[Graph], OpCost | None] | None = None
    """The cost of a called subgraph (None when some layer of it has no known cost),
    supplied by the cost walker; None when the handler is called on its own."""

    @property
    def layout(self) -> str:
        return self.graph.layout

    def attr(self, key: str, default: object = None) -> object:
        return self.node.attrs.get(key, default)

    def int_attr(self, key: str, default: int) -> int:
        v = self.node.attrs.get(key, default)
        return int(v) if isinstance(v, int | float | str) else default

    def input(self, i: int) -> Tensor:
        t = self.inputs[i] if i < len(self.inputs) else None
        if t is None:
            raise IndexError(f"{self.node.native_op} node '{self.node.name}' has no input {i}")
        return t

    def has_input(self, i: int) -> bool:
        return i < len(self.inputs) and self.inputs[i] is not None

    def value(self, i: int) -> np.ndarray[Any, Any] | None:
        """The value of input ``i`` when it is known statically, else None."""
        t = self.inputs[i] if i < len(self.inputs) else None
        if t is None:
            return None
        if t.is_constant and t.value is not None:
            return t.value
        return self.values.get(t.name)

    def out_elems(self, i: int = 0) -> int:
        return numel(self.outputs[i])

    def all_out_elems(self) -> int:
        total = 0
        for t in self.outputs:
            total += numel(t)
        return total

    def in_elems(self, i: int = 0) -> int:
        return numel(self.input(i))

    def shape(self, t: Tensor) -> tuple[int, ...]:
        return static_shape(t)


CostFn = Callable[[OpContext], OpCost]


@dataclass(frozen=True)
class Handler:
    """An op's cost rule and its facts."""

    ops: tuple[str, ...]
    cost: CostFn
    arg_inputs: frozenset[int] = field(default_factory=frozenset)
    """Input positions that are arguments (shapes, axes, bounds), never parameters."""
    family: str = ""
    """``conv``, ``linalg``, ``elementwise``, ``movement``, ``pool``, ``control``, …"""
    alias: bool = False
    """Output 0 is input 0's bytes re-labelled: no data is written, the runtime lets
    the two share one buffer (see :mod:`infercast.analysis.lifetimes`)."""
    control_flow: bool = False
    """Calls subgraphs that the cost walker and the memory plan follow (If, Loop,
    Scan, WHILE, CALL_ONCE, CALL)."""
    in_place: bool = False
    """Can write its output over an input that dies there (in-place memory mode)."""
    weight_input: int | None = None
    """Input position of the kernel / weight matrix of a conv-like or FC-like op (the
    default; a frontend may record another in the node's ``weight_input`` attribute)."""
    nondeterministic: bool = False
    """Draws random values: never computed at load time, even from constant inputs."""
    generator: bool = False
    """Makes a tensor from arguments alone (Constant, ConstantOfShape, Range, EyeLike)."""
    windowed: bool = False
    """A pool that slides a kernel window (max / average / Lp pools; not global or RoI
    pools): stride, kernel and padding checks read it as they read a convolution."""

    @property
    def doc(self) -> str:
        return " ".join((self.cost.__doc__ or "").split())

    @property
    def elementwise(self) -> bool:
        return self.family == "elementwise"

    @property
    def conv_like(self) -> bool:
        """A convolution whose kernel is a weight tensor (placement checks, fusion anchors)."""
        return self.family == "conv" and self.weight_input is not None

    @property
    def fc_like(self) -> bool:
        """A fully-connected layer / matrix product with a weight-matrix input."""
        return self.family == "linalg" and self.weight_input is not None


_REGISTRY: dict[str, Handler] = {}


def register(
    *ops: str,
    arg_inputs: Iterable[int] = (),
    family: str = "",
    alias: bool = False,
    control_flow: bool = False,
    in_place: bool = False,
    weight_input: int | None = None,
    nondeterministic: bool = False,
    generator: bool = False,
    windowed: bool = False,
) -> Callable[[CostFn], CostFn]:
    """Register ``fn`` as the cost rule of canonical ``ops``, with their facts."""

    def deco(fn: CostFn) -> CostFn:
        h = Handler(
            tuple(ops),
            fn,
            frozenset(arg_inputs),
            family,
            alias=alias,
            control_flow=control_flow,
            in_place=in_place,
            weight_input=weight_input,
            nondeterministic=nondeterministic,
            generator=generator,
            windowed=windowed,
        )
        for op in ops:
            if op in _REGISTRY:
                raise ValueError(f"op '{op}' registered twice")
            _REGISTRY[op] = h
        return fn

    return deco


# Ops whose argument inputs stand at other positions in one file format than the
# canonical handler says (the handler lists the union, for the formats it serves).
NATIVE_ARG_INPUTS: dict[str, frozenset[int]] = {
    # TFLite SPLIT(axis, input): the axis first (tensorflow/lite/kernels/split.cc, kAxisTensor 0,
    # kInputTensor 1).
    "SPLIT": frozenset({0}),
    # ONNX Split(input, split): the sizes second (onnx/docs/Operators.md, Split-13).
    "Split": frozenset({1}),
}


def argument_inputs(node: Node, handler: Handler | None) -> frozenset[int]:
    """Input positions of ``node`` that are arguments (axes, shapes, sizes), never data or
    parameters: the handler's ``arg_inputs``, unless the file's own operator orders its
    inputs otherwise (:data:`NATIVE_ARG_INPUTS`)."""
    native = NATIVE_ARG_INPUTS.get(node.native_op)
    if native is not None:
        return native
    return handler.arg_inputs if handler else frozenset()


_QUANT_STORAGE = {DType.INT8, DType.UINT8, DType.INT16, DType.INT4, DType.UINT4, DType.INT2}
_WEIGHT_DTYPES = frozenset(d for d in DType if d.is_float or d in _QUANT_STORAGE)


def is_weight(t: Tensor) -> bool:
    """A constant that carries weights: float or quantised values. Plain integer
    constants (shapes, axes, indices) are arguments, not weights."""
    return t.is_constant and (t.dtype in _WEIGHT_DTYPES or t.quant is not None)


def weight_inputs(graph: Graph, node: Node, handler: Handler | None = None) -> list[Tensor]:
    """The node's weight tensors, each once, skipping the op's argument inputs.

    The one rule behind params, weight bytes (analysis/cost.py), weight memory
    (analysis/memory.py) and parameter caches (targets/placement.py)."""
    if handler is None:
        handler = get_handler(node.op)
    args = argument_inputs(node, handler)
    out = []
    seen: set[str] = set()
    for i, name in enumerate(node.inputs):
        if not name or i in args or name in seen:
            continue
        seen.add(name)
        t = graph.tensors.get(name)
        if t is not None and is_weight(t):
            out.append(t)
    return out


def get_handler(op: str) -> Handler | None:
    _load_all()
    return _REGISTRY.get(op)


def ops_where(fact: Callable[[Handler], bool]) -> frozenset[str]:
    """The canonical ops whose handler has ``fact`` (e.g. ``lambda h: h.alias``)."""
    _load_all()
    return frozenset(op for op, h in _REGISTRY.items() if fact(h))


def is_control_flow(op: str) -> bool:
    h = get_handler(op)
    return h is not None and h.control_flow


def relabels_input(graph: Graph, node: Node) -> bool:
    """``node``'s output 0 is its input 0's bytes re-labelled: an alias op none of whose
    other outputs is read or returned (ONNX Runtime keeps a Dropout whose mask is read)."""
    h = get_handler(node.op)
    if h is None or not h.alias:
        return False
    consumers = graph.consumers
    return all(not o or (o not in consumers and o not in graph.outputs) for o in node.outputs[1:])


def handler_table() -> Mapping[str, Handler]:
    """Canonical op -> handler, for loops that look one up per node (not a copy:
    read it, never change it)."""
    _load_all()
    return _REGISTRY


def registered_ops() -> dict[str, Handler]:
    _load_all()
    return dict(_REGISTRY)


_loaded = False


def _load_all() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    # Importing the modules registers their handlers.
    import importlib

    for module in _HANDLER_MODULES:
        importlib.import_module(f"infercast.ops.{module}")


_HANDLER_MODULES = (
    "contrib", "control", "conv", "elementwise", "linalg", "loss", "ml", "movement",
    "normalization", "pool", "recurrent", "signal", "training",
)  # fmt: skip
