"""Static trip counts of loops, where the graph states them.

Converters lower recurrent layers and counted loops to a counter compared with
a constant: TFLite ``WHILE`` whose condition is ``LESS(counter, limit)`` (several
joined by ``LOGICAL_AND``) and whose body adds a constant step to the counter,
started from a constant; ONNX ``Loop`` with a constant maximum trip count
``M``; ONNX ``Scan`` over a known sequence length. Anything else returns None
and the loop's body is counted once, with a note saying so.
"""

from __future__ import annotations

import math

import numpy as np

from infercast.errors import ModelFileError, printable
from infercast.ir.graph import Graph, Node, Tensor


def _scalar(t: Tensor | None) -> int | float | None:
    """A constant scalar, exactly: an int for integer tensors (INT64_MAX stays INT64_MAX),
    a float for the others."""
    if t is None or not t.is_constant or t.value is None:
        return None
    v = np.ravel(t.value)
    if v.size != 1:
        return None
    x = v[0].item()
    return x if isinstance(x, int | float) and not isinstance(x, bool) else None


def _finite(*xs: int | float | None) -> bool:
    return all(x is not None and math.isfinite(x) for x in xs)


def _loop_trips(graph: Graph, node: Node) -> int | None:
    """ONNX ``Loop``'s constant maximum trip count M, validated: a non-negative integer."""
    m = _scalar(graph.tensors.get(node.inputs[0])) if node.inputs and node.inputs[0] else None
    if m is None:
        return None
    if not _finite(m) or m != int(m) or m < 0:
        raise ModelFileError(
            f"{graph.path}: Loop '{printable(node.name)[:80]}': its trip count {m} is not a "
            "non-negative whole number of iterations",
            "the file is corrupt or crafted",
        )
    return int(m)


def _while_trip_count(graph: Graph, node: Node, cond: Graph, body: Graph) -> int | None:
    if not cond.outputs:
        return None
    producer = {o: n for n in cond.nodes for o in n.outputs}
    body_producer = {o: n for n in body.nodes for o in n.outputs}

    def trips_of(tensor: str, seen: frozenset[str] = frozenset()) -> int | None:
        n = producer.get(tensor)
        if n is None or tensor in seen or len(seen) > 64:  # a cycle, or a crafted chain
            return None
        if n.op == "logical_and":
            counts = [trips_of(i, seen | {tensor}) for i in n.inputs if i]
            known = [c for c in counts if c is not None]
            return min(known) if known else None
        if n.op not in ("less", "less_equal") or len(n.inputs) != 2:
            return None
        counter, limit_name = n.inputs
        limit = _scalar(cond.tensors.get(limit_name))
        if counter not in cond.inputs or limit is None:
            return None
        k = cond.inputs.index(counter)
        if k >= len(node.inputs) or k >= len(body.outputs):
            return None
        init = _scalar(graph.tensors.get(node.inputs[k]))
        step_node = body_producer.get(body.outputs[k])
        if init is None or step_node is None or step_node.op != "add":
            return None
        if body.inputs[k] not in step_node.inputs:
            return None
        other = [i for i in step_node.inputs if i != body.inputs[k]]
        step = _scalar(body.tensors.get(other[0])) if other else None
        if not step or step <= 0 or not _finite(init, limit, step):
            return None  # NaN / inf bounds: the iterations are not fixed in the graph
        span = limit - init + (1 if n.op == "less_equal" else 0)
        if isinstance(span, int) and isinstance(step, int):
            return max(0, -(-span // step))
        trips = span / step
        return max(0, math.ceil(trips)) if math.isfinite(trips) else None

    return trips_of(cond.outputs[0])


def trip_count(graph: Graph, node: Node, subgraphs: dict[str, Graph]) -> int | None:
    """Iterations of a loop node, or None where the graph does not fix them."""
    if node.op == "while":
        cond = subgraphs.get(str(node.attrs.get("cond_subgraph", "")))
        body = subgraphs.get(str(node.attrs.get("body_subgraph", "")))
        if cond is None or body is None:
            return None
        return _while_trip_count(graph, node, cond, body)
    if node.op == "loop":
        return _loop_trips(graph, node)
    if node.op == "scan":
        n_scan = int(node.attrs.get("num_scan_inputs", 0))
        if not 0 < n_scan <= len(node.inputs):
            return None
        first_scan = node.inputs[len(node.inputs) - n_scan]
        t = graph.tensors.get(first_scan)
        axes = node.attrs.get("scan_input_axes", ())
        axis = int(axes[0]) if isinstance(axes, tuple | list) and axes else 0
        if t is None or t.shape is None or not -len(t.shape) <= axis < len(t.shape):
            return None
        return t.shape[axis]
    return None
