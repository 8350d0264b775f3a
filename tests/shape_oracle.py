"""The shape oracle: every intermediate tensor's shape as the real runtime computes it.

:func:`runtime_shapes` runs inside an isolated child process
(``infercast.isolation.run_isolated``; the files are untrusted and a runtime
crash must not take pytest with it). It runs the model once:

* TFLite: LiteRT ``Interpreter(..., experimental_preserve_all_tensors=True)``,
  inputs resized to the given shapes, one ``invoke()``; shapes of every tensor
  of the main subgraph, keyed by tensor index.
* ONNX: ONNX Runtime at ``ORT_DISABLE_ALL`` (no fusion, no rewrite), with every
  node output of the main graph added as a graph output; keyed by tensor name.

:func:`compare` then puts infercast's per-layer output shapes beside them.
This module has no infercast import on the runtime side: the oracle is the
runtime, not our code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

Spec = Mapping[str, Any]


def _feed(
    name: str, shape: list[int], dtype: Any, rng: np.random.Generator, values: Spec
) -> np.ndarray[Any, Any]:
    if name in values:
        return np.asarray(values[name], dtype=dtype).reshape(shape)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.uniform(-1, 1, size=shape).astype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, size=shape).astype(dt)
    if dt.itemsize <= 2:
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max + 1, size=shape, dtype=np.int64).astype(dt)
    return rng.integers(0, 16, size=shape).astype(dt)


def _tflite(path: str, shapes: Spec, values: Spec, rng: np.random.Generator) -> dict[str, Any]:
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    # No default delegate: XNNPACK owns the tensors of the partitions it takes.
    interp = Interpreter(
        model_path=path,
        experimental_preserve_all_tensors=True,
        num_threads=1,
        experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
    )
    for d in interp.get_input_details():
        if d["name"] in shapes:
            interp.resize_tensor_input(d["index"], list(shapes[d["name"]]), strict=False)
    interp.allocate_tensors()
    for d in interp.get_input_details():
        interp.set_tensor(d["index"], _feed(d["name"], list(d["shape"]), d["dtype"], rng, values))
    interp.invoke()
    # Shapes from the tensors' metadata after the run: reading the data of every
    # tensor (get_tensor) crashes LiteRT on resource-variable models.
    return {str(d["index"]): [int(x) for x in d["shape"]] for d in interp.get_tensor_details()}


def _onnx(path: str, shapes: Spec, values: Spec, rng: np.random.Generator) -> dict[str, Any]:
    import onnx
    import onnxruntime as ort

    model = onnx.load(path)
    declared = {o.name for o in model.graph.output}
    names: list[str] = []
    for node in model.graph.node:
        for o in node.output:
            if o and o not in declared and o not in names:
                names.append(o)
    model.graph.output.extend(onnx.ValueInfoProto(name=n) for n in names)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    opts.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    types = {
        "tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
        "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(int8)": np.int8,
        "tensor(uint8)": np.uint8, "tensor(bool)": np.bool_, "tensor(int16)": np.int16,
    }  # fmt: skip
    feeds = {}
    for i in sess.get_inputs():
        shape = list(shapes.get(i.name, i.shape))
        if shape and not isinstance(shape[0], int) and all(isinstance(d, int) for d in shape[1:]):
            shape[0] = 1  # a dynamic batch alone: batch 1, as infercast defaults it
        if not all(isinstance(d, int) and d >= 0 for d in shape):
            raise ValueError(f"input {i.name} has shape {i.shape}: give it in the recipe")
        feeds[i.name] = _feed(i.name, shape, types[i.type], rng, values)
    outs = [o.name for o in sess.get_outputs()]
    results = sess.run(outs, feeds)
    shapes: dict[str, Any] = {
        n: [int(x) for x in np.shape(r)] for n, r in zip(outs, results, strict=True)
    }
    if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
           for n in model.graph.node for a in n.attribute):  # fmt: skip
        shapes.update(_reference_body_shapes(model, feeds))
    return shapes


def _reference_body_shapes(model: Any, feeds: dict[str, Any]) -> dict[str, Any]:
    """Shapes of the values computed inside control-flow bodies (If branches, Loop and
    Scan bodies), which ONNX Runtime cannot expose: ONNX's reference implementation
    (``onnx.reference``) runs the model on the same inputs and every value it computes
    is recorded. A value computed several times (loop iterations) with different
    shapes is recorded as ``{"varies": [...]}``."""
    from onnx.reference import ReferenceEvaluator

    seen: dict[str, list[list[int]]] = {}

    class Recording(ReferenceEvaluator):  # type: ignore[misc]
        def _log(self, level: int, pattern: str, *args: Any) -> None:
            if pattern == " + %s: %s" and len(args) == 2 and isinstance(args[1], np.ndarray):
                shape = [int(x) for x in args[1].shape]
                known = seen.setdefault(str(args[0]), [])
                if shape not in known:
                    known.append(shape)

    Recording(model).run(None, feeds)
    body: set[str] = set()

    def collect(g: Any) -> None:
        for node in g.node:
            for a in node.attribute:
                for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                    body.update(o for n in sub.node for o in n.output)
                    collect(sub)

    collect(model.graph)
    return {n: (v[0] if len(v) == 1 else {"varies": v}) for n, v in seen.items() if n in body}


def runtime_shapes(payload: Mapping[str, Any]) -> dict[str, Any]:
    """Entry point of the isolated child: ``{path, input_shapes, input_values, seed}``."""
    path = str(payload["path"])
    shapes = payload.get("input_shapes") or {}
    values = payload.get("input_values") or {}
    rng = np.random.default_rng(int(payload.get("seed", 0)))
    with open(path, "rb") as fh:
        head = fh.read(8)
    if head[4:8] == b"TFL3":
        return {"format": "tflite", "shapes": _tflite(path, shapes, values, rng)}
    return {"format": "onnx", "shapes": _onnx(path, shapes, values, rng)}


@dataclass
class Comparison:
    """One model's layers beside the runtime's shapes."""

    model: str
    compared: int = 0
    equal: int = 0
    unknown: int = 0
    wrong: list[str] = field(default_factory=list)
    not_run: int = 0
    """Layer outputs the runtime did not produce (folded constants, unused tensors)."""


def _known(shape: Any) -> bool:
    return shape is not None and all(d is not None for d in shape)


def compare(analysis: Any, runtime: Mapping[str, Any], model: str) -> Comparison:
    """Compare every main-graph layer output of ``analysis`` with the runtime's shapes.

    A layer output counts as *compared* when the runtime produced it; it is
    *equal* when we report it known and the same, *unknown* when we report a
    dimension or the rank as unknown (or the layer as unknown_shape), *wrong*
    when we report it known and it differs.
    """
    graph = analysis.graph
    shapes: Mapping[str, Any] = runtime["shapes"]
    index_of = {name: str(i) for i, name in enumerate(graph.tensors)}
    res = Comparison(model)
    status = {(ly.subgraph, ly.index): ly.status for ly in analysis.layers}
    # ONNX values are named uniquely across the model: bodies' values come from
    # onnx.reference (see _reference_body_shapes). TFLite: the main graph only.
    graphs = graph.all_graphs() if runtime["format"] == "onnx" else [(graph.name, graph)]
    for _, g in graphs:
        for node in g.nodes:
            for out in node.outputs:
                if not out:
                    continue
                key = index_of[out] if runtime["format"] == "tflite" else out
                if key not in shapes:
                    res.not_run += 1
                    continue
                res.compared += 1
                ours = g.tensors[out].shape
                theirs = shapes[key]
                if not _known(ours) or status.get((g.name, node.index)) == "unknown_shape":
                    res.unknown += 1
                elif isinstance(theirs, list) and tuple(ours) == tuple(theirs):
                    res.equal += 1
                else:
                    res.wrong.append(f"{node.native_op} {out}: ours {ours}, runtime {theirs}")
    return res


def oracle(path: Path, input_shapes: Spec | None = None, values: Spec | None = None) -> Any:
    """The runtime's shapes for ``path``, computed in an isolated child process."""
    from infercast.isolation import Limits, run_isolated

    payload = {
        "path": str(path),
        "input_shapes": {k: list(v) for k, v in (input_shapes or {}).items()},
        "input_values": dict(values or {}),
        "seed": 0,
    }
    return run_isolated(
        "shape_oracle:runtime_shapes",
        payload,
        Limits(timeout_s=300, memory_bytes=16 << 30),
        extra_path=[str(Path(__file__).resolve().parent)],
        what=f"the shape oracle on {path.name}",
    )


def runtime_shapes_many(payload: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Several models in one child: ``{models: [payload, ...]}``; a model the runtime
    rejects gets ``{"error": ...}`` instead of shapes."""
    out: list[dict[str, Any]] = []
    for one in payload["models"]:
        try:
            out.append(runtime_shapes(one))
        except Exception as exc:
            out.append({"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"})
    return out
