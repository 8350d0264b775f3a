"""Property tests of lifetimes and arena plans on random graphs (hypothesis).

Every check is made from first principles in the test, not by the code under
test: which tensors are alive at a step is recomputed from the graph's
producers and consumers; overlap is checked pairwise on the returned offsets.
"""

from __future__ import annotations

from itertools import combinations

from hypothesis import given, settings
from hypothesis import strategies as st

from infercast.analysis.lifetimes import compute_lifetimes, live_bytes_per_step
from infercast.analysis.memory import plan_graph
from infercast.analysis.planner import STRATEGIES, align_up, plan_offsets
from infercast.ir.dtypes import DType
from infercast.ir.graph import Graph, Node, Tensor

OPS = ("conv", "add", "relu", "reshape", "concat", "depthwise_conv", "mul")


@st.composite
def random_graphs(draw: st.DrawFn) -> Graph:
    """A random DAG in execution order: each node reads 1-3 earlier values."""
    n_inputs = draw(st.integers(1, 3))
    n_nodes = draw(st.integers(1, 40))
    tensors: dict[str, Tensor] = {}
    values: list[str] = []
    for i in range(n_inputs):
        name = f"in{i}"
        tensors[name] = Tensor(name, DType.INT8, (1, draw(st.integers(1, 300))))
        values.append(name)
    # a constant weight, read by some nodes: never in the arena
    tensors["w"] = Tensor("w", DType.INT8, (8,), is_constant=True, storage_bytes=8)
    nodes: list[Node] = []
    for i in range(n_nodes):
        op = draw(st.sampled_from(OPS))
        k = draw(st.integers(1, min(3, len(values))))
        ins = tuple(draw(st.lists(st.sampled_from(values), min_size=k, max_size=k)))
        if draw(st.booleans()):
            ins = (*ins, "w")
        out = f"t{i}"
        if op in ("reshape", "relu", "depthwise_conv", "add", "mul"):
            # same byte size as the first input (aliasing / in-place become possible)
            size = tensors[ins[0]].nbytes or 1
        else:
            size = draw(st.integers(1, 300))
        dtype = DType.INT8 if op != "mul" or draw(st.booleans()) else DType.INT16
        shape = (1, size) if dtype == DType.INT8 else (1, max(1, size // 2))
        tensors[out] = Tensor(out, dtype, shape)
        nodes.append(Node(i, out, op, op.upper(), ins, (out,)))
        values.append(out)
    outs = tuple(
        dict.fromkeys(draw(st.lists(st.sampled_from(values[n_inputs:]), min_size=1, max_size=3)))
    )
    return Graph("g", "tflite", "NHWC", tensors, tuple(nodes), tuple(values[:n_inputs]), outs)


def _alive_sets(g: Graph) -> list[set[str]]:
    """Tensors alive at each step, from first principles (no aliasing)."""
    n = len(g.nodes)
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for name in g.inputs:
        first[name] = last[name] = 0
    for node in g.nodes:
        for o in node.outputs:
            first.setdefault(o, node.index)
            last[o] = max(last.get(o, node.index), node.index)
        for i in node.inputs:
            if i in first:
                last[i] = max(last[i], node.index)
    for o in g.outputs:
        last[o] = n - 1
    return [{t for t in first if first[t] <= s <= last[t]} for s in range(n)]


def _check_no_overlap(m_alloc: list[tuple[int, int, int, int]]) -> None:
    """(offset, aligned size, first, last): buffers alive together never share bytes."""
    for (o1, s1, f1, l1), (o2, s2, f2, l2) in combinations(m_alloc, 2):
        if f1 <= l2 and f2 <= l1:
            assert o1 + s1 <= o2 or o2 + s2 <= o1, ((o1, s1, f1, l1), (o2, s2, f2, l2))


@settings(max_examples=60, deadline=None)
@given(random_graphs(), st.sampled_from([1, 4, 16, 64]), st.booleans())
def test_plan_has_no_overlap_and_respects_the_bound(
    g: Graph, alignment: int, in_place: bool
) -> None:
    m = plan_graph(g, alignment=alignment, in_place=in_place)
    offsets = m.offsets()
    # Tensor level: two tensors alive at one step lie in disjoint bytes, unless they
    # share a buffer on purpose (an alias, or an output written over its input).
    tensors = m.lifetimes.tensors
    for t1, t2 in combinations(tensors, 2):
        if t1.first <= t2.last and t2.first <= t1.last and t1.buffer != t2.buffer:
            o1, o2 = offsets[t1.key], offsets[t2.key]
            s1, s2 = align_up(t1.nbytes, alignment), align_up(t2.nbytes, alignment)
            assert o1 + s1 <= o2 or o2 + s2 <= o1, (t1, t2)
    for t in tensors:
        assert offsets[t.key] % alignment == 0
        assert offsets[t.key] + align_up(t.nbytes, alignment) <= m.arena_bytes
    # tensors sharing a buffer: an alias has the input's bytes; in place, the output
    # is no larger than the input it overwrites, and the input dies there
    by_key = {t.key: t for t in tensors}
    for t in tensors:
        if t.shares:
            assert t.buffer != t.key and by_key[t.buffer].buffer == t.buffer
    assert m.arena_bytes >= m.aligned_lower_bound_bytes >= m.lower_bound_bytes
    if not in_place:
        assert all(t.shares != "in_place" for t in tensors)
    # nothing is written in place over a graph input or output
    io = {*g.inputs, *g.outputs}
    for t in tensors:
        if t.shares == "in_place":
            members = {u.key for u in tensors if u.buffer == t.buffer}
            assert not members & io, (t, members)


@settings(max_examples=60, deadline=None)
@given(random_graphs())
def test_lower_bound_is_the_largest_live_set(g: Graph) -> None:
    # Without alias ops, the lower bound is the largest total of tensors alive at
    # one step, where "alive" is recomputed here from producers and consumers.
    nodes = tuple(
        Node(
            n.index, n.name, "conv" if n.op == "reshape" else n.op, n.native_op, n.inputs, n.outputs
        )
        for n in g.nodes
    )
    g = Graph(g.name, g.format, g.layout, g.tensors, nodes, g.inputs, g.outputs)
    m = plan_graph(g, alignment=1)
    sizes = {k: t.nbytes or 0 for k, t in g.tensors.items()}
    expected = max(sum(sizes[t] for t in alive) for alive in _alive_sets(g))
    assert m.lower_bound_bytes == expected
    assert m.timeline == tuple(sum(sizes[t] for t in alive) for alive in _alive_sets(g))


@settings(max_examples=60, deadline=None)
@given(random_graphs())
def test_aliasing_and_in_place_never_raise_the_bound(g: Graph) -> None:
    nodes = tuple(
        Node(
            n.index, n.name, "conv" if n.op == "reshape" else n.op, n.native_op, n.inputs, n.outputs
        )
        for n in g.nodes
    )
    plain = Graph(g.name, g.format, g.layout, g.tensors, nodes, g.inputs, g.outputs)

    def bound(graph: Graph, in_place: bool) -> list[int]:
        lt = compute_lifetimes(graph, in_place=in_place)
        return live_bytes_per_step(len(lt.steps), lt.buffers)

    copy, alias, in_place = bound(plain, False), bound(g, False), bound(g, True)
    # step by step, not only at the peak
    assert all(a <= b <= c for a, b, c in zip(in_place, alias, copy, strict=True))


intervals = st.lists(
    st.tuples(st.integers(1, 5000), st.integers(0, 30), st.integers(0, 10)),
    min_size=1,
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(intervals, st.sampled_from(STRATEGIES), st.sampled_from([1, 16]))
def test_every_strategy_places_without_overlap(
    bufs: list[tuple[int, int, int]], strategy: str, alignment: int
) -> None:
    sizes = [b[0] for b in bufs]
    firsts = [b[1] for b in bufs]
    lasts = [b[1] + b[2] for b in bufs]
    r = plan_offsets(
        sizes, firsts, lasts, alignment=alignment, strategies=(strategy,), search=False
    )
    aligned = [align_up(s, alignment) for s in sizes]
    _check_no_overlap(list(zip(r.offsets, aligned, firsts, lasts, strict=True)))
    bound = max(
        sum(a for a, f, la in zip(aligned, firsts, lasts, strict=True) if f <= s <= la)
        for s in range(max(lasts) + 1)
    )
    assert r.lower_bound_bytes == bound
    assert r.arena_bytes >= bound
    assert r.arena_bytes == max(o + a for o, a in zip(r.offsets, aligned, strict=True))


def test_equal_sizes_reach_the_bound() -> None:
    # Buffers of one size: execution order + first fit is interval partitioning,
    # which needs exactly as many slots as the most buffers alive at once.
    firsts = [0, 0, 1, 2, 3, 3, 4, 6, 6, 7]
    lasts = [2, 5, 1, 4, 3, 8, 6, 7, 9, 9]
    r = plan_offsets([64] * 10, firsts, lasts)
    most = max(sum(f <= s <= la for f, la in zip(firsts, lasts, strict=True)) for s in range(10))
    assert r.arena_bytes == 64 * most
