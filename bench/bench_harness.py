#!/usr/bin/env python3
"""Harness fidelity and measured figures on the fixture models.

    python bench/bench_harness.py [--quick] [--threads 1] [--json out.json]

For every fixture model and runtime:

* **fidelity** -- in this one process, the harness's timing loop
  (:func:`infercast.bench.harness.measure` around the adapter's runner) and a
  bare loop written against the runtime's own API (``InferenceSession.run`` /
  ``Interpreter.invoke`` / ``vm["main"]``, its own session) are run in
  alternating blocks; ``ratio = harness median / bare median`` (target: within
  3%). The isolated worker's median (another process) is printed beside it;
* **figures** -- the isolated run's median latency and achieved GMAC/s
  (MACs from ``infercast analyze``);
* **per-op sums** -- with ``--profile`` semantics: the per-op sum over the
  whole-model median of the unprofiled run, and over the profiler's own whole
  time of the same runs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(REPO / "src"))
from build_fixtures import ensure  # noqa: E402
from infercast import analyze  # noqa: E402
from infercast.bench import bench  # noqa: E402
from infercast.bench.harness import RunSpec, TimingConfig, measure  # noqa: E402
from infercast.bench.inputs import make_inputs  # noqa: E402
from infercast.bench.runtimes import get_runtime, resolve_options  # noqa: E402


def bare_runner(
    runtime: str, model: Path, threads: int, feeds: dict[str, Any]
) -> Callable[[], object]:
    """The runtime's own API, its own session: what a user would time by hand."""
    if runtime == "ort":
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        sess = ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])
        return lambda: sess.run(None, feeds)
    if runtime == "litert":
        from ai_edge_litert.interpreter import Interpreter

        it = Interpreter(model_path=str(model), num_threads=threads)
        it.allocate_tensors()
        for d in it.get_input_details():
            it.set_tensor(d["index"], feeds[d["name"]])
        return it.invoke
    if runtime == "tvm":
        # The same compiled module (compiling twice would compare two compilations);
        # the bare loop calls the VM function directly.
        raise NotImplementedError
    raise ValueError(runtime)


def fidelity(
    runtime: str, model: Path, threads: int, blocks: int, block_s: float
) -> tuple[float, float, float]:
    """(harness median, bare median, ratio), alternating blocks in this process."""
    rt = get_runtime(runtime)
    session = rt.open(model, threads, resolve_options(rt, {}), {})
    feeds, _ = make_inputs(session.input_specs(), seed=0)
    ours = session.runner(feeds)
    if runtime == "tvm":
        import tvm

        args = [tvm.runtime.tensor(feeds[s.name]) for s in session.input_specs()]
        vm = session.vm  # type: ignore[attr-defined]

        def bare() -> object:
            return vm["main"](*args)
    else:
        bare = bare_runner(runtime, model, threads, dict(feeds))
    cfg = TimingConfig(warmup_runs=3, warmup_time_s=0.1, min_runs=5, min_time_s=block_s)
    h: list[float] = []
    b: list[float] = []
    for _ in range(3):
        ours()
        bare()
    for _ in range(blocks):
        h.extend(measure(ours, cfg).samples_s)
        samples = []
        end = time.perf_counter() + block_s
        while len(samples) < 5 or time.perf_counter() < end:
            t0 = time.perf_counter_ns()
            bare()
            samples.append((time.perf_counter_ns() - t0) * 1e-9)
        b.extend(samples)
    hm, bm = float(np.median(h)), float(np.median(b))
    return hm, bm, hm / bm


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small models only, shorter blocks")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--no-tvm", action="store_true")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--only", help="run only cases whose 'model runtime' contains this text")
    ap.add_argument("--blocks", type=int, help="alternating fidelity blocks (default 5)")
    args = ap.parse_args()
    edge = ensure("edge")
    cases: list[tuple[Path, str]] = [
        (edge / "convs_5x5_7x7.onnx", "ort"),
        (edge / "convs_5x5_7x7.tflite", "litert"),
        (edge / "convs_5x5_7x7_int8.tflite", "litert"),
    ]
    if not args.no_tvm:
        cases.append((edge / "convs_5x5_7x7.onnx", "tvm"))
    if not args.quick:
        keras = ensure("keras")
        for name in ("mobilenet_v1", "mobilenet_v2", "resnet50"):
            cases += [
                (keras / f"{name}_fp32.onnx", "ort"),
                (keras / f"{name}_fp32.tflite", "litert"),
                (keras / f"{name}_int8.tflite", "litert"),
            ]
        if not args.no_tvm:
            cases.append((keras / "mobilenet_v2_fp32.onnx", "tvm"))
    if args.only:
        cases = [c for c in cases if args.only in f"{c[0].name} {c[1]}"]
    blocks, block_s = (3, 0.3) if args.quick else (5, 0.6)
    if args.blocks:
        blocks = args.blocks
    timing = TimingConfig(min_time_s=0.5 if args.quick else 2.0)
    rows: list[dict[str, Any]] = []
    hdr = (
        f"{'model':32} {'rt':6} {'median ms':>10} {'GMAC/s':>7} {'harness/bare':>12} "
        f"{'worker/bare':>11} {'sum/whole':>9} {'sum/prof':>8}"
    )
    print(hdr)
    print("-" * len(hdr))
    for model, runtime in cases:
        analysis = analyze(model)
        macs = analysis.totals.macs
        hm, bm, ratio = fidelity(runtime, model, args.threads, blocks, block_s)
        spec = RunSpec(
            str(model),
            runtime,
            args.threads,
            timing=timing,
            profile=True,
            profile_runs=10 if args.quick else 20,
            keep_samples=False,
        )
        rep = bench([spec], timeout_s=900, analysis=analysis)
        r = rep.runs[0]
        if not r.ok or r.summary is None:
            print(f"{model.name:32} {runtime:6} FAILED: {r.error}")
            rows.append({"model": model.name, "runtime": runtime, "error": r.error})
            continue
        med = r.summary.median_s
        j = rep.joins.get(0)
        row = {
            "model": model.name,
            "runtime": runtime,
            "threads": args.threads,
            "median_s": med,
            "ci95": [r.summary.ci_low_s, r.summary.ci_high_s],
            "first_s": r.first_s,
            "n": r.summary.n,
            "macs": macs,
            "gmacs_per_s": macs / med / 1e9,
            "harness_median_s": hm,
            "bare_median_s": bm,
            "harness_over_bare": ratio,
            "worker_over_bare": med / bm,
            "sum_over_whole": j.sum_vs_whole if j else None,
            "sum_over_profile_whole": j.sum_vs_profile_whole if j else None,
            "profile_source": j.source if j else None,
        }
        rows.append(row)
        sw = f"{row['sum_over_whole']:.3f}" if j and j.sum_vs_whole else "-"
        sp = f"{row['sum_over_profile_whole']:.3f}" if j and j.sum_vs_profile_whole else "-"
        print(
            f"{model.name:32} {runtime:6} {med * 1e3:10.3f} {macs / med / 1e9:7.2f} "
            f"{ratio:12.3f} {med / bm:11.3f} {sw:>9} {sp:>8}",
            flush=True,
        )
    ok = [r for r in rows if "harness_over_bare" in r]
    within = sum(abs(r["harness_over_bare"] - 1) <= 0.03 for r in ok)
    print(f"\nharness within 3% of the bare loop: {within}/{len(ok)}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
