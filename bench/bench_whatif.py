#!/usr/bin/env python3
"""How long a what-if sweep takes: 100 variants (10 input sizes x 10 widths) of a model
of ~300 layers, each through transform, analysis, memory plan, placement and forecast.

The goal (issue 12): a 100-variant sweep of a 300-layer model in under 10 s on the
machine's cores. Printed side by side, medians of ``--repeat`` runs:

* ``pool``    -- ``infercast.whatif(...)`` as the CLI runs it (a process pool over the
  cores, forked with the graph in memory), wall time for all 100;
* ``serial``  -- the same variants one after another in this process, wall time, and
  the CPU time it used (``time.process_time``: what the work costs, whatever else the
  machine runs; on a shared machine wall time includes waiting for a core);
* per variant: the transform alone and the four stages alone (CPU ms), from the serial
  run; ``idle est. s``: serial CPU time over the workers, what the pool takes on an
  otherwise idle machine with that many cores.

Models: ONNX's model-zoo Inception-v2 (``onnx_light`` group: 916 nodes, 371 of them
layers, the rest load-time constants) and keras EfficientNet-B0 int8 TFLite
(``whatif`` group: 239 layers).

Usage::

    PYTHONPATH=src python bench/bench_whatif.py [--repeat 3] [--target k210-kpu] [--jobs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

from build_fixtures import ensure  # noqa: E402
from infercast.frontends import load  # noqa: E402
from infercast.targets import load_target  # noqa: E402
from infercast.whatif import whatif  # noqa: E402
from infercast.whatif.evaluate import evaluate_graph  # noqa: E402
from infercast.whatif.spec import grid  # noqa: E402
from infercast.whatif.sweep import default_jobs  # noqa: E402
from infercast.whatif.transform import transform  # noqa: E402

RESOLUTIONS = [128 + 32 * i for i in range(10)]  # 128 .. 416
WIDTHS = [0.25 + 0.0833 * i for i in range(10)]  # 0.25 .. 1.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--target", default="k210-kpu")
    ap.add_argument("--jobs", type=int, default=None)
    args = ap.parse_args()
    models = [
        ("inception_v2 (onnx zoo)", ensure("onnx_light") / "light_inception_v2.onnx"),
        ("efficientnet_b0 int8", ensure("whatif") / "efficientnet_b0_int8.tflite"),
    ]
    tgt = load_target(args.target)
    jobs = args.jobs or default_jobs()
    widths = [round(w, 4) for w in WIDTHS]
    print(f"target {tgt.name}; {len(RESOLUTIONS) * len(widths)} variants; {jobs} worker(s)")
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(
        f"{'model':<26} {'layers':>6} {'pool s':>7} {'serial s':>8} {'cpu s':>6} "
        f"{'transform ms':>12} {'stages ms':>9} {'idle est. s':>11} {'< 10 s':>6}"
    )
    for label, path in models:
        graph = load(path)
        layers = sum(1 for n in graph.nodes if not n.folded)
        specs = grid([(r, r) for r in RESOLUTIONS], widths)
        pool_s, serial_s, cpu_s, tr_ms, st_ms = [], [], [], [], []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            res = whatif(graph, tgt, resolution=RESOLUTIONS, width=widths, jobs=jobs)
            pool_s.append(time.perf_counter() - t0)
            assert len(res.variants) == len(specs), res.errors[:3]
            t0, c0 = time.perf_counter(), time.process_time()
            tr = st = 0.0
            for spec in specs:
                a = time.process_time()
                v = transform(graph, spec)
                b = time.process_time()
                evaluate_graph(v, spec, tgt)
                c = time.process_time()
                tr += b - a
                st += c - b
            serial_s.append(time.perf_counter() - t0)
            cpu_s.append(time.process_time() - c0)
            tr_ms.append(tr / len(specs) * 1e3)
            st_ms.append(st / len(specs) * 1e3)
        p, s, c = (statistics.median(x) for x in (pool_s, serial_s, cpu_s))
        print(
            f"{label:<26} {layers:>6} {p:>7.2f} {s:>8.2f} {c:>6.2f} "
            f"{statistics.median(tr_ms):>12.1f} {statistics.median(st_ms):>9.1f} "
            f"{c / jobs:>11.2f} {'yes' if p < 10 else 'NO':>6}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
