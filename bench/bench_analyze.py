#!/usr/bin/env python3
"""Time ``infercast.analyze`` against onnx-tool on the same ONNX models, in one run.

Usage::

    pip install onnx-tool          # the peer (extra: .[bench])
    python bench/bench_analyze.py [--repeat 5]

Both tools do the same job from a file path: parse the model, infer every
tensor's shape, and count MACs per node. onnx-tool: ``Model(path)``,
``graph.shape_infer()``, ``graph.profile()``; infercast: ``analyze(path)``.
Medians of ``--repeat`` runs each (this machine is noisy); the ratio is
onnx-tool time / infercast time. A synthetic 5,000-node model is included for
the "5,000 nodes in under 1 s" goal. MAC totals are printed side by side; they
differ where the conventions do (onnx-tool counts elementwise ops and biases
as MACs: see ../shared/reference/figures.md).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))


def synthetic_model(path: Path, blocks: int = 1250) -> int:
    """A chain of Conv 1x1 -> Relu -> Add(residual) -> Mul: 4 nodes per block."""
    c, hw = 16, 8
    nodes = []
    inits = []
    x = "input"
    rng = np.random.default_rng(0)
    for b in range(blocks):
        w = f"w{b}"
        inits.append(
            numpy_helper.from_array(rng.standard_normal((c, c, 1, 1)).astype(np.float32), w)
        )
        nodes.append(helper.make_node("Conv", [x, w], [f"c{b}"], name=f"conv{b}"))
        nodes.append(helper.make_node("Relu", [f"c{b}"], [f"r{b}"], name=f"relu{b}"))
        nodes.append(helper.make_node("Add", [f"r{b}", x], [f"a{b}"], name=f"add{b}"))
        s = f"s{b}"
        inits.append(numpy_helper.from_array(np.full((1,), 0.5, np.float32), s))
        nodes.append(helper.make_node("Mul", [f"a{b}", s], [f"m{b}"], name=f"mul{b}"))
        x = f"m{b}"
    graph = helper.make_graph(
        nodes,
        "synthetic",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, c, hw, hw])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, c, hw, hw])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, path)
    return len(nodes)


def median_s(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    times = []
    result: object = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def run_infercast(path: Path) -> int:
    import infercast

    return infercast.analyze(path).totals.macs


def run_onnx_tool(path: Path) -> int | None:
    import onnx_tool

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        m = onnx_tool.Model(str(path))
        m.graph.shape_infer()
        m.graph.profile()
    macs = getattr(m.graph, "macs", None)
    if isinstance(macs, list | tuple | np.ndarray):
        return int(np.sum(macs))
    return int(macs) if macs is not None else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    from build_fixtures import ensure

    models: list[tuple[str, Path]] = []
    keras = ensure("keras")
    models += [(p.name, p) for p in sorted(keras.glob("*.onnx"))]
    light = ensure("onnx_light")
    models += [(p.name, p) for p in sorted(light.glob("*.onnx"))]
    tmp = Path(tempfile.mkdtemp())
    synth = tmp / "synthetic_5000.onnx"
    n_nodes = synthetic_model(synth)
    models.append((f"synthetic ({n_nodes} nodes)", synth))

    print(
        f"{'model':34} {'nodes':>6} {'infercast ms':>13} {'onnx-tool ms':>13} "
        f"{'ratio':>7} {'infercast MACs':>16} {'onnx-tool MACs':>16}"
    )
    ratios = []
    for name, path in models:
        nodes = len(onnx.load(str(path), load_external_data=False).graph.node)
        ours, our_macs = median_s(lambda p=path: run_infercast(p), args.repeat)
        try:
            peer, peer_macs = median_s(lambda p=path: run_onnx_tool(p), args.repeat)
        except Exception as exc:  # report and go on: a peer failing is a finding
            why = f"{type(exc).__name__}: {exc}"
            print(f"{name:34} {nodes:>6} {ours * 1e3:>13.1f} {'failed':>13}  ({why})")
            continue
        ratio = peer / ours
        ratios.append(ratio)
        print(
            f"{name:34} {nodes:>6} {ours * 1e3:>13.1f} {peer * 1e3:>13.1f} {ratio:>6.1f}x "
            f"{our_macs:>16,} {peer_macs if peer_macs is None else f'{peer_macs:,}':>16}"
        )
    if ratios:
        print(
            f"\nmedian speed-up over onnx-tool: {statistics.median(ratios):.1f}x "
            f"(min {min(ratios):.1f}x, max {max(ratios):.1f}x) over {len(ratios)} models"
        )

    print("\nTFLite (no peer; time to load + analyse):")
    for p in sorted(keras.glob("*.tflite")):
        t, macs = median_s(lambda p=p: run_infercast(p), args.repeat)
        print(f"  {p.name:32} {t * 1e3:8.1f} ms   {macs:,} MACs")


if __name__ == "__main__":
    main()
