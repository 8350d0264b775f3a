"""A seeded, time-bounded mutation fuzzer of the ``infercast`` CLI.

Seeds are real files: TFLite and ONNX models (the bundled example, the ``edge``
fixtures, ONNX's own node tests with their operands made constants, silero-vad's
control flow), the built-in target files, and real profiles (ONNX Runtime JSON,
TFLite ``benchmark_model`` text, TVM's debug table). Each input is a mutant of a
seed (:mod:`fuzz_mutate`) given to a command that reads it (``analyze`` in its
formats, ``check``, ``estimate``, ``--input-shape``, ``-o``, ``targets show``,
``profile import``, ``calibrate --from``), run by the fork server of
:mod:`fuzz_driver` under the time and memory bounds, and checked against the
contract. The input sequence is a function of the seed: a run of N inputs is
reproduced exactly by the same seed; the time budget only decides N.

Usage (longer campaigns than CI's; failing inputs are kept in ``--out``)::

    python tools/fuzz.py --budget 1800 --seed 7 --out /tmp/fuzz
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fuzz_driver import REPO, ForkServer, Outcome, signature, violations
from fuzz_mutate import (
    mutate_json,
    mutate_onnx,
    mutate_text,
    mutate_tflite,
    mutate_toml,
)

KIND_WEIGHTS = {"tflite": 0.35, "onnx": 0.4, "toml": 0.12, "profile": 0.13}
"""Share of the inputs mutated from each kind of seed."""
CHECK_TARGETS = ["k210-kpu", "ethos-u55-128", "edgetpu-usb", "imx8mp-npu-vx"]
ESTIMATE_TARGETS = ["rpi4-cpu", "k210-kpu", "jetson-nano-gpu", "imx8mp-npu-vx"]


@dataclass
class Seed:
    kind: str
    """``tflite`` | ``onnx`` | ``toml`` | ``profile``."""
    path: Path
    values: dict[str, Any] | None = None
    """ONNX node tests: the operands' test data (for constify)."""
    model: Path | None = None
    """Profiles: the model the profile is joined with."""
    inputs: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)
    """Models: input names and shapes (for ``--input-shape``)."""


@dataclass
class Failure:
    why: list[str]
    argv: list[str]
    kept: str
    count: int = 1


@dataclass
class Report:
    tried: int = 0
    kept_contract: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    by_rc: dict[str, int] = field(default_factory=dict)
    failures: dict[str, Failure] = field(default_factory=dict)
    wall_s: float = 0.0
    slowest_s: float = 0.0
    peak_rss_bytes: int = 0

    @property
    def percent(self) -> float:
        return 100.0 * self.kept_contract / self.tried if self.tried else 100.0

    def summary(self) -> str:
        lines = [
            f"{self.tried} inputs in {self.wall_s:.0f} s; {self.kept_contract} within the "
            f"contract ({self.percent:.2f}%); {len(self.failures)} distinct failure(s); "
            f"slowest run {self.slowest_s:.1f} s, peak RSS {self.peak_rss_bytes / 2**20:.0f} MiB",
            "  by kind: " + ", ".join(f"{k} {v}" for k, v in sorted(self.by_kind.items())),
            "  by exit: " + ", ".join(f"{k} {v}" for k, v in sorted(self.by_rc.items())),
        ]
        for sig, f in self.failures.items():
            lines.append(f"  [{f.count}x] {sig}\n      {' '.join(f.argv)}\n      kept: {f.kept}")
        return "\n".join(lines)


# --------------------------------------------------------------------------- #
# Seeds
# --------------------------------------------------------------------------- #


def _tflite_inputs(path: Path) -> list[tuple[str, tuple[int, ...]]]:
    from ai_edge_litert import schema_py_generated as schema

    data = path.read_bytes()
    m = schema.Model.GetRootAs(data, 0)
    sg = m.Subgraphs(0)
    out = []
    for k in range(sg.InputsLength()):
        t = sg.Tensors(sg.Inputs(k))
        out.append(((t.Name() or b"").decode(), tuple(int(d) for d in t.ShapeAsNumpy())))
    return out


