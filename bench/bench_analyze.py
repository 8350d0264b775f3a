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

Medians of ``--repeat`` runs (this machine is noisy), each timed as wall clock
and as CPU time of this process and its live child processes (:func:`tree_cpu_s`:
infercast runs ONNX shape inference and constant folding in a long-lived isolated
worker, whose time ``time.process_time`` alone would miss; on a shared machine the
wall clock also counts waiting for a core); the ratio is onnx-tool time /
infercast time, by CPU time and by wall clock. Both tools start from the file
path: onnx-tool's time includes its ``onnx.load`` (weights included), ours the
reading of the file (weights left out, see ``frontends/onnx/wire.py``). Models
with symbolic input dimensions get the input shapes the shape oracle runs them
with (``tests/test_shape_oracle.py``: PP-OCR at 320 px, nudenet at 320x320,
silero's 512 samples), else 1 for each symbolic dimension; the same shapes are
given to both tools. MAC totals are printed side by side; they differ where the
conventions do (onnx-tool counts elementwise ops and biases as MACs: see
../shared/reference/figures.md).

``--baseline SRC`` times another tree's infercast side by side with this one (the
``src`` directory of a checkout, e.g. ``git archive main src | tar -x -C /tmp/base``
then ``--baseline /tmp/base/src``): on real models in a worker process, in
alternation with the other runs, which reports its own wall and CPU time; on the
synthetic graphs in fresh processes like this tree's. Before/after figures then come
from one run.

``--stages MODEL`` prints where infercast's time goes for one model (CPU time per
stage, each stage's own time without the stages inside it, medians; the cyclic
garbage collector's runs as a row of their own).

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
import inspect
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
from typing import NamedTuple

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(REPO / "tests"))

Shapes = dict[str, tuple[int, ...]]


def tree_cpu_s() -> float:
    """CPU seconds of this process (``time.process_time``) and of its live descendants
    (Linux: per-thread ``schedstat``, nanoseconds, up to date for a process that is not
    running, which they are not while this one is; children from
    ``/proc/PID/task/TID/children``). A reaped child is not counted: the one that matters
    here (infercast's isolated worker) lives on. Self-contained: its source is also run
    in the child processes (:data:`_CHILD`)."""
    import os
    import time

    own, me = time.process_time(), os.getpid()
    total, todo, seen = 0.0, [me], set()
    try:
        while todo:
            pid = todo.pop()
            if pid in seen:
                continue
            seen.add(pid)
            for tid in os.listdir(f"/proc/{pid}/task"):
                if pid != me:
                    with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                        total += int(f.read().split()[0]) / 1e9
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
    except OSError:  # not Linux, or a process gone meanwhile: this process only
        return own
    return own + total


_TREE_CPU = inspect.getsource(tree_cpu_s)
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


def bench_shapes(path: Path) -> Shapes:
    """The shapes the shape oracle runs ``path`` with, else :func:`fixed_shapes`."""
    from test_shape_oracle import RECIPES

    recipe = RECIPES.get(path.name)
    return dict(recipe) if recipe else fixed_shapes(path)


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


Timing = tuple[float, float]
"""Median (wall seconds, CPU seconds)."""


class Measured(NamedTuple):
    """Times a function measured itself (in another process): used instead of ours."""

    wall_s: float
    cpu_s: float


_WORKER = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import bench_analyze
for line in sys.stdin:
    req = json.loads(line)
    shapes = {k: tuple(v) for k, v in req["shapes"].items()}
    t0, c0 = time.perf_counter(), bench_analyze.tree_cpu_s()
    try:
        macs, err = bench_analyze.run_infercast(Path(req["path"]), shapes, req["plan"]), None
    except Exception as exc:
        macs, err = None, f"{type(exc).__name__}: {str(exc)[:120]}"
    wall, cpu = time.perf_counter() - t0, bench_analyze.tree_cpu_s() - c0
    print(json.dumps({"wall_s": wall, "cpu_s": cpu, "macs": macs, "error": err}), flush=True)
"""


class Baseline:
    """Another tree's infercast (``src``) in a worker process, run on request."""

    def __init__(self, src: Path) -> None:
        self.src = src
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(REPO / "bench")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(src)},
            cwd=tempfile.gettempdir(),
        )

    def run(self, path: Path, shapes: Shapes, plan: bool) -> Measured:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        req = {"path": str(path), "shapes": {k: list(v) for k, v in shapes.items()}, "plan": plan}
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        out = json.loads(self.proc.stdout.readline())
        if out["error"]:
            raise RuntimeError(out["error"])
        return Measured(out["wall_s"], out["cpu_s"])


