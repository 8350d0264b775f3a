#!/usr/bin/env python3
"""infercast's Ethos-U forecast against Arm Vela's own performance estimate.

Usage::

    python bench/bench_vela.py [--targets ethos-u55-128 ethos-u65-256] [--fit] [--json FILE]

For every int8 keras.applications architecture of ``recipes.VELA_SET`` (built with
``weights=None``, converted by the TFLite converter with per-channel int8 weights) and
each Ethos-U target, Vela (``ethos-u-vela``, its default ``vela.ini``, the accelerator,
system config and memory mode the target's ``[toolchain]`` names) compiles the model with
``--verbose-performance``; its per-layer CSV gives each operator's cycles and its summary
the inference time. infercast forecasts the same model on the target; the NPU time
compared is the sum of the accelerator kernels' latencies (Vela's figure has no CPU
operators, no crossings and no per-call cost).

Per architecture: Vela's time, infercast's as the target file states it, and infercast's
**leave-one-architecture-out**: the target's Ethos-U parameters (the NPU's efficiency per
op class and its per-operator overhead) fitted on Vela's times of the *other*
architectures, then used to forecast this one. ``--fit`` prints the fit on every
architecture (the numbers the target files state, with this script named as the source).

Then the **held-out architectures** (``HELD_OUT``): the int8 models of the published
device rows that are not keras.applications (keyword spotting, an anomaly auto-encoder,
Wav2Letter, YOLOv4-tiny, EfficientNet-lite0, the visual-wake-words MobileNet, DeepLabV3's TF1
form), never part of any fit here: Vela against infercast fitted on all 14 architectures
above and against the target file as shipped.
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import statistics
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from infercast import estimate  # noqa: E402
from infercast.estimate.fit import Sample, fit_values, predict  # noqa: E402
from infercast.estimate.forecast import Params  # noqa: E402
from infercast.estimate.published.build import cache_root, ensure  # noqa: E402
from infercast.estimate.published.recipes import VELA_SET  # noqa: E402
from infercast.estimate.work import vela_view  # noqa: E402
from infercast.targets import load_target  # noqa: E402

KEYS = [
    "units.npu.efficiency.elementwise",
    "units.npu.efficiency.movement",
    "units.npu.efficiency.normalization",
    "units.npu.op_overhead_s",
    "units.npu.broadcast_read_factor",
]
TOLERANCE = 0.20
HELD_OUT = [
    ("ds_cnn_kws", "int8"),
    ("ad_autoencoder", "int8"),
    ("wav2letter", "int8"),
    ("yolov4_tiny_416", "int8"),
    ("efficientnet_lite0_224", "int8"),
    ("mobilenet_v1_a025_96_vww", "int8"),
    ("deeplabv3_mnv2_dm05_513_tf1", "int8fio"),
]
"""Published-row models outside keras.applications (``recipes``), checked, never fitted."""


def run_vela(model: Path, target: str) -> tuple[float, dict[str, float]]:
    """(inference seconds, cycles per output-tensor name) from Vela's CSV outputs."""
    tc = load_target(target).raw["toolchain"]
    out = cache_root().parent / "vela" / target / model.stem
    summary = out / f"{model.stem}_summary_{tc['vela_system_config']}.csv"
    if not summary.exists():
        out.mkdir(parents=True, exist_ok=True)
        cmd = [shutil.which("vela") or "vela", str(model), "--output-dir", str(out),
               "--accelerator-config", tc["vela_accelerator_config"],
               "--system-config", tc["vela_system_config"],
               "--memory-mode", tc["vela_memory_mode"], "--verbose-performance"]  # fmt: skip
        subprocess.run(cmd, check=True, capture_output=True, text=True)
    row = next(csv.DictReader(summary.open()))
    cycles: dict[str, float] = {}
    for r in csv.DictReader((out / f"{model.stem}_per-layer.csv").open()):
        cycles[r["Name"]] = cycles.get(r["Name"], 0.0) + float(r["Op Cycles"])
    clock = float(row["core_clock"])
    return float(row["inference_time"]), {k: v / clock for k, v in cycles.items()}


