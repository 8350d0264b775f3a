"""Geometry of shape arguments: TF ``SAME`` padding, carrying a reshape's dimension
groups or a slice's bounds over to new input sizes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from infercast.ir.graph import Node, Tensor
from infercast.whatif.ops import ints, short
from infercast.whatif.spec import VariantError


def pads_nothing(node: Node) -> bool:
    """The window op pads nothing itself (TFLite VALID, ONNX zero pads / VALID)."""
    pad = node.attrs.get("padding")
    if pad is not None:
        return str(pad) == "VALID"
    auto = str(node.attrs.get("auto_pad", "NOTSET"))
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        return False
    return all(p == 0 for p in ints(node.attrs.get("pads")))


def remap_extent(node: Node, axis: int, old: int, new: int, b: int, e: int) -> tuple[int, int]:
    """A slice [b, e) of an axis of ``old`` carried to ``new``: the whole axis stays the
    whole axis; a part scales when it maps onto whole elements."""
    b_abs = b + old if b < 0 else b
    e_abs = e + old if e < 0 else e
    if b_abs <= 0 and e_abs >= old:
        return b, (e if e > old else new if e >= 0 else e)
    nb, ne = b_abs * new / old, min(e_abs, old) * new / old
    if nb != int(nb) or ne != int(ne):
        raise VariantError(
            f"layer '{short(node.name)}': the slice [{b}:{e}] of axis {axis} ({old}) does not "
            f"scale to {new}"
        )
    return int(nb), int(ne)


def remap_reshape(
    old_in: Sequence[int], old_out: Sequence[int], new_in: Sequence[int]
) -> tuple[int, ...] | None:
    """The new output shape of a reshape: the old one grouped by matching products of
    input and output dimensions, each group carried to the new input (None: ambiguous)."""
    n, m = len(old_in), len(old_out)
    if len(new_in) != n:
        return None
    i = j = 0
    out = list(old_out)
    while i < n or j < m:
        ii: list[int] = []
        jj: list[int] = []
        pi = pj = 1
        if i < n:
            ii.append(i)
            pi *= old_in[i]
            i += 1
        if j < m:
            jj.append(j)
            pj *= old_out[j]
            j += 1
        while pi != pj:
            if pi < pj and i < n:
                ii.append(i)
                pi *= old_in[i]
                i += 1
            elif pj < pi and j < m:
                jj.append(j)
                pj *= old_out[j]
                j += 1
            else:
                return None
        new_prod = math.prod(new_in[k] for k in ii)
        if new_prod == pi:
            continue
        big = [k for k in jj if old_out[k] != 1]
        if not big:
            return None
        changed = [k for k in ii if new_in[k] != old_in[k]]
        stable = [k for k in ii if new_in[k] == old_in[k] and old_in[k] != 1]
        if stable and min(changed) < max(stable) and max(changed) > min(stable):
            return None  # changed and unchanged dimensions interleave: ambiguous
        # A change at the start of the group (the spatial dims of (H, W, A x K) ->
        # (H x W x A, K), a detection head) goes to the first output dimension; one at
        # its end (a channel split C -> (g, C / g)) to the last.
        lead = bool(stable) and max(changed) < min(stable)
        target = big[0] if lead else big[-1]
        rest = math.prod(old_out[k] for k in big if k != target)
        if rest == 0 or new_prod % rest:
            return None
        out[target] = new_prod // rest
    return tuple(out)


def same_value(a: np.ndarray[Any, Any] | None, b: np.ndarray[Any, Any] | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return bool(np.asarray(a).shape == np.asarray(b).shape and np.array_equal(a, b))


def storage_bytes(t: Tensor, shape: Sequence[int]) -> int:
    n = math.prod(shape)
    if t.sparse and t.elements:
        return int(t.storage_bytes * n / t.elements)
    return t.dtype.nbytes(n)
