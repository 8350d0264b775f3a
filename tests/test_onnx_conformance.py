"""Per-operator conformance against ONNX's own node tests (``onnx==1.22.0`` wheel).

ONNX ships one small model per operator behaviour under
``onnx/backend/test/data/node/`` with reference inputs and outputs
(``test_data_set_0/{input,output}_N.pb``). For every such model we load it with
``infercast.load``, analyse it with ``infercast.analyze``, and check that the shape
we give each graph output equals the shape of the reference output.

How the models are prepared before loading (real models keep shape arguments
constant, while these tests feed them as graph inputs):

1. Every integer or bool graph input becomes an initializer holding its value from
   ``input_N.pb`` (shapes, axes, indices, K, repeats, pads, trip counts ...). IR
   version < 4 models keep it listed as an input too (IR 3 requires that).
2. Float inputs stay inputs, except where the consuming op reads a float input as
   a shape argument (:data:`FLOAT_SHAPE_ARGS`: Resize scales, Upsample scales,
   Range bounds, OneHot depth); those become initializers as well.
3. The declared output shapes and ``value_info`` are removed, so the shapes we
   report are inferred, not read back from the test's own declaration.
4. A remaining input with a symbolic dimension is fixed to its data's shape via
   ``input_shapes`` (what ``--input-shape`` does on the command line).

An output whose shape depends on data values (downstream of an op in
:data:`DATA_DEPENDENT_OPS`, by the ONNX spec) may carry ``None`` for unknown
dimensions; a known dimension must still be right. Such outputs are counted apart.
Outputs that are not tensors (sequences, optionals) have no tensor shape to compare
and are counted apart too.

Costs of a few op families are checked against first principles computed here
from the tests' own tensor shapes (MACs of Conv, ConvTranspose, Gemm, MatMul,
recurrent cells, attention) and against numpy's own naive FLOP count for Einsum.
"""

from __future__ import annotations

import functools
import json
import math
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto

import infercast
from infercast.frontends.onnx import canonical_name
from infercast.frontends.onnx.shapes import infer_missing_shapes
from infercast.ir.graph import Graph, Node, Shape
from infercast.ops.registry import OpContext, OpCost, get_handler

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

from build_fixtures import ensure  # noqa: E402

# Float inputs that are shape arguments of their consuming op: (domain, op) -> positions.
FLOAT_SHAPE_ARGS: dict[tuple[str, str], tuple[int, ...]] = {
    ("", "Resize"): (1, 2),  # roi (harmless), scales
    ("", "Upsample"): (1,),  # scales
    ("", "Range"): (0, 1, 2),  # start, limit, delta
    ("", "OneHot"): (1,),  # depth (any numeric type)
}

# Ops whose output dimensions depend on input *values* that are data, by the ONNX
# spec: NonZero / Unique / Compress (how many elements are selected),
# NonMaxSuppression (how many boxes survive), StringSplit (the most substrings),
# StringNormalizer (stop-word removal), ImageDecoder (the encoded image's size),
# Loop (the condition the body computes decides the iterations, and carried values
# may change shape per iteration). TopK, Reshape, Expand, Range, ConstantOfShape ...
# read *argument* values, which real models keep constant (see step 1 above).
# SequenceMap: its body runs on sequence elements, whose shapes are not part of a
# sequence's static type (each element may differ).
DATA_DEPENDENT_OPS = frozenset(
    {"NonZero", "Unique", "Compress", "NonMaxSuppression", "StringSplit",
     "StringNormalizer", "ImageDecoder", "Loop", "SequenceMap"}
)  # fmt: skip

# Tests not asserted, with the reason (none at present: the two frontend bugs
# that excluded 37 tests, sequence-typed inputs and omitted optional outputs,
# are fixed). Add an entry only with a reason a reader can check.
EXCLUDED: dict[str, str] = {}

MIN_COVERED_SHARE = 0.95
_GOOD_STATUS = {"ok", "folded", "control_flow"}
_INT_TYPES = {
    TensorProto.INT8, TensorProto.INT16, TensorProto.INT32, TensorProto.INT64,
    TensorProto.UINT8, TensorProto.UINT16, TensorProto.UINT32, TensorProto.UINT64,
    TensorProto.BOOL, TensorProto.INT4, TensorProto.UINT4,
}  # fmt: skip


