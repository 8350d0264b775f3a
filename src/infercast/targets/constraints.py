"""Per-op support constraints: plain functions whose docstring is the reason the user reads.

Pattern from Arm Vela's ``tflite_supported_operators.py``: every check is a
function ``(view, **params) -> (ok, detail)``; its docstring is a template whose
``{param}`` placeholders are filled from the target file (plus ``{accelerator}``,
the accelerator unit's name). A target's TOML names which checks apply to which
ops, with their parameters; the same functions and templates generate
``docs/targets/<name>.md`` (:mod:`infercast.report.target_docs`), so the documents
cannot drift from the code.

A check returns ``(True, "")`` when it passes or does not apply to the node, and
``(False, detail)`` when it fails; ``detail`` names the offending value
("stride 4x4", "kernel 7x7"), the template says what the rule is.

Layouts: TFLite activations are NHWC, ONNX NCHW; dimensions are read through
:mod:`infercast.ir.views`, never by position.
"""

from __future__ import annotations

import inspect
import math
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Union, get_args, get_origin, get_type_hints

import numpy as np

from infercast.ir.dtypes import DType
from infercast.ir.graph import Graph, Node, Tensor
from infercast.ir.views import ShapeUnknownError, activation_dims, kernel_dims, static_shape
from infercast.ops.registry import Handler, argument_inputs, get_handler


class ValueUnknownError(Exception):
    """A check needs a constant's values and the graph cannot give them."""


Outcome = tuple[bool, str]
CheckFn = Callable[..., Outcome]

PASS: Outcome = (True, "")


# --------------------------------------------------------------------------- #
# What a constraint sees
# --------------------------------------------------------------------------- #


