#!/usr/bin/env python3
"""TFLite's SSD post-processing op on this host: measured against what infercast counts.

``TFLite_Detection_PostProcess`` (the last op of every SSD that TF's Object Detection API
exports for TFLite; kernel ``tensorflow/lite/kernels/detection_postprocess.cc``) is scalar
C++: box decoding, a per-anchor arg-max over the classes, a sort and an IoU loop. infercast
counts its FLOPs from the op's options (``infercast.ops.movement.detection_postprocess_cost``)
and, where a CPU target states no ``efficiency.detection``, runs them at one FLOP a cycle on
one core (``infercast.estimate.forecast.SCALAR_FLOPS_PER_CYCLE``).

This script builds the SSD recipes of the published rows (``ssd_mobilenet_v1_300_pp``: 1917
anchors x 91 scores; ``ssd_mobilenet_v2_face_320_pp``: 2034 x 2), profiles them on LiteRT
(one thread, per-op times; the median of ``--repeats`` profiles of ``--runs`` inferences) and
prints, for the post-processing op: the counted FLOPs, the measured time, the host target's
forecast of that op, their ratio, and the rate in FLOPs per cycle at the host's clock.

Usage::

    python bench/bench_detection_postprocess.py [--runs 50] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

RECIPES = ("ssd_mobilenet_v1_300_pp", "ssd_mobilenet_v2_face_320_pp")


def _measured_s(path: Path, runs: int, repeats: int) -> float:
    """Median seconds of the post-processing op over ``repeats`` LiteRT profiles."""
    import infercast

    times = []
    for _ in range(repeats):
        res = infercast.bench(path, ["litert"], (1,), profile=True, profile_runs=runs)
        run = res.to_dict()["runs"][0]
        if run["status"] != "ok" or not run.get("profile"):
            raise RuntimeError(f"run failed: {run['status']} {run['error']}")
        times += [p["measured_s"] for p in run["profile"] if p["op"] == "detection_postprocess"]
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    import infercast
    from infercast.estimate.published.build import ensure
    from infercast.targets import load_target

    host = load_target("host")
    clock = host.units["cpu"].clock_hz or 0.0
    paths = ensure([(r, "int8pt") for r in RECIPES])
    print(f"host: {host.units['cpu'].description}, clock {clock / 1e9:.2f} GHz; LiteRT, 1 thread")
    print(f"{'model':32s} {'FLOPs':>9s} {'measured ms':>12s} {'forecast ms':>12s} "
          f"{'ratio':>6s} {'FLOP/cycle':>10s}")  # fmt: skip
    for (recipe, _), path in paths.items():
        layer = next(x for x in infercast.analyze(path).layers if x.op == "detection_postprocess")
        flops = layer.flops or 0
        fc = next(
            x for x in infercast.estimate(path, "host").layers if x.op == "detection_postprocess"
        )
        m = _measured_s(path, args.runs, args.repeats)
        rate = flops / m / clock if clock else float("nan")
        print(f"{recipe:32s} {flops:9d} {m * 1e3:12.3f} {fc.latency_s * 1e3:12.3f} "
              f"{fc.latency_s / m:6.2f} {rate:10.2f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
