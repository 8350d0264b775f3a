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

``--aarch64`` counts instead the instructions the op executes on AArch64 (LiteRT's aarch64
wheel under ``qemu-aarch64``, one invoke after a warm-up one: the emulator, arm64 Python and
counting plugin of ``bench/bench_aarch64_insns.py --setup``), for ``-cpu cortex-a53`` and
``cortex-a76``, on the op cut from each SSD both as the rebuilds have it (float inputs, after
the model's own DEQUANTIZEs) and with uint8 inputs (as TF's and Coral's shipped SSD files feed
it: the op dequantises them itself). It prints the instructions per counted FLOP, and the
FLOPs a cycle that gives at the Cortex-A53's fitted instruction rate
(``imx8mp-cpu``'s ``units.cpu.instructions_per_cycle``): the rate ``_imx8mp.toml`` states.
The guest feeds standard-normal floats and uniform uint8 (``bench_aarch64_insns.GUEST_PY``):
every anchor passes the exporters' score threshold (0 or 1e-8), so the IoU loop runs near its
worst case, as it does on real images.

Usage::

    python bench/bench_detection_postprocess.py [--runs 50] [--repeats 3]
    python bench/bench_detection_postprocess.py --aarch64
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


def aarch64(work: Path) -> int:
    """Instructions of the op on AArch64 against the table's (see the module docstring)."""
    import shutil

    import infercast
    from infercast.bench.runtimes.litert_ops import cut_single_ops
    from infercast.estimate.aarch64 import op_shape, table
    from infercast.estimate.published.build import ensure
    from infercast.targets import load_target

    sys.path.insert(0, str(REPO / "bench"))
    import bench_aarch64_insns as insns

    a = argparse.Namespace(root="/opt/arm64", site="/opt/arm64site",
                           plugin="/opt/qplug/libicount.so", work=str(work))  # fmt: skip
    if not shutil.which("qemu-aarch64") or not Path(a.plugin).exists():
        print("qemu-aarch64 or the plugin is missing: run bench_aarch64_insns.py --setup")
        return 2
    work.mkdir(parents=True, exist_ok=True)
    ipc = load_target("imx8mp-cpu").calibration.values["units.cpu.instructions_per_cycle"]
    files: dict[str, str] = {}
    for (recipe, _), path in ensure([(r, "int8pt") for r in RECIPES]).items():
        one = next(b for _, op, b in cut_single_ops(path.read_bytes()) if "Detection" in op)
        assert one is not None
        for kind, data in (("float", one), ("uint8", insns.detection_variant(one, uint8=True))):
            f = work / f"{recipe}_{kind}.tflite"
            f.write_bytes(data)
            insns.detection_inputs(f)
            files[str(f)] = f"{recipe} ({kind} inputs)"
    counts = {cpu: insns.count(list(files), cpu, a) for cpu in ("cortex-a53", "cortex-a76")}
    print(
        f"instructions of one TFLite_Detection_PostProcess (LiteRT aarch64, qemu), fed as an "
        f"SSD feeds it; Cortex-A53 at {ipc:.4f} instructions a cycle (imx8mp-cpu fit)"
    )
    print(f"{'op':44s} {'FLOPs':>7s} {'A53 insns':>10s} {'table':>10s} {'ratio':>6s} "
          f"{'A76 insns':>10s} {'insns/FLOP':>10s} {'FLOP/cycle':>10s}")  # fmt: skip
    for f, name in files.items():
        g = infercast.load(f)
        node = next(n for n in g.nodes if n.op == "detection_postprocess")
        flops = next(x.flops for x in infercast.analyze(g).layers if x.index == node.index) or 0
        a53, a76 = counts["cortex-a53"].get(f), counts["cortex-a76"].get(f)
        pred = table().predict("armv8.0", op_shape(g, node))
        if a53 is None or a76 is None or not flops or pred is None:
            print(f"{name:44s} failed")
            continue
        print(f"{name:44s} {flops:7d} {a53:10.0f} {pred:10.0f} {pred / a53:6.2f} {a76:10.0f} "
              f"{a53 / flops:10.2f} {ipc * flops / a53:10.3f}")  # fmt: skip
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--aarch64", action="store_true", help="count AArch64 instructions (qemu)")
    ap.add_argument("--work", default=str(Path.home() / ".cache/infercast/detection-insns"))
    args = ap.parse_args()
    if args.aarch64:
        return aarch64(Path(args.work))

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
