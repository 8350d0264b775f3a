#!/usr/bin/env python3
"""Activation arena: infercast's plan against TFLite Micro and Arm Vela, and planning time.

Usage::

    pip install tflite-micro ethos-u-vela     # the peers
    python bench/bench_memory.py [--no-vela] [--repeat 3]

Peers, run for real on the same files:

* **TFLite Micro** (``tflite-micro`` wheel): ``runtime.Interpreter.from_file(path,
  arena_size=...)`` plans the arena while it is built, and ``print_allocations()``
  writes the RecordingMicroAllocator's summary to stderr; "Arena allocation head"
  is the planned, non-persistent part (tensors and kernel scratch buffers), the
  number to compare with our plan. The "tail" holds persistent runtime
  structures. TFLM aborts the process on some models (an int8 SOFTMAX whose input
  scale is too small trips ``QuantizeMultiplierGreaterThanOne``), so each run is a
  subprocess; where it aborts, the same model without its trailing SOFTMAX (a
  1,000-byte op at the end, never at the peak) is planned instead and labelled.
* **Arm Vela** (``ethos-u-vela``): ``vela MODEL --accelerator-config
  ethos-u55-128 --verbose-allocation`` (default system config
  Ethos_U55_High_End_Embedded, memory mode Shared_Sram). "Total SRAM used"
  includes weight buffers streamed into SRAM; the feature-map extent (highest
  end address of the non-weight allocations) is the like-for-like number. Vela
  rewrites the graph: it runs elementwise ops in place (compare with our
  ``--in-place`` plan), pads channels to 16 (NHCWB16 bricks), and may cascade
  layers so that a whole intermediate never exists (below any full-tensor plan).

Planning time: ``plan_memory`` (lifetimes + plan + weights) on a loaded graph,
median of ``--repeat`` runs, for the fixture models and for synthetic graphs of
5,000 tensors.
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

TFLM_ARENA_BYTES = 64 << 20
"""Arena given to TFLite Micro: large enough for every fixture; TFLM reports what it used."""

_TFLM_SCRIPT = """
import sys
from tflite_micro.python.tflite_micro import runtime
interp = runtime.Interpreter.from_file(sys.argv[1], arena_size=int(sys.argv[2]))
interp.print_allocations()
"""


@dataclass(frozen=True)
class TflmResult:
    head_bytes: int | None
    """Planned (non-persistent) arena: tensors + scratch buffers; None if TFLM failed."""
    tail_bytes: int | None
    total_bytes: int | None
    error: str = ""


def tflm_arena(path: Path, arena_bytes: int = TFLM_ARENA_BYTES) -> TflmResult:
    """Build a TFLite Micro interpreter for ``path`` in a subprocess; parse its arena."""
    proc = subprocess.run(
        [sys.executable, "-c", _TFLM_SCRIPT, str(path), str(arena_bytes)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    text = proc.stdout + proc.stderr
    if proc.returncode != 0:
        sig = -proc.returncode if proc.returncode < 0 else None
        why = f"exit {proc.returncode}" + (" (SIGABRT)" if sig == 6 else "")
        tail = [ln for ln in text.strip().splitlines() if ln.strip()][-2:]
        return TflmResult(None, None, None, why + (": " + " | ".join(tail) if tail else ""))

    def grab(label: str) -> int | None:
        m = re.search(rf"Arena allocation {label} (\d+) bytes", text)
        return int(m.group(1)) if m else None

    head = grab("head")
    if head is None:
        return TflmResult(None, None, None, "no allocation summary in TFLM's output")
    return TflmResult(head, grab("tail"), grab("total"))


def strip_trailing_softmax(src: Path, dst: Path) -> bool:
    """Write ``src`` without its last operator if that is a SOFTMAX (its input becomes
    the output). Returns False (writes nothing) when the model does not end so."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema

    data = src.read_bytes()
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAs(data, 0))
    sg = model.subgraphs[0]
    if not sg.operators:
        return False
    last = sg.operators[-1]
    code = model.operatorCodes[last.opcodeIndex]
    if max(code.builtinCode, code.deprecatedBuiltinCode) != schema.BuiltinOperator.SOFTMAX:
        return False
    sg.outputs = [int(last.inputs[0])]
    sg.operators = sg.operators[:-1]
    builder = flatbuffers.Builder(len(data) + 4096)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    dst.write_bytes(bytes(builder.Output()))
    return True


@dataclass(frozen=True)
class VelaResult:
    total_sram_bytes: int | None
    """Vela's "Total SRAM used": the SRAM section's "Allocation Peak Tensor Size" in bytes
    (the summary prints it in KiB, rounded to 0.01)."""
    feature_map_bytes: int | None
    """Highest end address of the non-weight SRAM allocations."""
    weight_buffer_bytes: int | None
    npu_ops: int | None
    cpu_ops: int | None
    error: str = ""