@dataclass
class NodeView:
    """One node with named accessors for what constraints ask about.

    ``graph`` is the graph as the device sees it (after any compile-time
    re-typing the target declares, e.g. nncase quantising float tensors).
    """

    graph: Graph
    node: Node

    @property
    def op(self) -> str:
        return self.node.op

    @property
    def layout(self) -> str:
        return self.graph.layout

    @cached_property
    def inputs(self) -> list[Tensor | None]:
        return self.graph.input_tensors(self.node)

    @cached_property
    def outputs(self) -> list[Tensor]:
        return self.graph.output_tensors(self.node)

    @cached_property
    def activation_inputs(self) -> list[Tensor]:
        """Non-constant inputs (feature maps), each once."""
        seen: dict[str, Tensor] = {}
        for t in self.inputs:
            if t is not None and not t.is_constant and t.name not in seen:
                seen[t.name] = t
        return list(seen.values())

    @cached_property
    def constant_inputs(self) -> list[Tensor]:
        return [t for t in self.inputs if t is not None and t.is_constant]

    @property
    def feature_maps(self) -> list[Tensor]:
        """Activation inputs and all outputs."""
        return [*self.activation_inputs, *self.outputs]

    def attr(self, key: str, default: Any = None) -> Any:
        return self.node.attrs.get(key, default)

    @cached_property
    def handler(self) -> Handler | None:
        """The op's cost rule and facts (None for an op infercast has no rule for)."""
        return get_handler(self.op)

    @property
    def conv_like(self) -> bool:
        """A convolution whose kernel is a weight tensor (its layout recorded by the frontend)."""
        return self.handler is not None and self.handler.conv_like

    @property
    def fc_like(self) -> bool:
        return self.handler is not None and self.handler.fc_like

    def _input(self, i: int) -> Tensor | None:
        return self.inputs[i] if 0 <= i < len(self.inputs) else None

    @cached_property
    def data(self) -> Tensor | None:
        """The data (feature-map) input."""
        if self.conv_like:
            return self._input(int(self.attr("data_input", 0)))
        return self.activation_inputs[0] if self.activation_inputs else self._input(0)

    @cached_property
    def output(self) -> Tensor | None:
        return self.outputs[0] if self.outputs else None

    @cached_property
    def weights(self) -> Tensor | None:
        """The kernel / weight matrix, if the op has one."""
        h = self.handler
        if h is None or h.weight_input is None:
            return None
        if h.conv_like:
            return self._input(int(self.attr("weight_input", h.weight_input)))
        return self._input(h.weight_input)

    @cached_property
    def bias(self) -> Tensor | None:
        """The bias input: CONV_2D/DEPTHWISE/FC input 2, TRANSPOSE_CONV input 3, ONNX Conv 2."""
        if self.node.native_op == "TRANSPOSE_CONV":
            return self._input(3)
        if self.conv_like or self.op in ("fully_connected", "gemm"):
            return self._input(2)
        return None

    def hw(self, t: Tensor | None) -> tuple[int, int] | None:
        """(height, width) of a 4-D activation, None for other ranks or unknown shapes."""
        if t is None or t.rank != 4:
            return None
        try:
            d = activation_dims(t, self.layout)
        except ShapeUnknownError:
            return None
        return (d.spatial[0], d.spatial[1]) if len(d.spatial) == 2 else None

    def channels(self, t: Tensor | None) -> int | None:
        if t is None or t.rank is None or t.rank < 2:
            return None
        try:
            return activation_dims(t, self.layout).channels
        except ShapeUnknownError:
            return None

    def batch(self, t: Tensor | None) -> int | None:
        if t is None or t.rank is None or t.rank < 2:
            return None
        try:
            return activation_dims(t, self.layout).batch
        except ShapeUnknownError:
            return None

    @cached_property
    def kernel_hw(self) -> tuple[int, int] | None:
        """Kernel (height, width): from the weight tensor of a conv, the attribute of a pool."""
        if self.conv_like and self.weights is not None:
            layout = self.attr("weight_layout", "OIHW")
            try:
                k = kernel_dims(self.weights, str(layout))
            except (ShapeUnknownError, ValueError):
                return None
            return (k.spatial[0], k.spatial[1]) if len(k.spatial) == 2 else None
        ks = self.attr("kernel_shape")
        if isinstance(ks, tuple | list) and len(ks) == 2:
            return int(ks[0]), int(ks[1])
        return None

    def _pair(self, key: str) -> tuple[int, int]:
        v = self.attr(key)
        if isinstance(v, tuple | list) and len(v) >= 2:
            return int(v[-2]), int(v[-1])
        return (1, 1)

    @property
    def strides_hw(self) -> tuple[int, int]:
        return self._pair("strides")

    @property
    def dilations_hw(self) -> tuple[int, int]:
        return self._pair("dilations")

    @cached_property
    def pads(self) -> tuple[int, int, int, int] | None:
        """Explicit padding (top, bottom, left, right) of a 2-D conv or pool.

        TFLite SAME follows TensorFlow: total = max((out - 1) * stride +
        (k - 1) * dilation + 1 - in, 0), the smaller half before. ONNX uses the
        ``pads`` attribute (begin H, begin W, end H, end W) or ``auto_pad``.
        """
        if not (self.conv_like or (self.handler is not None and self.handler.windowed)):
            return None
        if self.op == "conv_transpose":
            return None
        k = self.kernel_hw
        hw_in = self.hw(self.data)
        hw_out = self.hw(self.output)
        if k is None or hw_in is None or hw_out is None:
            return None
        padding = self.attr("padding")
        auto = self.attr("auto_pad", "NOTSET")
        auto = auto.decode() if isinstance(auto, bytes) else str(auto)
        if padding == "VALID" or auto == "VALID":
            return (0, 0, 0, 0)
        if padding == "SAME" or auto in ("SAME_UPPER", "SAME_LOWER"):
            (sh, sw), (dh, dw) = self.strides_hw, self.dilations_hw
            th = max((hw_out[0] - 1) * sh + (k[0] - 1) * dh + 1 - hw_in[0], 0)
            tw = max((hw_out[1] - 1) * sw + (k[1] - 1) * dw + 1 - hw_in[1], 0)
            if auto == "SAME_LOWER":
                return (th - th // 2, th // 2, tw - tw // 2, tw // 2)
            return (th // 2, th - th // 2, tw // 2, tw - tw // 2)
        p = self.attr("pads")
        if isinstance(p, tuple | list) and len(p) == 4:
            return (int(p[0]), int(p[2]), int(p[1]), int(p[3]))
        return (0, 0, 0, 0)


# --------------------------------------------------------------------------- #
# Registry
# --------------------------------------------------------------------------- #

ParamType = type | Any


@dataclass(frozen=True)
class Constraint:
    """A registered check: its function, reason template and parameter types."""

    name: str
    fn: CheckFn
    params: Mapping[str, ParamType]

    @property
    def template(self) -> str:
        return " ".join((self.fn.__doc__ or self.name).split())

    def reason(self, params: Mapping[str, Any], context: Mapping[str, str]) -> str:
        """The template with ``{param}`` filled in (lists shown comma-separated)."""
        values = {**context, **{k: format_value(v) for k, v in params.items()}}
        return self.template.format_map(_Missing(values))

    def run(self, view: NodeView, params: Mapping[str, Any]) -> tuple[bool | None, str]:
        """(True, "") passes, (False, detail) fails; (None, "unknown: ...") when a value
        the check needs is not available (neither a pass nor a failure)."""
        try:
            return self.fn(view, **params)
        except ShapeUnknownError as exc:
            return False, f"cannot check: {exc}"
        except ValueUnknownError as exc:
            return None, f"unknown: {exc}"


class _Missing(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def format_value(v: Any) -> str:
    if isinstance(v, list | tuple):
        return ", ".join(format_value(x) for x in v)
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


REGISTRY: dict[str, Constraint] = {}


def constraint(fn: CheckFn) -> CheckFn:
    """Register ``fn`` under its name; keyword-only parameters are its TOML parameters."""
    hints = get_type_hints(fn)
    params: dict[str, ParamType] = {}
    for name, p in inspect.signature(fn).parameters.items():
        if p.kind is inspect.Parameter.KEYWORD_ONLY:
            params[name] = hints[name]
    if fn.__name__ in REGISTRY:
        raise ValueError(f"constraint {fn.__name__} registered twice")
    REGISTRY[fn.__name__] = Constraint(fn.__name__, fn, params)
    return fn


def param_type_name(tp: ParamType) -> str:
    origin = get_origin(tp)
    if origin is list:
        (inner,) = get_args(tp)
        return f"list of {param_type_name(inner)}"
    if origin in (Union, types.UnionType):
        return " or ".join(param_type_name(a) for a in get_args(tp))
    return getattr(tp, "__name__", str(tp))


def check_param(tp: ParamType, value: Any) -> bool:
    """True when ``value`` (from TOML) fits the parameter type ``tp``."""
    origin = get_origin(tp)
    if origin is list:
        (inner,) = get_args(tp)
        return isinstance(value, list) and all(check_param(inner, v) for v in value)
    if origin in (Union, types.UnionType):
        return any(check_param(a, value) for a in get_args(tp))
    if tp is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is bool:
        return isinstance(value, bool)
    if tp is str:
        return isinstance(value, str)
    return False


# --------------------------------------------------------------------------- #
# Helpers
# --------------------------------------------------------------------------- #


def _dtype_name(t: Tensor) -> str:
    return t.dtype.value


def short_name(name: str, width: int = 40) -> str:
    """A tensor name cut to ``width`` characters, keeping its end (the informative part)."""
    return name if len(name) <= width else "…" + name[-(width - 1) :]


def _names(ts: Sequence[Tensor], limit: int = 2) -> str:
    shown = ", ".join(f"'{short_name(t.name)}'" for t in ts[:limit])
    return shown + (f" (+{len(ts) - limit})" if len(ts) > limit else "")


def _weight_like(view: NodeView) -> list[Tensor]:
    w = view.weights
    return [w] if w is not None else []


# --------------------------------------------------------------------------- #
# Model-level and tensor-type checks
# --------------------------------------------------------------------------- #


@constraint
def model_format_in(view: NodeView, *, formats: list[str]) -> Outcome:
    """The {accelerator} toolchain takes {formats} models only"""
    if view.graph.format in formats:
        return PASS
    return False, f"this model is {view.graph.format}"


@constraint
def tensor_dtypes_in(view: NodeView, *, dtypes: list[str]) -> Outcome:
    """Feature maps (inputs and outputs computed at run time) must be of type {dtypes}"""
    bad = [t for t in view.feature_maps if _dtype_name(t) not in dtypes]
    if not bad:
        return PASS
    kinds = sorted({_dtype_name(t) for t in bad})
    return False, f"{', '.join(kinds)} tensor(s) {_names(bad)}"


@constraint
def input_dtypes_not_in(view: NodeView, *, dtypes: list[str]) -> Outcome:
    """No input may be of type {dtypes}"""
    bad = [t for t in view.inputs if t is not None and _dtype_name(t) in dtypes]
    if not bad:
        return PASS
    return (
        False,
        f"input(s) {_names(bad)} of type {', '.join(sorted({_dtype_name(t) for t in bad}))}",
    )


@constraint
def output_dtypes_not_in(view: NodeView, *, dtypes: list[str]) -> Outcome:
    """No output may be of type {dtypes}"""
    bad = [t for t in view.outputs if _dtype_name(t) in dtypes]
    if not bad:
        return PASS
    return (
        False,
        f"output(s) {_names(bad)} of type {', '.join(sorted({_dtype_name(t) for t in bad}))}",
    )


@constraint
def feature_map_bits_max(view: NodeView, *, bits: int) -> Outcome:
    """Feature maps wider than {bits} bits are not supported"""
    bad = [t for t in view.feature_maps if t.dtype.bits > bits]
    if not bad:
        return PASS
    return False, f"{', '.join(sorted({_dtype_name(t) for t in bad}))} feature map(s) {_names(bad)}"


@constraint
def quantized(view: NodeView) -> Outcome:
    """Input, output and weight tensors must carry quantisation parameters
    (no float on the {accelerator})"""
    tensors = [*view.feature_maps, *_weight_like(view)]
    bad = [t for t in tensors if t.quant is None and t.dtype not in (DType.BOOL,)]
    if not bad:
        return PASS
    return False, f"tensor(s) {_names(bad)} have no quantisation ({_dtype_name(bad[0])})"


@constraint
def per_tensor_quantization(view: NodeView) -> Outcome:
    """Per-axis (per-channel) quantisation is not supported for this operator"""
    tensors = [*view.feature_maps, *view.constant_inputs]
    bad = [t for t in tensors if t.quant is not None and t.quant.per_channel]
    if not bad:
        return PASS
    return False, f"per-channel tensor(s) {_names(bad)}"


@constraint
def non_negative_unsigned_zero_points(view: NodeView) -> Outcome:
    """Feature-map zero points must be 0 for int32 and non-negative for unsigned types"""
    bad = []
    for t in view.feature_maps:
        if t.quant is None:
            continue
        zps = t.quant.zero_point
        if (t.dtype == DType.INT32 and any(z != 0 for z in zps)) or (
            t.dtype in (DType.UINT8, DType.UINT16) and any(z < 0 for z in zps)
        ):
            bad.append(t)
    if not bad:
        return PASS
    return False, f"tensor(s) {_names(bad)}"


@constraint
def static_shapes(view: NodeView) -> Outcome:
    """Tensor shapes must be fixed at compile time (no dynamic dimensions)"""
    bad = [t for t in view.feature_maps if not t.is_static]
    if not bad:
        return PASS
    return False, f"tensor(s) {_names(bad)} with shape {bad[0].shape_str()}"


@constraint
def rank_max(view: NodeView, *, rank: int) -> Outcome:
    """Tensors must have at most {rank} dimensions"""
    bad = [t for t in view.feature_maps if t.rank is not None and t.rank > rank]
    if not bad:
        return PASS
    return False, f"tensor '{short_name(bad[0].name)}' has rank {bad[0].rank}"


@constraint
def dims_in(view: NodeView, *, lo: int, hi: int) -> Outcome:
    """Every tensor dimension must be in [{lo}, {hi}]"""
    for t in view.feature_maps:
        if t.shape is None:
            continue
        for d in t.shape:
            if d is not None and not lo <= d <= hi:
                return False, f"tensor '{short_name(t.name)}' has shape {t.shape_str()}"
    return PASS


@constraint
def hw_max(view: NodeView, *, size: int) -> Outcome:
    """Feature-map height and width must be at most {size}"""
    for t in view.feature_maps:
        hw = view.hw(t)
        if hw is not None and max(hw) > size:
            return False, f"tensor '{short_name(t.name)}' is {hw[0]}x{hw[1]} (HxW)"
    return PASS


@constraint
def innermost_dims_only(view: NodeView, *, count: int) -> Outcome:
    """Tensors may have more than {count} dimensions only if the outer ones are all 1"""
    for t in view.feature_maps:
        if t.shape is None or len(t.shape) <= count:
            continue
        outer = t.shape[: len(t.shape) - count]
        if any(d is None or d > 1 for d in outer):
            return False, f"tensor '{short_name(t.name)}' has shape {t.shape_str()}"
    return PASS


@constraint
def batch_one(view: NodeView) -> Outcome:
    """Batch size must be 1"""
    for t in view.activation_inputs:
        b = view.batch(t) if t.rank == 4 else None
        if b is not None and b != 1:
            return False, f"tensor '{short_name(t.name)}' has batch {b}"
    return PASS


@constraint
def params_constant(view: NodeView) -> Outcome:
    """Shape, axis and padding arguments must be constants (no dynamic shapes)"""
    args = argument_inputs(view.node, view.handler)
    bad = [
        t for i, t in enumerate(view.inputs) if t is not None and i in args and not t.is_constant
    ]
    if not bad:
        return PASS
    return False, f"argument(s) {_names(bad)} computed at run time"


# --------------------------------------------------------------------------- #
# Weights and bias
# --------------------------------------------------------------------------- #


@constraint
def constant_weights(view: NodeView) -> Outcome:
    """Weights must be constants at compile time"""
    w = view.weights
    if w is None or w.is_constant:
        return PASS
    return False, f"weights '{short_name(w.name)}' are computed at run time"


@constraint
def weights_bits(view: NodeView, *, bits: int) -> Outcome:
    """Weight tensors must be {bits}-bit"""
    w = view.weights
    if w is None or w.dtype.bits == bits:
        return PASS
    return False, f"weights '{short_name(w.name)}' are {w.dtype.value}"


@constraint
def weight_sum_max(view: NodeView, *, limit: int) -> Outcome:
    """The sum of absolute (zero-point corrected) weights of each output channel must not
    exceed {limit}"""
    w = view.weights
    if w is None or not w.is_static or w.dtype.bits != 8 or not w.is_constant:
        return PASS
    values = view.graph.constant_value(w.name)
    if values is None:
        raise ValueUnknownError(f"the values of weights '{short_name(w.name)}' are not available")
    layout = str(view.attr("weight_layout", "OIHW")) if view.conv_like else "OI"
    o_axis = layout.index("O") if "O" in layout else 0
    zp = np.zeros(1, np.int64)
    if w.quant is not None:
        zp = np.asarray(w.quant.zero_point, np.int64)
        if zp.size > 1:
            shape = [1] * values.ndim
            shape[o_axis] = zp.size
            zp = zp.reshape(shape)
    mag = np.abs(values.astype(np.int64) - zp)
    per_oc = mag.sum(axis=tuple(a for a in range(values.ndim) if a != o_axis))
    worst = int(per_oc.max()) if per_oc.size else 0
    if worst <= limit:
        return PASS
    return False, f"an output channel sums to {worst}"


@constraint
def bias_dtypes_in(view: NodeView, *, dtypes: list[str]) -> Outcome:
    """An optional bias must be of type {dtypes}"""
    b = view.bias
    if b is None or _dtype_name(b) in dtypes:
        return PASS
    return False, f"bias '{short_name(b.name)}' is {b.dtype.value}"


@constraint
def bias_constant(view: NodeView) -> Outcome:
    """An optional bias must be constant"""
    b = view.bias
    if b is None or b.is_constant:
        return PASS
    return False, f"bias '{short_name(b.name)}' is computed at run time"


@constraint
def same_input_weight_dtype(view: NodeView) -> Outcome:
    """Input and weights must have the same type (no hybrid kernels)"""
    x, w = view.data, view.weights
    if x is None or w is None or x.dtype == w.dtype:
        return PASS
    return False, f"input {x.dtype.value}, weights {w.dtype.value}"


@constraint
def grouped_conv_batch_one(view: NodeView) -> Outcome:
    """A grouped (depthwise) convolution must have batch 1"""
    if view.op != "depthwise_conv" and int(view.attr("group", 1)) == 1:
        return PASS
    b = view.batch(view.data)
    if b is None or b == 1:
        return PASS
    return False, f"batch {b}"


# --------------------------------------------------------------------------- #
# Convolution and pooling geometry
# --------------------------------------------------------------------------- #


def _hw_str(p: tuple[int, int]) -> str:
    return f"{p[0]}x{p[1]}"


@constraint
def stride_in(view: NodeView, *, lo: int, hi: int) -> Outcome:
    """Stride (height and width) must be in [{lo}, {hi}]"""
    s = view.strides_hw
    if all(lo <= v <= hi for v in s):
        return PASS
    return False, f"stride {_hw_str(s)} (HxW)"


@constraint
def stride_in_set(view: NodeView, *, strides: list[int]) -> Outcome:
    """Stride must be one of {strides} in both height and width"""
    s = view.strides_hw
    if s[0] == s[1] and s[0] in strides:
        return PASS
    return False, f"stride {_hw_str(s)} (HxW)"


@constraint
def large_stride_needs_valid(view: NodeView, *, max_stride: int) -> Outcome:
    """Stride above {max_stride} is supported only with dilation 1 and VALID padding"""
    s = view.strides_hw
    if max(s) <= max_stride:
        return PASS
    if view.dilations_hw == (1, 1) and view.pads == (0, 0, 0, 0):
        return PASS
    return False, f"stride {_hw_str(s)}, dilation {_hw_str(view.dilations_hw)}, padding {view.pads}"


@constraint
def kernel_square_in(view: NodeView, *, sizes: list[int]) -> Outcome:
    """The kernel must be square, with a size in {sizes}"""
    k = view.kernel_hw
    if k is None:
        return False, "kernel size unknown"
    if k[0] == k[1] and k[0] in sizes:
        return PASS
    return False, f"kernel {_hw_str(k)}"


@constraint
def kernel_limits(view: NodeView, *, height: int, area: int) -> Outcome:
    """The kernel must be at most {height} high and cover at most {area} elements"""
    k = view.kernel_hw
    if k is None or (k[0] <= height and k[0] * k[1] <= area):
        return PASS
    return False, f"kernel {_hw_str(k)}"


@constraint
def kernel_size_max(view: NodeView, *, size: int) -> Outcome:
    """The kernel must be at most {size} high and at most {size} wide"""
    k = view.kernel_hw
    if k is None or max(k) <= size:
        return PASS
    return False, f"kernel {_hw_str(k)}"


@constraint
def pool_kernel_limits(
    view: NodeView, *, same_max: int, valid_height: int, valid_area: int
) -> Outcome:
    """With SAME padding the pool window must be at most {same_max}x{same_max};
    with VALID padding at most {valid_height} high and {valid_area} elements"""
    k = view.kernel_hw
    if k is None:
        return PASS
    pads = view.pads
    valid = pads is None or pads == (0, 0, 0, 0)
    if view.attr("padding") == "SAME":
        valid = False
    ok = (k[0] <= valid_height and k[0] * k[1] <= valid_area) if valid else max(k) <= same_max
    if ok:
        return PASS
    return False, f"window {_hw_str(k)}, padding {'VALID' if valid else 'SAME'}"


@constraint
def pool_window_in(view: NodeView, *, windows: list[str]) -> Outcome:
    """The pool window and stride must be one of {windows} (KxK/S)"""
    k = view.kernel_hw
    s = view.strides_hw
    if k is None:
        return False, "window unknown"
    key = f"{k[0]}x{k[1]}/{s[0]}" if s[0] == s[1] else ""
    if key in windows:
        return PASS
    return False, f"window {_hw_str(k)}, stride {_hw_str(s)}"


@constraint
def dilation_one(view: NodeView) -> Outcome:
    """Dilation must be 1"""
    d = view.dilations_hw
    if d == (1, 1):
        return PASS
    return False, f"dilation {_hw_str(d)}"


@constraint
def symmetric_padding(view: NodeView) -> Outcome:
    """Padding must be symmetric: SAME with equal padding before and after in height and width"""
    p = view.pads
    if p is None:
        return PASS
    t, b, left, r = p
    if p == (0, 0, 0, 0) and view.kernel_hw not in (None, (1, 1)):
        return False, "VALID padding (no padding) with a kernel larger than 1x1"
    if t == b and left == r:
        return PASS
    return False, f"padding top {t}, bottom {b}, left {left}, right {r}"


@constraint
def groups_one_or_depthwise(view: NodeView) -> Outcome:
    """Groups must be 1 or equal to the input channels (depthwise)"""
    g = int(view.attr("group", 1))
    if view.op == "depthwise_conv" or g == 1:
        mult = int(view.attr("depth_multiplier", 1))
        if mult == 1:
            return PASS
        return False, f"depth multiplier {mult}"
    return False, f"{g} groups"


@constraint
def input_hw_range(view: NodeView, *, min_h: int, max_h: int, min_w: int, max_w: int) -> Outcome:
    """The input feature map must be {min_h} to {max_h} high and {min_w} to {max_w} wide"""
    hw = view.hw(view.data)
    if hw is None:
        return PASS
    if min_h <= hw[0] <= max_h and min_w <= hw[1] <= max_w:
        return PASS
    return False, f"input {hw[0]}x{hw[1]} (HxW)"


@constraint
def output_hw_min(view: NodeView, *, size: int) -> Outcome:
    """The output feature map must be at least {size}x{size}"""
    hw = view.hw(view.output)
    if hw is None or min(hw) >= size:
        return PASS
    return False, f"output {hw[0]}x{hw[1]} (HxW)"


@constraint
def channels_max(view: NodeView, *, channels: int) -> Outcome:
    """Input and output channels must be at most {channels}"""
    for t in (view.data, view.output):
        c = view.channels(t)
        if c is not None and c > channels:
            return False, f"tensor '{t.name if t else ''}' has {c} channels"
    return PASS


@constraint
def no_fused_activation(view: NodeView) -> Outcome:
    """No fused activation function"""
    act = view.attr("fused_activation")
    if act is None:
        return PASS
    return False, f"fused {act}"


@constraint
def transpose_conv_stride(view: NodeView) -> Outcome:
    """Stride must be 1x1 or 2x2 (2x1 / 1x2 only where that input dimension and kernel
    dimension are 1)"""
    s = view.strides_hw
    if s in ((1, 1), (2, 2)):
        return PASS
    hw = view.hw(view.data)
    k = view.kernel_hw
    if hw and k and s == (1, 2) and hw[0] == 1 and k[0] == 1:
        return PASS
    if hw and k and s == (2, 1) and hw[1] == 1 and k[1] == 1:
        return PASS
    return False, f"stride {_hw_str(s)} (HxW)"


@constraint
def transpose_conv_shape(view: NodeView) -> Outcome:
    """The output must be input x stride (SAME) or input x stride + (kernel - stride) (VALID)"""
    hw_in, hw_out, k = view.hw(view.data), view.hw(view.output), view.kernel_hw
    if hw_in is None or hw_out is None or k is None:
        return PASS
    s = view.strides_hw
    if view.attr("padding") == "VALID":
        want = tuple(i * st + max(kk - st, 0) for i, st, kk in zip(hw_in, s, k, strict=True))
    else:
        want = (hw_in[0] * s[0], hw_in[1] * s[1])
    if tuple(hw_out) == want:
        return PASS
    return False, f"input {_hw_str(hw_in)}, output {_hw_str(hw_out)}, stride {_hw_str(s)}"


# --------------------------------------------------------------------------- #
# Reductions, softmax, slicing, resize, padding
# --------------------------------------------------------------------------- #


def _axes(view: NodeView, arg: int = 1) -> list[int] | None:
    t = view.inputs[arg] if len(view.inputs) > arg else None
    if t is None:
        v = view.attr("axes")
        return [int(a) for a in v] if isinstance(v, tuple | list) else None
    if t.value is None:
        return None
    return [int(a) for a in t.value.reshape(-1).tolist()]


def _norm_axes(axes: list[int], rank: int) -> list[int]:
    return sorted({a % rank for a in axes})


def _spatial_axes(view: NodeView, rank: int) -> set[int]:
    if rank != 4:
        return set()
    return {1, 2} if view.layout.endswith("C") else {2, 3}


@constraint
def reduce_spatial_only(view: NodeView) -> Outcome:
    """Only the spatial (height, width) axes may be reduced"""
    x = view.data
    axes = _axes(view)
    if x is None or x.rank is None or axes is None:
        return PASS
    bad = set(_norm_axes(axes, x.rank)) - _spatial_axes(view, x.rank)
    if not bad:
        return PASS
    return False, f"axes {sorted(bad)} of a rank-{x.rank} input"


@constraint
def reduced_axis_max(view: NodeView, *, size: int) -> Outcome:
    """Each reduced axis must be shorter than {size}"""
    x = view.data
    axes = _axes(view)
    if x is None or not x.is_static or axes is None:
        return PASS
    shape = static_shape(x)
    for a in _norm_axes(axes, len(shape)):
        if shape[a] >= size:
            return False, f"axis {a} has {shape[a]} elements"
    return PASS


@constraint
def rescaled_mean_hw_max(view: NodeView, *, size: int) -> Outcome:
    """A MEAN that keeps its reduced dimensions or rescales (input and output quantised
    differently) may average at most {size} pixels (height x width)"""
    x, y = view.data, view.output
    if x is None or y is None or x.rank != 4 or not x.is_static:
        return PASS
    same = x.quant is not None and x.quant == y.quant
    if same and not view.attr("keep_dims", False):
        return PASS
    hw = view.hw(x)
    if hw is None or hw[0] * hw[1] <= size:
        return PASS
    return False, f"{hw[0]}x{hw[1]} pixels, rescaled or keep_dims"


@constraint
def reduced_elements_max(view: NodeView, *, int8: int, uint8: int, int16: int) -> Outcome:
    """The number of reduced elements must not exceed {int8} (int8), {uint8} (uint8) or
    {int16} (int16)"""
    x = view.data
    axes = _axes(view)
    if x is None or not x.is_static or axes is None:
        return PASS
    shape = static_shape(x)
    n = math.prod(shape[a] for a in _norm_axes(axes, len(shape)))
    limit = {"int8": int8, "uint8": uint8, "int16": int16}.get(x.dtype.value)
    if limit is None or n <= limit:
        return PASS
    return False, f"{n} reduced {x.dtype.value} elements"


@constraint
def depth_reduce_needs_unit_dim(view: NodeView) -> Outcome:
    """Reducing over the channel axis needs height, width or channels to be 1"""
    x = view.data
    axes = _axes(view)
    if x is None or x.rank != 4 or not x.is_static or axes is None:
        return PASS
    c_axis = 3 if view.layout.endswith("C") else 1
    if c_axis not in _norm_axes(axes, 4):
        return PASS
    d = activation_dims(x, view.layout)
    if 1 in (*d.spatial, d.channels):
        return PASS
    return False, f"input {x.shape_str()}"


@constraint
def softmax_hw_max(view: NodeView, *, size: int) -> Outcome:
    """Input height x width must be below {size}"""
    x = view.data
    if x is None or not x.is_static:
        return PASS
    shape = static_shape(x)
    hw = math.prod(shape[1:-1]) if len(shape) >= 3 else 1
    if hw < size:
        return PASS
    return False, f"height x width = {hw}"


@constraint
def single_axis_max(view: NodeView, *, elements: int) -> Outcome:
    """The input must be 1-D (one dimension larger than 1) with at most {elements} elements"""
    x = view.data
    if x is None or not x.is_static:
        return PASS
    shape = static_shape(x)
    big = [d for d in shape if d > 1]
    if len(big) <= 1 and math.prod(shape) <= elements:
        return PASS
    return False, f"input {x.shape_str()}"


@constraint
def output_one_dimensional(view: NodeView) -> Outcome:
    """The output may have only one dimension larger than 1"""
    o = view.output
    if o is None or o.shape is None:
        return PASS
    if sum(1 for d in o.shape if d is None or d > 1) <= 1:
        return PASS
    return False, f"output {o.shape_str()}"


@constraint
def unit_strides(view: NodeView) -> Outcome:
    """All slice strides must be 1"""
    t = view.inputs[3] if len(view.inputs) > 3 else None
    if t is None or t.value is None:
        return PASS if t is None else (False, "strides not constant")
    vals = [int(v) for v in t.value.reshape(-1).tolist()]
    if all(v == 1 for v in vals):
        return PASS
    return False, f"strides {vals}"


@constraint
def pad_spatial_only(view: NodeView) -> Outcome:
    """Only the spatial (height, width) axes may be padded"""
    x = view.data
    t = view.inputs[1] if len(view.inputs) > 1 else None
    if x is None or x.rank is None or t is None or t.value is None:
        return PASS
    vals = t.value.reshape(-1).tolist()
    rank = x.rank
    if len(vals) != 2 * rank:
        return PASS
    if view.graph.format == "onnx":
        padded = {i for i in range(rank) if vals[i] or vals[i + rank]}
    else:
        padded = {i for i in range(rank) if vals[2 * i] or vals[2 * i + 1]}
    bad = padded - _spatial_axes(view, rank)
    if not bad:
        return PASS
    return False, f"pads axes {sorted(bad)}"


@constraint
def resize_scale_in(view: NodeView, *, factors: list[int]) -> Outcome:
    """Resize must be the identity, from a 1x1 input, or an equal upscale by {factors} in
    height and width"""
    hw_in, hw_out = view.hw(view.data), view.hw(view.output)
    if hw_in is None or hw_out is None:
        return PASS
    if hw_in == hw_out or hw_in == (1, 1):
        return PASS
    fh, fw = _resize_factors(view, hw_in, hw_out)
    if fh == fw and fh.is_integer() and int(fh) in factors:
        return PASS
    return False, f"{_hw_str(hw_in)} -> {_hw_str(hw_out)}"


def _resize_factors(
    view: NodeView, hw_in: tuple[int, int], hw_out: tuple[int, int]
) -> tuple[float, float]:
    """(height, width) scale of a resize; with ``align_corners`` the corner pixels map onto
    each other, so the factor is (out - 1) / (in - 1)."""
    if view.attr("align_corners"):
        num = (hw_out[0] - 1, hw_out[1] - 1)
        den = (max(hw_in[0] - 1, 1), max(hw_in[1] - 1, 1))
    else:
        num, den = hw_out, hw_in
    return num[0] / den[0], num[1] / den[1]


@constraint
def resize_factor_max(view: NodeView, *, factor: float) -> Outcome:
    """Resize must scale height and width by at most {factor}x"""
    hw_in, hw_out = view.hw(view.data), view.hw(view.output)
    if hw_in is None or hw_out is None:
        return PASS
    worst = max(_resize_factors(view, hw_in, hw_out))
    if worst <= factor:
        return PASS
    return False, f"{_hw_str(hw_in)} -> {_hw_str(hw_out)} ({worst:.3g}x)"


# --------------------------------------------------------------------------- #
# Rewrites and advisories
# --------------------------------------------------------------------------- #


@constraint
def always_rewritten(view: NodeView) -> Outcome:
    """The compiler always rewrites this operator into accelerator work plus CPU steps"""
    return False, view.node.native_op


@constraint
def runs_on_engine(view: NodeView, *, engine: str) -> Outcome:
    """The driver runs this operator on the {engine}: neither the MAC array nor the tensor
    processor takes it"""
    return False, view.node.native_op


@constraint
def integer_compute(view: NodeView, *, dtypes: list[str]) -> Outcome:
    """The MAC array computes {dtypes} only; other types run on a slower programmable engine"""
    bad = [t for t in view.feature_maps if _dtype_name(t) not in dtypes]
    if not bad:
        return PASS
    return False, f"{', '.join(sorted({_dtype_name(t) for t in bad}))} tensor(s) {_names(bad)}"


@constraint
def no_scalar_feature_maps(view: NodeView) -> Outcome:
    """No input or output feature map may be a scalar (rank 0: a dynamic tensor to Vela)"""
    bad = [t for t in view.feature_maps if t.rank == 0]
    if not bad:
        return PASS
    return False, f"scalar tensor(s) {_names(bad)}"


@constraint
def output_shape_of_an_input(view: NodeView) -> Outcome:
    """At least one input must have the output's shape"""
    o = view.output
    ins = [t for t in view.inputs[:2] if t is not None]
    if o is None or o.shape is None or not ins or any(t.shape is None for t in ins):
        return PASS
    if any(t.shape == o.shape for t in ins):
        return PASS
    shapes = " and ".join(t.shape_str() for t in ins)
    return False, f"inputs {shapes}, output {o.shape_str()}"


@constraint
def depth_axis_of_4d_input(view: NodeView, *, depth: int) -> Outcome:
    """The input must be 4-D, reduced along its last (depth) axis, at most {depth} deep"""
    x = view.data
    axes = _axes(view)
    if x is None or x.rank is None:
        return PASS
    if x.rank != 4:
        return False, f"a rank-{x.rank} input"
    if axes is not None and _norm_axes(axes, 4) != [3]:
        return False, f"axis {axes}"
    if x.shape is not None and x.shape[3] is not None and x.shape[3] > depth:
        return False, f"depth {x.shape[3]}"
    return PASS


@constraint
def crops_zero(view: NodeView) -> Outcome:
    """A batch-to-space must crop nothing (its crops input all zero)"""
    t = view.inputs[2] if len(view.inputs) > 2 else None
    if t is None:
        return PASS
    if t.value is None:
        return False, "crops not constant"
    vals = [int(v) for v in t.value.reshape(-1).tolist()]
    if not any(vals):
        return PASS
    return False, f"crops {vals}"


# --------------------------------------------------------------------------- #
# Graph-level rules (applied by placement, documented with the same templates)
# --------------------------------------------------------------------------- #

NOT_LISTED = "The {accelerator} does not run this operator (not in its supported list)"
FOLDED = "Constant computation, done once when the model is loaded (not part of inference)"
SINGLE_SEGMENT = (
    "Only one {accelerator} segment: an op fed (directly or through others) by an op that "
    "runs on the {fallback} after {accelerator} ops runs on the {fallback}, even if supported "
    "(edgetpu_compiler default; compile with -a / --num_segments for more)"
)
NO_ACCELERATOR = "The target has no accelerator; every op runs on the {fallback}"
COMPILED_MODEL = (
    "This model was already compiled for the {accelerator}: its {op} op runs there and every "
    "other op on the {fallback}, where the compiler left it; the compiled op's layers are not "
    "visible, so its time is unknown: check and estimate the model as it was before "
    "compilation (estimate --edgetpu-compiled takes this file's parameter split)"
)
LEFT_BY_COMPILER = "Left on the {fallback} by the {accelerator}'s compiler (a compiled model)"
