#!/usr/bin/env python3
"""What isolating untrusted model content costs a normal ``analyze``, side by side.

Usage::

    python bench/bench_isolation.py [--repeat 5] [MODEL ...]

Default models: ``examples/mobilenet_v2_int8.tflite`` and the keras fixtures
``mobilenet_v2_fp32.onnx`` / ``resnet50_fp32.onnx`` / ``mobilenet_v2_fp32.tflite``
(keras.applications, ``weights=None``, ``tools/build_fixtures.py``).

Two ways, timed in alternation (this machine is noisy: medians of ``--repeat``):

* **isolated**: as shipped. ONNX shape inference and constant folding go to the
  long-lived forked worker of :mod:`infercast.isolation`; LiteRT (run only for
  dynamic shapes or ``--input-shape``) to a fresh interpreter.
* **in-process**: the same functions called directly in the calling process
  (``call_worker`` / ``run_isolated`` replaced by a direct call): no fork, no
  pipe, no limits -- what the isolation adds is the difference.

Each is measured as a whole command (``python -m infercast analyze M -f json``,
a fresh process: the worker's fork is paid once per command) and in process
(``infercast.analyze(M)`` after a first, untimed call: the worker is warm).
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

_IN_PROCESS = """
import importlib, sys
import infercast.isolation as iso
def _direct(target, *args, blob=None, limits=None, what=""):
    module, _, name = target.partition(":")
    fn = getattr(importlib.import_module(module), name)
    return fn(*args, *([blob] if blob is not None else []))
def _direct_one(target, payload, limits=None, *, extra_path=(), what=""):
    return _direct(target, payload)
iso.call_worker = _direct
iso.run_isolated = _direct_one
import infercast.frontends.onnx.reader as reader
reader.call_worker = _direct
"""


def _command(model: Path, isolated: bool) -> list[str]:
    code = ("" if isolated else _IN_PROCESS) + (
        "from infercast.cli import main\n"
        f"raise SystemExit(main(['analyze', {str(model)!r}, '-f', 'json']))\n"
    )
    return [sys.executable, "-c", code]


def _direct(target: str, *args: Any, blob: bytes | None = None, **_: Any) -> Any:
    module, _, name = target.partition(":")
    fn = getattr(importlib.import_module(module), name)
    return fn(*args, *([blob] if blob is not None else []))


def _time_cli(model: Path, isolated: bool) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(_command(model, isolated), capture_output=True, cwd=REPO)
    if r.returncode not in (0, 4):
        raise SystemExit(f"{model}: exit {r.returncode}: {r.stderr.decode()[-500:]}")
    return time.perf_counter() - t0


def _time_api(model: Path, isolated: bool) -> float:
    import infercast
    import infercast.frontends.onnx.reader as reader
    import infercast.isolation as iso

    saved = reader.call_worker, iso.call_worker, iso.run_isolated
    if not isolated:
        reader.call_worker = iso.call_worker = _direct
        iso.run_isolated = lambda target, payload, *a, **k: _direct(target, payload)
    try:
        t0 = time.perf_counter()
        infercast.analyze(model)
        return time.perf_counter() - t0
    finally:
        reader.call_worker, iso.call_worker, iso.run_isolated = saved


def _default_models() -> list[Path]:
    fixtures = sorted(Path.home().glob(".cache/infercast/fixtures/v*/keras"))
    keras = fixtures[-1] if fixtures else None
    models = [REPO / "examples" / "mobilenet_v2_int8.tflite"]
    if keras is not None:
        for name in ("mobilenet_v2_fp32.onnx", "resnet50_fp32.onnx", "mobilenet_v2_fp32.tflite"):
            if (keras / name).exists():
                models.append(keras / name)
    return models


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="*", type=Path)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    models = args.models or _default_models()
    print(f"medians of {args.repeat} runs, isolated and in-process alternating")
    print(
        f"{'model':32} {'how':5} {'isolated_s':>11} {'in_process_s':>13}"
        f" {'added_s':>9} {'ratio':>6}"
    )
    for model in models:
        for how, timer in (("cli", _time_cli), ("api", _time_api)):
            if how == "api":
                timer(model, True), timer(model, False)  # imports, a warm worker
            iso: list[float] = []
            direct: list[float] = []
            for _ in range(args.repeat):
                iso.append(timer(model, True))
                direct.append(timer(model, False))
            a, b = statistics.median(iso), statistics.median(direct)
            print(f"{model.name:32} {how:5} {a:11.3f} {b:13.3f} {a - b:+9.3f} {a / b:6.2f}")


if __name__ == "__main__":
    main()
