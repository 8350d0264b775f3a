#!/usr/bin/env python3
"""Time ``infercast.analyze`` against onnx-tool on the same ONNX models, in one run.

Usage::

    pip install onnx-tool          # the peer (extra: .[bench])
    python bench/bench_analyze.py [--repeat 5] [--sizes 5000,50000,100000]

Real models: the onnx_light zoo, the keras ONNX fixtures and the ONNX models
shipped inside published wheels (silero-vad; rapidocr, nudenet, basic-pitch
where their fixture groups are built). Both tools do the same job from a file
path, in this process, timed in alternation:

* **infercast**: ``infercast.analyze(path)`` (parse, shapes, per-node cost) and
  the same plus the memory plan (``plan_memory`` on the loaded graph);
* **onnx-tool** (1.0.1): ``onnx_tool.model_profile(path)``, its one-call entry
  point (load, reorder, ``shape_infer``, ``profile``, print the per-node table;
  its stdout is captured), and, for reference, ``Model(path)`` +
  ``graph.shape_infer()`` + ``graph.profile()`` without the table.

Medians of ``--repeat`` runs (this machine is noisy); the ratio is onnx-tool
time / infercast time. Models with symbolic input dimensions get 1 for each
(the same shapes are given to both tools). MAC totals are printed side by side;
they differ where the conventions do (onnx-tool counts elementwise ops and
biases as MACs: see ../shared/reference/figures.md).

Synthetic graphs (a chain of Conv 1x1 -> Relu -> Add(residual) -> Mul, 4 nodes
per block) of ``--sizes`` nodes are each analysed in a fresh process (after a
first, untimed analysis of a tiny model: imports), which reports its wall and
CPU time and peak RSS (``VmHWM``); onnx-tool runs on those up to
``--peer-max-nodes``. On a shared machine the wall time includes waiting for a
core; the CPU time does not.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

Shapes = dict[str, tuple[int, ...]]
WHEEL_GROUPS = ("silero", "rapidocr", "nudenet", "basic_pitch", "edge")


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


def fixed_shapes(path: Path) -> Shapes:
    """1 for every symbolic or unknown dimension of the model's (non-initializer) inputs."""
    g = onnx.load(str(path), load_external_data=False).graph
    inits = {t.name for t in g.initializer}
    out: Shapes = {}
    for vi in g.input:
        if vi.name in inits or not vi.type.HasField("tensor_type"):
            continue
        dims = vi.type.tensor_type.shape.dim
        if any(not d.HasField("dim_value") for d in dims):
            out[vi.name] = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in dims)
    return out


def run_infercast(path: Path, shapes: Shapes, plan: bool) -> int:
    import infercast
    from infercast.analysis.memory import plan_graph

    graph = infercast.load(path, shapes or None)
    macs = infercast.analyze(graph).totals.macs
    if plan:
        plan_graph(graph)
    return macs


def run_onnx_tool(path: Path, shapes: Shapes, table: bool) -> int | None:
    import onnx_tool

    dyn = {k: np.zeros(v, np.float32) for k, v in shapes.items()} or None
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        if table:
            onnx_tool.model_profile(str(path), dyn)
            return None
        m = onnx_tool.Model(str(path))
        m.graph.shape_infer(dyn)
        m.graph.profile()
    macs = getattr(m.graph, "macs", None)
    if isinstance(macs, list | tuple | np.ndarray):
        return int(np.sum(macs))
    return int(macs) if macs is not None else None


