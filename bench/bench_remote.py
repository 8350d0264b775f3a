"""Remote (over SSH, on the loopback "board" of tests/sshd_board.py) vs local medians of the
same models, interleaved in one run: the goal is agreement within 5%.

    python bench/bench_remote.py [--rounds 5] [--min-time 1.0]

Needs root and Debian's openssh-server (as tests/test_remote.py). Each round runs
every model locally, then on the board, each with the same timing protocol; the
ratios printed are median(remote) / median(local) over the per-round medians, and
min(remote) / min(local) -- the least-disturbed round of each, the fairer figure on a
shared machine (as bench/bench_forecast.py does). It also prints the board's overhead per
command (connect, copy, start: wall time minus the runs' own wall time).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "tools"))

from build_fixtures import ensure  # noqa: E402
from infercast.bench import bench  # noqa: E402
from infercast.bench.harness import RunSpec, TimingConfig  # noqa: E402
from infercast.bench.remote import bench_remote, plan_remote_runs  # noqa: E402
from infercast.bench.remote_boards import resolve_board  # noqa: E402
from sshd_board import ssh_board  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=1.0)
    args = ap.parse_args()
    edge, keras = ensure("edge"), ensure("keras")
    models = [
        (edge / "convs_5x5_7x7.tflite", "litert"),
        (keras / "mobilenet_v2_int8.tflite", "litert"),
        (keras / "mobilenet_v1_fp32.tflite", "litert"),
        (keras / "mobilenet_v2_fp32.onnx", "ort"),
    ]
    timing = TimingConfig(min_runs=20, min_time_s=args.min_time)
    with ssh_board() as b:
        os.environ.update(b.ssh_env)
        loop = resolve_board("loop")
        med: dict[str, dict[str, list[float]]] = {}
        overhead: list[float] = []
        for _ in range(args.rounds):
            for model, rt in models:
                key = f"{model.name} {rt}"
                m = med.setdefault(key, {"local": [], "remote": []})
                loc = bench([RunSpec(str(model), rt, 1, timing=timing)])
                t0 = time.perf_counter()
                rem = bench_remote(plan_remote_runs(model, rt, [1], timing=timing), loop)
                wall = time.perf_counter() - t0
                lr, rr = loc.runs[0], rem.runs[0]
                assert lr.ok and rr.ok, (lr.error, rr.error)
                assert lr.summary is not None and rr.summary is not None
                m["local"].append(lr.summary.median_s)
                m["remote"].append(rr.summary.median_s)
                overhead.append(wall - rr.wall_s)
        print(
            f"{'model':34} {'local ms':>9} {'remote ms':>10} {'ratio(med)':>11} "
            f"{'local min':>10} {'remote min':>11} {'ratio(min)':>11}"
        )
        ratios = []
        for key, m in med.items():
            lo, re = statistics.median(m["local"]), statistics.median(m["remote"])
            lmin, rmin = min(m["local"]), min(m["remote"])
            ratios.append(rmin / lmin)
            ok = "within 5%" if abs(rmin / lmin - 1) <= 0.05 else "OUTSIDE 5%"
            print(
                f"{key:34} {lo * 1e3:9.3f} {re * 1e3:10.3f} {re / lo:11.3f} "
                f"{lmin * 1e3:10.3f} {rmin * 1e3:11.3f} {rmin / lmin:11.3f}  {ok}"
            )
        print(
            f"{sum(abs(r - 1) <= 0.05 for r in ratios)}/{len(ratios)} within 5% (min ratio); "
            f"per-command overhead (ssh, copy, start) median {statistics.median(overhead):.2f} s; "
            f"load average {os.getloadavg()[0]:.1f}"
        )
        print(f"board: {rem.environment['python']} python, {rem.environment['cpu_model']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
