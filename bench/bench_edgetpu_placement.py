#!/usr/bin/env python3
"""Edge TPU placement: infercast's against what edgetpu_compiler itself did.

A model compiled for the Edge TPU keeps, as ordinary TFLite ops, exactly what the compiler
left on the CPU; everything it mapped is inside ``edgetpu-custom-op``. Given pairs of a model
and its compiled file, this script places the original with ``infercast check -t
edgetpu-usb`` and compares, op type by op type, what each leaves on the CPU; it also prints
the compiler's parameter split read from the compiled package (cached on chip / streamed
every inference, host scratch), and the on-chip activation memory the compiler kept (its
``used_narrow_memory_bytes_per_tile`` x 16 tiles) beside the room the forecast keeps for
activations in the parameter cache (the largest layer's in + out, at most 3 MiB:
``_edgetpu.toml``), with their ratio and the median ratio over the pairs.

The pairs: every ``X_edgetpu.tflite`` in DIR with its ``X.tflite`` beside it. Coral's
test-data repository holds such pairs (github.com/google-coral/test_data, e.g. the MobileNet
v1 family, ``deeplabv3_mnv2_pascal_quant``, ``deeplabv3_mnv2_dm05_pascal_quant``,
``deeplab_mobilenet_edgetpu_slim_cityscapes_quant``, ``movenet_single_pose_lightning_ptq``,
``keras_lstm_mnist_ptq``); the two smallest compiled files and the LSTM's original are in
``tests/data/edgetpu``. Exit status 1 when some pair's CPU ops differ.

Usage::

    python bench/bench_edgetpu_placement.py [DIR ...]   # default: tests/data/edgetpu
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

import infercast  # noqa: E402
from infercast.frontends.edgetpu_package import compiled_split  # noqa: E402
from infercast.frontends.tflite import EDGETPU_OP  # noqa: E402

TILES = 16
"""Edge TPU tiles, each with its own activation ("narrow") memory (``_edgetpu.toml``)."""


def compare(original: Path, compiled: Path, target: str) -> tuple[bool, float | None]:
    """Print one pair's comparison; (both leave the same ops on the CPU, forecast / compiler
    on-chip activation bytes, None where either is 0)."""
    nodes = infercast.load(compiled).nodes
    comp = collections.Counter(n.native_op for n in nodes if n.native_op != EDGETPU_OP)
    tile = max((int(n.attrs.get("edgetpu_activation_bytes_per_tile", 0)) for n in nodes), default=0)
    chk = infercast.check(original, target)
    fit = chk.fit.get("parameter_cache")
    ours_act = fit.parts.get("layer_io_bytes", 0) if fit is not None else 0
    ours = collections.Counter(
        ly.native_op for ly in chk.layers if ly.placement == "cpu" and not ly.folded
    )
    cached, streamed = compiled_split(compiled)
    same = ours == comp
    print(
        f"{original.stem[:44]:44s} compiler CPU ops {sum(comp.values()):3d}  infercast "
        f"{sum(ours.values()):3d}  {'same' if same else 'DIFFER'}   parameters cached "
        f"{cached:>9,} B, streamed {streamed:>7,} B"
    )
    ratio = ours_act / (tile * TILES) if ours_act and tile else None
    print(
        f"    on-chip activations: compiler {tile * TILES:>9,} B ({tile:,} B a tile), "
        f"infercast {ours_act:>9,} B" + (f"  ratio {ratio:.2f}" if ratio else "")
    )
    for label, extra in (("infercast only", ours - comp), ("compiler only", comp - ours)):
        if extra:
            print(f"    on the CPU for {label}: {dict(extra)}")
    return same, ratio


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="*", type=Path, default=[REPO / "tests" / "data" / "edgetpu"])
    ap.add_argument("-t", "--target", default="edgetpu-usb")
    a = ap.parse_args()
    pairs = [
        (c.with_name(c.name.removesuffix("_edgetpu.tflite") + ".tflite"), c)
        for d in a.dirs
        for c in sorted(d.glob("*_edgetpu.tflite"))
    ]
    pairs = [(o, c) for o, c in pairs if o.exists()]
    if not pairs:
        print("no X.tflite / X_edgetpu.tflite pairs found", file=sys.stderr)
        return 2
    results = [compare(o, c, a.target) for o, c in pairs]
    same = [s for s, _ in results]
    ratios = sorted(r for _, r in results if r)
    print(f"\n{sum(same)} of {len(same)} models: the same ops left on the CPU as edgetpu_compiler")
    if ratios:
        print(
            f"on-chip activations, infercast / compiler on {len(ratios)} models: median "
            f"{statistics.median(ratios):.2f}, range {ratios[0]:.2f}-{ratios[-1]:.2f}"
        )
    return 0 if all(same) else 1


if __name__ == "__main__":
    sys.exit(main())
