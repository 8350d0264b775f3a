"""Advice: each item names the layers and the gain its what-if forecasts.

* EfficientNet-B0 int8 on the K210: the KPU takes 1x1 / 3x3 kernels only, so the
  5x5 depthwise layers are named, with a positive forecast gain as 3x3; the model
  does not fit the K210's memories and the advice gives the largest input size and
  width that do (each re-evaluated here).
* A per-channel int8 model on the i.MX 8M Plus NPU: the quantisation advice appears
  when, and only when, the target file charges for per-channel weights.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import infercast
from infercast.estimate.forecast import Params
from infercast.frontends import load
from infercast.ir.views import kernel_dims
from infercast.targets import load_target
from infercast.whatif import VariantSpec, transform
from infercast.whatif.advise import AdviceResult, advise
from infercast.whatif.evaluate import evaluate


@pytest.fixture(scope="module")
def k210_advice(whatif_dir: Path) -> AdviceResult:
    return advise(load(whatif_dir / "efficientnet_b0_int8.tflite"), load_target("k210-kpu"))


def test_k210_names_the_5x5_depthwise_layers(k210_advice: AdviceResult) -> None:
    graph = k210_advice.graph
    assert graph is not None
    dw5 = {
        n.name
        for n in graph.nodes
        if n.op == "depthwise_conv"
        and tuple(kernel_dims(graph.tensors[n.inputs[1]], "1HWO").spatial) == (5, 5)
    }
    assert len(dw5) == 9  # EfficientNet-B0: blocks 3, 5 and 6 (keras.applications)
    kernel = [a for a in k210_advice.advice if a.kind == "kernel"]
    assert len(kernel) == 1
    item = kernel[0]
    assert set(item.layers) == dw5
    assert item.latency_gain_s is not None and item.latency_gain_s > 0
    assert "3x3" in item.message
    # The gain is that of the what-if it names.
    assert item.variant is not None and "5x5-3x3" in item.variant
    tgt = load_target("k210-kpu")
    spec = VariantSpec(replace=transform_spec("DEPTHWISE_CONV_2D:5x5=3x3"))
    v = evaluate(graph, spec, tgt)
    assert v.totals.latency_s == pytest.approx(
        k210_advice.base.totals.latency_s - item.latency_gain_s
    )


def transform_spec(text: str) -> tuple[object, ...]:
    from infercast.whatif.spec import parse_replacements

    return tuple(parse_replacements([text]))


def test_k210_no_fit_comes_with_a_way_out(k210_advice: AdviceResult) -> None:
    assert not k210_advice.base.totals.fits
    graph = k210_advice.graph
    assert graph is not None
    tgt = load_target("k210-kpu")
    ways = [a for a in k210_advice.advice if a.kind in ("resolution", "width")]
    assert {a.kind for a in ways} == {"resolution", "width"}
    # Fit advice comes first, and says what does not fit.
    assert k210_advice.advice[0].fixes_fit
    for a in ways:
        assert "does not fit" in a.message and a.memory_gain_bytes and a.memory_gain_bytes > 0
    res = next(a for a in ways if a.kind == "resolution")
    size = int(res.message.split("input ")[1].split("x")[0])
    fits = evaluate(graph, VariantSpec(resolution=(size, size)), tgt)
    assert fits.totals.fits
    larger = evaluate(graph, VariantSpec(resolution=(size + 32, size + 32)), tgt)
    assert not larger.totals.fits
    wid = next(a for a in ways if a.kind == "width")
    w = float(wid.message.split("width ")[-1].split(":")[0])
    assert evaluate(graph, VariantSpec(width=w), tgt).totals.fits


def _per_channel_target(tmp_path: Path, slowdown: float | None) -> Path:
    """The VX target with its per-channel cost replaced by a compute slowdown and no extra
    pass (None: no cost at all)."""
    value = 1.0 if slowdown is None else slowdown
    path = tmp_path / f"vx_{slowdown}.toml"
    path.write_text(
        'extends = "imx8mp-npu-vx"\n[calibration.values]\n'
        f'"units.npu.per_channel_slowdown" = {value}\n'
        '"units.npu.per_channel_pass_s_per_element" = 1e-15\n'  # ~no pass (the least value)
    )
    return path


def _charged(target_name: str | Path) -> bool:
    """The target's numbers give per-channel weights a cost (fitted on this NPU's rows): a
    compute slowdown or an extra pass over the output."""
    p = Params.of(load_target(str(target_name)))
    slow = p.get("units.npu.per_channel_slowdown")
    return slow > 1.0 or p.get("units.npu.per_channel_pass_s_per_element") > 1e-14


def test_imx_quantization_advice_follows_the_target_evidence(
    keras_dir: Path, tmp_path: Path
) -> None:
    model = load(keras_dir / "mobilenet_v2_int8.tflite")
    assert any(
        t.quant is not None and t.quant.per_channel for t in model.tensors.values() if t.is_constant
    )
    # The built-in file, whatever it says today.
    result = advise(model, load_target("imx8mp-npu-vx"))
    quant = [a for a in result.advice if a.kind == "quantization"]
    charged = _charged("imx8mp-npu-vx")
    assert bool(quant) == charged
    if quant:
        assert quant[0].latency_gain_s is not None and quant[0].latency_gain_s > 0
        assert quant[0].layers
    # Evidence of a cost: advice, the gain growing with the cost; no evidence: none.
    gains = []
    for cost in (3.0, 50.0):
        with_cost = advise(model, load_target(str(_per_channel_target(tmp_path, cost))))
        item = next(a for a in with_cost.advice if a.kind == "quantization")
        assert item.latency_gain_s is not None and item.latency_gain_s > 0
        gains.append(item.latency_gain_s)
    assert gains[1] > gains[0]
    for none in (None, 1.0):
        result = advise(model, load_target(str(_per_channel_target(tmp_path, none))))
        assert not [a for a in result.advice if a.kind == "quantization"]


def test_channels_just_above_the_vector_width(keras_dir: Path) -> None:
    """Ethos-U works in 16-channel bricks: a 17-channel layer costs as 32."""
    model = load(keras_dir / "mobilenet_v2_int8.tflite")
    tgt = load_target("ethos-u55-128")
    assert any(u.channel_multiple == 16 for u in tgt.units.values())
    # The project conv of block 1 (24 channels) made 33 = 2 x 16 + 1.
    odd = transform(model, VariantSpec(channels=(("block_1_project", 33),)))
    result = advise(odd, tgt)
    item = next(a for a in result.advice if a.kind == "channels")
    assert any("block_1_project" in name for name in item.layers)
    assert "33->32" in item.message
    assert item.latency_gain_s is not None and item.latency_gain_s > 0


def test_fallback_activation_is_replaced(whatif_dir: Path) -> None:
    """The NNAPI delegate on the i.MX 8M Plus refuses HARD_SWISH (its file lists it)."""
    model = load(whatif_dir / "mobilenet_v3_small_int8.tflite")
    tgt = load_target("imx8mp-npu-nnapi")
    assert "HARD_SWISH" in tgt.support.known_unsupported
    result = advise(model, tgt)
    item = next(a for a in result.advice if a.kind == "fallback_op")
    hs = {n.name for n in model.nodes if n.native_op == "HARD_SWISH"}
    assert set(item.layers) == hs
    assert item.latency_gain_s is not None and item.latency_gain_s > 0
    assert "RELU6" in item.message or "RELU" in item.message
    doc = infercast.advise(model, tgt).to_dict()
    assert doc["schema"] == "infercast.advice/1"
    assert set(doc["advice"][0]) >= {
        "kind",
        "message",
        "layers",
        "latency_gain_s",
        "memory_gain_bytes",
    }