# ---------------------------------------------------------------------------
# Preparing and running one node test


def op_id(domain: str, op_type: str) -> str:
    return op_type if domain in ("", "ai.onnx") else f"{domain}.{op_type}"


def _walk_nodes(g: onnx.GraphProto) -> Iterator[onnx.NodeProto]:
    for n in g.node:
        yield n
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from _walk_nodes(a.g)
            for sub in a.graphs:
                yield from _walk_nodes(sub)


def _read_tensor(path: Path) -> TensorProto:
    t = TensorProto()
    t.ParseFromString(path.read_bytes())
    return t


@dataclass
class Prepared:
    model: onnx.ModelProto
    input_shapes: dict[str, Shape]
    # graph output name -> reference shape, or None for a non-tensor output
    reference: dict[str, tuple[int, ...] | None]
    data_dependent: set[str]


def prepare(test_dir: Path) -> Prepared:
    """The test's model with argument inputs turned into initializers (see module doc)."""
    m = onnx.load(str(test_dir / "model.onnx"))
    data = test_dir / "test_data_set_0"
    g = m.graph
    init_names = {t.name for t in g.initializer}
    real_inputs = [vi for vi in g.input if vi.name not in init_names]
    shape_args = {
        n.input[i]
        for n in g.node
        for i in FLOAT_SHAPE_ARGS.get((n.domain, n.op_type), ())
        if i < len(n.input) and n.input[i]
    }
    keep, input_shapes = [], {}
    for i, vi in enumerate(real_inputs):
        pb = data / f"input_{i}.pb"
        is_tensor = vi.type.HasField("tensor_type")
        if not is_tensor or not pb.exists():
            keep.append(vi)
            continue
        t = _read_tensor(pb)
        if vi.type.tensor_type.elem_type in _INT_TYPES or vi.name in shape_args:
            t.name = vi.name
            g.initializer.append(t)
            if m.ir_version < 4:
                keep.append(vi)
            continue
        keep.append(vi)
        tt = vi.type.tensor_type
        if not tt.HasField("shape") or any(not d.HasField("dim_value") for d in tt.shape.dim):
            input_shapes[vi.name] = tuple(int(d) for d in t.dims)
    del g.input[:]
    g.input.extend(keep)
    reference: dict[str, tuple[int, ...] | None] = {}
    for i, vo in enumerate(g.output):
        pb = data / f"output_{i}.pb"
        if vo.type.HasField("tensor_type") and pb.exists():
            reference[vo.name] = tuple(int(d) for d in _read_tensor(pb).dims)
            vo.type.tensor_type.ClearField("shape")
        else:
            reference[vo.name] = None
    del g.value_info[:]
    return Prepared(m, input_shapes, reference, _data_dependent_tensors(g))


def _data_dependent_tensors(g: onnx.GraphProto) -> set[str]:
    """Tensors downstream of a data-dependent op (or a node whose subgraph has one)."""
    dd: set[str] = set()
    for n in g.node:
        inner = any(x.op_type in DATA_DEPENDENT_OPS for x in _walk_nodes_of(n))
        if n.op_type in DATA_DEPENDENT_OPS or inner or any(i in dd for i in n.input):
            dd.update(o for o in n.output if o)
    return dd


def _walk_nodes_of(n: onnx.NodeProto) -> Iterator[onnx.NodeProto]:
    for a in n.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            yield from _walk_nodes(a.g)
        for sub in a.graphs:
            yield from _walk_nodes(sub)


@dataclass
class Case:
    name: str
    op_types: frozenset[str]
    error: str | None = None
    exact: int = 0
    dd_exact: int = 0
    dd_unknown: int = 0
    non_tensor: int = 0
    problems: list[str] = field(default_factory=list)
    graph: Graph | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and not self.problems


def _compare(name: str, got: Shape | None, ref: tuple[int, ...], dd: bool, case: Case) -> None:
    if got == ref:
        if dd:
            case.dd_exact += 1
        else:
            case.exact += 1
        return
    wrong = got is not None and (
        len(got) != len(ref) or any(a is not None and a != b for a, b in zip(got, ref, strict=True))
    )
    if dd and not wrong:
        case.dd_unknown += 1
        return
    kind = "WRONG" if wrong else "unknown"
    case.problems.append(f"output '{name}': {kind} shape {got}, reference {ref}")


