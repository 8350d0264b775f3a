"""The pass: walk the nodes in order, fill unknown output shapes from :data:`RULES`,
propagate small known values, recurse into control-flow bodies.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping
from typing import Any

import numpy as np

from infercast.frontends.onnx.shapes._common import (
    BODY_INPUTS,
    MAX_VALUE_ELEMENTS,
    RULES,
    BodyInputFn,
    Unknown,
)
from infercast.frontends.onnx.shapes.values import VALUE_RULES, ValueFn, Values
from infercast.ir.graph import Graph, Node, Shape, Tensor
from infercast.ops.registry import OpContext

ONNX_INFERENCE_WRONG: dict[str, str] = {
    # onnx 1.23.2 defs/math/defs.cc reads STFT's ``onesided`` with a default of 0
    # although the schema default is 1 (onnx.defs.get_schema("STFT")); the backend
    # test test_stft expects 9 = 16 // 2 + 1 bins, ONNX's inference gives 16.
    "stft": "ONNX's STFT shape inference defaults onesided to 0; the spec says 1",
    # onnx 1.x Split-18 with num_outputs gives every output but the last ceil(d / n),
    # even when that leaves the last one negative (5 into 4: 2, 2, 2, -1), a split
    # ONNX Runtime rejects; the rule leaves such a split unknown.
    "split": "ONNX's Split inference gives sizes to splits ONNX Runtime rejects",
}
"""Ops whose ONNX-inferred output shapes are replaced by these rules (with why)."""


def _has_unknown(shape: Shape | None) -> bool:
    return shape is None or any(d is None for d in shape)


def _layout_for(graph: Graph, shape: Shape | None, old: str | None) -> str | None:
    if old is not None:
        return old
    return graph.layout if shape is not None and len(shape) == 4 else None


def _run_rule(
    fn: Callable[[OpContext], Any],
    ctx: OpContext,
    strict: bool,
    broken: dict[str, str] | None = None,
    key: str = "",
) -> Any:
    try:
        return fn(ctx)
    except Unknown:
        return None
    except (ValueError, IndexError, KeyError, TypeError, ZeroDivisionError, OverflowError) as exc:
        if strict:
            raise
        if broken is not None and isinstance(exc, ValueError):
            # The shapes reaching this node are inconsistent (the op would fail).
            broken.setdefault(key, f"{ctx.node.native_op} '{ctx.node.name}': {exc}")
        return None


def _combine(old: Shape | None, new: Shape | None, replace: bool) -> Shape | None:
    """Merge a rule's shape into the frontend's; known dimensions win unless ``replace``."""
    if new is None:
        return None if replace else old
    if old is None or len(old) != len(new):
        return new if (replace or old is None) else old
    if replace:
        return tuple(n if n is not None else o for o, n in zip(old, new, strict=True))
    return tuple(o if o is not None else n for o, n in zip(old, new, strict=True))


def infer_missing_shapes(
    graph: Graph,
    *,
    recompute: bool = False,
    strict: bool = False,
    declared: Collection[str] = (),
) -> Graph:
    """Fill unknown output shapes from the rules in :data:`RULES` (ONNX graphs).

    Walks the nodes in order, propagating small known values, and returns a new
    :class:`Graph` whose tensors (and subgraphs) carry the completed shapes.
    Dimensions the frontend knows are kept, except for ops in
    :data:`ONNX_INFERENCE_WRONG`, whose rules replace them (and then everything
    downstream is recomputed from the rules).

    ``recompute=True`` ignores every shape the frontend inferred and derives all
    node outputs from the rules alone (graph inputs and constants are kept):
    a check of the rules themselves. ``strict=True`` lets a rule's error escape
    instead of leaving the shape unknown.

    ``declared`` names node outputs whose shape the frontend took from the file's
    declaration alone (ONNX's inference had nothing): where a rule derives a fully
    known shape from the inputs that contradicts the declaration, the rule wins,
    everything downstream is recomputed, and a note names the values.
    """
    if graph.format != "onnx":
        return graph
    conflicts: list[str] = []
    state = _Pass(recompute, strict, frozenset(declared), conflicts)
    out = _infer_graph(graph, graph, {}, {}, state)[0]
    if state.notes:
        out = dataclasses.replace(out, notes=(*out.notes, *state.notes))
    if conflicts:
        shown = "; ".join(conflicts[:4])
        if len(conflicts) > 4:
            shown += f"; and {len(conflicts) - 4} more"
        note = (
            f"{len(conflicts)} value(s) declared in the file with a shape that contradicts "
            f"the op's shape rule; the rule's shape is used: {shown}"
        )
        out = dataclasses.replace(out, notes=(*out.notes, note))
    return out


@dataclasses.dataclass(frozen=True)
class _Pass:
    recompute: bool
    strict: bool
    declared: frozenset[str]
    conflicts: list[str]
    broken: dict[str, str] = dataclasses.field(default_factory=dict)
    """Graph name -> why it cannot run with these input shapes (a rule found them
    inconsistent, e.g. a reduction axis beyond the rank), unresolved by an If."""
    notes: list[str] = dataclasses.field(default_factory=list)


def _compatible(declared: Shape, inferred: Shape) -> bool:
    return len(declared) == len(inferred) and all(
        d is None or i is None or d == i for d, i in zip(declared, inferred, strict=True)
    )


def _shape_str(shape: Shape | None) -> str:
    if shape is None:
        return "?"
    return "x".join("?" if d is None else str(d) for d in shape) or "[] (rank 0)"


def _seed_body(body: Graph, shapes: list[Shape | None] | None, recompute: bool) -> Graph:
    if not shapes:
        return body
    tensors = dict(body.tensors)
    changed = False
    for name, s in zip(body.inputs, shapes, strict=False):
        t = tensors.get(name)
        if t is None or s is None:
            continue
        if recompute or _has_unknown(t.shape):
            new = s if recompute else _combine(t.shape, s, False)
            if new != t.shape:
                tensors[name] = dataclasses.replace(t, shape=new)
                changed = True
    return dataclasses.replace(body, tensors=tensors) if changed else body


def _infer_graph(
    graph: Graph,
    root: Graph,
    outer: Mapping[str, Tensor],
    outer_values: Mapping[str, np.ndarray[Any, Any]],
    state: _Pass,
    key: str = "",
) -> tuple[Graph, dict[str, np.ndarray[Any, Any]]]:
    """One graph's pass; ``key`` is its name in the enclosing graph's subgraphs."""
    return _GraphPass(graph, root, outer, outer_values, state, key).run()


class _GraphPass:
    """The pass over one graph: its tensors and known values as they are completed."""

    def __init__(
        self,
        graph: Graph,
        root: Graph,
        outer: Mapping[str, Tensor],
        outer_values: Mapping[str, np.ndarray[Any, Any]],
        state: _Pass,
        key: str,
    ) -> None:
        self.graph, self.root, self.outer, self.state, self.key = graph, root, outer, state, key
        self.tensors: dict[str, Tensor] = dict(graph.tensors)
        tensors = self.tensors
        produced = {o for n in graph.nodes for o in n.outputs if o}
        # Values visible from enclosing graphs, updated by the enclosing pass.
        for name in tensors:
            if name in outer and name not in produced and name not in graph.inputs:
                tensors[name] = outer[name]
        self.values: dict[str, np.ndarray[Any, Any]] = {
            k: v for k, v in outer_values.items() if k not in produced and k not in graph.inputs
        }
        if state.recompute:
            for node in graph.nodes:
                if node.op == "constant":
                    continue
                for o in node.outputs:
                    if o and o in tensors:
                        tensors[o] = dataclasses.replace(tensors[o], shape=None)
        self.dirty: set[str] = set()
        self.subgraphs: dict[str, Graph] = dict(graph.subgraphs)
        self.meta_graph = (
            graph if graph.metadata else dataclasses.replace(graph, metadata=root.metadata)
        )
        self.nodes = list(graph.nodes)

    def run(self) -> tuple[Graph, dict[str, np.ndarray[Any, Any]]]:
        tensors = self.tensors
        for node in self.graph.nodes:
            ins = [tensors.get(n) if n else None for n in node.inputs]
            sub_values = self.bodies(node, ins)
            outs = [tensors[n] for n in node.outputs if n and n in tensors]
            view = self.meta_graph
            if node.subgraphs:
                view = dataclasses.replace(
                    self.meta_graph, tensors=tensors, subgraphs=self.subgraphs
                )
            ctx = OpContext(view, node, ins, outs, self.values)
            if self.needs_shapes(node):
                self.shapes(node, ctx)
                outs = [tensors[n] for n in node.outputs if n and n in tensors]
                ctx = OpContext(view, node, ins, outs, self.values)
            if node.op == "if":
                _if_values(ctx, self.subgraphs, sub_values, self.values)
                continue
            self.propagate_values(node, ctx, ins, outs)
        out = dataclasses.replace(
            self.graph, tensors=tensors, subgraphs=self.subgraphs, nodes=tuple(self.nodes)
        )
        return out, self.values

    def bodies(
        self, node: Node, ins: list[Tensor | None]
    ) -> dict[str, dict[str, np.ndarray[Any, Any]]]:
        """The pass over each body ``node`` calls (seeded with its inputs' shapes); a
        body that cannot run makes this graph unable to run too."""
        state, subgraphs = self.state, self.subgraphs
        sub_values: dict[str, dict[str, np.ndarray[Any, Any]]] = {}
        for sub in node.subgraphs:
            if sub not in subgraphs:
                continue
            body = subgraphs[sub]
            seed = BODY_INPUTS.get(node.op)
            if seed is not None:
                pre = OpContext(self.meta_graph, node, ins, [], self.values)
                seeds = _run_rule(_bind_key(seed, sub), pre, state.strict)
                body = _seed_body(body, seeds, state.recompute)
            subgraphs[sub], sub_values[sub] = _infer_graph(
                body, self.root, {**self.outer, **self.tensors}, self.values, state, sub
            )
        bad = [s for s in node.subgraphs if s in state.broken]
        if bad and not (node.op == "if" and len(bad) < len(node.subgraphs)):
            # A loop body (or every branch) cannot run: neither can this graph.
            state.broken.setdefault(self.key, state.broken[bad[0]])
        return sub_values

    def needs_shapes(self, node: Node) -> bool:
        if node.op in ONNX_INFERENCE_WRONG or any(n in self.dirty for n in node.inputs if n):
            return True
        tensors, declared = self.tensors, self.state.declared
        return any(
            _has_unknown(tensors[o].shape) or o in declared
            for o in node.outputs
            if o and o in tensors
        )

    def shapes(self, node: Node, ctx: OpContext) -> None:
        """Apply the op's rule (or a static If branch) to the node's output shapes."""
        state = self.state
        replace = node.op in ONNX_INFERENCE_WRONG or any(n in self.dirty for n in node.inputs if n)
        shapes: list[Shape | None] | None = None
        rule_fn = RULES.get(node.op)
        if rule_fn is not None:
            shapes = _run_rule(rule_fn, ctx, state.strict, state.broken, self.key)
        taken = _static_branch(node, state) if node.op == "if" else None
        if taken is not None:
            shapes = _body_outputs(self.subgraphs.get(taken))
            replace = True
            self.nodes[node.index] = dataclasses.replace(
                node, attrs={**node.attrs, "static_branch": taken}
            )
        for i, o in enumerate(node.outputs):
            if o and o in self.tensors:
                new = shapes[i] if shapes is not None and i < len(shapes) else None
                self.output(o, new, replace)

    def output(self, o: str, new: Shape | None, replace: bool) -> None:
        """Combine a rule's shape for output ``o`` with the one known so far."""
        t = self.tensors[o]
        overrides = (
            o in self.state.declared
            and t.shape is not None
            and new is not None
            and not _has_unknown(new)
            and not _compatible(t.shape, new)
        )
        if overrides:
            # The inputs and the op's rule say otherwise: the declaration loses.
            self.state.conflicts.append(
                f"{o} declared {_shape_str(t.shape)}, rule gives {_shape_str(new)}"
            )
        final = new if overrides else _combine(t.shape, new, replace)
        if final != t.shape:
            self.tensors[o] = dataclasses.replace(
                t, shape=final, layout=_layout_for(self.graph, final, t.layout)
            )
            if overrides or (replace and not _has_unknown(t.shape)):
                self.dirty.add(o)

    def propagate_values(
        self, node: Node, ctx: OpContext, ins: list[Tensor | None], outs: list[Tensor]
    ) -> None:
        vrule = VALUE_RULES.get(node.op)
        # Values are for shape arguments: never materialise a large tensor (weights
        # generated by ConstantOfShape in ONNX's light models are tens of MB). The size is
        # known before anything is computed (the shape rule ran first); an output of
        # unknown size is not computed (a broadcasting Where of three constant
        # 1,000-vectors is 1e9 elements).
        small = all(t.elements is not None and t.elements <= MAX_VALUE_ELEMENTS for t in outs)
        if vrule is None or node.subgraphs or not small:
            return
        in_vals = [ctx.value(i) if ctx.has_input(i) else None for i in range(len(ins))]
        with np.errstate(all="ignore"):  # 1/0 in a stranger's constants: no warning line
            result = _run_rule(_bind_values(vrule, in_vals), ctx, False)
        if result is not None:
            for o, v in zip(node.outputs, result, strict=False):
                if o and v is not None and np.size(v) <= MAX_VALUE_ELEMENTS:
                    self.values[o] = np.asarray(v)


def _static_branch(node: Node, state: _Pass) -> str | None:
    """The branch an If must take when the other cannot run with these input shapes
    (a shape rule found its shapes inconsistent: the model would fail there)."""
    bad = [s for s in node.subgraphs if s in state.broken]
    good = [s for s in node.subgraphs if s not in state.broken]
    if len(bad) != 1 or len(good) != 1:
        return None
    note = (
        f"If '{node.name}': branch {bad[0].rsplit('/', 1)[-1]} cannot run with these input "
        f"shapes ({state.broken[bad[0]]}); the other branch's shapes and cost are used"
    )
    if note not in state.notes:
        state.notes.append(note)
    return good[0]


def _body_outputs(body: Graph | None) -> list[Shape | None] | None:
    if body is None:
        return None
    return [body.tensors[o].shape if o in body.tensors else None for o in body.outputs]


def _bind_key(fn: BodyInputFn, key: str) -> Callable[[OpContext], list[Shape | None]]:
    return lambda c: fn(c, key)


def _bind_values(fn: ValueFn, vals: Values) -> Callable[[OpContext], Values]:
    return lambda c: fn(c, vals)


def _if_values(
    ctx: OpContext,
    subgraphs: Mapping[str, Graph],
    sub_values: Mapping[str, Mapping[str, np.ndarray[Any, Any]]],
    values: dict[str, np.ndarray[Any, Any]],
) -> None:
    """An If whose condition is known passes the taken branch's known values on."""
    cond = ctx.value(0)
    if cond is None or np.asarray(cond).size != 1:
        return
    key = "then_branch" if bool(np.asarray(cond).reshape(-1)[0]) else "else_branch"
    name = next((s for s in ctx.node.subgraphs if s.rsplit("/", 1)[-1] == key), None)
    if name is None or name not in subgraphs:
        return
    branch = subgraphs[name]
    bvals = sub_values.get(name, {})
    for out, bout in zip(ctx.node.outputs, branch.outputs, strict=False):
        t = branch.tensors.get(bout)
        v = bvals.get(bout)
        if v is None and t is not None and t.is_constant:
            v = t.value
        if out and v is not None:
            values[out] = v
