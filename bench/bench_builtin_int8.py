#!/usr/bin/env python3
"""Per-element cost of TFLite's built-in int8 element-wise kernels, relative to ADD.

Where a runtime runs int8 models on TFLite's built-in kernels (no XNNPACK for int8: NXP's
i.MX BSPs, see ``src/infercast/targets/data/imx8mp-cpu.toml``), an element-wise operator's
cost per element is what its kernel does per element, not its float FLOP count: an int8
ADD rescales both inputs and its output in fixed point (``optimized_integer_ops/add.h``,
three ``vqrdmulh`` + rounding shifts per element), a MUL rescales once
(``optimized_integer_ops/mul.h``), LOGISTIC and TANH read a 256-entry lookup table, and
HARD_SWISH works through int16 fixed point (``optimized_ops.h`` ``HardSwish``). This script
measures those per-element costs here, on LiteRT's built-in kernels (no delegate, one
thread), each as its own single-op model of the same 1x64x64x64 int8 tensor (262,144
elements: the per-op overhead is under 1%), and prints them relative to ADD: the
``BUILTIN_INT8_ELEMENT_COST`` table of :mod:`infercast.estimate.work` is this output.

The host is x86, where TFLite compiles the same NEON intrinsics through NEON_2_SSE
(``tensorflow/lite/kernels/internal/optimized/neon_check.h``): the ratios carry over to an
Arm core as well as the instruction mix does, which is why only ratios are used; the
Arm core's rate for one ADD-equivalent element is fitted on the published rows.

Usage::

    python bench/bench_builtin_int8.py [--runs 50]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

SHAPE = (64, 64, 64)


def _model() -> Any:
    """One chain of the operators, float input and output (int8fio: the converter adds a
    QUANTIZE in front and a DEQUANTIZE behind, and they are measured too)."""
    import tensorflow as tf

    L = tf.keras.layers
    x = tf.keras.Input(SHAPE, batch_size=1)
    a = L.Add()([x, x])
    s = L.Subtract()([a, x])
    m = L.Multiply()([s, a])
    mx = L.Maximum()([m, s])
    hs = L.Lambda(lambda t: t * tf.nn.relu6(t + 3.0) * 0.16666667)(mx)
    sg = L.Activation("sigmoid")(hs)
    th = L.Activation("tanh")(sg)
    lr = L.LeakyReLU(0.1)(th)
    return tf.keras.Model(x, lr)


def main() -> int:
    import infercast
    from infercast.estimate.published.recipes import convert

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=50, help="inferences each op is timed over")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "chain.tflite"
        path.write_bytes(convert(_model(), "int8fio"))
        off = {"litert.xnnpack": ["off"]}
        res = infercast.bench(path, ["litert"], (1,), off, profile=True, profile_runs=args.runs)
        graph = infercast.load(path)
    run = res.to_dict()["runs"][0]
    if run["status"] != "ok" or not run.get("profile"):
        print(f"run failed: {run['status']} {run['error']}", file=sys.stderr)
        return 1
    out: dict[str, tuple[float, int]] = {}
    for p in run["profile"]:
        node = graph.nodes[p["index"]]
        elements = graph.tensors[node.outputs[0]].elements or 0
        src = graph.tensors[node.inputs[0]].dtype.name if node.inputs else ""
        key = p["op"] if p["op"] not in ("quantize", "dequantize") else f"{p['op']} ({src} in)"
        out[key] = (p["measured_s"], elements)
    base = out["add"][0] / out["add"][1]
    print(f"LiteRT built-in int8 kernels (no delegate), one thread, {args.runs} runs per op")
    print(f"{'op':22s} {'elements':>9s} {'ns/element':>10s} {'vs ADD':>7s}")
    for key, (s, el) in out.items():
        print(f"{key:22s} {el:9d} {s / el * 1e9:10.3f} {s / el / base:7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