CYCLE_CLASSES = ("conv", "linalg", "depthwise_conv", "pool")
"""Op classes whose NPU time infercast takes from Vela's own cycle model, per layer (its
block search and ``EstimateMacOpCycles``; ``infercast.estimate.work.vela_npu_cycles``;
``linalg`` is a fully-connected layer, a 1x1 convolution to Vela):
their efficiency is 1 by construction, not fitted."""


def vela_rates(models: list[Path], target: str) -> dict[str, float]:
    """The efficiencies held at 1: the op classes of ``CYCLE_CLASSES`` (``models`` and
    ``target`` unused; kept for the leave-one-out loop's signature)."""
    del models, target
    return {f"units.npu.efficiency.{c}": 1.0 for c in CYCLE_CLASSES}


def npu_sample(model: Path, target: str, vela_s: float) -> Sample:
    """The model's accelerator kernels as one sample, measured = Vela's inference time.

    Whole architectures, not layers: Vela names a convolution that writes straight into
    a concatenation's output (Inception, DenseNet) or absorbs a PAD after the op it
    merges with, so its per-layer rows do not map one to one onto the model's ops."""
    fc = estimate(model, vela_view(load_target(target)))
    works = tuple(w for _, w in fc.works if not w.on_fallback and not w.elided)
    return Sample(model.stem, works, vela_s, whole_model=False)


def vela_keys(target: str) -> list[str]:
    """The fitted keys: the NPU's efficiencies and overhead, and each memory's bandwidth (as
    Vela models it: bursts and re-reads make it lower than the system config's figure) where
    the target does not model Vela's per-block IFM re-reads (``ifm_refetch_depth`` 0); where
    it does, the memories stay at the system config's bandwidths."""
    tgt = load_target(target)
    if tgt.units["npu"].ifm_refetch_depth > 0:
        return list(KEYS)  # Vela's block re-reads and SRAM / DRAM placement modelled: nominal
    return [*KEYS, *(f"memories.{m}.bandwidth_bytes_per_s" for m in tgt.memories)]


def starts(keys: list[str]) -> list[dict[str, float]]:
    """Extra start points: every efficiency low, or one at a time (a class the stated values
    leave memory-bound has no gradient there), with broadcast re-reads of 1 to 8 bytes."""
    effs = [k for k in keys if ".efficiency." in k]
    out = [{**{k: 0.02 for k in effs}, "units.npu.broadcast_read_factor": f} for f in (1.0, 8.0)]
    out += [{k: 0.01, "units.npu.broadcast_read_factor": 4.0} for k in effs]
    return out


def vela_base(target: str) -> Params:
    """The target's stated numbers without the crossings, the copies back to the CPU too
    (Vela's figure has none), each
    memory at the system config's bandwidth (the prior of its fitted efficiency)."""
    tgt = load_target(target)
    return replace(Params.stated(tgt), crossing_fixed_s=0.0, crossing_bytes_per_s=1e15,
                   crossing_readback_bytes_per_s=0.0, bandwidth=nominal(target))  # fmt: skip


def nominal(target: str) -> dict[str, float]:
    """Each memory's bandwidth as the target file (and vela.ini) states it."""
    return {m.name: m.bandwidth_bytes_per_s for m in load_target(target).memories.values()}


def bandwidth_bounds(target: str) -> dict[str, tuple[float, float]]:
    """A memory achieves at most its stated bandwidth: the fit finds its efficiency."""
    return {f"memories.{m}.bandwidth_bytes_per_s": (1e6, bw) for m, bw in nominal(target).items()}


def vela_fit(samples: list[Sample], target: str, rates: dict[str, float]) -> Any:
    """The fit of ``vela_keys`` with the ``rates`` read from Vela's per-layer cycles held."""
    keys = vela_keys(target)
    base = vela_base(target).with_values(rates)
    return fit_values(samples, base, keys, extra_starts=starts(keys),
                      bounds=bandwidth_bounds(target))  # fmt: skip


