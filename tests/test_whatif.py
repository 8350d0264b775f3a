"""What-if variants against the real converters.

A resolution variant of a keras.applications model must be, layer for layer, the
same architecture converted at that resolution (the ``whatif`` fixture group: the
TFLite converter and tf2onnx run at 128 / 160 / 192); a width variant of a
MobileNet the same as keras' own ``alpha`` model (MobileNetV2 with ``--keep
Conv_1``, which keras keeps at 1280 channels for alpha <= 1, as the paper does).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import infercast
from infercast.analysis.cost import Analysis, analyze_graph
from infercast.analysis.memory import plan_graph
from infercast.frontends import load
from infercast.ir.graph import Graph
from infercast.targets import load_target
from infercast.whatif import VariantSpec, transform, whatif
from infercast.whatif.evaluate import evaluate
from infercast.whatif.spec import VariantError, parse_replacements


def _layers(a: Analysis) -> list[tuple[str, tuple[object, ...], int | None, int]]:
    return [(ly.native_op, ly.output_shapes, ly.macs, ly.params) for ly in a.main_layers()]


def _compare(variant: Graph, reference: Graph) -> None:
    """Same layers (op, output shapes, MACs, parameters), same totals, same lower bound."""
    a, b = analyze_graph(variant), analyze_graph(reference)
    assert _layers(a) == _layers(b)
    assert a.totals.macs == b.totals.macs
    assert plan_graph(variant).lower_bound_bytes == plan_graph(reference).lower_bound_bytes
    if reference.format == "onnx":
        # tf2onnx's duplicate merging is off in the fixtures: tensors are the model's.
        assert a.totals.params == b.totals.params
        assert a.totals.weight_bytes == b.totals.weight_bytes
    else:
        # The TFLite converter shares equal constants between layers (the all-zero
        # biases of a weights=None model): compare parameters per layer instead, as
        # _layers did, and the unique totals only where no sharing changes.
        assert sum(ly.params for ly in a.main_layers()) == sum(ly.params for ly in b.main_layers())


RESOLUTIONS = [
    ("mobilenet_v1", "tflite", 128),
    ("mobilenet_v1", "tflite", 160),
    ("mobilenet_v1", "onnx", 128),
    ("mobilenet_v1", "onnx", 160),
    ("mobilenet_v2", "tflite", 128),
    ("mobilenet_v2", "tflite", 160),
    ("mobilenet_v2", "tflite", 192),
    ("mobilenet_v2", "onnx", 128),
    ("mobilenet_v2", "onnx", 192),
]


@pytest.mark.parametrize(("model", "fmt", "size"), RESOLUTIONS)
def test_resolution_variant_is_the_model_converted_at_that_size(
    keras_dir: Path, whatif_dir: Path, model: str, fmt: str, size: int
) -> None:
    base = load(keras_dir / f"{model}_fp32.{fmt}")
    variant = transform(base, VariantSpec(resolution=(size, size)))
    reference = load(whatif_dir / f"{model}_r{size}_fp32.{fmt}")
    _compare(variant, reference)
    assert analyze_graph(variant).totals.params == analyze_graph(base).totals.params


def test_resolution_variant_of_int8_and_efficientnet(keras_dir: Path, whatif_dir: Path) -> None:
    v = transform(load(keras_dir / "mobilenet_v2_int8.tflite"), VariantSpec(resolution=(160, 160)))
    _compare(v, load(whatif_dir / "mobilenet_v2_r160_int8.tflite"))
    # EfficientNet-B0: squeeze-excite reshapes, stride-2 ZeroPadding before VALID convs.
    v = transform(
        load(whatif_dir / "efficientnet_b0_fp32.tflite"), VariantSpec(resolution=(192, 192))
    )
    _compare(v, load(whatif_dir / "efficientnet_b0_r192_fp32.tflite"))


@pytest.mark.parametrize(("fmt", "alpha"), [("tflite", "050"), ("tflite", "075"), ("onnx", "050")])
def test_mobilenet_v1_width_is_keras_alpha(
    keras_dir: Path, whatif_dir: Path, fmt: str, alpha: str
) -> None:
    ref = whatif_dir / f"mobilenet_v1_a{alpha}_fp32.{fmt}"
    v = transform(load(keras_dir / f"mobilenet_v1_fp32.{fmt}"), VariantSpec(width=int(alpha) / 100))
    _compare(v, load(ref))


@pytest.mark.parametrize(("fmt", "alpha"), [("tflite", "050"), ("tflite", "075"), ("onnx", "050")])
def test_mobilenet_v2_width_is_keras_alpha_with_keep(
    keras_dir: Path, whatif_dir: Path, fmt: str, alpha: str
) -> None:
    base = load(keras_dir / f"mobilenet_v2_fp32.{fmt}")
    reference = load(whatif_dir / f"mobilenet_v2_a{alpha}_fp32.{fmt}")
    w = int(alpha) / 100
    _compare(transform(base, VariantSpec(width=w, keep=("Conv_1",))), reference)
    # Without --keep the last conv is scaled too: close to keras, not equal.
    loose = analyze_graph(transform(base, VariantSpec(width=w))).totals.macs
    ref_macs = analyze_graph(reference).totals.macs
    assert loose != ref_macs
    assert abs(loose / ref_macs - 1) < 0.08


def test_width_keeps_input_channels_and_classes(keras_dir: Path) -> None:
    g = load(keras_dir / "mobilenet_v2_int8.tflite")
    v = transform(g, VariantSpec(width=0.5))
    for name in (*g.inputs, *g.outputs):
        assert v.tensors[name].shape == g.tensors[name].shape
    # Per-channel weight scales follow the new channel counts.
    for t in v.tensors.values():
        if t.is_constant and t.quant is not None and t.quant.per_channel and t.shape:
            assert len(t.quant.scale) == t.shape[t.quant.axis or 0]


def test_squeeze_excite_channels_stay_tied(whatif_dir: Path) -> None:
    """EfficientNet's SE expand conv must match the expanded block it scales: keras
    builds both from filters_in x expand_ratio."""
    g = load(whatif_dir / "efficientnet_b0_int8.tflite")
    for w in (0.25, 0.5, 0.75):
        v = transform(g, VariantSpec(width=w))
        for node in v.nodes:
            if node.op == "mul" and all(not v.tensors[n].is_constant for n in node.inputs):
                a, b = (v.tensors[n].shape for n in node.inputs)
                assert a is not None and b is not None and a[-1] == b[-1]


def test_kernel_replacement_keeps_output_sizes(whatif_dir: Path) -> None:
    g = load(whatif_dir / "efficientnet_b0_int8.tflite")
    spec = VariantSpec(replace=tuple(parse_replacements(["DEPTHWISE_CONV_2D:5x5=3x3"])))
    v = transform(g, spec)
    changed = 0
    for old, new in zip(g.nodes, v.nodes, strict=True):
        for o in old.outputs:
            assert v.tensors[o].shape == g.tensors[o].shape
        if old.op == "depthwise_conv":
            w_old = g.tensors[old.inputs[1]].shape
            w_new = v.tensors[new.inputs[1]].shape
            assert w_old is not None and w_new is not None
            if w_old[1:3] == (5, 5):
                assert w_new[1:3] == (3, 3)
                changed += 1
    assert changed > 0
    # 5x5 -> 3x3 per depthwise layer: MACs drop by exactly 16/25 of those layers'.
    a, b = analyze_graph(g), analyze_graph(v)
    dw5 = sum(
        ly.macs or 0
        for ly, n in zip(a.main_layers(), g.nodes, strict=True)
        if n.op == "depthwise_conv" and (g.tensors[n.inputs[1]].shape or ())[1:3] == (5, 5)
    )
    assert a.totals.macs - b.totals.macs == dw5 * 16 // 25


def test_activation_replacement(keras_dir: Path, whatif_dir: Path) -> None:
    g = load(whatif_dir / "mobilenet_v3_small_int8.tflite")
    hs = [n.index for n in g.nodes if n.native_op == "HARD_SWISH"]
    assert hs
    v = transform(g, VariantSpec(replace=tuple(parse_replacements(["HARD_SWISH=RELU6"]))))
    assert all(v.nodes[i].native_op == "RELU6" for i in hs)
    # ONNX has no Relu6: the variant is Clip(0, 6), whose bounds are new constants.
    o = load(keras_dir / "mobilenet_v2_fp32.onnx")
    v = transform(o, VariantSpec(replace=tuple(parse_replacements(["RELU6=RELU"]))))
    assert {n.native_op for n in v.nodes} >= {"Relu"} and "Clip" not in {
        n.native_op for n in v.nodes
    }


def test_dtype_variants_retype_weights_and_activations(keras_dir: Path) -> None:
    g = load(keras_dir / "mobilenet_v2_fp32.tflite")
    base = analyze_graph(g).totals
    int8 = analyze_graph(transform(g, VariantSpec(dtype="int8"))).totals
    fp16 = analyze_graph(transform(g, VariantSpec(dtype="fp16"))).totals
    assert int8.macs == fp16.macs == base.macs
    # Conv / FC weights become 1 byte per parameter, their biases 4 (int32); fp16 2 bytes.
    assert fp16.weight_bytes == base.weight_bytes // 2
    assert base.weight_bytes // 4 < int8.weight_bytes < base.weight_bytes // 3
    m = plan_graph(transform(g, VariantSpec(dtype="int8")))
    assert m.lower_bound_bytes * 4 == plan_graph(g).lower_bound_bytes
    q = load(keras_dir / "mobilenet_v2_int8.tflite")
    pt = transform(q, VariantSpec(dtype="int8", quant="per-tensor"))
    assert all(
        t.quant is None or not t.quant.per_channel for t in pt.tensors.values() if t.is_constant
    )


def test_bad_variants_say_why(keras_dir: Path, whatif_dir: Path) -> None:
    g = load(keras_dir / "mobilenet_v2_fp32.tflite")
    with pytest.raises(VariantError, match="names no conv"):
        transform(g, VariantSpec(width=0.5, keep=("no_such_layer",)))
    with pytest.raises(VariantError, match="no HARD_SWISH"):
        transform(g, VariantSpec(replace=tuple(parse_replacements(["HARD_SWISH=RELU"]))))
    with pytest.raises(VariantError, match="5x5"):
        transform(g, VariantSpec(replace=tuple(parse_replacements(["DEPTHWISE_CONV_2D:5x5=3x3"]))))
    with pytest.raises(VariantError, match="--quant"):
        transform(g, VariantSpec(quant="per-tensor"))


def test_sweep_matches_single_evaluations(keras_dir: Path) -> None:
    """The process pool returns what evaluating each variant alone gives, in order."""
    g = load(keras_dir / "mobilenet_v1_int8.tflite")
    tgt = load_target("ethos-u55-128")
    r = whatif(g, tgt, resolution=[128, 160, 192], width=[0.5, 1.0], jobs=2)
    assert [v.label for v in r.variants] == [
        "r128_w0.5", "r128", "r160_w0.5", "r160", "r192_w0.5", "r192",
    ]  # fmt: skip
    for v in r.variants[::2]:
        alone = evaluate(g, v.spec, tgt)
        assert alone.totals == v.totals
        assert alone.fallback_layers == v.fallback_layers
    rows = infercast.whatif(g, tgt, resolution=[128, 160, 192], width=[0.5, 1.0]).to_records()
    assert len(rows) == 6 and {"macs", "latency_s", "fits", "sram_fits"} <= set(rows[0])


def test_fit_finds_the_largest_variant_that_fits(keras_dir: Path) -> None:
    g = load(keras_dir / "mobilenet_v2_int8.tflite")
    tgt = load_target("ethos-u55-128")
    r = whatif(g, tgt, resolution=[96, 224], width=[0.35, 1.0], fit=True)
    assert r.fit is not None and r.fit.best is not None
    best = r.fit.best
    assert best.totals.fits
    sram = tgt.memories["sram"].size_bytes
    assert best.memories["sram"].required_bytes <= sram
    # Anything evaluated with more MACs did not fit.
    for v in r.variants:
        if v.macs > best.macs:
            assert not v.totals.fits
    # The next multiple of the stride (32) up, at the same width, does not fit.
    assert best.resolution is not None
    bigger = evaluate(g, best.spec.with_(resolution=(best.resolution[0] + 32,) * 2), tgt)
    assert not bigger.totals.fits


@pytest.mark.parametrize(
    ("old_in", "old_out", "new_in", "want"),
    [
        # keras squeeze-excite: (1, C) -> (1, 1, 1, C)
        ((1, 96), (1, 1, 1, 96), (1, 48), (1, 1, 1, 48)),
        # Flatten before a dense layer: (1, 7, 7, 512) -> (1, 25088)
        ((1, 7, 7, 512), (1, 25088), (1, 5, 5, 512), (1, 12800)),
        # Channel shuffle: (1, C, H, W) -> (1, g, C / g, H, W); the groups stay
        ((1, 240, 28, 28), (1, 4, 60, 28, 28), (1, 120, 28, 28), (1, 4, 30, 28, 28)),
        # Detection head: (1, H, W, anchors x 18) -> (1, H x W x anchors, 18)
        ((1, 12, 12, 108), (1, 864, 18), (1, 6, 6, 108), (1, 216, 18)),
        # Nothing that changes: unchanged
        ((1, 1024, 1, 1), (1, 1024), (1, 1024, 1, 1), (1, 1024)),
    ],
)
def test_reshape_targets_follow_dimension_groups(
    old_in: tuple[int, ...],
    old_out: tuple[int, ...],
    new_in: tuple[int, ...],
    want: tuple[int, ...],
) -> None:
    from infercast.whatif.geometry import remap_reshape

    got = remap_reshape(old_in, old_out, new_in)
    assert got == want
    assert got is not None and _prod(got) == _prod(new_in)


def _prod(s: tuple[int, ...]) -> int:
    n = 1
    for d in s:
        n *= d
    return n


def test_reshape_that_mixes_changed_and_kept_dimensions_is_refused() -> None:
    from infercast.whatif.geometry import remap_reshape

    # (H, C, W) -> (H x C x W): H and W change around a kept C: which output factor?
    assert remap_reshape((4, 8, 4), (2, 64), (2, 8, 2)) is None