_ALLOC_ROW = re.compile(
    r"^\s*(\d+)\s*-\s*(\d+):\s*(0x[0-9a-fA-F]+)\s*-\s*(0x[0-9a-fA-F]+):\s*(\d+):\s*(\d+):"
    r"\s*(\S+)\s*:\s(.*)$"
)


def vela_sram(path: Path, accelerator: str = "ethos-u55-128") -> VelaResult:
    """Compile ``path`` with Vela; parse its SRAM use (summary and allocation dump)."""
    vela = shutil.which("vela")
    if vela is None:
        return VelaResult(
            None, None, None, None, None, "vela not installed (pip install ethos-u-vela)"
        )
    with tempfile.TemporaryDirectory() as out:
        proc = subprocess.run(
            [
                vela,
                str(path),
                "--accelerator-config",
                accelerator,
                "--output-dir",
                out,
                "--verbose-allocation",
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
    text = proc.stdout + proc.stderr
    m = re.search(r"Total SRAM used\s+([\d.]+) KiB", text)
    if proc.returncode != 0 or m is None:
        tail = [ln for ln in text.strip().splitlines() if ln.strip()][-2:]
        return VelaResult(
            None, None, None, None, None, f"exit {proc.returncode}: {' | '.join(tail)}"
        )
    total = round(float(m.group(1)) * 1024)
    fm_end = 0
    wb = 0
    in_sram = False
    for line in text.splitlines():
        if line.startswith("Allocation, memory"):
            in_sram = "Sram" in line
            continue
        if line.startswith("Allocation Peak Tensor Size:") and in_sram:
            # the same figure as the summary's "Total SRAM used", in bytes
            peak = re.search(r"(\d+) bytes", line)
            if peak:
                total = int(peak.group(1))
        if "Allocation" in line or line.startswith("#"):
            in_sram = False
            continue
        row = _ALLOC_ROW.match(line)
        if not row or not in_sram:
            continue
        end = int(row.group(4), 16)
        name = row.group(8).strip()
        if name.startswith("WB_"):
            wb = max(wb, int(row.group(5)))
        else:
            fm_end = max(fm_end, end)

    def ops(label: str) -> int | None:
        mm = re.search(rf"{label} operators = (\d+)", text)
        return int(mm.group(1)) if mm else None

    return VelaResult(total, fm_end, wb, ops("NPU"), ops("CPU"))


def synthetic_graph(n: int, seed: int = 0, skip: int = 8):  # type: ignore[no-untyped-def]
    """An IR graph of ``n`` activation tensors: a chain of convs whose every third
    node adds a residual from up to ``skip`` steps back; random NHWC int8 sizes."""
    from infercast.ir.dtypes import DType
    from infercast.ir.graph import Graph, Node, Tensor

    rng = random.Random(seed)
    tensors = {"x": Tensor("x", DType.INT8, (1, 64, 64, 16))}
    nodes = []
    names = ["x"]
    for i in range(n - 1):
        ins: tuple[str, ...] = (names[-1],)
        if i % 3 == 0 and len(names) > skip:
            ins = (names[-1], names[-rng.randint(2, skip)])
        c = rng.choice([8, 16, 24, 32, 64, 96])
        hw = rng.choice([8, 16, 32, 64])
        out = f"t{i}"
        tensors[out] = Tensor(out, DType.INT8, (1, hw, hw, c))
        nodes.append(Node(i, out, "add" if len(ins) == 2 else "conv", "X", ins, (out,)))
        names.append(out)
    return Graph("synthetic", "tflite", "NHWC", tensors, tuple(nodes), ("x",), (names[-1],))


def _median_s(fn, repeat: int) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    times = []
    result = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def _fixed_shapes(path: Path) -> dict[str, tuple[int, ...]]:
    """Shapes for ONNX inputs with symbolic dimensions: 1, except a 512-sample window
    for an input named "input" (silero VAD at 16 kHz)."""
    if path.suffix != ".onnx":
        return {}
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    inits = {t.name for t in model.graph.initializer}
    out = {}
    for vi in model.graph.input:
        dims = [
            d.dim_value if d.HasField("dim_value") else None for d in vi.type.tensor_type.shape.dim
        ]
        if vi.name in inits or None not in dims:
            continue
        out[vi.name] = tuple(
            d if d is not None else (512 if vi.name == "input" and i == len(dims) - 1 else 1)
            for i, d in enumerate(dims)
        )
    return out


def _kib(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-vela", action="store_true", help="skip Vela (slow on ResNet-50)")
    args = ap.parse_args()
    from build_fixtures import ensure
    from infercast.analysis.memory import plan_graph
    from infercast.frontends import load

    keras = ensure("keras")
    edge = ensure("edge")
    int8 = [keras / f"{m}_int8.tflite" for m in ("mobilenet_v1", "mobilenet_v2", "resnet50")]
    int8.append(edge / "convs_5x5_7x7_int8.tflite")
    tmp = Path(tempfile.mkdtemp())

    print("Activation arena, bytes (ours: 16-byte alignment; in-place: --in-place)")
    print(
        f"{'model':28} {'our bound':>10} {'our plan':>10} {'in-place':>10} "
        f"{'TFLM head':>10} {'plan/TFLM':>9} {'Vela FM':>10} {'Vela SRAM':>10} "
        f"{'in-pl/Vela':>10}"
    )
    notes: list[str] = []
    for path in int8:
        g = load(path)
        ours = plan_graph(g)
        inpl = plan_graph(g, in_place=True)
        tflm = tflm_arena(path)
        label = path.name
        tflm_plan = ours.arena_bytes
        if tflm.head_bytes is None:
            notes.append(f"TFLM on {path.name}: {tflm.error}")
            stripped = tmp / f"{path.stem}_nosoftmax.tflite"
            if strip_trailing_softmax(path, stripped):
                tflm = tflm_arena(stripped)
                tflm_plan = plan_graph(load(stripped)).arena_bytes
                label += " *"
        vela = (
            VelaResult(None, None, None, None, None, "skipped") if args.no_vela else vela_sram(path)
        )
        if vela.error and not args.no_vela:
            notes.append(f"Vela on {path.name}: {vela.error}")
        r_tflm = f"{tflm_plan / tflm.head_bytes:.3f}" if tflm.head_bytes else "-"
        r_vela = f"{inpl.arena_bytes / vela.total_sram_bytes:.3f}" if vela.total_sram_bytes else "-"
        print(
            f"{label:28} {ours.lower_bound_bytes:>10,} {ours.arena_bytes:>10,} "
            f"{inpl.arena_bytes:>10,} {_kib(tflm.head_bytes):>10} {r_tflm:>9} "
            f"{_kib(vela.feature_map_bytes):>10} {_kib(vela.total_sram_bytes):>10} {r_vela:>10}"
        )
    print("* TFLM aborted on the model as built; compared on it without its final SOFTMAX")
    for n in notes:
        print("  " + n)

    print("\nOur plan vs our lower bound on every fixture model (16-byte alignment)")
    print(f"{'group':12} {'models':>6} {'at bound':>8} {'max plan/bound':>14} {'worst':>40}")
    for group in ("keras", "edge", "mediapipe", "onnx_light", "silero", "onnx_node"):
        d = ensure(group)
        paths = sorted([*d.glob("*.tflite"), *d.glob("*.onnx"), *d.glob("*/model.onnx")])
        worst = (1.0, "")
        at = 0
        count = 0
        for p in paths:
            try:
                m = plan_graph(load(p, _fixed_shapes(p)))
            except Exception:  # unloadable test models (bad-input cases) are not plans
                continue
            count += 1
            r = m.arena_bytes / max(m.aligned_lower_bound_bytes, 1)
            at += r <= 1.0
            if r > worst[0]:
                worst = (r, p.parent.name if p.name == "model.onnx" else p.name)
        print(f"{group:12} {count:>6} {at:>8} {worst[0]:>14.4f} {worst[1]:>40}")

    print(f"\nPlanning time (plan_memory on a loaded graph; median of {args.repeat})")
    cases = [
        (p.name, load(p)) for p in [*sorted(keras.glob("*.tflite")), *sorted(keras.glob("*.onnx"))]
    ]
    cases += [
        ("synthetic 5,000 (skip 8)", synthetic_graph(5000, skip=8)),
        ("synthetic 5,000 (skip 64)", synthetic_graph(5000, skip=64)),
        ("synthetic 5,000 (skip 400)", synthetic_graph(5000, skip=400)),
    ]
    print(f"{'graph':28} {'tensors':>8} {'ms':>8} {'arena':>12} {'bound':>12} strategy")
    for name, g in cases:
        t, m = _median_s(lambda g=g: plan_graph(g), args.repeat)
        print(
            f"{name:28} {len(m.lifetimes.tensors):>8} {t * 1e3:>8.1f} {m.arena_bytes:>12,} "
            f"{m.aligned_lower_bound_bytes:>12,} {m.strategy}"
        )


if __name__ == "__main__":
    main()
