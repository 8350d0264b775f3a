"""Which layers a width change scales, and to how many channels.

* The layers that make the model's outputs keep their channels (its classes), as do
  ``--keep`` layers and the groups they are tied to.
* A 1x1 conv that feeds a depthwise conv (an inverted-residual expansion) keeps its
  ratio to its own input (MobileNetV2/V3, EfficientNet: ``expansion x in_channels``).
* Tensors whose channel counts must stay equal are tied (:meth:`ChannelPlan.ties`): an
  op that keeps its input's channels, the activation operands of an elementwise op (a
  residual Add, a squeeze-excite Mul). The first conv / FC of a group in execution
  order decides its count; the others follow it.
* Every other conv / FC: ``make_divisible(c x width, divisor)``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from infercast.ir.graph import Graph, Node, Tensor
from infercast.ir.views import kernel_dims
from infercast.whatif.ops import (
    BINARY,
    DENSE_OPS,
    KERNEL_OPS,
    NO_TIE,
    TRANSPARENT,
    channel_axis,
    make_divisible,
    name_matches,
    op_matches,
    scaled_channels,
    short,
)
from infercast.whatif.spec import VariantError, VariantSpec

_CACHE: dict[int, tuple[Graph, Any, dict[str, Any]]] = {}
"""id(graph) -> (graph, key, decisions): a sweep plans each graph once."""


class ChannelPlan:
    """The decisions a variant's walk needs, made on the original graph."""

    def __init__(self, graph: Graph, spec: VariantSpec) -> None:
        self.graph = graph
        self.spec = spec
        self.kernel_plan: dict[int, tuple[int, ...]] = {}
        """node index -> its new kernel size (``--replace OP:5x5=3x3``)"""
        self.keep: set[int] = set()
        self.expansions: set[int] = set()
        self.channel_override: dict[int, int] = {}
        self.parent: dict[str, str] = {}
        self.group_value: dict[str, int] = {}
        self.group_keep: set[str] = set()
        self.group_override: dict[str, int] = {}
        self.members: dict[str, list[str]] = {}
        key = (spec.keep, spec.channels, tuple(r for r in spec.replace if r.src_kernel))
        cached = _CACHE.get(id(graph))
        if cached is not None and cached[0] is graph and cached[1] == key:
            self._restore(cached[2])  # the decisions depend on the graph and key only
        else:
            self.plan()
            _CACHE[id(graph)] = (graph, key, self._state())
            while len(_CACHE) > 4:
                del _CACHE[next(iter(_CACHE))]

    def _state(self) -> dict[str, Any]:
        return {k: copy.copy(v) for k, v in vars(self).items() if k not in ("graph", "spec")}

    def _restore(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            setattr(self, k, copy.copy(v))

    def scalable(self, node: Node) -> bool:
        if node.folded:
            return False
        if node.op == "conv" or node.op == "conv_transpose":
            return self.weight(node) is not None
        if node.op in DENSE_OPS:
            return self.dense_weight(node) is not None
        return False

    def weight(self, node: Node) -> Tensor | None:
        wi = int(node.attrs.get("weight_input", 1))
        name = node.inputs[wi] if wi < len(node.inputs) else ""
        t = self.graph.tensors.get(name) if name else None
        return t if t is not None and t.is_constant and t.is_static else None

    def dense_weight(self, node: Node) -> tuple[int, Tensor] | None:
        g = self.graph
        pos = 1
        if len(node.inputs) <= pos or not node.inputs[pos]:
            return None
        t = g.tensors[node.inputs[pos]]
        if not t.is_constant or not t.is_static or t.rank != 2:
            return None
        x = g.tensors.get(node.inputs[0])
        if x is None or x.is_constant:
            return None
        return pos, t

    def plan(self) -> None:
        scalable = [n for n in self.graph.nodes if self.scalable(n)]
        self.keep_outputs()
        self.named(scalable)
        self.find_expansions(scalable)
        self.kernels()
        self.ties()

    def keep_outputs(self) -> None:
        """The layers that make the model's outputs keep their channels (its classes)."""
        g = self.graph
        producers = g.producers
        seen: set[int] = set()
        stack = [producers[o] for o in g.outputs if o in producers]
        while stack:
            i = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            node = g.nodes[i]
            if self.scalable(node):
                self.keep.add(i)
                continue
            for name in node.inputs:
                t = g.tensors.get(name) if name else None
                if t is not None and not t.is_constant and name in producers:
                    stack.append(producers[name])

    def named(self, scalable: list[Node]) -> None:
        """``--keep`` layers, and explicit channel counts of named layers."""
        g = self.graph
        for pattern in self.spec.keep:
            hits = [n.index for n in scalable if name_matches(n, pattern, g)]
            if not hits:
                shown = ", ".join(short(n.name) for n in scalable[-6:])
                raise VariantError(
                    f"--keep '{pattern}' names no conv / FC layer of the model",
                    f"give a layer name or a part of one, e.g. one of: {shown}",
                )
            self.keep.update(hits)
        for pattern, count in self.spec.channels:
            hits = [n.index for n in scalable if name_matches(n, pattern, g)]
            if not hits:
                raise VariantError(f"channels: '{pattern}' names no conv / FC layer")
            for i in hits:
                self.channel_override[i] = count

    def find_expansions(self, scalable: list[Node]) -> None:
        """Inverted-residual expansions: 1x1 convs whose output reaches a depthwise conv
        (through activations, padding, unfused BatchNorm)."""
        g = self.graph
        consumers = g.consumers
        for node in scalable:
            if node.op != "conv":
                continue
            w = self.weight(node)
            assert w is not None
            if kernel_dims(w, str(node.attrs.get("weight_layout", "OIHW"))).spatial_size != 1:
                continue
            todo = [o for o in node.outputs if o]
            visited: set[str] = set()
            while todo and node.index not in self.expansions:
                name = todo.pop()
                if name in visited:
                    continue
                visited.add(name)
                for ci in consumers.get(name, ()):
                    c = g.nodes[ci]
                    di = int(c.attrs.get("data_input", 0))
                    if c.op == "depthwise_conv" and di < len(c.inputs) and c.inputs[di] == name:
                        self.expansions.add(node.index)
                        break
                    if c.op in TRANSPARENT and c.inputs and c.inputs[0] == name:
                        todo.extend(o for o in c.outputs if o)

    def kernels(self) -> None:
        """Kernel replacements: which layers get which new kernel size."""
        g = self.graph
        for r in self.spec.replace:
            if r.src_kernel is None or r.dst_kernel is None:
                continue
            n_hits = 0
            for node in g.nodes:
                if node.op not in KERNEL_OPS or not op_matches(node, r.src, g):
                    continue
                w = self.weight(node)
                if w is None:
                    continue
                kd = kernel_dims(w, str(node.attrs.get("weight_layout", "OIHW")))
                if tuple(kd.spatial) == r.src_kernel:
                    self.kernel_plan[node.index] = r.dst_kernel
                    n_hits += 1
            if n_hits == 0:
                raise VariantError(
                    f"--replace {r}: no {r.src} layer with a {r.src_kernel[0]}x{r.src_kernel[1]} "
                    "kernel in the model"
                )

    # ----- channel ties -------------------------------------------------- #

    def find(self, x: str) -> str:
        root = x
        while self.parent.get(root, root) != root:
            root = self.parent[root]
        while self.parent.get(x, x) != root:
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra

    def ch(self, name: str) -> int | None:
        t = self.graph.tensors.get(name)
        if t is None or not t.is_static or not t.shape or len(t.shape) < 2:
            return None
        return int(t.shape[channel_axis(self.graph, len(t.shape))] or 0)

    def ties(self) -> None:
        """Tensors whose channel counts must stay equal: an op that keeps its input's
        channels (activation, depthwise, pool, pad, …) and the activation operands of an
        elementwise op (a residual Add, a squeeze-excite Mul). The first conv / FC of a
        group in execution order decides its count; the others follow it."""
        g = self.graph
        for node in g.nodes:
            if node.folded or node.op in NO_TIE or self.scalable(node):
                continue
            acts = [n for n in node.inputs if n and not g.tensors[n].is_constant]
            outs = [o for o in node.outputs if o]
            if not acts or not outs:
                continue
            if node.op in BINARY:
                members = [n for n in (*acts, outs[0]) if (self.ch(n) or 0) > 1]
                counts = {self.ch(n) for n in members}
                if len(counts) == 1:
                    for n in members[1:]:
                        self.union(members[0], n)
            elif len(acts) == 1:
                c_in, c_out = self.ch(acts[0]), self.ch(outs[0])
                if c_in is not None and c_in == c_out:
                    self.union(acts[0], outs[0])
        for name in g.inputs:
            c = self.ch(name)
            if c is not None:
                self.group_value[self.find(name)] = c
        for i in self.keep:
            self.group_keep.add(self.find(g.nodes[i].outputs[0]))
        for i, c in self.channel_override.items():
            self.group_override[self.find(g.nodes[i].outputs[0])] = c

        self.members = {}
        for name in self.parent:
            self.members.setdefault(self.find(name), []).append(name)

    # ----- channel counts -------------------------------------------------- #

    def channels_out(
        self,
        node: Node,
        c_old: int,
        cin_old: int,
        cin_new: int,
        known: Callable[[str], int | None] | None = None,
    ) -> int:
        """The new output channels of conv / FC ``node``. ``known(name)`` gives the new
        channel count of a tensor the walk has already made (None: not yet): a group
        tied to one (a Concat's output, a graph input) takes its count."""
        key = self.find(node.outputs[0]) if node.outputs and node.outputs[0] else ""
        if key in self.group_value:
            return self.group_value[key]
        if known is not None:
            for m in self.members.get(key, ()):
                c = known(m)
                if c is not None:
                    self.group_value[key] = c
                    return c
        v = self.own_channels(node, c_old, cin_old, cin_new)
        if key in self.group_override:
            v = self.group_override[key]
        elif key in self.group_keep:
            v = c_old
        if key:
            self.group_value[key] = v
        return v

    def group_channels(
        self, name: str, default: int, known: Callable[[str], int | None] | None = None
    ) -> int:
        """The channel count of ``name``'s group: decided already, made already by the
        walk, else ``default`` (which then decides it)."""
        key = self.find(name)
        if key in self.group_value:
            return self.group_value[key]
        if known is not None:
            for m in self.members.get(key, ()):
                c = known(m)
                if c is not None and m != name:
                    self.group_value[key] = c
                    return c
        if key in self.group_keep:
            return default
        self.group_value[key] = default
        return default

    def own_channels(self, node: Node, c_old: int, cin_old: int, cin_new: int) -> int:
        if node.index in self.channel_override:
            return self.channel_override[node.index]
        if node.index in self.keep:
            return c_old
        width = self.spec.width
        if width == 1.0 and cin_old == cin_new:
            return c_old
        if node.index in self.expansions and cin_old > 0:
            return make_divisible(cin_new * c_old / cin_old, self.spec.divisor)
        return scaled_channels(c_old, width, self.spec.divisor)
