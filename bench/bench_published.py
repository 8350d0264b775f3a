#!/usr/bin/env python3
"""The shipped targets against the published device measurements, per device.

Usage::

    python bench/bench_published.py [--targets T ...] [--json FILE] [--rows]

Builds every model the published rows need (``python -m
infercast.estimate.published.build``; cached), then runs the check
``infercast validate --published`` runs (:func:`check_published`) and prints, per
target and per device class: rows, rows the target was fitted on, the median |error|
and worst ratio of the *predictions* (leave-one-out for fitted rows, plain forecasts for
the others), the same for the target's stated (uncalibrated) numbers, and the
NPU-vs-CPU pairs ranked right. ``built`` counts the rows with a forecast that count:
rows marked ``fit = excluded`` (the figure contradicts the model built for them) are
listed with ``--rows`` and enter no figure but the ``+excl`` columns (the predictions'
median |error| and worst ratio with them counted). ``--rows`` adds every row.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from infercast.estimate.fit import predict  # noqa: E402
from infercast.estimate.forecast import Params  # noqa: E402
from infercast.estimate.published.build import cache_root  # noqa: E402
from infercast.estimate.published.check import (  # noqa: E402
    RowResult,
    _Graphs,
    check_published,
    ratio,
    row_sample,
)
from infercast.estimate.published.recipes import file_name  # noqa: E402
from infercast.targets import load_target  # noqa: E402

CLASSES = {
    "i.MX 8M Plus NPU": ("imx8mp-npu-vx", "imx8mp-npu-nnapi"),
    "i.MX CPUs (TFLite int8 kernels)": ("imx8mp-cpu", "imx93-cpu"),
    "Edge TPU": ("edgetpu-usb", "edgetpu-usb-rpi4", "edgetpu-pcie"),
    "Ethos-U": ("ethos-u65-256", "ethos-u55-128"),
    "Cortex-A CPUs (ncnn)": ("rpi4-cpu", "jetson-nano-cpu", "jetson-orin-nano-cpu"),
    "Jetson Nano GPU (ncnn Vulkan)": ("jetson-nano-gpu",),
    "K210 KPU": ("k210-kpu",),
}


def _stats(results: list[RowResult], attr: str) -> tuple[float | None, float | None]:
    vals = [(getattr(r, attr), r.row.latency_s) for r in results if getattr(r, attr)]
    if not vals:
        return None, None
    return (statistics.median(abs(f / m - 1) for f, m in vals),
            max(ratio(f, m) for f, m in vals))  # fmt: skip


def _fmt(v: float | None, pct: bool) -> str:
    if v is None:
        return "-"
    return f"{v:.0%}" if pct else f"{v:.2f}x"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--targets", nargs="*")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--rows", action="store_true")
    args = ap.parse_args()
    check = check_published(args.targets, build=True)
    # The stated (uncalibrated) numbers' forecast of each row, for comparison.
    graphs = _Graphs()
    stated: dict[str, float] = {}
    for r in check.results:
        if r.forecast_s is None:
            continue
        t = load_target(r.row.target)
        s = row_sample(r.row, t, graphs(cache_root() / file_name(r.row.recipe, r.row.quant)))
        stated[r.row.row_id] = predict(s, Params.of(t, prior_for=t.calibration.parameters))
    for r in check.results:
        r.stated_s = stated.get(r.row.row_id)  # type: ignore[attr-defined]
    pairs = check.pairs
    head = (f"{'device class / target':34s} {'rows':>4s} {'fit':>4s} {'built':>5s} "
            f"{'pred med|err|':>13s} {'pred worst':>10s} {'stated med|err|':>15s} "
            f"{'stated worst':>12s} {'NPU-vs-CPU':>10s} "
            f"{'+excl med':>9s} {'+excl worst':>11s}")  # fmt: skip
    print(head)
    print("-" * len(head))
    out = []
    for cls, targets in CLASSES.items():
        groups = [(cls, targets)] + [(f"  {t}", (t,)) for t in targets]
        for label, ts in groups:
            res = [r for r in check.results if r.row.target in ts]
            if not res:
                continue
            built = [r for r in res if r.forecast_s is not None and not r.row.excluded]
            pm, pw = _stats(built, "prediction_s")
            sm, sw = _stats(built, "stated_s")
            # The same predictions with the excluded rows counted too (what the table
            # would say had we kept them): the reader sees what the exclusion buys.
            every = [r for r in res if r.forecast_s is not None]
            am, aw = _stats(every, "prediction_s")
            mine = [p for p in pairs if p[0].row.target in ts or p[1].row.target in ts]
            right = sum(1 for p in mine if p[2])
            print(f"{label:34s} {len(res):4d} {sum(r.in_fit for r in res):4d} {len(built):5d} "
                  f"{_fmt(pm, True):>13s} {_fmt(pw, False):>10s} {_fmt(sm, True):>15s} "
                  f"{_fmt(sw, False):>12s} "
                  f"{f'{right}/{len(mine)}' if mine else '-':>10s} "
                  f"{_fmt(am, True) if len(every) > len(built) else '':>9s} "
                  f"{_fmt(aw, False) if len(every) > len(built) else '':>11s}")  # fmt: skip
            out.append(
                {
                    "class": label.strip(),
                    "rows": len(res),
                    "built": len(built),
                    "in_fit": sum(r.in_fit for r in res),
                    "prediction_median_abs_error": pm,
                    "prediction_worst_ratio": pw,
                    "stated_median_abs_error": sm,
                    "stated_worst_ratio": sw,
                    "pairs_right": right,
                    "pairs": len(mine),
                    "with_excluded_median_abs_error": am,
                    "with_excluded_worst_ratio": aw,
                }
            )
    wrong = [(a.row.row_id, c.row.row_id) for a, c, ok in pairs if not ok]
    print(f"\nNPU-vs-CPU pairs ranked wrong: {wrong or 'none'}")
    if args.rows:
        print(f"\n{'row':40s} {'published':>10s} {'stated':>9s} {'forecast':>9s} {'LOO':>9s} "
              f"{'pred err':>8s} {'outside':>7s}")  # fmt: skip
        for r in check.results:
            if r.forecast_s is None:
                print(f"{r.row.row_id:40s} {r.row.latency_s * 1e3:10.3f}  {r.status}")
                continue
            loo = f"{r.loo_s * 1e3:9.3f}" if r.loo_s else " " * 9
            st = getattr(r, "stated_s", None)
            note = "  excluded (not counted)" if r.row.excluded else ""
            print(f"{r.row.row_id:40s} {r.row.latency_s * 1e3:10.3f} "
                  f"{(st or 0) * 1e3:9.3f} {r.forecast_s * 1e3:9.3f} {loo} "
                  f"{r.prediction_error:+8.0%} "
                  f"{'' if r.outside_share is None else f'{r.outside_share:.0%}':>7s}"
                  f"{note}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps({"classes": out, **check.to_dict()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