def medians(fns: Mapping[str, Callable[[], object]], repeat: int) -> dict[str, Timing | None]:
    """Median wall and CPU seconds of each function, run in alternation (a failing one
    gives None)."""
    walls: dict[str, list[float]] = {k: [] for k in fns}
    cpus: dict[str, list[float]] = {k: [] for k in fns}
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
            t0, c0 = time.perf_counter(), tree_cpu_s()
            r = fn()
            cpu, wall = tree_cpu_s() - c0, time.perf_counter() - t0
            if isinstance(r, Measured):
                wall, cpu = r
            cpus[fn_name].append(cpu)
            walls[fn_name].append(wall)
    return {
        k: (statistics.median(walls[k]), statistics.median(cpus[k])) if walls[k] else None
        for k in fns
    }


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


def _ratio(peer: Timing | None, ours: Timing | None, i: int) -> float | None:
    return peer[i] / ours[i] if peer and ours and ours[i] > 0 else None


def _x(r: float | None) -> str:
    return "-" if r is None else f"{r:.1f}x"


def bench_real(repeat: int, baseline: Baseline | None = None) -> list[float]:
    """Side by side on every real model; returns the CPU-time ratios."""
    base_cols = f" {'base ms':>7} {'(cpu)':>7} {'ratio':>6} {'(wall)':>6}" if baseline else ""
    print(
        f"{'model':44} {'nodes':>6} {'ic ms':>7} {'(cpu)':>7} {'+plan':>7} {'ot ms':>7} "
        f"{'(cpu)':>7} {'ratio':>6} {'(wall)':>6} {'+plan':>6} {'ot-bare':>7}{base_cols} "
        f"{'ic MACs':>15} {'ot MACs':>15}"
    )
    ratios: dict[str, list[float]] = {
        "cpu": [], "wall": [], "plan": [], "bare": [], "base_cpu": [], "base_wall": []
    }  # fmt: skip
    for name, path in real_models():
        nodes = len(onnx.load(str(path), load_external_data=False).graph.node)
        shapes = bench_shapes(path)
        try:
            our_macs = run_infercast(path, shapes, False)
        except Exception as exc:  # e.g. inputs that 1s do not make consistent: say so, go on
            print(f"{name:44} {nodes:>6}  infercast refused: {str(exc)[:90]}")
            continue
        try:
            peer_macs = run_onnx_tool(path, shapes, False)
        except Exception:
            peer_macs = None
        fns: dict[str, Callable[[], object]] = {
            "ic": lambda p=path, s=shapes: run_infercast(p, s, False),
            "ic_plan": lambda p=path, s=shapes: run_infercast(p, s, True),
            "ot": lambda p=path, s=shapes: run_onnx_tool(p, s, True),
            "ot_bare": lambda p=path, s=shapes: run_onnx_tool(p, s, False),
        }
        if baseline:
            fns["base"] = lambda p=path, s=shapes: baseline.run(p, s, False)
        t = medians(fns, repeat)
        ic, ic_plan, ot, ot_bare = t["ic"], t["ic_plan"], t["ot"], t["ot_bare"]
        base = t.get("base")
        r_cpu, r_wall = _ratio(ot, ic, 1), _ratio(ot, ic, 0)
        r_plan, r_bare = _ratio(ot, ic_plan, 1), _ratio(ot_bare, ic, 1)
        rb_cpu, rb_wall = _ratio(ot, base, 1), _ratio(ot, base, 0)
        for key, r in (
            ("cpu", r_cpu), ("wall", r_wall), ("plan", r_plan), ("bare", r_bare),
            ("base_cpu", rb_cpu), ("base_wall", rb_wall),
        ):  # fmt: skip
            if r is not None:
                ratios[key].append(r)
        base_row = (
            f" {_ms(base and base[0]):>7} {_ms(base and base[1]):>7} {_x(rb_cpu):>6} "
            f"{_x(rb_wall):>6}"
            if baseline
            else ""
        )
        print(
            f"{name:44} {nodes:>6} {_ms(ic and ic[0]):>7} {_ms(ic and ic[1]):>7} "
            f"{_ms(ic_plan and ic_plan[1]):>7} {_ms(ot and ot[0]):>7} {_ms(ot and ot[1]):>7} "
            f"{_x(r_cpu):>6} {_x(r_wall):>6} {_x(r_plan):>6} {_ms(ot_bare and ot_bare[1]):>7}"
            f"{base_row} {our_macs:>15,} {'-' if peer_macs is None else f'{peer_macs:,}':>15}"
        )
    if ratios["cpu"]:
        cpu = ratios["cpu"]
        print(
            f"\nmedian speed-up over onnx-tool model_profile, {len(cpu)} models: "
            f"{statistics.median(cpu):.1f}x by CPU time, "
            f"{statistics.median(ratios['wall']):.1f}x by wall clock "
            f"(CPU: min {min(cpu):.1f}x, max {max(cpu):.1f}x; "
            f"{sum(r >= 10 for r in cpu)} of {len(cpu)} at 10x or more); "
            f"{statistics.median(ratios['plan']):.1f}x with the memory plan (CPU)"
        )
    if ratios["base_cpu"]:
        cpu = ratios["base_cpu"]
        print(
            f"baseline ({baseline and baseline.src}), {len(cpu)} models: "
            f"{statistics.median(cpu):.1f}x by CPU time, "
            f"{statistics.median(ratios['base_wall']):.1f}x by wall clock "
            f"({sum(r >= 10 for r in cpu)} of {len(cpu)} at 10x or more)"
        )
    if ratios["bare"]:
        print(
            "median speed-up over onnx-tool Model+shape_infer+profile (no table), CPU: "
            f"{statistics.median(ratios['bare']):.1f}x"
        )
    return ratios["cpu"]


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
    + _TREE_CPU
    + """
import json, sys, time
import infercast
from infercast.analysis.memory import plan_graph
infercast.analyze(sys.argv[3])  # imports and first-call set-up, not timed
t0, c0 = time.perf_counter(), tree_cpu_s()
g = infercast.load(sys.argv[1])
a = infercast.analyze(g)
t1, c1 = time.perf_counter(), tree_cpu_s()
arena = plan_graph(g).arena_bytes if sys.argv[2] == "plan" else None
t2, c2 = time.perf_counter(), tree_cpu_s()
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
t0, c0 = time.perf_counter(), time.process_time()
with contextlib.redirect_stdout(io.StringIO()):
    onnx_tool.model_profile(sys.argv[1])
t1, c1 = time.perf_counter(), time.process_time()
print(json.dumps({"s": t1 - t0, "cpu_s": c1 - c0, "rss_bytes": peak_rss()}))
"""
)