def medians(fns: Mapping[str, Callable[[], object]], repeat: int) -> dict[str, float | None]:
    """Median seconds of each function, run in alternation (a failing one gives None)."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    failed: set[str] = set()
    for fn_name, fn in fns.items():  # warm-up: imports, caches
        try:
            fn()
        except Exception as exc:  # a peer failing is a finding: report it, go on
            print(f"    {fn_name} failed: {type(exc).__name__}: {str(exc)[:120]}")
            failed.add(fn_name)
    for _ in range(repeat):
        for fn_name, fn in fns.items():
            if fn_name in failed:
                continue
            t0 = time.perf_counter()
            fn()
            times[fn_name].append(time.perf_counter() - t0)
    return {k: statistics.median(v) if v else None for k, v in times.items()}


def real_models() -> list[tuple[str, Path]]:
    from build_fixtures import ensure, version_dir

    models: list[tuple[str, Path]] = []
    for group in ("onnx_light", "keras", *WHEEL_GROUPS):
        try:
            d = ensure(group)
        except ValueError:  # a group this tree does not build: use it if it is cached
            d = version_dir() / group
        models += [(f"{group}/{p.name}", p) for p in sorted(d.glob("*.onnx"))]
    return models


def _ms(t: float | None) -> str:
    return "-" if t is None else f"{t * 1e3:.1f}"


def bench_real(repeat: int) -> list[float]:
    print(
        f"{'model':44} {'nodes':>6} {'ic ms':>8} {'ic+plan':>8} {'ot ms':>9} "
        f"{'ratio':>7} {'ratio+plan':>10} {'ot-notable':>10} {'ic MACs':>15} {'ot MACs':>15}"
    )
    ratios: list[float] = []
    ratios_plan: list[float] = []
    ratios_bare: list[float] = []
    for name, path in real_models():
        nodes = len(onnx.load(str(path), load_external_data=False).graph.node)
        shapes = fixed_shapes(path)
        try:
            our_macs = run_infercast(path, shapes, False)
        except Exception as exc:  # e.g. inputs that 1s do not make consistent: say so, go on
            print(f"{name:44} {nodes:>6}  infercast refused: {str(exc)[:90]}")
            continue
        try:
            peer_macs = run_onnx_tool(path, shapes, False)
        except Exception:
            peer_macs = None
        t = medians(
            {
                "ic": lambda p=path, s=shapes: run_infercast(p, s, False),
                "ic_plan": lambda p=path, s=shapes: run_infercast(p, s, True),
                "ot": lambda p=path, s=shapes: run_onnx_tool(p, s, True),
                "ot_bare": lambda p=path, s=shapes: run_onnx_tool(p, s, False),
            },
            repeat,
        )
        ic, ic_plan, ot, ot_bare = t["ic"], t["ic_plan"], t["ot"], t["ot_bare"]
        r = ot / ic if ot and ic else None
        rp = ot / ic_plan if ot and ic_plan else None
        rb = ot_bare / ic if ot_bare and ic else None
        if r is not None and rp is not None:
            ratios.append(r)
            ratios_plan.append(rp)
        if rb is not None:
            ratios_bare.append(rb)
        print(
            f"{name:44} {nodes:>6} {_ms(ic):>8} {_ms(ic_plan):>8} {_ms(ot):>9} "
            f"{'-' if r is None else f'{r:.1f}x':>7} {'-' if rp is None else f'{rp:.1f}x':>10} "
            f"{_ms(ot_bare):>10} {our_macs:>15,} "
            f"{'-' if peer_macs is None else f'{peer_macs:,}':>15}"
        )
    if ratios:
        print(
            f"\nmedian speed-up over onnx-tool model_profile, {len(ratios)} models: "
            f"{statistics.median(ratios):.1f}x analyze (load + cost), "
            f"{statistics.median(ratios_plan):.1f}x with the memory plan "
            f"(min {min(ratios):.1f}x, max {max(ratios):.1f}x)"
        )
    if ratios_bare:
        print(
            "median speed-up over onnx-tool Model+shape_infer+profile (no table): "
            f"{statistics.median(ratios_bare):.1f}x"
        )
    return ratios


_PEAK_RSS = """
def peak_rss():
    # VmHWM: this address space's peak (ru_maxrss would carry the parent's over exec)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
"""

_CHILD = (
    _PEAK_RSS
    + """
import json, sys, time
import infercast
from infercast.analysis.memory import plan_graph
infercast.analyze(sys.argv[3])  # imports and first-call set-up, not timed
t0, c0 = time.perf_counter(), time.process_time()
g = infercast.load(sys.argv[1])
a = infercast.analyze(g)
t1, c1 = time.perf_counter(), time.process_time()
arena = plan_graph(g).arena_bytes if sys.argv[2] == "plan" else None
t2, c2 = time.perf_counter(), time.process_time()
rss = peak_rss()
print(json.dumps({"analyze_s": t1 - t0, "analyze_cpu_s": c1 - c0, "plan_s": t2 - t1,
                  "plan_cpu_s": c2 - c1, "rss_bytes": rss, "macs": a.totals.macs,
                  "arena": arena}))
"""
)

_PEER_CHILD = (
    _PEAK_RSS
    + """
import contextlib, io, json, sys, time
import onnx_tool
t0 = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()):
    onnx_tool.model_profile(sys.argv[1])
t1 = time.perf_counter()
print(json.dumps({"s": t1 - t0, "rss_bytes": peak_rss()}))
"""
)


def _child(code: str, *args: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    res = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=True, env=env
    )
    out: dict[str, float] = json.loads(res.stdout.strip().splitlines()[-1])
    return out


def bench_synthetic(sizes: list[int], peer_max: int) -> None:
    print(
        f"\n{'synthetic':10} {'nodes':>7} {'analyze s':>10} {'(cpu s)':>8} {'+plan s':>8} "
        f"{'(cpu s)':>8} {'RSS MB':>7} {'RSS+plan MB':>11} {'onnx-tool s':>12} {'ratio':>6}"
    )
    tmp = Path(tempfile.mkdtemp())
    warm = tmp / "warm.onnx"
    synthetic_model(warm, 2)
    for n in sizes:
        path = tmp / f"synthetic_{n}.onnx"
        nodes = synthetic_model(path, max(n // 4, 1))
        cost = _child(_CHILD, str(path), "cost", str(warm))
        plan = _child(_CHILD, str(path), "plan", str(warm))
        peer = _child(_PEER_CHILD, str(path)) if nodes <= peer_max else None
        total = plan["analyze_s"] + plan["plan_s"]
        total_cpu = plan["analyze_cpu_s"] + plan["plan_cpu_s"]
        ratio = f"{peer['s'] / cost['analyze_s']:.1f}x" if peer else "-"
        peer_s = f"{peer['s']:.2f}" if peer else "-"
        print(
            f"{'chain':10} {nodes:>7} {cost['analyze_s']:>10.2f} {cost['analyze_cpu_s']:>8.2f} "
            f"{total:>8.2f} {total_cpu:>8.2f} {cost['rss_bytes'] / 2**20:>7.0f} "
            f"{plan['rss_bytes'] / 2**20:>11.0f} {peer_s:>12} {ratio:>6}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sizes", default="5000,50000,100000", help="synthetic graph sizes (nodes)")
    ap.add_argument("--peer-max-nodes", type=int, default=5000)
    ap.add_argument("--skip-real", action="store_true")
    args = ap.parse_args()
    if not args.skip_real:
        bench_real(args.repeat)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if sizes:
        bench_synthetic(sizes, args.peer_max_nodes)


if __name__ == "__main__":
    main()
