#!/usr/bin/env python3
"""The i.MX 8M Plus NPU forecast against a real VIV_VX_PROFILE=1 log of that NPU.

Usage::

    python bench/bench_vx_profile.py

The log (tests/data/profiles/imx8mpevk_vx_profile_yolov3_tiny.log, an excerpt of
github.com/ruitaodong/imx-benchmarks logs/yolov3-tiny-NPU.log, see SOURCES.md) times a
one-class YOLOv3-tiny at 416 (its cfg is in that repository; its .tflite is not) through the
VX delegate on an EVK. This script rebuilds that architecture (recipe
``yolov3_tiny_416_1class``, int8 per-channel, weights=None), compares the file sizes
(the log prints its model's), and prints, side by side: the forecast per inference on
``imx8mp-npu-vx`` and ``imx8mp-npu-nnapi``; the log's NPU busy time (a lower bound of an
unprofiled inference) and its profiled wall time (``Inference (avg)``, which includes the
profiler's per-operation waits); the forecast first-run compile vs the log's first
inference. Nothing here is fitted; the graph-compile rate was fitted on this log's compile
time among three others (see _imx8mp-npu.toml).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from infercast import estimate  # noqa: E402
from infercast.estimate.calibrate import read_vx_profile_log  # noqa: E402
from infercast.estimate.published.build import ensure  # noqa: E402

LOG = REPO / "tests" / "data" / "profiles" / "imx8mpevk_vx_profile_yolov3_tiny.log"


def main() -> int:
    log = read_vx_profile_log(LOG)
    text = LOG.read_text()
    size_mb = float(re.search(r"model file size \(MB\): ([0-9.]+)", text)[1])  # type: ignore[index]
    first_s = float(re.search(r"First inference: ([0-9]+)", text)[1]) / 1e6  # type: ignore[index]
    key = ("yolov3_tiny_416_1class", "int8")
    model = ensure([key])[key]
    print(f"model: log {size_mb:.3f} MB, rebuilt {model.stat().st_size / 1e6:.3f} MB")
    busy = log.busy_s()
    wall = log.inference_avg_s or 0.0
    print(f"log: NPU busy {busy * 1e3:.2f} ms, profiled wall {wall * 1e3:.2f} ms, "
          f"implied clock {(log.implied_clock_hz() or 0) / 1e9:.3f} GHz, "
          f"first inference {first_s:.2f} s")  # fmt: skip
    for target in ("imx8mp-npu-vx", "imx8mp-npu-nnapi"):
        fc = estimate(model, target)
        print(f"{target:18s} forecast {fc.latency_s * 1e3:7.2f} ms  "
              f"(x{fc.latency_s / busy:.2f} of busy, x{fc.latency_s / wall:.2f} of wall)  "
              f"compile {fc.one_time_s:.2f} s (x{fc.one_time_s / first_s:.2f})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
