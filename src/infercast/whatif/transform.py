"""A variant as an IR transform: a new frozen :class:`Graph` from the model's own.

What changes, and how the rest follows (never by scaling numbers by hand):

* **resolution** -- the image input's spatial dimensions are set; every other
  activation's shape is re-derived node by node through the format's own shape
  rules (ONNX: :mod:`infercast.frontends.onnx.shapes`, the rules the ONNX frontend
  uses; TFLite: :mod:`.tflite_shapes`, LiteRT's ``Prepare`` arithmetic).
* **width** -- the output channels of every conv / fully-connected / MatMul with
  constant weights are scaled and rounded to a multiple of ``divisor``
  (:func:`make_divisible`, the MobileNets' rule), except the layers that produce
  the model's outputs (its classes) and the ``keep`` layers; a 1x1 conv that
  feeds a depthwise conv (an inverted-residual *expansion*) keeps its ratio to its
  own input, as MobileNetV2/V3 and EfficientNet define it (``expansion x
  in_channels``). Input channels follow what the producer now makes; depthwise
  convs follow their input.
* **replace** -- an activation op becomes another (``HARD_SWISH=RELU6``), or a
  kernel size another (``DEPTHWISE_CONV_2D:5x5=3x3``, output size kept: explicit
  padding that was TF ``SAME`` is recomputed as ``SAME``, other explicit padding
  shrinks by half the size difference per side).
* **dtype / quant** -- weights and activations re-typed (int8 quantised per
  tensor, or weights per output channel; biases of conv / FC int32, as TFLite's
  int8 kernels take them).

Constants follow: weights get the new shapes (their values are unknown: random
for an export), per-channel constants of elementwise ops (an unfused BatchNorm's
``Mul``/``Add``, PReLU slopes) follow the activation they broadcast against by
position, and constants that encode shapes are recomputed: Reshape targets (by
matching the old reshape's dimension groups), padding of a ``Pad`` feeding a
VALID conv (keras' ``correct_pad`` is TF ``SAME``), slice bounds, split sizes,
resize sizes, a transposed conv's output shape. What cannot be carried over
raises :class:`~.spec.VariantError` naming the layer.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from infercast.ir.dtypes import DType
from infercast.ir.graph import Graph, Node, Quantization, Shape, Tensor
from infercast.ir.views import kernel_dims, same_pads
from infercast.ops.registry import OpContext, is_weight
from infercast.whatif import tflite_shapes
from infercast.whatif.geometry import (
    pads_nothing,
    remap_extent,
    remap_reshape,
    same_value,
    storage_bytes,
)
from infercast.whatif.ops import (
    ACT_BY_NORM,
    ACTIVATIONS,
    DENSE_OPS,
    DERIVED_OK,
    KERNEL_OPS,
    POOLS,
    RESHAPING,
    activation_of,
    channel_axis,
    channels_of,
    cycle,
    image_axes,
    ints,
    layout_for_rank,
    norm_op,
    onnx_canonical,
    op_matches,
    scaled_channels,
    short,
    spatial_axes,
    static,
    total_stride,
    weight_shape,
)
from infercast.whatif.plan import ChannelPlan
from infercast.whatif.retype import retype
from infercast.whatif.spec import VariantError, VariantSpec

# --------------------------------------------------------------------------- #
# Small helpers
# --------------------------------------------------------------------------- #


# --------------------------------------------------------------------------- #
# The walk
# --------------------------------------------------------------------------- #


class _Transform:
    def __init__(self, graph: Graph, spec: VariantSpec) -> None:
        self.old = graph
        self.spec = spec
        self.fmt = graph.format
        self.T: dict[str, Tensor] = dict(graph.tensors)
        self.values: dict[str, np.ndarray[Any, Any]] = {}
        self.nodes: list[Node] = list(graph.nodes)
        self.notes: list[str] = []
        self.assigned: dict[str, int] = {}
        self.new_names = 0
        self.plan: ChannelPlan | None = None
        self.current = 0

    # ----- entry ---------------------------------------------------------- #

    def run(self) -> Graph:
        spec = self.spec
        reshaping = (
            spec.resolution is not None
            or spec.width != 1.0
            or any(r.src_kernel for r in spec.replace)
            or bool(spec.channels)
        )
        if reshaping and self.old.subgraphs:
            raise VariantError(
                f"{self.old.name}: the model has control flow (subgraphs); resolution, width "
                "and kernel variants are made for single-graph models only"
            )
        self._replace_activations()
        if reshaping:
            self.plan = ChannelPlan(self.old, spec)
            self._set_inputs()
            self._walk()
        if spec.dtype is not None or spec.quant is not None:
            retype(self.old, self.nodes, self.T, spec)
        return self._graph()

    @property
    def _plan(self) -> ChannelPlan:
        assert self.plan is not None
        return self.plan

    def _graph(self) -> Graph:
        label = self.spec.label()
        meta = dict(self.old.metadata)
        meta["whatif_of"] = str(self.old.path or self.old.name)
        meta["whatif_variant"] = label
        return Graph(
            name=f"{self.old.name} [{label}]",
            format=self.old.format,
            layout=self.old.layout,
            tensors=self.T,
            nodes=tuple(self.nodes),
            inputs=self.old.inputs,
            outputs=self.old.outputs,
            path=None,
            subgraphs=self.old.subgraphs,
            metadata=meta,
            notes=(*self.old.notes, *self.notes),
        )

    # ----- planning (on the original graph) -------------------------------- #

    def _replace_activations(self) -> None:
        for r in self.spec.replace:
            if r.src_kernel is not None:
                continue
            dst = ACT_BY_NORM.get(norm_op(r.dst))
            if dst is None:
                raise VariantError(
                    f"--replace {r}: {r.dst} is not an activation infercast can substitute",
                    "one of: " + ", ".join(a.upper() for a in ACTIVATIONS),
                )
            tfl, onnx_op, clip = ACTIVATIONS[dst]
            hits = 0
            for i, node in enumerate(self.nodes):
                if node.folded or not op_matches(node, r.src, self.old):
                    continue
                if activation_of(self.old, node) is None:
                    raise VariantError(
                        f"--replace {r}: {node.native_op} layers are not activations; "
                        "only activations (or kernel sizes: OP:5x5=3x3) are replaced"
                    )
                self.nodes[i] = self._activation_node(node, dst, tfl, onnx_op, clip)
                hits += 1
            if hits == 0:
                raise VariantError(f"--replace {r}: the model has no {r.src} layer")

    def _activation_node(
        self,
        node: Node,
        dst: str,
        tfl: str | None,
        onnx_op: str | None,
        clip: tuple[float, float] | None,
    ) -> Node:
        x = node.inputs[0]
        if self.fmt == "tflite":
            if tfl is None:
                raise VariantError(f"{dst.upper()} is not a TFLite builtin")
            return dataclasses.replace(node, op=dst, native_op=tfl, inputs=(x,), attrs={})
        if onnx_op is not None:
            return dataclasses.replace(
                node, op=onnx_canonical(onnx_op), native_op=onnx_op, inputs=(x,), attrs={}
            )
        assert clip is not None
        dtype = self.T[x].dtype
        names = []
        for label, v in zip(("min", "max"), clip, strict=True):
            name = f"{node.name}/whatif_{label}"
            np_dtype = np.float16 if dtype == DType.FLOAT16 else np.float32
            self.T[name] = Tensor(
                name=name,
                dtype=dtype if dtype.is_float else DType.FLOAT32,
                shape=(),
                is_constant=True,
                storage_bytes=np.dtype(np_dtype).itemsize,
                value=np.asarray(v, dtype=np_dtype),
            )
            names.append(name)
        return dataclasses.replace(node, op="clip", native_op="Clip", inputs=(x, *names), attrs={})

    # ----- inputs -------------------------------------------------------- #

    def _set_inputs(self) -> None:
        res = self.spec.resolution
        if res is None:
            return
        images = [n for n in self.old.inputs if (self.old.tensors[n].rank or 0) == 4]
        if not images:
            raise VariantError(
                f"{self.old.name}: no 4-D image input for --resolution",
                "inputs: "
                + ", ".join(f"{n} {self.old.tensors[n].shape_str()}" for n in self.old.inputs),
            )
        for name in images:
            t = self.old.tensors[name]
            h_ax, w_ax = image_axes(self.old, t)
            shape = list(static(t))
            shape[h_ax], shape[w_ax] = res
            self.T[name] = dataclasses.replace(t, shape=tuple(shape))

    # ----- node by node -------------------------------------------------- #

    def _walk(self) -> None:
        rules: Mapping[str, Callable[[OpContext], Any]]
        if self.fmt == "onnx":
            from infercast.frontends.onnx.shapes import RULES as onnx_rules

            rules = onnx_rules
        elif self.fmt == "tflite":
            rules = tflite_shapes.RULES
        else:
            raise VariantError(f"variants of {self.fmt} graphs are not supported")
        for i, node in enumerate(self.nodes):
            if node.folded:
                continue
            self.current = i
            attrs = dict(node.attrs)
            before = [self.T[n] if n else None for n in node.inputs]
            if node.op in KERNEL_OPS and self._plan.weight(node) is not None:
                self._kernel(node, attrs)
            elif node.op in DENSE_OPS and self._plan.dense_weight(node) is not None:
                self._dense(node, attrs)
            else:
                self._follow(node)
            self._shape_args(node, attrs)
            node = self.nodes[i]  # inputs may have been renamed
            if attrs != dict(node.attrs):
                node = dataclasses.replace(node, attrs=attrs)
                self.nodes[i] = node
            ins = [self.T[n] if n else None for n in node.inputs]
            unchanged = (
                all(a is b for a, b in zip(ins, before, strict=True))
                and node is self.old.nodes[i]
                and all(self.T[n] is self.old.tensors.get(n) for n in node.inputs if n)
            )
            if unchanged and not self._has_values(node):
                continue
            self._infer(node, ins, rules, unchanged)

    def _has_values(self, node: Node) -> bool:
        return any(n in self.values for n in node.inputs if n)

    def _infer(
        self,
        node: Node,
        ins: list[Tensor | None],
        rules: Mapping[str, Callable[[OpContext], Any]],
        unchanged: bool,
    ) -> None:
        outs = [self.T[o] for o in node.outputs if o]
        ctx = OpContext(self.old, node, ins, outs, self.values)
        rule = rules.get(node.op)
        shapes: list[Shape | None] | None = None
        if rule is not None:
            try:
                shapes = rule(ctx)
            except Exception as exc:
                if not unchanged:
                    raise VariantError(
                        f"layer '{short(node.name)}' ({node.native_op}): its output shape "
                        f"cannot be derived for this variant ({type(exc).__name__}: {exc})",
                        self._stride_hint(),
                    ) from None
        if shapes is None:
            if not unchanged:
                raise VariantError(
                    f"layer '{short(node.name)}': no {self.fmt} shape rule for "
                    f"{node.native_op}, whose inputs change in this variant"
                )
            shapes = [self.old.tensors[o].shape for o in node.outputs if o]
        for o, s in zip([o for o in node.outputs if o], shapes, strict=False):
            if s is None:
                raise VariantError(
                    f"layer '{short(node.name)}' ({node.native_op}): output shape unknown "
                    "in this variant"
                )
            s = tuple(s)
            if any(d is None or d < 0 for d in s):
                raise VariantError(
                    f"layer '{short(node.name)}' ({node.native_op}): output shape {s} "
                    "is not static in this variant"
                )
            if s != self.T[o].shape:
                self.T[o] = dataclasses.replace(self.T[o], shape=s)
        self._propagate_values(node, ins)

    def _stride_hint(self) -> str:
        res = self.spec.resolution
        if res is None:
            return ""
        stride = total_stride(self.old)
        if stride > 1 and (res[0] % stride or res[1] % stride):
            return (
                f"{res[0]}x{res[1]} is not a multiple of the model's total stride, {stride}: "
                "such sizes keep its layers aligned"
            )
        return ""

    def _propagate_values(self, node: Node, ins: list[Tensor | None]) -> None:
        outs = [self.T[o] for o in node.outputs if o]
        ctx = OpContext(self.old, node, ins, outs, self.values)
        if self.fmt == "tflite":
            vals = tflite_shapes.values_of(ctx)
        else:
            from infercast.frontends.onnx.shapes.values import VALUE_RULES

            vrule = VALUE_RULES.get(node.op)
            if vrule is None or any((t.elements or 0) > 4096 for t in outs):
                return
            in_vals = [ctx.value(i) if ctx.has_input(i) else None for i in range(len(ins))]
            try:
                vals = list(vrule(ctx, in_vals))
            except Exception:
                return
        for o, v in zip(node.outputs, vals, strict=False):
            if o and v is not None and np.size(v) <= 4096:
                self.values[o] = np.asarray(v)

    # ----- constants ------------------------------------------------------ #

    def _set_const(self, node: Node, pos: int, new: Tensor) -> None:
        """Give input ``pos`` of ``node`` the constant ``new`` (same name unless another
        node already gave that name a different shape or value)."""
        name = node.inputs[pos]
        prev = self.assigned.get(name)
        cur = self.T[name]
        same = cur.shape == new.shape and same_value(cur.value, new.value)
        if prev is not None and prev != node.index and not same:
            self.new_names += 1
            fresh = f"{name}#whatif{self.new_names}"
            new = dataclasses.replace(new, name=fresh)
            self.T[fresh] = new
            self.assigned[fresh] = node.index
            inputs = list(self.nodes[node.index].inputs)
            inputs[pos] = fresh
            self.nodes[node.index] = dataclasses.replace(
                self.nodes[node.index], inputs=tuple(inputs)
            )
            return
        self.assigned[name] = node.index
        self.T[name] = new

    def _resized(self, name: str, shape: tuple[int, ...], o_axis: int | None = None) -> Tensor:
        """Constant ``name`` with a new ``shape`` (values unknown); what it is decoded from
        at load time (a DEQUANTIZE'd fp16 weight) follows."""
        t = self.T[name]
        if t.shape == shape:
            return t
        storage = storage_bytes(t, shape)
        if t.derived_from:
            prod = self.old.producers.get(name)
            pnode = self.old.nodes[prod] if prod is not None else None
            src_shape = self._source_shape(name, pnode, shape)
            assert pnode is not None
            src = pnode.inputs[0]
            same = src_shape == shape
            self.T[src] = self._resized(src, src_shape, o_axis if same else None)
            for extra in pnode.inputs[1:]:  # per-channel scale / zero point vectors
                e = self.T.get(extra) if extra else None
                if e is not None and o_axis is not None and e.rank == 1 and t.shape is not None:
                    old_o = t.shape[o_axis]
                    if e.shape == (old_o,) and old_o != shape[o_axis]:
                        self.T[extra] = self._resized(extra, (shape[o_axis],))
            storage = self.T[src].storage_bytes
            out = dataclasses.replace(self.T[name], shape=shape, storage_bytes=storage, value=None)
            self.T[name] = out
        else:
            self._generated(name, shape)
        quant = t.quant
        if quant is not None and quant.per_channel and quant.axis is not None:
            n = shape[quant.axis] if quant.axis < len(shape) else len(quant.scale)
            quant = Quantization(
                cycle(quant.scale, n),
                cycle(quant.zero_point, n),
                quant.axis,
            )
        return dataclasses.replace(
            self.T[name], shape=shape, storage_bytes=storage, value=None, quant=quant
        )

    def _generated(self, name: str, shape: tuple[int, ...]) -> None:
        """A constant made at load time from a shape (ONNX ConstantOfShape) gets the new
        shape in that argument too."""
        prod = self.old.producers.get(name)
        node = self.old.nodes[prod] if prod is not None else None
        if node is None or not node.folded or node.op != "constant_of_shape":
            return
        arg = self.T.get(node.inputs[0]) if node.inputs and node.inputs[0] else None
        if arg is not None and arg.value is not None:
            value = np.asarray(shape, dtype=np.asarray(arg.value).dtype)
            self.T[node.inputs[0]] = dataclasses.replace(arg, value=value)

    def _known(self, name: str) -> int | None:
        """The new channel count of ``name`` once the walk has made it (a graph input, or
        the output of a node before the current one), else None."""
        made = self.old.producers.get(name, self.current) < self.current
        if name not in self.old.inputs and not made:
            return None
        t = self.T[name]
        if not t.is_static or not t.shape or len(t.shape) < 2:
            return None
        return int(t.shape[channel_axis(self.old, len(t.shape))] or 0)

    def _source_shape(
        self, name: str, pnode: Node | None, shape: tuple[int, ...]
    ) -> tuple[int, ...]:
        """The new shape of what a load-time op (DEQUANTIZE, Unsqueeze, Reshape,
        Transpose of a stored weight) computes constant ``name`` from."""
        if pnode is not None and pnode.folded and pnode.op in DERIVED_OK:
            return shape
        if pnode is not None and pnode.folded and pnode.op in RESHAPING | {"transpose"}:
            src_old = static(self.old.tensors[pnode.inputs[0]])
            out_old = static(self.old.tensors[name])
            if pnode.op == "transpose":
                perm = ints(pnode.attrs.get("perm"))
                if not perm and len(pnode.inputs) > 1:
                    v = self._const_value(pnode, 1)
                    perm = tuple(int(x) for x in v.reshape(-1)) if v is not None else ()
                if len(perm) == len(shape):
                    out = [0] * len(shape)
                    for i, p in enumerate(perm):
                        out[p] = shape[i]
                    return tuple(out)
            else:
                new = remap_reshape(out_old, src_old, shape)
                if new is not None:
                    if pnode.op == "reshape" and self._const_value(pnode, 1) is not None:
                        target = self.T[pnode.inputs[1]]
                        value = np.asarray(shape, dtype=np.asarray(target.value).dtype)
                        self.T[pnode.inputs[1]] = dataclasses.replace(target, value=value)
                    return new
        raise VariantError(
            f"weight '{short(name)}' is computed at load time by "
            f"{pnode.native_op if pnode else 'an op'}; it cannot be re-shaped"
        )

    def _kernel(self, node: Node, attrs: dict[str, Any]) -> None:
        g = self.old
        layout = str(attrs.get("weight_layout", "OIHW"))
        di = int(attrs.get("data_input", 0))
        wi = int(attrs.get("weight_input", 1))
        w_old = g.tensors[node.inputs[wi]]
        x_old, x_new = g.tensors[node.inputs[di]], self.T[node.inputs[di]]
        kd = kernel_dims(w_old, layout)
        cin_old, cin_new = channels_of(g, x_old), channels_of(g, x_new)
        spatial = tuple(self._plan.kernel_plan.get(node.index, kd.spatial))
        spatial = self._global_kernel(node, x_old, x_new, spatial)
        onnx_group = int(attrs.get("group", 1))
        if node.op == "conv_transpose":
            group = onnx_group if self.fmt == "onnx" else 1
            c_old_total = kd.out_channels * group
            c_new_total = self._plan.channels_out(node, c_old_total, cin_old, cin_new, self._known)
            if c_new_total % group or cin_new % group:
                raise VariantError(
                    f"layer '{short(node.name)}': {c_new_total} channels do not split in "
                    f"{group} groups"
                )
            o_new = c_new_total // group
            i_new = cin_new
            if self.fmt == "tflite":
                self._transpose_conv_shape(node, x_old, x_new, c_new_total, spatial)
        elif node.op == "depthwise_conv" or (kd.in_channels == 1 and cin_old > 1):
            mult = max(kd.out_channels // max(cin_old, 1), 1)
            o_new = cin_new * mult
            i_new = kd.in_channels
            c_new_total = o_new
            if self.fmt == "onnx":
                attrs["group"] = cin_new
        else:
            groups = max(cin_old // max(kd.in_channels, 1), 1)
            if cin_new % groups:
                raise VariantError(
                    f"layer '{short(node.name)}': {cin_new} input channels do not split in "
                    f"its {groups} groups"
                )
            i_new = cin_new // groups
            o_new = self._plan.channels_out(node, kd.out_channels, cin_old, cin_new, self._known)
            if o_new % groups:
                o_new = -(-o_new // groups) * groups
            c_new_total = o_new
        rank = len(static(w_old))
        new_w = weight_shape(layout, rank, o_new, i_new, spatial)
        o_axis = layout_for_rank(layout, rank).index("O")
        self._want(node, wi, new_w, o_axis)
        c_old_total = _channels_total(node, kd.out_channels, onnx_group, self.fmt)
        self._bias(node, (di, wi), c_old_total, c_new_total)
        if node.index in self._plan.kernel_plan and "kernel_shape" in attrs:
            attrs["kernel_shape"] = tuple(spatial)
        self._conv_pads(node, attrs, x_old, x_new, tuple(kd.spatial), spatial)

    def _want(self, node: Node, pos: int, shape: tuple[int, ...], o_axis: int | None) -> None:
        """Input ``pos`` of ``node`` must be a constant of ``shape``: re-shape it, or, when
        it already has that shape, claim it (a constant shared with later layers that
        change it is then copied for them, not changed under this one)."""
        name = self.nodes[node.index].inputs[pos]
        if self.T[name].shape == shape:
            self.assigned.setdefault(name, node.index)
            return
        self._set_const(node, pos, self._resized(name, shape, o_axis))

    def _global_kernel(
        self, node: Node, x_old: Tensor, x_new: Tensor, spatial: tuple[int, ...]
    ) -> tuple[int, ...]:
        """A VALID conv whose kernel is its whole input (a dense layer over the map, as
        landmark heads end) keeps covering its whole input."""
        xo, xn = static(x_old), static(x_new)
        out = static(self.old.tensors[node.outputs[0]])
        axes = spatial_axes(self.old, len(xo))
        if (
            node.op == "conv_transpose"
            or len(axes) != len(spatial)
            or xo == xn
            or not pads_nothing(node)
            or tuple(xo[a] for a in axes) != spatial
            or any(out[a] != 1 for a in axes)
        ):
            return spatial
        return tuple(xn[a] for a in axes)

    def _bias(self, node: Node, skip: tuple[int, ...], c_old: int, c_new: int) -> None:
        for pos, name in enumerate(node.inputs):
            if pos in skip or not name:
                continue
            t = self.old.tensors[name]
            if not t.is_constant or not is_weight(t) or t.shape is None:
                continue
            s = static(t)
            if s and s[-1] == c_old and int(np.prod(s)) == c_old:
                new = (*s[:-1], c_new)
                self._want(node, pos, new, len(new) - 1)

    def _dense(self, node: Node, attrs: dict[str, Any]) -> None:
        g = self.old
        found = self._plan.dense_weight(node)
        assert found is not None
        pos, w_old = found
        x_old, x_new = g.tensors[node.inputs[0]], self.T[node.inputs[0]]
        xo, xn = static(x_old), static(x_new)
        ws = static(w_old)
        if node.op == "fully_connected":  # TFLite: weights (O, I)
            o_old, i_old = ws[0], ws[1]
            if bool(attrs.get("keep_num_dims", False)):
                i_new = xn[-1]
            else:
                rows = math.prod(xo) // i_old
                if rows == 0 or math.prod(xn) % rows:
                    raise VariantError(
                        f"layer '{short(node.name)}': its {math.prod(xn)} input values do not "
                        f"form {rows} rows"
                    )
                i_new = math.prod(xn) // rows
            o_new = self._plan.channels_out(node, o_old, i_old, i_new, self._known)
            new_w: tuple[int, ...] = (o_new, i_new)
            o_axis = 0
        else:
            trans_a = bool(attrs.get("transA", 0)) or bool(attrs.get("adj_x", False))
            trans_b = bool(attrs.get("transB", 0)) or bool(attrs.get("adj_y", False))
            k_old = xo[-2] if trans_a else xo[-1]
            k_new = xn[-2] if trans_a else xn[-1]
            n_old = ws[0] if trans_b else ws[1]
            o_new = self._plan.channels_out(node, n_old, k_old, k_new, self._known)
            new_w = (o_new, k_new) if trans_b else (k_new, o_new)
            o_old = n_old
            o_axis = 0 if trans_b else 1
        self._want(node, pos, new_w, o_axis)
        self._bias(node, (0, pos), o_old, o_new)

    def _follow(self, node: Node) -> None:
        """Constant operands that broadcast against the activation follow its new shape."""
        g = self.old
        data = next(
            (
                p
                for p, n in enumerate(node.inputs)
                if n and not self.T[n].is_constant and g.tensors[n].shape is not None
            ),
            None,
        )
        if data is None:
            return
        xo = g.tensors[node.inputs[data]].shape
        xn = self.T[node.inputs[data]].shape
        if xo is None or xn is None:
            return
        per_channel = node.op in ("batch_normalization", "instance_normalization")
        for pos, name in enumerate(node.inputs):
            if pos == data or not name:
                continue
            t = self.old.tensors[name]
            if not t.is_constant or not is_weight(t) or t.shape is None:
                continue
            s = static(t)
            if per_channel and len(s) == 1 and len(xo) >= 2:
                ax = channel_axis(g, len(xo))
                new: tuple[int, ...] = (int(xn[ax] or 0),) if s[0] == xo[ax] else s
            elif len(s) <= len(xo):
                off = len(xo) - len(s)
                new = tuple(
                    int(xn[off + i] or 0) if (d == xo[off + i] and d != 1) else d
                    for i, d in enumerate(s)
                )
            else:
                continue
            c_ax = channel_axis(g, len(new)) if new else None
            self._want(node, pos, new, c_ax)

    # ----- shape arguments ----------------------------------------------- #

    def _shape_args(self, node: Node, attrs: dict[str, Any]) -> None:
        op = node.op
        if op == "reshape":
            self._reshape(node, attrs)
        elif op in ("pad", "mirror_pad"):
            self._pad(node, attrs)
        elif op == "resize":
            self._resize(node)
        elif op in ("slice", "strided_slice"):
            self._slice(node, attrs)
        elif op in ("split", "split_v"):
            self._split(node, attrs)
        elif op in POOLS:
            self._global_pool(node, attrs)

    def _global_pool(self, node: Node, attrs: dict[str, Any]) -> None:
        """A pool whose window is its whole input (a global pool written as a fixed
        window, Caffe's 7x7 average pool) keeps covering its whole input."""
        xo, xn, out = self._io(node)
        ks = ints(attrs.get("kernel_shape"))
        axes = spatial_axes(self.old, len(xo))
        n = len(axes)
        pads = ints(attrs.get("pads")) or (0,) * (2 * n)
        if xo == xn or len(ks) != n or len(pads) != 2 * n or str(attrs.get("padding")) == "SAME":
            return
        extra = [pads[i] + pads[i + n] for i in range(n)]
        whole = all(ks[i] == xo[a] + extra[i] and out[a] == 1 for i, a in enumerate(axes))
        if not whole:
            return
        new = tuple(xn[a] + extra[i] for i, a in enumerate(axes))
        attrs["kernel_shape"] = new
        if "filter_height" in attrs and len(new) == 2:
            attrs["filter_height"], attrs["filter_width"] = new

    def _const_value(self, node: Node, pos: int) -> np.ndarray[Any, Any] | None:
        if pos >= len(node.inputs) or not node.inputs[pos]:
            return None
        t = self.T[node.inputs[pos]]
        return np.asarray(t.value) if t.is_constant and t.value is not None else None

    def _set_value(self, node: Node, pos: int, value: np.ndarray[Any, Any]) -> None:
        t = self.T[node.inputs[pos]]
        old = np.asarray(t.value)
        if old.shape == value.shape and np.array_equal(old, value):
            return
        self._set_const(node, pos, dataclasses.replace(t, value=value.astype(old.dtype)))

    def _io(self, node: Node) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        x = node.inputs[0]
        return (
            static(self.old.tensors[x]),
            static(self.T[x]),
            static(self.old.tensors[node.outputs[0]]),
        )

    def _reshape(self, node: Node, attrs: dict[str, Any]) -> None:
        xo, xn, out_old = self._io(node)
        if xo == xn:
            return
        target = self._const_value(node, 1)
        new_out = remap_reshape(xo, out_old, xn)
        if new_out is None:
            raise VariantError(
                f"layer '{short(node.name)}' (reshape {xo} -> {out_old}): the new input {xn} "
                "does not map onto the old reshape's dimension groups"
            )
        if target is not None:
            old_t = [int(v) for v in target.reshape(-1)]
            new_t = [
                v if (v in (-1, 0) and self.fmt == "onnx") or v == -1 else new_out[i]
                for i, v in enumerate(old_t)
            ]
            self._set_value(node, 1, np.asarray(new_t).reshape(target.shape))
        elif self._has_values(node):
            return  # computed from SHAPE: the value rules carry it
        if attrs.get("new_shape"):
            old_a = [int(v) for v in attrs["new_shape"]]
            attrs["new_shape"] = tuple(-1 if v == -1 else new_out[i] for i, v in enumerate(old_a))

    def _pad(self, node: Node, attrs: dict[str, Any]) -> None:
        g = self.old
        value = self._const_value(node, 1)
        if value is None:
            return
        xo, xn, _ = self._io(node)
        consumers = g.consumers.get(node.outputs[0], ())
        pads = [int(v) for v in value.reshape(-1)]
        rank = len(xo)

        # ONNX: [b0, b1, ..., e0, e1, ...]; TFLite: [[b0, e0], [b1, e1], ...].
        def get(ax: int) -> tuple[int, int]:
            if self.fmt == "onnx":
                return pads[ax], pads[ax + rank]
            return pads[2 * ax], pads[2 * ax + 1]

        def put(ax: int, b: int, e: int) -> None:
            if self.fmt == "onnx":
                pads[ax], pads[ax + rank] = b, e
            else:
                pads[2 * ax], pads[2 * ax + 1] = b, e

        ca = channel_axis(g, rank)
        cb, ce = get(ca)
        if (cb or ce) and self.old.tensors[node.outputs[0]].shape is not None:
            # Channels padded to match a residual branch (BlazeFace's shortcut): the
            # padded count follows the branch it is added to.
            c_out = int(static(self.old.tensors[node.outputs[0]])[ca])
            want = self._plan.group_channels(
                node.outputs[0],
                scaled_channels(c_out, self.spec.width, self.spec.divisor),
                self._known,
            )
            if want - xn[ca] - cb < 0:
                raise VariantError(
                    f"layer '{short(node.name)}': pads {xn[ca]} channels to {c_out}; the "
                    f"variant needs {want}, fewer than it has",
                    f"its channel counts are not multiples of {self.spec.divisor}: "
                    "try a smaller --divisor, e.g. --divisor 2",
                )
            put(ca, cb, want - xn[ca] - cb)
        if len(consumers) == 1:
            c = g.nodes[consumers[0]]
            geo = self._window(c)
            if geo is not None and pads_nothing(c):
                kernel, strides, dil = geo
                new_k = self._plan.kernel_plan.get(c.index, kernel)
                axes = spatial_axes(g, rank)
                for i, ax in enumerate(axes[: len(kernel)]):
                    b, e = get(ax)
                    if (b, e) == same_pads(xo[ax], kernel[i], strides[i], dil[i]) and (
                        xo[ax] != xn[ax] or new_k[i] != kernel[i]
                    ):
                        put(ax, *same_pads(xn[ax], new_k[i], strides[i], dil[i]))
                    elif new_k[i] != kernel[i]:
                        d = (kernel[i] - new_k[i]) * dil[i] // 2
                        put(ax, max(b - d, 0), max(e - d, 0))
        self._set_value(node, 1, np.asarray(pads).reshape(value.shape))

    def _window(
        self, node: Node
    ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None:
        if node.op in KERNEL_OPS - {"conv_transpose"}:
            w = self._plan.weight(node)
            if w is None:
                return None
            kernel = tuple(kernel_dims(w, str(node.attrs.get("weight_layout", "OIHW"))).spatial)
        elif node.op in ("avg_pool", "max_pool", "l2_pool"):
            ks = node.attrs.get("kernel_shape")
            if not isinstance(ks, tuple | list):
                return None
            kernel = tuple(int(k) for k in ks)
        else:
            return None
        n = len(kernel)
        strides = ints(node.attrs.get("strides")) or (1,) * n
        dil = ints(node.attrs.get("dilations")) or (1,) * n
        return kernel, strides, dil

    def _conv_pads(
        self,
        node: Node,
        attrs: dict[str, Any],
        x_old: Tensor,
        x_new: Tensor,
        kernel: tuple[int, ...],
        new_k: tuple[int, ...],
    ) -> None:
        """ONNX explicit pads: TF SAME stays SAME; otherwise a smaller kernel keeps the size."""
        pads = ints(attrs.get("pads"))
        if self.fmt != "onnx" or not pads:
            return
        n = len(kernel)
        strides = ints(attrs.get("strides")) or (1,) * n
        dil = ints(attrs.get("dilations")) or (1,) * n
        xo, xn = static(x_old), static(x_new)
        new = list(pads)
        for i in range(n):
            ax = 2 + i
            b, e = pads[i], pads[i + n]
            if (b, e) == same_pads(xo[ax], kernel[i], strides[i], dil[i]):
                new[i], new[i + n] = same_pads(xn[ax], new_k[i], strides[i], dil[i])
            elif new_k[i] != kernel[i]:
                d = (kernel[i] - new_k[i]) * dil[i] // 2
                new[i], new[i + n] = max(b - d, 0), max(e - d, 0)
        if tuple(new) != tuple(pads):
            attrs["pads"] = tuple(new)

    def _transpose_conv_shape(
        self, node: Node, x_old: Tensor, x_new: Tensor, c_new: int, spatial: Sequence[int]
    ) -> None:
        value = self._const_value(node, 0)
        if value is None:
            return
        xn = static(x_new)
        strides = ints(node.attrs.get("strides")) or (1, 1)
        same = str(node.attrs.get("padding", "SAME")) == "SAME"
        hw = [
            xn[1 + i] * strides[i] if same else (xn[1 + i] - 1) * strides[i] + spatial[i]
            for i in range(2)
        ]
        self._set_value(node, 0, np.asarray([xn[0], *hw, c_new]))

    def _resize(self, node: Node) -> None:
        xo, xn, _ = self._io(node)
        if xo == xn:
            return
        pos = 1 if self.fmt == "tflite" else 3
        value = self._const_value(node, pos)
        if value is None:
            return
        sizes = [int(v) for v in value.reshape(-1)]
        axes = spatial_axes(self.old, len(xo))
        new = list(sizes)
        if self.fmt == "tflite":
            pairs = list(zip(range(len(sizes)), axes, strict=False))
        else:
            pairs = [(a, a) for a in range(len(sizes))]
        for k, ax in pairs:
            if xo[ax] == xn[ax]:
                continue
            if self.fmt == "onnx" and ax not in axes:
                new[k] = xn[ax]
                continue
            scaled = sizes[k] * xn[ax] / xo[ax]
            if scaled != int(scaled):
                raise VariantError(
                    f"layer '{short(node.name)}': resize to {sizes[k]} from {xo[ax]} does not "
                    f"scale to an input of {xn[ax]}"
                )
            new[k] = int(scaled)
        self._set_value(node, pos, np.asarray(new).reshape(value.shape))

    def _slice(self, node: Node, attrs: dict[str, Any]) -> None:
        xo, xn, _ = self._io(node)
        if xo == xn:
            return
        rank = len(xo)
        if self.fmt == "onnx":
            starts, ends = self._const_value(node, 1), self._const_value(node, 2)
            axes_v = self._const_value(node, 3)
            if starts is None or ends is None:
                return
            axes = (
                [int(a) % rank for a in axes_v.reshape(-1)]
                if axes_v is not None
                else list(range(starts.size))
            )
            s_new = [int(v) for v in starts.reshape(-1)]
            e_new = [int(v) for v in ends.reshape(-1)]
            for k, ax in enumerate(axes):
                s_new[k], e_new[k] = remap_extent(node, ax, xo[ax], xn[ax], s_new[k], e_new[k])
            self._set_value(node, 1, np.asarray(s_new).reshape(starts.shape))
            self._set_value(node, 2, np.asarray(e_new).reshape(ends.shape))
            return
        begin = self._const_value(node, 1)
        second = self._const_value(node, 2)
        if begin is None or second is None:
            return
        b = [int(v) for v in begin.reshape(-1)]
        s = [int(v) for v in second.reshape(-1)]
        bm, em = int(attrs.get("begin_mask", 0)), int(attrs.get("end_mask", 0))
        for ax in range(min(len(b), rank)):
            if xo[ax] == xn[ax]:
                continue
            if node.op == "slice":
                end = xo[ax] if s[ax] == -1 else b[ax] + s[ax]
                nb, ne = remap_extent(node, ax, xo[ax], xn[ax], b[ax], end)
                b[ax], s[ax] = nb, (-1 if s[ax] == -1 else ne - nb)
            else:
                lo = 0 if bm >> ax & 1 else b[ax]
                hi = xo[ax] if em >> ax & 1 else s[ax]
                nb, ne = remap_extent(node, ax, xo[ax], xn[ax], lo, hi)
                if not bm >> ax & 1:
                    b[ax] = nb
                if not em >> ax & 1:
                    s[ax] = ne
        self._set_value(node, 1, np.asarray(b).reshape(begin.shape))
        self._set_value(node, 2, np.asarray(s).reshape(second.shape))

    def _split(self, node: Node, attrs: dict[str, Any]) -> None:
        if self.fmt == "tflite":
            if node.op != "split_v":
                return
            x_pos, sizes_pos, axis = 0, 1, self._const_value(node, 2)
            if axis is None:
                return
            ax_val = int(axis.reshape(-1)[0])
        else:
            x_pos, sizes_pos = 0, 1
            ax_val = int(attrs.get("axis", 0))
        xo = static(self.old.tensors[node.inputs[x_pos]])
        xn = static(self.T[node.inputs[x_pos]])
        ax = ax_val % len(xo)
        if xo[ax] == xn[ax]:
            return
        sizes_v = self._const_value(node, sizes_pos)
        old_sizes = (
            [int(v) for v in sizes_v.reshape(-1)]
            if sizes_v is not None
            else [int(v) for v in ints(attrs.get("split"))]
        )
        if not old_sizes:
            return
        new = []
        for s in old_sizes:
            v = s * xn[ax] / xo[ax]
            if s != -1 and v != int(v):
                raise VariantError(
                    f"layer '{short(node.name)}': split sizes {old_sizes} of {xo[ax]} do not "
                    f"scale to {xn[ax]}"
                )
            new.append(-1 if s == -1 else int(v))
        if sizes_v is not None:
            self._set_value(node, sizes_pos, np.asarray(new).reshape(sizes_v.shape))
        else:
            attrs["split"] = tuple(new)

    # ----- dtypes ---------------------------------------------------------- #


# --------------------------------------------------------------------------- #
# Pieces used by the walk
# --------------------------------------------------------------------------- #


def _channels_total(node: Node, out_channels: int, group: int, fmt: str) -> int:
    if node.op == "conv_transpose" and fmt == "onnx":
        return out_channels * group
    return out_channels


def transform(graph: Graph, spec: VariantSpec) -> Graph:
    """The variant ``spec`` of ``graph``: a new :class:`Graph` (the original untouched).

    Raises :class:`~.spec.VariantError` when the model cannot carry the change."""
    if spec.is_identity:
        return graph
    return _Transform(graph, spec).run()


__all__ = ["transform"]
