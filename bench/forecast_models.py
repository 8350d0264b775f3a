#!/usr/bin/env python3
"""Build (and cache) the validation architectures of ``bench/bench_forecast.py``.

keras.applications models with ``weights=None`` (seeded random weights,
batch 1, 1000 classes), none of which calibration ever sees, written as fp32
TFLite (the TFLite converter) and fp32 ONNX (tf2onnx, opset 17), under
``~/.cache/infercast/forecast_models/v1/`` (``$INFERCAST_CACHE`` moves the root).

Usage::

    python bench/forecast_models.py [--only NAME ...]

Each model is converted in its own subprocess (TensorFlow's memory is
returned between models); a model whose conversion fails is reported and
left out, never silently replaced.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

VERSION = 1
SEED = 20240601
ONNX_OPSET = 17

# name -> (keras class, kwargs, input side). Chosen for variety: depthwise-separable
# (MobileNet family, Xception), squeeze-excite and swish / hard-swish (EfficientNet,
# MobileNetV3), dense concatenation (DenseNet), pre-activation residuals (ResNetV2),
# multi-branch (InceptionV3), deep plain residual stacks (ResNet101), other input sizes.
MODELS: dict[str, tuple[str, dict[str, object], int]] = {
    "mobilenet_a050": ("MobileNet", {"alpha": 0.5}, 224),
    "mobilenet_v2_a035": ("MobileNetV2", {"alpha": 0.35}, 224),
    "mobilenet_v2_a140": ("MobileNetV2", {"alpha": 1.4}, 224),
    "mobilenet_v3_small": ("MobileNetV3Small", {"include_preprocessing": False}, 224),
    "mobilenet_v3_large": ("MobileNetV3Large", {"include_preprocessing": False}, 224),
    "efficientnet_b0": ("EfficientNetB0", {}, 224),
    "efficientnet_v2_b0": ("EfficientNetV2B0", {"include_preprocessing": False}, 224),
    "densenet121": ("DenseNet121", {}, 224),
    "resnet50_v2": ("ResNet50V2", {}, 224),
    "resnet101": ("ResNet101", {}, 224),
    "inception_v3": ("InceptionV3", {}, 299),
    "xception": ("Xception", {}, 299),
    "nasnet_mobile": ("NASNetMobile", {}, 224),
    "mobilenet_v2_160": ("MobileNetV2", {}, 160),
    "resnet50_128": ("ResNet50", {}, 128),
}


def root() -> Path:
    base = os.environ.get("INFERCAST_CACHE") or str(Path.home() / ".cache" / "infercast")
    d = Path(base) / "forecast_models" / f"v{VERSION}"
    d.mkdir(parents=True, exist_ok=True)
    return d


def paths(name: str) -> tuple[Path, Path]:
    d = root()
    return d / f"{name}_fp32.tflite", d / f"{name}_fp32.onnx"


def _worker(name: str) -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras
    import tensorflow as tf
    import tf2onnx

    cls_name, kwargs, side = MODELS[name]
    keras.utils.set_random_seed(SEED)
    cls = getattr(keras.applications, cls_name, None)
    if cls is None:
        cls = getattr(keras.applications.regnet, cls_name)
    inp = keras.Input(shape=(side, side, 3), batch_size=1, name="input")
    model = cls(input_tensor=inp, weights=None, classes=1000, include_top=True, **kwargs)
    tfl, onx = paths(name)
    if not tfl.is_file():
        data = tf.lite.TFLiteConverter.from_keras_model(model).convert()
        tmp = tfl.with_suffix(".tmp")
        tmp.write_bytes(data)
        tmp.replace(tfl)
    if not onx.is_file():
        spec = [tf.TensorSpec((1, side, side, 3), tf.float32, name="input")]
        fn = tf.function(lambda x: model(x, training=False), input_signature=spec)
        proto, _ = tf2onnx.convert.from_function(fn, input_signature=spec, opset=ONNX_OPSET)
        tmp = onx.with_suffix(".tmp")
        tmp.write_bytes(proto.SerializeToString())
        tmp.replace(onx)


# Anchor models for the device anchors of latency.md (int8, per-tensor weights, as the
# published figures' models were quantised): name -> builder in _anchor_worker.
ANCHORS = ("mobilenet_v1_int8_pt", "conv3x3_64_24_int8_pt")


def anchor_path(name: str) -> Path:
    return root() / f"{name}.tflite"


def _anchor_worker(name: str) -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras
    import numpy as np
    import tensorflow as tf

    keras.utils.set_random_seed(SEED)
    if name == "mobilenet_v1_int8_pt":
        side = 224
        inp = keras.Input(shape=(side, side, 3), batch_size=1, name="input")
        model = keras.applications.MobileNet(input_tensor=inp, weights=None, classes=1000)
        shape = (1, side, side, 3)
    else:  # a single 3x3 conv, 64 -> 64 channels, 24x24: 2 x 24*24*64*64*9 = 42.5 MFLOP
        inp = keras.Input(shape=(24, 24, 64), batch_size=1, name="input")
        model = keras.Model(inp, keras.layers.Conv2D(64, 3, padding="same")(inp))
        shape = (1, 24, 24, 64)
    rng = np.random.default_rng(SEED)

    def rep():  # type: ignore[no-untyped-def]
        for _ in range(8):
            yield [rng.random(shape, dtype=np.float32)]

    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = rep
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    conv.inference_input_type = tf.int8
    conv.inference_output_type = tf.int8
    conv._experimental_disable_per_channel = True  # per-tensor weights
    data = conv.convert()
    out = anchor_path(name)
    tmp = out.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.replace(out)


def ensure_anchors(log: bool = True) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for name in ANCHORS:
        p = anchor_path(name)
        if not p.is_file():
            r = subprocess.run(
                [sys.executable, __file__, "--_anchor", name], capture_output=True, text=True
            )
            if r.returncode != 0 and log:
                tail = (r.stderr or "").strip().splitlines()[-3:]
                print(f"  {name}: conversion failed: {' | '.join(tail)}", file=sys.stderr)
        if p.is_file():
            out[name] = p
    return out


def ensure(names: list[str] | None = None, log: bool = True) -> dict[str, tuple[Path, Path]]:
    """Build what is missing; returns name -> (tflite, onnx) for the models that exist."""
    out: dict[str, tuple[Path, Path]] = {}
    for name in names or list(MODELS):
        tfl, onx = paths(name)
        if not (tfl.is_file() and onx.is_file()):
            t0 = time.time()
            r = subprocess.run(
                [sys.executable, __file__, "--_worker", name],
                capture_output=True,
                text=True,
            )
            if r.returncode != 0 and log:
                tail = (r.stderr or "").strip().splitlines()[-3:]
                print(f"  {name}: conversion failed: {' | '.join(tail)}", file=sys.stderr)
            elif log:
                print(f"  {name}: built in {time.time() - t0:.0f} s", file=sys.stderr)
        if tfl.is_file() and onx.is_file():
            out[name] = (tfl, onx)
    (root() / "manifest.json").write_text(
        json.dumps({n: [str(a), str(b)] for n, (a, b) in out.items()}, indent=1)
    )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--_worker")
    ap.add_argument("--_anchor")
    a = ap.parse_args()
    if a._worker:
        _worker(a._worker)
        return
    if a._anchor:
        _anchor_worker(a._anchor)
        return
    ensure_anchors()
    built = ensure(a.only)
    print(f"{len(built)} models in {root()}")


if __name__ == "__main__":
    main()