def run_case(test_dir: Path, tmp: Path) -> Case:
    p = prepare(test_dir)
    ops = frozenset(op_id(n.domain, n.op_type) for n in _walk_nodes(p.model.graph))
    case = Case(test_dir.name, ops)
    path = tmp / f"{test_dir.name}.onnx"
    onnx.save(p.model, str(path))
    try:
        graph = infercast.load(path, p.input_shapes or None)
        result = infercast.analyze(graph)
    except Exception as exc:  # recorded, asserted per op type
        case.error = f"{type(exc).__name__}: {exc}"[:300]
        return case
    case.graph = graph
    for name, ref in p.reference.items():
        if ref is None:
            case.non_tensor += 1
            continue
        _compare(name, graph.tensors[name].shape, ref, name in p.data_dependent, case)
    dd_bodies = _data_dependent_bodies(graph, p.data_dependent)
    for layer in result.layers:
        if layer.status in _GOOD_STATUS:
            continue
        if layer.status == "unknown_shape":
            if layer.subgraph in dd_bodies:
                continue
            node = graph.nodes[layer.index] if layer.subgraph == graph.name else None
            if node is not None and _touches(node, p.data_dependent):
                continue
        case.problems.append(
            f"layer '{layer.name}' ({layer.native_op}) in {layer.subgraph}: {layer.status}"
            f" ({layer.note})"
        )
    return case


def _data_dependent_bodies(graph: Graph, dd: set[str]) -> set[str]:
    """Names of the subgraphs (recursively) that data-dependent nodes call: their
    layers may have shapes that depend on values (iteration, sequence elements)."""
    names: set[str] = set()
    for node in graph.nodes:
        if node.native_op in DATA_DEPENDENT_OPS or _touches(node, dd):
            for key in node.subgraphs:
                sub = graph.subgraphs.get(key)
                if sub is not None:
                    names.update(g.name for _, g in sub.all_graphs())
    for sub in graph.subgraphs.values():
        names |= _data_dependent_bodies(sub, dd) if sub.name not in names else set()
    return names


def _touches(node: Node, dd: set[str]) -> bool:
    return any(x in dd for x in (*node.inputs, *node.outputs) if x)


@dataclass
class Suite:
    cases: dict[str, Case]
    by_op: dict[str, list[Case]]


@functools.cache
def node_dir() -> Path:
    return ensure("onnx_node")


@functools.cache
def suite() -> Suite:
    root = node_dir()
    cases: dict[str, Case] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for d in sorted(root.iterdir()):
            if d.is_dir() and (d / "model.onnx").exists():
                cases[d.name] = run_case(d, Path(tmp))
    by_op: dict[str, list[Case]] = {}
    for c in cases.values():
        for op in c.op_types:
            by_op.setdefault(op, []).append(c)
    return Suite(cases, by_op)


@functools.cache
def suite_op_types() -> list[str]:
    """Distinct op types (``domain.Op`` outside the default domain) over all test models."""
    ops: set[str] = set()
    for d in node_dir().iterdir():
        if (d / "model.onnx").exists():
            m = onnx.load(str(d / "model.onnx"), load_external_data=False)
            ops.update(op_id(n.domain, n.op_type) for n in _walk_nodes(m.graph))
    return sorted(ops)


def _canonical(op: str) -> str:
    domain, _, op_type = op.rpartition(".") if "." in op else ("", "", op)
    return canonical_name(op_type, domain)


def _op_failures(op: str, *, count_excluded: bool) -> list[str]:
    """Why ``op`` is not covered (empty when it is). With ``count_excluded=False``
    excluded tests are left out, and an op with no other test is not covered."""
    reasons = []
    if get_handler(_canonical(op)) is None:
        reasons.append(f"no handler registered for '{_canonical(op)}'")
    cases = [c for c in suite().by_op.get(op, []) if count_excluded or c.name not in EXCLUDED]
    if not cases:
        reasons.append("every node test of this op type is excluded")
    for c in cases:
        if not c.ok:
            tag = " [excluded]" if c.name in EXCLUDED else ""
            reasons.append(f"{c.name}{tag}: {c.error or '; '.join(c.problems)}")
    return reasons


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "op_type" in metafunc.fixturenames:
        metafunc.parametrize("op_type", suite_op_types())
    if "cost_case" in metafunc.fixturenames:
        names = sorted(d.name for d in node_dir().iterdir() if _cost_family(d.name))
        metafunc.parametrize("cost_case", names)


