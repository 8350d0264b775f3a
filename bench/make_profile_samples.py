#!/usr/bin/env python3
"""Write the ONNX Runtime profile samples in tests/data/profiles/ by running ORT here.

    python bench/make_profile_samples.py

Profiles ``convs_5x5_7x7.onnx`` (fixture group ``edge``) on one thread with
graph optimisations on (``ort_convs_opt_all.json``: fused / NCHWc-rewritten
nodes) and off (``ort_convs_opt_disable.json``: the model's nodes one to one),
5 runs each. These are ONNX Runtime's own files, copied unchanged.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
from build_fixtures import ensure  # noqa: E402

OUT = REPO / "tests" / "data" / "profiles"


def main() -> int:
    import onnxruntime as ort

    model = ensure("edge") / "convs_5x5_7x7.onnx"
    levels = {
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
        "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    }
    for name, level in levels.items():
        with tempfile.TemporaryDirectory() as tmp:
            so = ort.SessionOptions()
            so.graph_optimization_level = level
            so.intra_op_num_threads = 1
            so.enable_profiling = True
            so.profile_file_prefix = str(Path(tmp) / "p")
            sess = ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])
            inp = sess.get_inputs()[0]
            x = np.random.default_rng(0).uniform(-1, 1, size=inp.shape).astype(np.float32)
            for _ in range(5):
                sess.run(None, {inp.name: x})
            path = sess.end_profiling()
            dest = OUT / f"ort_convs_opt_{name}.json"
            shutil.copy(path, dest)
            print(f"{dest} ({ort.__version__})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
