"""Models shipped inside published wheels: ONNX's "light" model zoo copies (weights
as ConstantOfShape nodes, with reference outputs), silero-vad's ONNX models
(control flow, symbolic inputs) and mediapipe's TFLite models (custom ops, fp16
and sparse weights)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

import infercast
from conftest import manifest

LIGHT = [
    "light_bvlc_alexnet",
    "light_densenet121",
    "light_inception_v1",
    "light_inception_v2",
    "light_resnet50",
    "light_shufflenet",
    "light_squeezenet",
    "light_vgg19",
    "light_zfnet512",
]


@pytest.mark.parametrize("name", LIGHT)
def test_light_models_output_shape_matches_onnx_reference(name: str, onnx_light_dir: Path) -> None:
    a = infercast.analyze(onnx_light_dir / f"{name}.onnx")
    assert a.totals.complete, (a.unsupported, a.notes)
    # ONNX ships the model's reference output next to it.
    ref = onnx.numpy_helper.to_array(onnx.load_tensor(str(onnx_light_dir / f"{name}_output_0.pb")))
    (out,) = a.graph.outputs
    assert a.graph.tensors[out].shape == tuple(ref.shape)
    # Weights are ConstantOfShape nodes: folded, counted as the consumers' parameters.
    folded = [ly for ly in a.layers if ly.status == "folded"]
    assert folded and a.totals.params > 0
    assert a.totals.weight_bytes == 4 * a.totals.params  # fp32 weights


def test_light_resnet50_is_resnet50_v1_5(onnx_light_dir: Path) -> None:
    a = infercast.analyze(onnx_light_dir / "light_resnet50.onnx")
    # figures.md: ResNet-50 v1.5 (torchvision, stride in the 3x3): 4,089,184,256 MACs,
    # 25,557,032 params with BN gamma and beta; the ONNX model also stores each BN's
    # running mean and variance (2 more per channel, 26,560 BN channels).
    assert a.totals.macs == 4_089_184_256
    bn = [n for n in a.graph.nodes if n.op == "batch_normalization"]
    bn_channels = sum(a.graph.tensors[n.inputs[1]].elements or 0 for n in bn)
    assert bn_channels == 26_560
    assert a.totals.params == 25_557_032 + 2 * bn_channels


def test_light_vgg19_macs_and_params_from_the_architecture(onnx_light_dir: Path) -> None:
    # VGG-19 (Simonyan & Zisserman 2015, configuration E) at 224x224: 3x3 convs,
    # 2x2 max pools, then FC 25088 -> 4096 -> 4096 -> 1000.
    cfg = [
        64,
        64,
        "M",
        128,
        128,
        "M",
        256,
        256,
        256,
        256,
        "M",
        512,
        512,
        512,
        512,
        "M",
        512,
        512,
        512,
        512,
        "M",
    ]
    size, cin, macs, params = 224, 3, 0, 0
    for v in cfg:
        if v == "M":
            size //= 2
            continue
        assert isinstance(v, int)
        macs += size * size * v * cin * 9
        params += v * cin * 9 + v
        cin = v
    for fin, fout in [(512 * 7 * 7, 4096), (4096, 4096), (4096, 1000)]:
        macs += fin * fout
        params += fin * fout + fout
    a = infercast.analyze(onnx_light_dir / "light_vgg19.onnx")
    assert a.totals.macs == macs == 19_632_062_464
    assert a.totals.params == params == 143_667_240  # torchvision's published count


def test_silero_symbolic_inputs_are_refused_with_the_option(
    silero_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from infercast.cli import main

    code = main(["analyze", str(silero_dir / "silero_vad.onnx")])
    err = capsys.readouterr().err
    assert code == 2
    assert "input [?x?]" in err and "state [2x?x128]" in err
    # Every unknown dimension set to 1 does not propagate (an input of one sample; ONNX
    # Runtime rejects it too): no suggestion rather than an invalid one.
    assert "--input-shape input=1x1" not in err and "--input-shape NAME=DIMS" in err


def test_silero_static_model_is_complete(silero_dir: Path) -> None:
    # The OpenVINO export has static inputs, its STFT padding is computed from
    # constants (ConstantOfShape -> Concat -> Reshape -> Transpose -> Cast -> Pad):
    # shapes after it are known only once those constants are evaluated.
    a = infercast.analyze(silero_dir / "silero_vad_openvino_16k.onnx")
    assert a.totals.complete, a.notes
    assert any("evaluated (onnx.reference)" in n for n in a.notes)
    lstm = [ly for ly in a.layers if ly.op == "lstm"]
    assert len(lstm) == 1
    g = a.graph
    node = g.nodes[lstm[0].index]
    w, r = (g.tensors[n] for n in node.inputs[1:3])
    x = g.tensors[node.inputs[0]]
    assert x.shape is not None and w.elements and r.elements
    steps, batch = x.shape[0], x.shape[1]
    assert steps is not None and batch is not None
    assert lstm[0].macs == steps * batch * (w.elements + r.elements)
    # Everything ONNX Runtime computes for the outputs matches our shapes.
    import onnxruntime as ort

    sess = ort.InferenceSession(str(silero_dir / "silero_vad_openvino_16k.onnx"))
    feeds = {
        i.name: np.zeros([d if isinstance(d, int) else 1 for d in i.shape], np.float32)
        for i in sess.get_inputs()
    }
    outs = sess.run(None, feeds)
    for o, arr in zip(sess.get_outputs(), outs, strict=True):
        assert g.tensors[o.name].shape == arr.shape


@pytest.mark.parametrize(
    "name, shapes",
    [
        ("silero_vad.onnx", {"input": (1, 512), "state": (2, 1, 128)}),
        ("silero_vad_16k_op15.onnx", {"input": (1, 512), "state": (2, 1, 128)}),
        ("silero_vad_half.onnx", {"input": (1, 512), "state": (2, 1, 128)}),
        ("silero_vad_op18_ifless.onnx", {"input": (1, 512), "state": (2, 1, 128)}),
        ("silero_vad_16k_sequence.onnx", {"input": (4, 576)}),
    ],
)
def test_silero_models_load_with_input_shapes(
    name: str, shapes: dict[str, tuple[int, ...]], silero_dir: Path
) -> None:
    a = infercast.analyze(silero_dir / name, shapes)
    assert a.totals.macs > 0
    assert not a.unsupported
    # Any layer without a cost says why (shapes decided inside control flow).
    for ly in a.layers:
        if ly.status == "unknown_shape":
            assert ly.note
    if not a.totals.complete:
        assert any("not known statically" in n for n in a.notes)


def test_mediapipe_models_all_load_and_name_their_custom_ops(mediapipe_dir: Path) -> None:
    info = manifest(mediapipe_dir)["files"]
    assert len(info) >= 14
    seen_custom: set[str] = set()
    for fname, meta in info.items():
        a = infercast.analyze(mediapipe_dir / fname)
        assert a.totals.macs > 0, fname
        custom = set(meta.get("custom_ops", []))
        reported = {u.native_op for u in a.unsupported}
        # Every custom op in the file is reported by name as unsupported …
        assert {f"custom:{c}" for c in custom} <= reported, fname
        # … and nothing else is.
        assert {r for r in reported if not r.startswith("custom:")} == set(), fname
        seen_custom |= custom
        if meta.get("sparse_tensors"):
            # Sparse weights are densified at load: the run-time copy is larger.
            assert a.totals.runtime_weight_bytes > a.totals.weight_bytes, fname
        if meta.get("tensor_types", {}).get("FLOAT16"):
            folded = [ly for ly in a.layers if ly.status == "folded"]
            assert folded, fname
    assert seen_custom, "mediapipe's models carry custom ops"
