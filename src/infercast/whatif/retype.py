"""``--dtype`` / ``--quant``: weights and activations re-typed.

int8: every float (or quantised) tensor becomes int8, quantised per tensor; conv / FC
weights per output channel with ``--quant per-channel``; their biases int32 (what
TFLite's int8 kernels take). fp16 / fp32: float and quantised tensors become that float
type, without quantisation. Shape arguments (plain integer constants) are untouched.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from infercast.ir.dtypes import DType
from infercast.ir.graph import Graph, Node, Quantization, Tensor
from infercast.ops.registry import is_weight
from infercast.whatif.geometry import storage_bytes
from infercast.whatif.ops import DENSE_OPS, KERNEL_OPS, cycle, layout_for_rank, static
from infercast.whatif.spec import VariantError, VariantSpec


def weight_roles(graph: Graph, nodes: Sequence[Node]) -> dict[str, tuple[str, int | None]]:
    """Tensor -> (``weight`` | ``bias``, output-channel axis) for conv / FC parameters."""
    roles: dict[str, tuple[str, int | None]] = {}
    for node in nodes:
        if node.folded:
            continue
        if node.op in KERNEL_OPS:
            wi = int(node.attrs.get("weight_input", 1))
            di = int(node.attrs.get("data_input", 0))
            layout = str(node.attrs.get("weight_layout", "OIHW"))
            names = list(node.inputs)
            if wi < len(names) and names[wi]:
                w = graph.tensors.get(names[wi])
                rank = w.rank if w is not None and w.rank else len(layout)
                roles[names[wi]] = ("weight", layout_for_rank(layout, rank).index("O"))
            for p, n in enumerate(names):
                if n and p not in (wi, di) and n not in roles:
                    roles[n] = ("bias", 0)
        elif node.op in DENSE_OPS and len(node.inputs) > 1 and node.inputs[1]:
            trans_b = bool(node.attrs.get("transB", 0))
            w_axis = 0 if node.op == "fully_connected" or trans_b else 1
            roles[node.inputs[1]] = ("weight", w_axis)
            for n in node.inputs[2:]:
                if n and n not in roles:
                    roles[n] = ("bias", 0)
    # Decoded constants carry their source's role.
    for name, (role, o_axis) in list(roles.items()):
        t = graph.tensors.get(name)
        if t is not None and t.derived_from and t.derived_from not in roles:
            roles[t.derived_from] = (role, o_axis)
    return roles


_ACT_SCALE = (1.0 / 64.0,)


def to_int8(t: Tensor, role: str, o_axis: int | None, scheme: str | None) -> Tensor:
    if not (t.dtype.is_float or t.quant is not None):
        return t
    per_channel = scheme == "per-channel" or (
        scheme is None and t.quant is not None and t.quant.per_channel
    )
    if role == "bias":
        n = 1
        if per_channel and t.shape:
            n = int(t.shape[-1] or 1)
        q = Quantization(_ACT_SCALE * n, (0,) * n, 0 if n > 1 else None)
        return dataclasses.replace(t, dtype=DType.INT32, quant=q, value=None)
    if role == "weight" and per_channel and o_axis is not None and t.shape:
        n = int(t.shape[o_axis] or 1)
        old = t.quant.scale if t.quant is not None else (0.01,)
        q = Quantization(cycle(old, n), (0,) * n, o_axis)
        return dataclasses.replace(t, dtype=DType.INT8, quant=q, value=None)
    if t.dtype == DType.INT8 and t.quant is not None and not t.quant.per_channel:
        return t
    scale = (t.quant.scale[0],) if t.quant is not None else _ACT_SCALE
    zp = (t.quant.zero_point[0],) if t.quant is not None else (0,)
    return dataclasses.replace(
        t,
        dtype=DType.INT8,
        quant=Quantization(scale, zp, None),
        value=None if t.is_constant else t.value,
    )


def to_float(t: Tensor, dtype: DType) -> Tensor:
    if t.dtype.is_float:
        return t if t.dtype == dtype else dataclasses.replace(t, dtype=dtype)
    if t.quant is not None:
        return dataclasses.replace(t, dtype=dtype, quant=None, value=None)
    return t


def retype(
    graph: Graph, nodes: Sequence[Node], tensors: dict[str, Tensor], spec: VariantSpec
) -> None:
    """Re-type ``tensors`` (the variant's, updated in place) as ``spec`` asks."""
    roles = weight_roles(graph, nodes)
    quantised_model = any(
        t.is_constant and t.dtype == DType.INT8 and t.quant is not None for t in tensors.values()
    )
    if spec.dtype is None and spec.quant is not None and not quantised_model:
        raise VariantError(
            "--quant applies to int8 weights; the model's weights are not int8",
            "add --dtype int8",
        )
    target = spec.dtype or ("int8" if spec.quant is not None else None)
    new: dict[str, Tensor] = {}
    for name, t in tensors.items():
        if t.is_constant and not is_weight(t):
            continue
        role, o_axis = roles.get(name, ("", None))
        if target == "int8":
            nt = to_int8(t, role, o_axis, spec.quant)
        elif target in ("fp16", "fp32"):
            nt = to_float(t, DType.FLOAT16 if target == "fp16" else DType.FLOAT32)
        else:
            nt = t
        if nt is not t:
            new[name] = nt
    tensors.update(new)
    # Storage of constants: by the new dtype; decoded constants keep their source's.
    for name, t in list(tensors.items()):
        if name in new and t.is_constant and not t.derived_from:
            tensors[name] = dataclasses.replace(t, storage_bytes=storage_bytes(t, static(t)))
    for name, t in list(tensors.items()):
        if t.is_constant and t.derived_from and t.derived_from in tensors:
            src = tensors[t.derived_from]
            if src.storage_bytes != t.storage_bytes:
                tensors[name] = dataclasses.replace(t, storage_bytes=src.storage_bytes)