def _onnx_inputs(path: Path) -> list[tuple[str, tuple[int, ...]]]:
    import onnx

    m = onnx.load(str(path), load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    out = []
    for vi in m.graph.input:
        if vi.name in inits or not vi.type.HasField("tensor_type"):
            continue
        dims = tuple(d.dim_value or 1 for d in vi.type.tensor_type.shape.dim)
        out.append((vi.name, dims))
    return out


def _node_test_values(case: Path) -> dict[str, Any]:
    import onnx
    from onnx import numpy_helper

    m = onnx.load(str(case / "model.onnx"))
    values: dict[str, Any] = {}
    data = case / "test_data_set_0"
    for k, vi in enumerate(m.graph.input):
        f = data / f"input_{k}.pb"
        if f.is_file():
            t = onnx.TensorProto()
            try:
                t.ParseFromString(f.read_bytes())
                values[vi.name] = numpy_helper.to_array(t)
            except Exception:
                continue
    return values


def model_seeds(
    example: Path,
    edge: Path | None,
    onnx_node: Path | None,
    silero: Path | None,
    *,
    n_node: int = 80,
    rng_seed: int = 0,
) -> list[Seed]:
    """TFLite and ONNX seeds; ``n_node`` ONNX node tests (ops the issue names first)."""
    seeds = [Seed("tflite", example, inputs=_tflite_inputs(example))]
    if edge is not None:
        for p in sorted(edge.glob("*.tflite")):
            seeds.append(Seed("tflite", p, inputs=_tflite_inputs(p)))
        for p in sorted(edge.glob("*.onnx")):
            seeds.append(Seed("onnx", p, inputs=_onnx_inputs(p)))
    if silero is not None:
        for p in sorted(silero.glob("*.onnx")):
            seeds.append(Seed("onnx", p, inputs=_onnx_inputs(p)))
    if onnx_node is not None:
        cases = sorted(p for p in onnx_node.iterdir() if (p / "model.onnx").is_file())
        first = [
            c
            for c in cases
            if any(
                k in c.name
                for k in (
                    "where",
                    "sum_",
                    "pad",
                    "onehot",
                    "hannwindow",
                    "convtranspose",
                    "einsum",
                    "regex",
                    "_if",
                    "loop",
                    "scan",
                    "range",
                    "tile",
                    "expand",
                    "constantofshape",
                    "reshape",
                    "resize",
                    "string",
                    "cumsum",
                    "topk",
                    "nonzero",
                    "unique",
                )
            )
        ]
        rest = [c for c in cases if c not in first]
        rng = random.Random(rng_seed)
        rng.shuffle(first)
        rng.shuffle(rest)
        chosen = (first[: n_node * 2 // 3] + rest)[:n_node]
        for c in chosen:
            p = c / "model.onnx"
            seeds.append(Seed("onnx", p, values=_node_test_values(c), inputs=_onnx_inputs(p)))
    return seeds


def text_seeds(
    small_onnx: Path, small_tflite: Path, extra_targets: Iterable[Path] = ()
) -> list[Seed]:
    """Built-in target files and the real profile samples of ``tests/data/profiles``."""
    seeds = [Seed("toml", p) for p in sorted((REPO / "src/infercast/targets/data").glob("*.toml"))]
    seeds.extend(Seed("toml", p) for p in extra_targets)
    prof = REPO / "tests/data/profiles"
    for p in sorted(prof.glob("ort_*.json")):
        seeds.append(Seed("profile", p, model=small_onnx))
    for p in sorted(prof.glob("tflite_*.txt")):
        seeds.append(Seed("profile", p, model=small_tflite))
    for p in sorted(prof.glob("tvm_*.txt")):
        seeds.append(Seed("profile", p, model=small_onnx))
    return seeds


# --------------------------------------------------------------------------- #
# Inputs and commands
# --------------------------------------------------------------------------- #


@dataclass
class Run:
    argv: list[str]
    json_out: bool
    inputs: list[str]
    outputs: list[str] = field(default_factory=list)
    json_files: bool = False


def _shape_opt(seed: Seed, rng: random.Random) -> list[str]:
    if not seed.inputs:
        return []
    name, shape = seed.inputs[rng.randrange(len(seed.inputs))]
    dims = [max(int(d), 1) for d in shape] or [1]
    if rng.random() < 0.4:
        k = rng.randrange(len(dims))
        dims[k] = rng.choice([1, 2, 3, 7, 4096, 100000, 2**31 - 1, 2**40])
    if rng.random() < 0.1:
        name = rng.choice([name + "x", "nope", name.upper() or "x"])
    return ["--input-shape", f"{name}={'x'.join(map(str, dims))}"]


def model_run(seed: Seed, path: Path, rng: random.Random, out_dir: Path) -> Run:
    p = str(path)
    r = rng.random()
    if r < 0.40:
        return Run(["analyze", p, "-f", "json"], True, [p])
    if r < 0.50:
        return Run(["analyze", p, "-f", "json", "--memory-plan"], True, [p])
    if r < 0.55:
        return Run(["analyze", p], False, [p])
    if r < 0.60:
        return Run(["analyze", p, "-f", "csv"], False, [p])
    if r < 0.70:
        return Run(["check", p, "-t", rng.choice(CHECK_TARGETS), "-f", "json"], True, [p])
    if r < 0.78:
        return Run(["estimate", p, "-t", rng.choice(ESTIMATE_TARGETS), "-f", "json"], True, [p])
    if r < 0.93:
        return Run(["analyze", p, "-f", "json", *_shape_opt(seed, rng)], True, [p])
    if r < 0.95:
        out = str(out_dir / "out.json")
        return Run(["analyze", p, "-f", "json", "-o", out], True, [p], [out], json_files=True)
    if r < 0.97:
        out = str(out_dir / "report.html")
        return Run(["report", p, "-t", rng.choice(ESTIMATE_TARGETS), "-o", out], False, [p], [out])
    return Run(["analyze", p, "-f", "json", "-o", p], True, [p])  # must refuse


def toml_run(path: Path, model: Path, rng: random.Random) -> Run:
    p, m = str(path), str(model)
    r = rng.random()
    if r < 0.4:
        return Run(["estimate", m, "-t", p, "-f", "json"], True, [p, m])
    if r < 0.6:
        return Run(["check", m, "-t", p, "-f", "json"], True, [p, m])
    if r < 0.8:
        return Run(["targets", "show", p, "-f", "json"], True, [p])
    return Run(["targets", "show", p], False, [p])


def profile_run(path: Path, model: Path, rng: random.Random, out_dir: Path) -> Run:
    p, m = str(path), str(model)
    if rng.random() < 0.75:
        return Run(["profile", "import", p, "--model", m, "-f", "json"], True, [p, m])
    out = str(out_dir / "calibrated.toml")
    argv = ["calibrate", "-t", "rpi4-cpu", "--from", p, "--model", m, "-o", out, "-f", "json"]
    return Run(argv, True, [p, m], [out])


# --------------------------------------------------------------------------- #
# The campaign
# --------------------------------------------------------------------------- #


def _suffix(seed: Seed) -> str:
    return {"tflite": ".tflite", "onnx": ".onnx", "toml": ".toml"}.get(seed.kind, seed.path.suffix)


def mutant(seed: Seed, data: bytes, rng: random.Random) -> bytes:
    if seed.kind == "tflite":
        return mutate_tflite(data, rng)
    if seed.kind == "onnx":
        return mutate_onnx(data, rng, seed.values)
    text = data.decode("utf-8", "replace")
    if seed.kind == "toml":
        from infercast.targets.loader import to_toml

        return mutate_toml(text, rng, to_toml).encode("utf-8", "replace")
    if seed.path.suffix == ".json":
        return mutate_json(text, rng).encode("utf-8", "replace")
    return mutate_text(text, rng).encode("utf-8", "replace")


def campaign(
    server: ForkServer,
    seeds: Sequence[Seed],
    *,
    budget_s: float,
    work: Path,
    rng_seed: int = 0,
    max_inputs: int | None = None,
    small_model: Path | None = None,
    keep: Path | None = None,
    on_run: Callable[[Outcome, list[str]], None] | None = None,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """Mutate seeds and run the CLI on each mutant until ``budget_s`` or ``max_inputs``."""
    rng = random.Random(rng_seed)
    groups: dict[str, list[Seed]] = {}
    for s in seeds:
        groups.setdefault(s.kind, []).append(s)
    kinds = sorted(groups)
    weights = [KIND_WEIGHTS.get(k, 0.1) for k in kinds]
    report = Report()
    cache: dict[Path, bytes] = {}
    t0 = time.perf_counter()
    work.mkdir(parents=True, exist_ok=True)
    while time.perf_counter() - t0 < budget_s and (max_inputs is None or report.tried < max_inputs):
        group = groups[rng.choices(kinds, weights)[0]]
        seed = group[rng.randrange(len(group))]
        data = cache.get(seed.path)
        if data is None:
            data = cache[seed.path] = seed.path.read_bytes()
        n = report.tried
        if progress is not None and n % 50 == 0:
            progress(f"{n} inputs, {time.perf_counter() - t0:.0f} s, seed {seed.path.name}")
        path = work / f"input{_suffix(seed)}"
        path.write_bytes(mutant(seed, data, rng))
        if seed.kind in ("tflite", "onnx"):
            run = model_run(seed, path, rng, work)
        elif seed.kind == "toml":
            run = toml_run(path, small_model or seed.path, rng)
        else:
            run = profile_run(path, seed.model or seed.path, rng, work)
        o = server.run(run.argv, inputs=run.inputs, outputs=run.outputs, cwd=work)
        why = violations(o, json_out=run.json_out, json_files=run.json_files)
        report.tried += 1
        report.by_kind[seed.kind] = report.by_kind.get(seed.kind, 0) + 1
        key = str(o.rc) if o.rc is not None else ("timeout" if o.timed_out else f"sig{o.signal}")
        report.by_rc[key] = report.by_rc.get(key, 0) + 1
        report.slowest_s = max(report.slowest_s, o.wall_s)
        report.peak_rss_bytes = max(report.peak_rss_bytes, o.maxrss_bytes)
        if on_run is not None:
            on_run(o, why)
        if not why:
            report.kept_contract += 1
            continue
        sig = f"{seed.kind} {run.argv[0]}: {signature(o, why)}"
        if sig in report.failures:
            report.failures[sig].count += 1
            continue
        kept = ""
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            dest = keep / f"fail{n:05d}{_suffix(seed)}"
            shutil.copyfile(path, dest)
            (keep / f"fail{n:05d}.json").write_text(
                json.dumps({"argv": run.argv, "why": why, "seed": str(seed.path)}, indent=1)
            )
            kept = str(dest)
        report.failures[sig] = Failure(why, run.argv, kept)
    report.wall_s = time.perf_counter() - t0
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--budget", type=float, default=300.0, help="seconds")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-inputs", type=int, default=None)
    ap.add_argument("--kinds", default="tflite,onnx,toml,profile")
    ap.add_argument("--node-tests", type=int, default=120, help="ONNX node-test seeds")
    ap.add_argument("--out", type=Path, default=Path("/tmp/infercast-fuzz"))
    args = ap.parse_args(argv)
    sys.path.insert(0, str(REPO / "src"))
    from build_fixtures import ensure

    kinds = set(args.kinds.split(","))
    example = REPO / "examples" / "mobilenet_v2_int8.tflite"
    edge = ensure("edge")
    seeds = [
        s
        for s in model_seeds(
            example,
            edge,
            ensure("onnx_node"),
            ensure("silero"),
            n_node=args.node_tests,
            rng_seed=args.seed,
        )
        if s.kind in kinds
    ]
    small_onnx = edge / "convs_5x5_7x7.onnx"
    seeds += [s for s in text_seeds(small_onnx, example) if s.kind in kinds]
    with ForkServer() as server:
        report = campaign(
            server,
            seeds,
            budget_s=args.budget,
            work=args.out / "work",
            rng_seed=args.seed,
            max_inputs=args.max_inputs,
            small_model=small_onnx,
            keep=args.out / "failures",
            progress=lambda msg: print(msg, file=sys.stderr, flush=True),
        )
    print(report.summary())
    return 0 if not report.failures else 1


if __name__ == "__main__":
    raise SystemExit(main())