# ---------------------------------------------------------------------------
# Shape conformance


def test_operator_conformance(op_type: str) -> None:
    """Every node test containing ``op_type`` gives the reference output shapes
    (or correctly-unknown data-dependent ones), no layer is unsupported or of
    unknown shape, and ``op_type`` has a handler. Excluded tests are not asserted."""
    assert get_handler(_canonical(op_type)) is not None, (
        f"{op_type}: no handler registered for canonical op '{_canonical(op_type)}'"
    )
    failing = [
        f"{c.name}: {c.error or '; '.join(c.problems)}"
        for c in suite().by_op[op_type]
        if not c.ok and c.name not in EXCLUDED
    ]
    assert not failing, f"{op_type}: {len(failing)} node test(s) fail:\n" + "\n".join(failing)


def test_operator_coverage_share(record_property: Any) -> None:
    """Covered = a handler exists and every node test of the op type matches. The
    asserted share (>= 95%) leaves the excluded tests out (an op type with only
    excluded tests is not covered); the strict share, counting them as failures,
    is printed beside it."""
    s = suite()
    ops = suite_op_types()
    uncovered = {op: r for op in ops if (r := _op_failures(op, count_excluded=False))}
    strict = [op for op in ops if _op_failures(op, count_excluded=True)]
    share = 1 - len(uncovered) / len(ops)
    totals: Counter[str] = Counter()
    for c in s.cases.values():
        totals.update(
            exact=c.exact, dd_exact=c.dd_exact, dd_unknown=c.dd_unknown, non_tensor=c.non_tensor
        )
        totals["tests_ok" if c.ok else "tests_failing"] += 1
    source = json.loads((node_dir() / "manifest.json").read_text())["wheel"]["requirement"]
    summary = (
        f"ONNX node tests ({source}): {len(s.cases)} tests over {len(ops)} op types. "
        f"Covered {len(ops) - len(uncovered)}/{len(ops)} = {share:.1%} "
        f"(strict, excluded tests counted as failures: {len(ops) - len(strict)}/{len(ops)} "
        f"= {1 - len(strict) / len(ops):.1%}). Tests passing {totals['tests_ok']}, failing "
        f"{totals['tests_failing']} (excluded: {len(EXCLUDED)}). Graph outputs: exact "
        f"{totals['exact']}; data-dependent exact {totals['dd_exact']}; data-dependent "
        f"reported unknown {totals['dd_unknown']}; non-tensor, not compared "
        f"{totals['non_tensor']}. Not covered: {', '.join(sorted(uncovered)) or 'none'}; "
        f"strictly not covered: {', '.join(strict) or 'none'}"
    )
    print("\n" + summary)
    record_property("onnx_conformance", summary)
    assert share >= MIN_COVERED_SHARE, (
        summary + "\n" + "\n".join(f"{op}: {r[0]}" for op, r in sorted(uncovered.items()))
    )


def test_shape_rules_agree_with_onnx_inference() -> None:
    """The shape rules alone (``recompute=True``: every node output derived from
    graph inputs and constants by our rules, ignoring ONNX's inference) never
    contradict a dimension ONNX's shape inference knows, over the whole suite."""
    conflicts: list[str] = []
    compared = 0
    for c in suite().cases.values():
        if c.graph is None:
            continue
        ours = infer_missing_shapes(c.graph, recompute=True)
        for (_, a), (_, b) in zip(c.graph.all_graphs(), ours.all_graphs(), strict=True):
            for node in a.nodes:
                for o in node.outputs:
                    sa, sb = (a.tensors[o].shape, b.tensors[o].shape) if o else (None, None)
                    if sa is None or sb is None or len(sa) != len(sb):
                        continue
                    for x, y in zip(sa, sb, strict=True):
                        if x is not None and y is not None:
                            compared += 1
                            if x != y:
                                conflicts.append(f"{c.name}: {node.native_op} '{o}' {sa} vs {sb}")
                                break
    assert compared > 10_000, compared
    assert not conflicts, "\n".join(conflicts[:40])


# ---------------------------------------------------------------------------
# Costs from first principles