def held_out(target: str, fit: Params, stated: Params) -> list[dict[str, Any]]:
    """Vela against infercast on ``HELD_OUT``: with ``fit`` (fitted on every keras.applications
    architecture) and as the target file states it. Printed; returned for ``--json``."""
    paths = ensure(HELD_OUT)
    print(f"  held-out architectures (not in any fit): {'Vela':>9s} {'fit':>9s} {'ratio':>6s} "
          f"{'file':>9s} {'ratio':>6s}")  # fmt: skip
    rows = []
    for key in HELD_OUT:
        vela_s, _ = run_vela(paths[key], target)
        s = npu_sample(paths[key], target, vela_s)
        f, g = predict(s, fit), predict(s, stated)
        rows.append({"architecture": s.name, "vela_s": vela_s, "fit_s": f, "file_s": g})
        print(f"  {s.name:40s} {vela_s * 1e3:9.3f} {f * 1e3:9.3f} {f / vela_s:6.2f} "
              f"{g * 1e3:9.3f} {g / vela_s:6.2f}")  # fmt: skip
    n_fit = sum(1 for r in rows if abs(r["fit_s"] / r["vela_s"] - 1) <= TOLERANCE)
    n_file = sum(1 for r in rows if abs(r["file_s"] / r["vela_s"] - 1) <= TOLERANCE)
    print(f"  held out, within ±{TOLERANCE:.0%} of Vela: fit on the 14 {n_fit}/{len(rows)}, "
          f"the target file as shipped {n_file}/{len(rows)}")  # fmt: skip
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--targets", nargs="*", default=["ethos-u55-128", "ethos-u65-256"])
    ap.add_argument("--fit", action="store_true", help="print the fit on every architecture")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    paths = ensure([(n, "int8") for n in VELA_SET])
    report: dict[str, Any] = {}
    for target in args.targets:
        tgt = load_target(target)
        stated = replace(
            Params.of(tgt),
            crossing_fixed_s=0.0,
            crossing_bytes_per_s=1e15,
            crossing_readback_bytes_per_s=0.0,
        )
        samples = []
        for name in VELA_SET:
            vela_s, _ = run_vela(paths[(name, "int8")], target)
            samples.append(npu_sample(paths[(name, "int8")], target, vela_s))
        print(f"\n{target} (Vela {tgt.raw['toolchain']['vela_system_config']}): NPU ms per "
              "inference")  # fmt: skip
        print(f"  {'architecture':26s} {'Vela':>9s} {'file':>9s} {'ratio':>6s} "
              f"{'LOO fit':>9s} {'ratio':>6s}")  # fmt: skip
        rows = []
        models = [paths[(n, "int8")] for n in VELA_SET]
        for i, s in enumerate(samples):
            others = samples[:i] + samples[i + 1 :]
            rates = vela_rates(models[:i] + models[i + 1 :], target)
            loo = predict(s, vela_fit(others, target, rates).params)
            as_file = predict(s, stated)
            rows.append({"architecture": s.name, "vela_s": s.measured_s, "file_s": as_file,
                         "loo_s": loo})  # fmt: skip
            print(
                f"  {s.name:26s} {s.measured_s * 1e3:9.3f} {as_file * 1e3:9.3f} "
                f"{as_file / s.measured_s:6.2f} {loo * 1e3:9.3f} {loo / s.measured_s:6.2f}"
            )
        within = sum(1 for r in rows if abs(r["loo_s"] / r["vela_s"] - 1) <= TOLERANCE)
        within_file = sum(1 for r in rows if abs(r["file_s"] / r["vela_s"] - 1) <= TOLERANCE)
        med = statistics.median(abs(r["loo_s"] / r["vela_s"] - 1) for r in rows)
        print(f"  within ±{TOLERANCE:.0%} of Vela: leave-one-architecture-out {within}/{len(rows)}"
              f", the target file as shipped {within_file}/{len(rows)}; LOO median |error| "
              f"{med:.0%}")  # fmt: skip
        rates = vela_rates(models, target)
        f = vela_fit(samples, target, rates)
        report[target] = {"rows": rows, "within_loo": within, "within_file": within_file,
                          "held_out": held_out(target, f.params, stated)}  # fmt: skip
        if args.fit:
            print("  fit on every architecture (for the target file):")
            for k, v in rates.items():
                print(f"    {k} = {v:.4g}  (Vela's per-layer cycle model)")
            bws = nominal(target)
            for k, v in f.values.items():
                if k.startswith("memories."):
                    m = k.split(".")[1]
                    print(f"    memories.{m}.efficiency = {v / bws[m]:.4g}  ({v:.4g} B/s)")
                else:
                    print(f"    {k} = {v:.4g}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