def _child(code: str, *args: str, src: Path = REPO / "src") -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    res = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=True, env=env
    )
    out: dict[str, float] = json.loads(res.stdout.strip().splitlines()[-1])
    return out


def bench_synthetic(sizes: list[int], peer_max: int, baseline: Path | None = None) -> None:
    print(
        f"\n{'synthetic':10} {'nodes':>7} {'analyze s':>10} {'(cpu s)':>8} {'+plan s':>8} "
        f"{'(cpu s)':>8} {'RSS MB':>7} {'RSS+plan MB':>11} {'onnx-tool s':>12} {'(cpu s)':>8} "
        f"{'ratio':>6}"
    )
    tmp = Path(tempfile.mkdtemp())
    warm = tmp / "warm.onnx"
    synthetic_model(warm, 2)
    for n in sizes:
        path = tmp / f"synthetic_{n}.onnx"
        nodes = synthetic_model(path, max(n // 4, 1))
        peer = _child(_PEER_CHILD, str(path)) if nodes <= peer_max else None
        trees = {"chain": REPO / "src", **({"baseline": baseline} if baseline else {})}
        for label, src in trees.items():  # this tree's, then the baseline's, in turn
            cost = _child(_CHILD, str(path), "cost", str(warm), src=src)
            plan = _child(_CHILD, str(path), "plan", str(warm), src=src)
            total = plan["analyze_s"] + plan["plan_s"]
            total_cpu = plan["analyze_cpu_s"] + plan["plan_cpu_s"]
            ratio = f"{peer['cpu_s'] / cost['analyze_cpu_s']:.1f}x" if peer else "-"
            peer_s = f"{peer['s']:.2f}" if peer else "-"
            peer_cpu = f"{peer['cpu_s']:.2f}" if peer else "-"
            print(
                f"{label:10} {nodes:>7} {cost['analyze_s']:>10.2f} "
                f"{cost['analyze_cpu_s']:>8.2f} {total:>8.2f} {total_cpu:>8.2f} "
                f"{cost['rss_bytes'] / 2**20:>7.0f} {plan['rss_bytes'] / 2**20:>11.0f} "
                f"{peer_s:>12} {peer_cpu:>8} {ratio:>6}"
            )


# (module, function, stage) wrapped by --stages; a function a refactor renamed is skipped.
_STAGES = (
    ("infercast.frontends.onnx", "read_structure", "read the file (wire walk)"),
    ("onnx", "load_model_from_string", "protobuf parse"),
    ("infercast.frontends.onnx.reader", "_ProtoGraph", "read node fields (proto walk)"),
    ("infercast.frontends.onnx.reader", "_fix_inputs", "input shapes"),
    ("infercast.frontends.onnx.reader", "_declarations", "declarations set aside"),
    ("infercast.frontends.onnx.reader", "_try_infer", "ONNX shape inference (C++)"),
    ("infercast.frontends.onnx.reader", "_collect_shapes", "read inferred shapes"),
    ("infercast.frontends.onnx.fold", "fold_for_inference", "constant folding (onnx.reference)"),
    ("infercast.frontends.onnx.reader", "_graph", "IR build"),
    ("infercast.frontends.onnx.shapes", "infer_missing_shapes", "shape rules (ours)"),
    ("infercast.api", "analyze_graph", "cost walk"),
)


def bench_stages(path: Path, repeat: int) -> None:
    """CPU time per stage of ``infercast.analyze(path)``: medians of ``repeat`` runs."""
    import gc
    import importlib

    import infercast

    per_run: dict[str, float] = {}
    stack: list[str] = []

    def wrap(fn: Callable[..., object], stage: str) -> Callable[..., object]:
        def timed(*args: object, **kwargs: object) -> object:
            t0 = time.process_time()
            stack.append(stage)
            try:
                return fn(*args, **kwargs)
            finally:
                stack.pop()
                dt = time.process_time() - t0
                per_run[stage] = per_run.get(stage, 0.0) + dt
                if stack:  # each stage's own time: not counted in the one around it
                    per_run[stack[-1]] = per_run.get(stack[-1], 0.0) - dt

        return timed

    for module, attr, stage in _STAGES:
        mod = importlib.import_module(module)
        fn = getattr(mod, attr, None)
        if fn is not None:
            setattr(mod, attr, wrap(fn, stage))
    gc_start = [0.0]

    def gc_timer(phase: str, info: Mapping[str, int]) -> None:
        if phase == "start":
            gc_start[0] = time.process_time()
        else:
            dt = time.process_time() - gc_start[0]
            per_run["garbage collector"] = per_run.get("garbage collector", 0.0) + dt
            if stack:
                per_run[stack[-1]] = per_run.get(stack[-1], 0.0) - dt

    shapes = bench_shapes(path) or None
    infercast.analyze(path, shapes)  # imports, first-call set-up
    gc.callbacks.append(gc_timer)
    runs: list[dict[str, float]] = []
    totals: list[float] = []
    for _ in range(repeat):
        per_run.clear()
        c0 = time.process_time()
        infercast.analyze(path, shapes)
        totals.append(time.process_time() - c0)
        runs.append(dict(per_run))
    gc.callbacks.remove(gc_timer)
    total = statistics.median(totals)
    stages = {k for r in runs for k in r}
    rows = {k: statistics.median(r.get(k, 0.0) for r in runs) for k in stages}
    rows["other (paths, checks, Graph objects)"] = max(total - sum(rows.values()), 0.0)
    print(f"\n{path.name}: infercast.analyze {total * 1e3:.2f} ms CPU (median of {repeat})")
    for stage, t in sorted(rows.items(), key=lambda kv: -kv[1]):
        print(f"  {stage:40} {t * 1e3:8.2f} ms  {t / total:5.1%}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sizes", default="5000,50000,100000", help="synthetic graph sizes (nodes)")
    ap.add_argument("--peer-max-nodes", type=int, default=5000)
    ap.add_argument("--skip-real", action="store_true")
    ap.add_argument("--stages", nargs="*", default=None, help="models: per-stage CPU time")
    ap.add_argument(
        "--baseline", type=Path, default=None, help="another tree's src/, timed side by side"
    )
    args = ap.parse_args()
    if args.stages is not None:
        for model in args.stages:
            bench_stages(Path(model), max(args.repeat, 5))
        return
    if not args.skip_real:
        bench_real(args.repeat, Baseline(args.baseline) if args.baseline else None)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if sizes:
        bench_synthetic(sizes, args.peer_max_nodes, args.baseline)


if __name__ == "__main__":
    main()