_COST_PREFIXES: dict[str, tuple[str, ...]] = {
    "Conv": ("test_conv_", "test_basic_conv_"),
    "ConvTranspose": ("test_convtranspose",),
    "Gemm": ("test_gemm_",),
    "MatMul": ("test_matmul_",),
    "MatMulInteger": ("test_matmulinteger",),
    "QLinearMatMul": ("test_qlinearmatmul_",),
    "Einsum": ("test_einsum_",),
    "LSTM": ("test_lstm_",),
    "GRU": ("test_gru_",),
    "RNN": ("test_rnn_", "test_simple_rnn_"),
    "Attention": ("test_attention_3d", "test_attention_4d"),
}


def _cost_family(name: str) -> str | None:
    if name.endswith("_expanded") or "_expanded_" in name:
        return None
    for op, prefixes in _COST_PREFIXES.items():
        if name.startswith(prefixes):
            return op
    return None


def _shapes(test_dir: Path, kind: str) -> list[tuple[int, ...]]:
    files = sorted(
        (test_dir / "test_data_set_0").glob(f"{kind}_*.pb"),
        key=lambda p: int(p.stem.split("_")[1]),
    )
    return [tuple(int(d) for d in _read_tensor(f).dims) for f in files]


def _model_node(test_dir: Path) -> tuple[onnx.NodeProto, list[str]]:
    m = onnx.load(str(test_dir / "model.onnx"))
    graph_inputs = [vi.name for vi in m.graph.input]
    return m.graph.node[0], graph_inputs


def _attrs(node: onnx.NodeProto) -> dict[str, Any]:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _ref_shape(
    node: onnx.NodeProto, graph_inputs: list[str], ins: list[tuple[int, ...]], i: int
) -> tuple[int, ...] | None:
    """Shape of the node's input ``i`` from the reference input files."""
    if i >= len(node.input) or not node.input[i]:
        return None
    return ins[graph_inputs.index(node.input[i])]


def expected_macs(test_dir: Path) -> int:
    """MACs derived here from the ONNX operator definitions and the test's shapes."""
    op = _cost_family(test_dir.name)
    node, names = _model_node(test_dir)
    ins = _shapes(test_dir, "input")
    outs = _shapes(test_dir, "output")
    a = _attrs(node)

    def x(i: int) -> tuple[int, ...]:
        s = _ref_shape(node, names, ins, i)
        assert s is not None
        return s

    if op == "Conv":
        # each output element sums over (C_in / group) x kernel taps; W is (M, C/group, k...)
        w = x(1)
        return math.prod(outs[0]) * w[1] * math.prod(w[2:])
    if op == "ConvTranspose":
        # every input value is multiplied by (C_out / group) x kernel taps; W is (C, M/group, k...)
        w = x(1)
        return math.prod(x(0)) * w[1] * math.prod(w[2:])
    if op == "Gemm":
        k = x(0)[0] if a.get("transA", 0) else x(0)[1]
        return math.prod(outs[0]) * k
    if op in ("MatMul", "MatMulInteger", "QLinearMatMul"):
        return math.prod(outs[0]) * x(0)[-1]
    if op in ("LSTM", "GRU", "RNN"):
        gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
        seq, batch, inp = x(0) if not a.get("layout", 0) else (x(0)[1], x(0)[0], x(0)[2])
        hidden = int(a["hidden_size"])
        dirs = 2 if a.get("direction", b"forward") == b"bidirectional" else 1
        # per step, batch row and direction: gates x hidden x (input + hidden) products
        return seq * batch * dirs * gates * hidden * (inp + hidden)
    if op == "Attention":
        q, k, v = x(0), x(1), x(2)
        past = _ref_shape(node, names, ins, 4)
        if len(q) == 4:
            b, hq, sq, d = q
            skv, dv = k[2], v[3]
        else:
            hq, hkv = int(a["q_num_heads"]), int(a["kv_num_heads"])
            b, sq = q[0], q[1]
            skv, d, dv = k[1], k[2] // hkv, v[2] // hkv
        skv += past[2] if past else 0
        # Q.K^T: d products per score; P.V: dv products per score
        return b * hq * sq * skv * (d + dv)
    raise AssertionError(op)


def _graph_node_cost(graph: Graph, native: str) -> OpCost:
    """The handler's cost of the (only) ``native`` node, as the walker would call it."""
    node = next(n for n in graph.nodes if n.native_op == native)
    handler = get_handler(node.op)
    assert handler is not None, node.op
    outs = [graph.tensors[o] for o in node.outputs if o]
    return handler.cost(OpContext(graph, node, graph.input_tensors(node), outs))


def test_costs_from_first_principles(cost_case: str) -> None:
    test_dir = node_dir() / cost_case
    op = _cost_family(cost_case)
    assert op is not None
    case = suite().cases[cost_case]
    if op == "Einsum":
        _check_einsum(test_dir)
        return
    p = prepare(test_dir)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.onnx"
        onnx.save(p.model, str(path))
        graph = infercast.load(path, p.input_shapes or None)
    cost = _graph_node_cost(graph, op)
    want = expected_macs(test_dir)
    assert cost.macs == want, f"{cost_case}: {op} MACs {cost.macs}, first principles {want}"
    assert cost.flops >= 2 * want
    if op not in ("LSTM", "GRU", "RNN", "Attention"):
        assert cost.flops == 2 * want
    if cost_case not in EXCLUDED:  # the walker reports the same figure
        assert case.error is None, case.error
        layer = next(ly for ly in infercast.analyze(graph).layers if ly.native_op == op)
        if layer.status != "folded":  # all-constant inputs (integer tests) fold at load
            assert (layer.macs, layer.flops) == (cost.macs, cost.flops)


def _check_einsum(test_dir: Path) -> None:
    """numpy's own naive FLOP count (``np.einsum_path(..., optimize=False)``) is the
    peer figure for an einsum that multiplies operands or sums an index."""
    node, names = _model_node(test_dir)
    eq = onnx.helper.get_attribute_value(node.attribute[0]).decode()
    ins = _shapes(test_dir, "input")
    arrays = [np.zeros(_ref_shape(node, names, ins, i) or ()) for i in range(len(node.input))]
    report = np.einsum_path(eq, *arrays, optimize=False)[1]
    line = next(ln for ln in report.splitlines() if "Naive FLOP count" in ln)
    naive = int(float(line.split(":")[1]))
    lhs, _, rhs = eq.replace(" ", "").partition("->")
    letters_in = set(lhs.replace(",", "").replace("...", ""))
    summed = letters_in - set(rhs.replace("...", ""))
    p = prepare(test_dir)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.onnx"
        onnx.save(p.model, str(path))
        graph = infercast.load(path, p.input_shapes or None)
    cost = _graph_node_cost(graph, "Einsum")
    if summed:
        assert cost.flops == naive, f"{test_dir.name} '{eq}': {cost.flops} FLOPs, numpy {naive}"
        assert cost.macs == (naive // len(node.input) if len(node.input) > 1 else 0)
    elif len(node.input) == 1:  # a pure re-indexing (transpose, diagonal): data movement
        assert (cost.macs, cost.flops) == (0, 0)
    else:  # an elementwise product: (operands - 1) multiplies per output element
        assert cost.flops == (len(node.input) - 1) * math.prod(_shapes(test_dir, "output")[0])


def test_cost_cases_cover_each_family() -> None:
    """The first-principles checks really run over every family listed."""
    fams = Counter(_cost_family(d.name) for d in node_dir().iterdir())
    for op in _COST_PREFIXES:
        assert fams[op] >= 1, op


# ---------------------------------------------------------------------------
# docs/ops.md


def test_ops_doc_is_current() -> None:
    import gen_ops_doc

    current = (REPO / "docs" / "ops.md").read_text(encoding="utf-8")
    assert gen_ops_doc.render() == current, "docs/ops.md is stale: run python tools/gen_ops_doc.py"


def test_every_handler_documents_its_rule() -> None:
    from infercast.ops.registry import registered_ops

    undocumented = [op for op, h in registered_ops().items() if len(h.doc) < 20]
    assert not undocumented, undocumented


def test_every_shape_rule_has_a_cost_rule() -> None:
    """A shape rule for an op the registry does not know would be dead code (or a
    misspelt op name)."""
    from infercast.frontends.onnx.shapes import RULES
    from infercast.ops.registry import registered_ops

    handlers = registered_ops()
    assert sorted(op for op in RULES if op not in handlers) == []
