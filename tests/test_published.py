"""Published device measurements as data, whole-model calibration and leave-one-out.

Mechanics only: a fit on rows generated from known parameters recovers them,
leave-one-out is what its definition says, the vectorised evaluation is the per-kernel
reference, threads / per-channel weights / one-time costs enter the forecast as the
module docstrings state. How close the shipped targets come to the published figures
is printed by ``bench/bench_published.py``, not asserted here.
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
from pathlib import Path

import numpy as np
import pytest

from conftest import run_keras_script
from infercast import estimate
from infercast.cli import main
from infercast.estimate.calibrate import (
    calibrate_latencies,
    read_latencies,
    read_vx_perf_log,
    read_vx_profile_log,
    vx_log_latency,
)
from infercast.estimate.fit import Batch, Sample, fit_values, leave_one_out, predict
from infercast.estimate.forecast import (
    COVERED_SHARE,
    EstimateError,
    Params,
    coverage,
    covered_kinds,
    kernel_time,
    outside_rows,
    time_by_kind,
)
from infercast.estimate.published.check import (
    Pairing,
    calibrate_on_rows,
    paired_leave_one_out,
    row_sample,
)
from infercast.estimate.published.data import PublishedRow, load_rows, paired_row
from infercast.estimate.published.recipes import QUANTS, RECIPES
from infercast.frontends import load
from infercast.targets import load_target
from infercast.targets.schema import Target

# One block of the VeriSilicon NPU driver's CNN_PERF log, as printed on a Khadas VIM3
# (A311D, VIPNano-QI) for a model compiled to one binary graph; from the KSNN usage page,
# khadas/khadas_docs linux/source/vim3/KSNNUsage.md.
VX_LOG = (
    "Start run graph [1] times...\n"
    "layer_id: 0 layer name:network_binary_graph operation[0]:unkown operation type "
    "target:unkown operation target.\n"
    """uid: 0
abs_op_id: 0
execution time:             20552 us
[     1] TOTAL_READ_BANDWIDTH  (MByte): 67.540481
VPC_ELAPSETIME: 118090
"""
)


def _models(published_dir: Path) -> dict[str, Path]:
    return {p.stem: p for p in published_dir.glob("*.tflite")}


# --------------------------------------------------------------------------- #
# The data file
# --------------------------------------------------------------------------- #


def test_published_rows_name_real_recipes_and_targets() -> None:
    rows = load_rows()
    assert len(rows) > 100 and len({r.row_id for r in rows}) == len(rows)
    for r in rows:
        assert r.recipe in RECIPES and r.quant in QUANTS, r.row_id
        t = load_target(r.target)
        assert r.latency_s > 0 and 1 <= r.threads <= max(t.fallback.cores, 1), r.row_id
    by_id = {r.row_id: r for r in rows}
    # The figures the issue names, as published (NXP eIQ zoo, Armadillo forum thread).
    assert by_id["imx8mp-vx/mnv1-025-128"].latency_s == pytest.approx(0.84e-3)
    assert by_id["imx8mp-vx/deeplabv3"].latency_s == pytest.approx(586e-3)
    assert by_id["imx8mp-cpu4/deeplabv3"].latency_s == pytest.approx(447e-3)
    assert by_id["imx8mp-vx/mnv2-224-uint8"].quant == "uint8"
    # Every target with rows declares what a whole-model fit may vary, and names its rows.
    for name in {r.target for r in rows if r.fit}:
        cal = load_target(name).calibration
        assert cal.parameters, name
        assert set(cal.rows) <= set(by_id), name
        # A row whose figure contradicts the model built for it is never fitted on.
        assert not any(by_id[r].excluded for r in cal.rows), name


POSENET = """
import sys
import keras
from infercast.estimate.published.recipes import RECIPES, SEED, convert
r = RECIPES["posenet_mnv1_075_353_481"]
keras.utils.set_random_seed(SEED)
open(sys.argv[1], "wb").write(convert(r.build(**r.kwargs), "uint8"))
"""


def test_posenet_rebuild_is_the_network_coral_ships(tmp_path: Path) -> None:
    """The PoseNet rows' rebuild is the network of Coral's own file
    (google-coral/project-posenet ``models/mobilenet/components/
    posenet_mobilenet_v1_075_353_481_quant.tflite``, read with ``infercast analyze``): 32 ops,
    1,246,214,352 MACs, 1,258,195 parameters in 1,279,708 bytes, and the three outputs the
    compiled ``*_decoder_edgetpu.tflite`` returns (its package's output layers: 23x31 by 17
    heatmaps, 34 short offsets, 64 mid-range offsets)."""
    from infercast import analyze

    path = tmp_path / "posenet.tflite"
    run_keras_script(POSENET, str(path))
    a = analyze(path)
    assert a.totals.layers == 32
    assert a.totals.macs == 1_246_214_352
    assert a.totals.params == 1_258_195 and a.totals.weight_bytes == 1_279_708
    g = a.graph
    outs = sorted(tuple(g.tensors[o].shape) for o in g.outputs)
    assert outs == [(1, 23, 31, 17), (1, 23, 31, 34), (1, 23, 31, 64)]


UNET = """
import json, sys
from infercast.estimate.published.recipes import RECIPES
r = RECIPES["unet_mnv2_128"]
m = r.build(**r.kwargs)
json.dump({"params": int(m.count_params()), "out": list(m.output.shape)}, open(sys.argv[1], "w"))
"""


def test_unet_rebuild_is_the_segmentation_tutorials_model(tmp_path: Path) -> None:
    """The U-Net rows' rebuild is TensorFlow's image-segmentation tutorial model, whose
    ``model.summary()`` the tutorial prints: 6,504,227 parameters (batch norms included),
    a 128x128x3 output (tensorflow/docs site/en/tutorials/images/segmentation.ipynb)."""
    out = tmp_path / "unet.json"
    run_keras_script(UNET, str(out))
    facts = json.loads(out.read_text())
    assert facts == {"params": 6_504_227, "out": [1, 128, 128, 3]}


def test_edge_tpu_usb_reads_outputs_back_slower_than_it_sends_inputs(
    published_dir: Path,
) -> None:
    """libedgetpu reads a USB Edge TPU's outputs as 1 KiB bulk-in transfers and sends its
    inputs in up to 1 MiB bulk-out ones (usb_driver.h): edgetpu-usb states a readback rate
    below its link rate, fitted on rows whose outputs are large, and charges it to every
    output; the PCIe card, whose outputs are DMA'd, has none."""
    usb = load_target("edgetpu-usb")
    assert 0 < usb.crossing.readback_bytes_per_s < usb.crossing.bytes_per_s  # the prior
    assert "crossing.readback_bytes_per_s" in usb.calibration.parameters
    p = Params.of(usb)  # the fitted values
    assert 0 < p.readback_rate < p.crossing_bytes_per_s
    fitted_on = {r.row_id: r for r in load_rows() if r.row_id in usb.calibration.rows}
    assert any(r.recipe.startswith("posenet") for r in fitted_on.values())
    assert load_target("edgetpu-pcie").crossing.readback_bytes_per_s == 0
    model = _models(published_dir)["mobilenet_v1_a025_128_int8"]
    g = load(model)
    assert g.tensors[g.outputs[0]].shape == (1, 1000)
    fc = estimate(model, usb)
    out = fc.layers[-1]  # keras' 1000 int8 class scores leave the Edge TPU
    assert out.placement == "accelerator"
    assert out.transfer_s == pytest.approx(p.crossing_fixed_s + 1000 / p.readback_rate)


def test_excluded_rows_are_forecast_and_counted_in_no_figure(tmp_path: Path) -> None:
    from infercast.errors import InfercastError
    from infercast.estimate.published.check import RowResult, _summary, pairs_of
    from infercast.estimate.published.data import COLUMNS

    def line(row_id: str, target: str, fit: str) -> str:
        return f"{row_id},board,{target},m,mobilenet_v1_224,uint8,1,,rt,call,10,{fit},src,why"

    csv_file = tmp_path / "rows.csv"
    csv_file.write_text(
        "# comment\n" + ",".join(COLUMNS) + "\n"
        + "\n".join([line("a", "edgetpu-usb", "no"), line("b", "edgetpu-usb", "excluded"),
                      line("c", "rpi4-cpu", "yes")]) + "\n"
    )  # fmt: skip
    a, b, c = load_rows(csv_file)
    assert b.excluded and not b.fit and not a.excluded and c.fit
    results = [RowResult(a, forecast_s=12e-3), RowResult(b, forecast_s=100e-3), RowResult(c)]
    s = _summary("edgetpu-usb", results[:2])
    assert s.rows == 2 and s.rows_excluded == 1
    assert s.prediction_median_abs_error == pytest.approx(0.2)
    assert s.prediction_worst_ratio == pytest.approx(1.2)
    # ... nor in an NPU-vs-CPU pair (same board, same model on an accelerator and a CPU).
    results[2].forecast_s = 1.0
    assert [(x.row.row_id, y.row.row_id) for x, y, _ in pairs_of(results)] == [("a", "c")]
    csv_file.write_text(csv_file.read_text().replace(",excluded,", ",maybe,"))
    with pytest.raises(InfercastError, match="fit must be one of"):
        load_rows(csv_file)


def test_published_models_carry_the_quantisation_their_rows_say(published_dir: Path) -> None:
    m = _models(published_dir)
    pc = load(m["mobilenet_v1_a025_128_int8"])
    pt = load(m["mobilenet_v1_a025_128_int8pt"])

    def conv_scales(g: object) -> list[int]:
        return [
            len(g.tensors[n.inputs[1]].quant.scale)  # type: ignore[attr-defined]
            for n in g.nodes  # type: ignore[attr-defined]
            if n.op == "conv"
        ]

    assert all(s > 1 for s in conv_scales(pc))  # one scale per output channel
    assert all(s == 1 for s in conv_scales(pt))  # one scale per tensor


# --------------------------------------------------------------------------- #
# The fit
# --------------------------------------------------------------------------- #

KEYS = [
    "units.cpu.efficiency.conv",  # the fp32 models' convs (XNNPACK: the MAC roofline)
    "units.cpu.instructions_per_cycle",  # the int8 models' built-in kernels (the A53's isa)
    "units.cpu.op_overhead_s",
    "units.cpu.thread_efficiency",
    "calibration.invoke_overhead_s",
]
TRUTH = {
    "units.cpu.efficiency.conv": 0.37,
    "units.cpu.instructions_per_cycle": 0.7,
    "units.cpu.op_overhead_s": 2.0e-5,
    "units.cpu.thread_efficiency": 0.6,
    "calibration.invoke_overhead_s": 5.0e-5,
}


def _samples(published_dir: Path, target: str = "imx8mp-cpu") -> list[Sample]:
    t = load_target(target)
    m = _models(published_dir)
    out = []
    for stem in ("ds_cnn_kws_int8", "mobilenet_v1_a025_128_int8", "ad_autoencoder_int8",
                 "conv3x3_128ch_16_fp32", "conv3x3_128ch_64_fp32"):  # fmt: skip
        g = load(m[stem])
        for threads in (1, 4):
            works = tuple(w for _, w in estimate(g, t, threads=threads).works)
            out.append(Sample(f"{stem}/t{threads}", works, 1.0, threads=threads))
    return out


def test_fit_on_rows_generated_from_known_parameters_recovers_them(published_dir: Path) -> None:
    target = load_target("imx8mp-cpu")
    prior = Params.of(target, prior_for=KEYS)
    truth = prior.with_values(TRUTH)
    samples = [
        Sample(s.name, s.works, predict(s, truth), threads=s.threads)
        for s in _samples(published_dir)
    ]
    f = fit_values(samples, prior, KEYS, prior_weight=0.0)
    for k, v in TRUTH.items():
        assert f.values[k] == pytest.approx(v, rel=1e-3), k
    assert f.rmspe < 1e-6


def test_leave_one_out_is_a_fit_on_the_others(published_dir: Path) -> None:
    target = load_target("imx8mp-cpu")
    prior = Params.of(target, prior_for=KEYS)
    truth = prior.with_values(TRUTH)
    rng = np.random.default_rng(7)
    samples = [  # measurements off the truth by up to ±30%
        Sample(s.name, s.works, predict(s, truth) * float(rng.uniform(0.7, 1.3)), threads=s.threads)
        for s in _samples(published_dir)[:6]
    ]
    loo = leave_one_out(samples, prior, KEYS)
    assert [n for n, _, _ in loo] == [s.name for s in samples]
    for i, (name, forecast, measured) in enumerate(loo):
        others = samples[:i] + samples[i + 1 :]
        p = fit_values(others, prior, KEYS).params
        assert forecast == pytest.approx(predict(samples[i], p), rel=1e-9), name
        assert measured == samples[i].measured_s
    # With one sample there is nothing to fit on: its forecast is the prior's.
    (only,) = leave_one_out(samples[:1], prior, KEYS)
    assert only[1] == pytest.approx(predict(samples[0], prior))


# --------------------------------------------------------------------------- #
# Paired fits (calibration.paired: NNAPI over VX)
# --------------------------------------------------------------------------- #

PAIRED_STEMS = ("ds_cnn_kws_int8", "mobilenet_v1_a025_128_int8", "ad_autoencoder_int8")


def _row(target: str, stem: str, ms: float, source: str = "syn") -> PublishedRow:
    return PublishedRow(row_id=f"{target}/{stem}", board="syn", target=target, model=stem,
                        recipe=stem, quant="int8", threads=1, clock_hz=None, runtime="syn",
                        timed="call", latency_s=ms / 1e3, fit=True, source=source,
                        conditions="")  # fmt: skip


def _paired_rows(
    published_dir: Path, delta_s: float, errors: tuple[float, ...]
) -> tuple[list[PublishedRow], dict[tuple[str, str], Path]]:
    """VX rows off the VX forecast by ``errors`` (its model's error on each model); NNAPI rows
    the VX row plus what the NNAPI target forecasts over VX with a per-call cost ``delta_s``."""
    vx, nn = load_target("imx8mp-npu-vx"), load_target("imx8mp-npu-nnapi")
    m = _models(published_dir)
    paths = {(stem, "int8"): m[stem] for stem in PAIRED_STEMS}
    truth = Params.of(nn).with_values({"calibration.invoke_overhead_s": delta_s})
    rows = []
    for stem, err in zip(PAIRED_STEMS, errors, strict=True):
        g = load(m[stem])
        probe = _row("x", stem, 1.0)
        f_vx = predict(row_sample(probe, vx, g), Params.of(vx))
        f_nn = predict(row_sample(probe, nn, g), truth)
        rows.append(_row(vx.name, stem, f_vx * err * 1e3))
        rows.append(_row(nn.name, stem, (f_vx * err + f_nn - f_vx) * 1e3))
    return rows, paths


def test_paired_rows_are_one_measurement_on_two_targets() -> None:
    a, b = _row("imx8mp-npu-nnapi", "m", 3.0), _row("imx8mp-npu-vx", "m", 2.4)
    other = _row("imx8mp-npu-vx", "m", 2.0, source="another thread")
    assert paired_row(a, [a, b, other], "imx8mp-npu-vx") == b
    assert paired_row(a, [a, other], "imx8mp-npu-vx") is None
    assert paired_row(a, [a, b, other], "imx8mp-cpu") is None


def test_paired_fit_recovers_the_delta_whatever_the_baselines_error(published_dir: Path) -> None:
    delta = 4e-4
    rows, paths = _paired_rows(published_dir, delta, errors=(0.4, 2.0, 4.0))
    nn = load_target("imx8mp-npu-nnapi")
    mine = [r for r in rows if r.target == nn.name]
    cal = calibrate_on_rows(nn, mine, paths, all_rows=rows)
    assert cal.values["calibration.invoke_overhead_s"] == pytest.approx(delta, rel=1e-3)
    assert cal.paired_rows == tuple(f"imx8mp-npu-vx/{s}" for s in PAIRED_STEMS)
    assert cal.baseline == "imx8mp-npu-vx"
    # Fitted on the NNAPI rows alone, the per-call cost absorbs the VX model's errors.
    plain = dataclasses.replace(nn, calibration=dataclasses.replace(nn.calibration, paired=False))
    off = calibrate_on_rows(plain, mine, paths, all_rows=rows)
    assert off.paired_rows == ()
    assert off.values["calibration.invoke_overhead_s"] != pytest.approx(delta, rel=0.5)


def test_paired_leave_one_out_drops_the_whole_pair(published_dir: Path) -> None:
    rows, _ = _paired_rows(published_dir, 4e-4, errors=(0.8, 1.3, 1.1))
    vx, nn = load_target("imx8mp-npu-vx"), load_target("imx8mp-npu-nnapi")
    m = _models(published_dir)
    keys = ["calibration.invoke_overhead_s"]
    prior = Params.of(nn, prior_for=keys)

    def loo(scale: dict[str, float]) -> list[float]:
        """Paired leave-one-out with both rows of some pairs' measurements scaled."""
        samples = {
            r.row_id: row_sample(
                dataclasses.replace(r, latency_s=r.latency_s * scale.get(r.recipe, 1.0)),
                load_target(r.target),
                load(m[r.recipe]),
            )
            for r in rows
        }
        base = [samples[f"{vx.name}/{s}"] for s in PAIRED_STEMS]
        pairing = Pairing(
            vx, ["units.npu.efficiency.conv", "units.npu.op_overhead_s"], base,
            {f"{nn.name}/{s}": samples[f"{vx.name}/{s}"] for s in PAIRED_STEMS},
        )  # fmt: skip
        mine = [samples[f"{nn.name}/{s}"] for s in PAIRED_STEMS]
        return [f for _, f, _ in paired_leave_one_out(mine, prior, keys, pairing)]

    before = loo({})
    after = loo({PAIRED_STEMS[1]: 3.0})  # both rows of the second pair 3x slower
    # Its own forecast sees neither row (nor a VX fit on its VX row); the others' do.
    assert after[1] == pytest.approx(before[1], rel=1e-9)
    assert after[0] != pytest.approx(before[0], rel=1e-3)
    assert after[2] != pytest.approx(before[2], rel=1e-3)


# --------------------------------------------------------------------------- #
# Outside the fitted evidence (calibration.covered)
# --------------------------------------------------------------------------- #


def _with_coverage(target: str, covered: tuple[str, ...]) -> Target:
    t = load_target(target)
    cal = dataclasses.replace(t.calibration, covered=covered, outside_rows={"x/y": 10.0})
    return dataclasses.replace(t, calibration=cal, name=f"{target}-cov")


def test_kernel_kinds_name_the_op_its_batch_and_unit(published_dir: Path) -> None:
    fc = estimate(_models(published_dir)["ds_cnn_kws_int8"], load_target("imx8mp-npu-vx"))
    kinds = time_by_kind(fc.placement.graph, fc.layers)
    assert {"conv on npu", "depthwise_conv on npu"} <= set(kinds)
    assert sum(kinds.values()) == pytest.approx(fc.latency_s - fc.invoke_s)
    # Recorded: the kinds of at least 5% of some forecast.
    cov = coverage([fc])
    assert all(kinds[k] >= COVERED_SHARE * fc.latency_s for k in cov)
    assert set(cov) == {k for k, t in kinds.items() if t >= COVERED_SHARE * fc.latency_s}


def test_a_forecast_outside_the_fitted_evidence_says_so_and_keeps_its_numbers(
    published_dir: Path,
) -> None:
    model = _models(published_dir)["ds_cnn_kws_int8"]
    plain = estimate(model, load_target("imx8mp-npu-vx"))
    kinds = time_by_kind(plain.placement.graph, plain.layers)
    conv = kinds["conv on npu"] / plain.latency_s
    assert 0.2 < conv < 0.8
    only_conv = estimate(model, _with_coverage("imx8mp-npu-vx", ("conv on npu",)))
    assert only_conv.latency_s == plain.latency_s  # a note, not a number
    ev = only_conv.outside
    assert ev is not None and ev.share == pytest.approx(1 - conv - plain.invoke_s / plain.latency_s)
    assert "conv on npu" not in ev.kinds
    (note,) = [n for n in only_conv.notes if "no calibration row exercised" in n]
    assert note.startswith(f"{ev.share:.0%} of the forecast time") and "x/y took 10x" in note
    everything = estimate(model, _with_coverage("imx8mp-npu-vx", tuple(kinds)))
    assert everything.outside is None
    assert not any("no calibration row exercised" in n for n in everything.notes)
    # A paired target reads its values_from target's kinds and rows too.
    nn, vx = load_target("imx8mp-npu-nnapi"), load_target("imx8mp-npu-vx")
    assert (covered_kinds(vx) or set()) <= (covered_kinds(nn) or set())
    assert set(outside_rows(vx)) <= set(outside_rows(nn))


def test_calibrating_records_the_kinds_and_the_rows_outside_them(published_dir: Path) -> None:
    m = _models(published_dir)
    vx = load_target("imx8mp-npu-vx")
    paths = {(stem, "int8"): m[stem] for stem in ("ad_autoencoder_int8", "ds_cnn_kws_int8")}
    fitted = _row(vx.name, "ad_autoencoder_int8", 0.14)
    checked = dataclasses.replace(_row(vx.name, "ds_cnn_kws_int8", 0.5), fit=False)
    plain = replace_cal(vx, values_from="", covered=())
    cal = calibrate_on_rows(plain, [fitted, checked], paths, keys=["units.npu.op_overhead_s"])
    ad = estimate(m["ad_autoencoder_int8"], plain)
    assert cal.covered == coverage([ad]) and "fully_connected on npu" in cal.covered
    # The checked-only DS-CNN lies in convolutions the autoencoder has none of.
    ds = row_sample(checked, plain, load(m["ds_cnn_kws_int8"]))
    (rid,) = cal.outside_rows
    assert rid == checked.row_id
    fit = Params.of(plain).with_values(cal.values)
    assert cal.outside_rows[rid] == pytest.approx(checked.latency_s / predict(ds, fit))


def test_the_generated_block_reads_back_typed(tmp_path: Path) -> None:
    from infercast.estimate.published.builtin import _baselines_first, generated_block
    from infercast.estimate.published.check import TargetCalibration

    cal = TargetCalibration(
        target="mine", keys=("calibration.invoke_overhead_s",),
        values={"calibration.invoke_overhead_s": 5e-4}, rows=("a/1", "a/2"),
        fit=[("a/1", 1.0, 1.0)], loo=[("a/1", 1.1, 1.0), ("a/2", 0.8, 1.0)],
        paired_rows=("b/1", ""), baseline="imx8mp-npu-vx",
        covered=("conv on npu", "depthwise_conv batch>1 on npu"),
        outside_rows={"a/3": 10.72},
    )  # fmt: skip
    head = (
        'extends = "imx8mp-npu-vx"\n[calibration]\nvalues_from = "imx8mp-npu-vx"\npaired = true\n'
    )
    f = tmp_path / "mine.toml"
    f.write_text(head + generated_block(cal, "TFLite"))
    t = load_target(str(f)).calibration
    assert t.paired and t.rows == ("a/1", "a/2") and t.paired_rows == ("b/1", "")
    assert t.covered == cal.covered  # an array replaces the base's; a table merges with it
    assert t.outside_rows == {**load_target("imx8mp-npu-vx").calibration.outside_rows, "a/3": 10.72}
    assert t.values["calibration.invoke_overhead_s"] == 5e-4
    assert t.loo_worst_ratio == pytest.approx(1.25)
    assert "each against its paired imx8mp-npu-vx row" in t.source
    # A paired target is refitted after the target it reads its values from.
    assert _baselines_first(["imx8mp-npu-nnapi", "imx8mp-npu-vx"]) == [
        "imx8mp-npu-vx",
        "imx8mp-npu-nnapi",
    ]


def replace_cal(t: Target, **kw: object) -> Target:
    return dataclasses.replace(t, calibration=dataclasses.replace(t.calibration, **kw))  # type: ignore[arg-type]


def test_upper_bounds_cap_the_fit(published_dir: Path) -> None:
    """``calibration.upper_bounds`` lowers a key's physical range: rows generated with the
    per-op overhead at twice the cap fit with the overhead at the cap, in the fit and in
    each leave-one-out fit; the shipped Ethos-U65's DRAM stays under its LPDDR4X peak."""
    from dataclasses import replace

    from infercast.estimate.fit import bounds_of, target_bounds

    key = "units.cpu.op_overhead_s"
    target = load_target("imx8mp-cpu")
    capped = replace(target, calibration=replace(target.calibration, upper_bounds={key: 1e-5}))
    bounds = target_bounds(capped, KEYS)
    assert bounds[key] == (bounds_of(key)[0], 1e-5)
    assert target_bounds(target, KEYS)[key] == bounds_of(key)
    prior = Params.of(target, prior_for=KEYS)
    truth = prior.with_values(TRUTH)  # overhead 2e-5
    samples = [
        Sample(s.name, s.works, predict(s, truth), threads=s.threads)
        for s in _samples(published_dir)[:6]
    ]
    f = fit_values(samples, prior, KEYS, prior_weight=0.0, bounds=bounds)
    assert f.values[key] == pytest.approx(1e-5, rel=1e-6)
    free = leave_one_out(samples, prior, KEYS)
    held = leave_one_out(samples, prior, KEYS, bounds=bounds)
    assert [a[1] for a in free] != [b[1] for b in held]
    u65 = load_target("ethos-u65-256")
    dram = "memories.dram.bandwidth_bytes_per_s"
    assert u65.calibration.values[dram] <= u65.calibration.upper_bounds[dram]


@pytest.mark.parametrize("target", ["imx8mp-cpu", "imx8mp-npu-vx", "edgetpu-usb", "k210-kpu"])
def test_vectorised_evaluation_is_the_per_kernel_reference(
    published_dir: Path, target: str
) -> None:
    t = load_target(target)
    samples = _samples(published_dir, target) if t.fallback.cores >= 4 else []
    if not samples:
        g = load(_models(published_dir)["conv3x3_128ch_64_fp32"])
        samples = [Sample("c", tuple(w for _, w in estimate(g, t).works), 1.0)]
    p = Params.of(t)
    b = Batch(samples, p, [])
    expected = [predict(s, p) for s in samples]
    assert list(b.latencies(b.full())) == pytest.approx(expected, rel=1e-9)


def test_streamed_weights_cross_at_the_stream_rate(published_dir: Path) -> None:
    """Weights beyond a streaming cache cost ``streamed / crossing.stream_bytes_per_s``
    (unstated: the link's ``bytes_per_s``, fitted or not); the vectorised evaluation and
    the fit agree; a fit on samples that stream nothing leaves the stream at its prior."""
    import dataclasses

    t = load_target("edgetpu-usb")
    g = load(_models(published_dir)["conv3x3_128ch_64_fp32"])
    works = tuple(w for _, w in estimate(g, t).works)
    streamed = tuple(dataclasses.replace(w, streamed_bytes=200_000_000) for w in works)
    plain, heavy = Sample("plain", works, 1.0), Sample("heavy", streamed, 1.0)
    p = Params.of(t)
    assert p.crossing_stream_bytes_per_s == 0 and p.stream_rate == p.crossing_bytes_per_s
    slow = p.with_values({"crossing.stream_bytes_per_s": 1e8})
    assert slow.get("crossing.stream_bytes_per_s") == 1e8
    extra = sum(kernel_time(w, slow).memory_s - kernel_time(w, p).memory_s for w in streamed)
    assert extra == pytest.approx(len(works) * 2e8 * (1 / 1e8 - 1 / p.crossing_bytes_per_s))
    for keys in ([], ["crossing.stream_bytes_per_s"], ["crossing.bytes_per_s"]):
        for params in (p, slow):
            b = Batch([plain, heavy], params, keys)
            want = [predict(plain, params), predict(heavy, params)]
            assert list(b.latencies(b.full())) == pytest.approx(want, rel=1e-9), keys
    keys = ["crossing.stream_bytes_per_s", "calibration.invoke_overhead_s"]
    truth = p.with_values(
        {"crossing.stream_bytes_per_s": 2.5e8, "calibration.invoke_overhead_s": 2e-3}
    )
    samples = [Sample(s.name, s.works, predict(s, truth)) for s in (plain, heavy)]
    f = fit_values(samples, p, keys, prior_weight=0.0)
    assert f.values["crossing.stream_bytes_per_s"] == pytest.approx(2.5e8, rel=1e-3)
    assert f.values["calibration.invoke_overhead_s"] == pytest.approx(2e-3, rel=1e-3)
    only_plain = fit_values(samples[:1], p, keys)
    assert only_plain.values["crossing.stream_bytes_per_s"] == pytest.approx(p.stream_rate)


# --------------------------------------------------------------------------- #
# Threads, per-channel weights, clocks, one-time costs
# --------------------------------------------------------------------------- #


def test_threads_speed_up_the_kernels_the_runtime_splits(
    published_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _models(published_dir)["mobilenet_v1_a025_128_int8"]
    t = load_target("imx8mp-cpu")
    one, four = estimate(model, t, threads=1), estimate(model, t, threads=4)
    e = four.params.thread_efficiency["cpu"]
    assert one.threads == 1 and four.threads == 4
    for (_, w1), (_, w4) in zip(one.works, four.works, strict=True):
        # the im2col of a built-in int8 conv priced by its MACs is filled on one thread
        # (test_builtin_int8); one priced by its instructions includes it (test_aarch64_insns)
        copy = 0.0 if w1.instructions else w1.im2col_bytes * one.params.im2col_s.get("cpu", 0.0)
        c1 = kernel_time(w1, one.params).compute_s - copy
        c4 = kernel_time(w4, four.params).compute_s - copy
        if w1.parallel:
            # as many threads as the kernel's work takes, at most the four asked for
            n = four.params.kernel_threads("cpu", w4.max_threads)
            assert c4 == pytest.approx(c1 / (1 + (n - 1) * e))
        else:
            assert c4 == pytest.approx(c1)
    assert four.latency_s < one.latency_s
    assert any(four.params.kernel_threads("cpu", w.max_threads) == 4 for _, w in four.works)
    with pytest.raises(EstimateError, match="between 1 and 4"):
        estimate(model, t, threads=5)
    # Every output states the thread count.
    assert main(["estimate", str(model), "-t", "imx8mp-cpu", "--threads", "4", "-f", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["threads"] == 4 and doc["totals"]["threads"] == 4
    assert main(["estimate", str(model), "-t", "imx8mp-cpu", "--threads", "4", "-f", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split(",")[-1] == "threads" and lines[1].split(",")[-1] == "4"
    assert main(["estimate", str(model), "-t", "imx8mp-cpu", "--threads", "4"]) == 0
    assert "4 CPU threads" in capsys.readouterr().out
    assert main(["estimate", str(model), "-t", "imx8mp-cpu", "--threads", "9"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "between 1 and 4" in err[0]
    assert main(["analyze", str(model), "-t", "imx8mp-cpu", "--threads", "2", "-f", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["forecast"]["threads"] == 2


def test_per_channel_weights_cost_what_the_unit_states(published_dir: Path, tmp_path: Path) -> None:
    m = _models(published_dir)
    f = tmp_path / "npu.toml"
    # A built-in target's fitted values sit over its tables: an extending file overrides
    # one under [calibration.values].
    f.write_text(
        'extends = "imx8mp-npu-vx"\n[calibration.values]\n"units.npu.per_channel_slowdown" = 3.0\n'
    )
    t = load_target(str(f))
    pc = estimate(m["mobilenet_v1_a025_128_int8"], t)
    pt = estimate(m["mobilenet_v1_a025_128_int8pt"], t)
    pc_conv = [w for _, w in pc.works if w.op_class in ("conv", "depthwise_conv")]
    pt_conv = [w for _, w in pt.works if w.op_class in ("conv", "depthwise_conv")]
    assert pc_conv and len(pc_conv) == len(pt_conv)
    assert all(w.per_channel for w in pc_conv) and not any(w.per_channel for w in pt_conv)
    for a, b in zip(pc_conv, pt_conv, strict=True):
        ca, cb = kernel_time(a, pc.params).compute_s, kernel_time(b, pt.params).compute_s
        assert ca == pytest.approx(3.0 * cb, rel=1e-9)


def test_a_memorys_efficiency_scales_its_stated_bandwidth(tmp_path: Path) -> None:
    t = load_target("ethos-u55-128")
    sram = t.memories["sram"]
    assert sram.bandwidth_bytes_per_s == 4e9 and 0 < sram.efficiency < 1
    assert Params.of(t).get("memories.sram.bandwidth_bytes_per_s") == pytest.approx(
        4e9 * sram.efficiency
    )
    f = tmp_path / "bad.toml"
    f.write_text('extends = "ethos-u55-128"\n[memories.sram]\nefficiency = 1.5\n')
    with pytest.raises(Exception, match=r"memories\.sram\.efficiency must be a fraction"):
        load_target(str(f))


def test_a_measurement_clock_scales_the_main_units_peak(published_dir: Path) -> None:
    model = _models(published_dir)["conv3x3_128ch_64_fp32"]
    t = load_target("k210-kpu")
    base, slow = estimate(model, t), estimate(model, t, clock_hz=300e6)
    ratio = (t.units["kpu"].clock_hz or 0) / 300e6
    kpu = [(a, b) for (_, a), (_, b) in zip(base.works, slow.works, strict=True) if a.unit == "kpu"]
    assert kpu
    for a, b in kpu:
        ca, cb = kernel_time(a, base.params).compute_s, kernel_time(b, slow.params).compute_s
        assert cb == pytest.approx(ca * ratio)


def test_one_time_compile_only_when_the_npu_runs_something(
    published_dir: Path, keras_dir: Path
) -> None:
    t = load_target("imx8mp-npu-vx")
    on_npu = estimate(_models(published_dir)["ds_cnn_kws_int8"], t)
    assert on_npu.one_time_s > 0
    # An ONNX model: the VX delegate is a TFLite delegate, every layer runs on the CPU.
    on_cpu = estimate(keras_dir / "mobilenet_v1_fp32.onnx", t)
    assert all(ly.placement == "cpu" for ly in on_cpu.layers)
    assert on_cpu.one_time_s == 0 and on_cpu.totals()["one_time_s"] == 0


# --------------------------------------------------------------------------- #
# calibrate --from-latencies, the NPU driver log, validate --published
# --------------------------------------------------------------------------- #


def _latency_file(published_dir: Path, tmp: Path) -> Path:
    """Whole-model times generated from known parameters (TRUTH) on imx8mp-cpu."""
    target = load_target("imx8mp-cpu")
    truth = Params.of(target, prior_for=KEYS).with_values(TRUTH)
    lines = ["model,ms,threads"]
    for s in _samples(published_dir):
        stem, th = s.name.split("/t")
        path = published_dir / f"{stem}.tflite"
        lines.append(f"{path},{predict(s, truth) * 1e3:.9f},{th}")
    f = tmp / "latencies.csv"
    f.write_text("\n".join(lines) + "\n")
    return f


def test_cli_calibrate_from_latencies(
    published_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    csv_file = _latency_file(published_dir, tmp_path)
    out = tmp_path / "mine.toml"
    argv = ["calibrate", "-t", "imx8mp-cpu", "--from-latencies", str(csv_file), "-o", str(out)]
    for k in KEYS:
        argv += ["--param", k]
    assert main([*argv, "-f", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    # The command is the library's fit (which recovers exact parameters when it is not
    # pulled towards the stated values: test above). With the weak pull kept, parameters
    # that trade off (per-op against per-call cost) settle near, not on, TRUTH; the rows
    # are still explained, and forecast leave-one-out.
    lib = calibrate_latencies(load_target("imx8mp-cpu"), read_latencies(csv_file), KEYS)
    for k in TRUTH:
        assert doc["parameters"][k] == pytest.approx(lib.values[k], rel=1e-9), k
    assert len(doc["rows"]) == 10
    assert all(abs(r["fit_s"] / r["measured_s"] - 1) < 0.1 for r in doc["rows"])
    assert doc["loo_worst_ratio"] < 1.25
    raw = tomllib.loads(out.read_text())
    assert raw["extends"] == "imx8mp-cpu"
    assert len(raw["calibration"]["rows"]) == 10
    # The kernel kinds its rows exercised are recorded (what "outside the evidence" reads).
    assert "conv on cpu" in raw["calibration"]["covered"]
    t = load_target(str(out))
    assert t.calibration.calibrated and t.calibration.loo_worst_ratio == pytest.approx(
        doc["loo_worst_ratio"], rel=1e-3
    )
    # The file forecasts what the fit forecast (plain numbers, read back).
    first = doc["rows"][0]
    stem = Path(first["model"]).stem
    model = published_dir / f"{stem}.tflite"
    assert estimate(model, t, threads=1).latency_s == pytest.approx(first["fit_s"], rel=1e-3)
    # The table says the residuals and the leave-one-out error.
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "leave-one-out" in text and stem[:20] in text


def test_cli_calibrate_from_latencies_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("file,time\nx.tflite,3\n")
    out = str(tmp_path / "x.toml")
    assert main(["calibrate", "-t", "imx8mp-cpu", "--from-latencies", str(bad), "-o", out]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "model, ms" in err[0]
    bad.write_text("model,ms\nmissing.tflite,3\n")
    assert main(["calibrate", "-t", "imx8mp-cpu", "--from-latencies", str(bad), "-o", out]) == 2
    assert "not found" in capsys.readouterr().err
    good = tmp_path / "ok.csv"
    good.write_text("model,ms\nmissing.tflite,3\n")
    argv = ["calibrate", "-t", "imx8mp-cpu", "--from-latencies", str(good), "-o", out]
    assert main([*argv, "--param", "units.cpu.no_such_thing"]) == 2


def test_vx_driver_log_is_read_and_fits_the_npu(
    published_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "vx.log"
    log.write_text(VX_LOG)
    ops = read_vx_perf_log(log)
    assert len(ops) == 1
    assert ops[0].layer_name == "network_binary_graph" and ops[0].seconds == pytest.approx(20552e-6)
    assert vx_log_latency(ops) == pytest.approx(20552e-6)
    model = _models(published_dir)["mobilenet_v1_a025_128_int8"]
    out = tmp_path / "npu.toml"
    argv = ["calibrate", "-t", "imx8mp-npu-vx", "--from", str(log), "--model", str(model)]
    assert main([*argv, "--param", "units.npu.op_overhead_s", "-o", str(out), "-f", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    # One model, one parameter: the fit reproduces the logged device time (no per-call cost:
    # the driver times the NPU alone).
    (row,) = doc["rows"]
    assert row["fit_s"] == pytest.approx(20552e-6, rel=0.02)
    assert row["measured_s"] == pytest.approx(20552e-6)
    assert "calibration.invoke_overhead_s" not in doc["parameters"]


PROFILE_LOG = Path(__file__).parent / "data" / "profiles" / "imx8mpevk_vx_profile_yolov3_tiny.log"


def test_npu_compile_time_grows_with_the_weights(published_dir: Path) -> None:
    """First-inference compile on the i.MX 8M Plus NPU, per byte of weights placed on it.
    The target's rate is the least-squares line through the origin of four first
    inferences logged on an EVK (benchmark_model's 'input model file size (MB)' and
    'First inference', github.com/ruitaodong/imx-benchmarks logs/*-NPU.log), recomputed
    here; a fully delegated model's forecast is that rate times its weights: the bytes
    of the flatbuffer's constant buffers, counted with TensorFlow's own schema reader."""
    from tensorflow.lite.python import schema_py_generated as tfl_schema

    logged_mb_s = [(4.27635, 4.625131), (6.89901, 8.416260), (8.76562, 13.049007),
                   (42.8555, 45.427348)]  # fmt: skip
    slope_s_per_mb = sum(x * y for x, y in logged_mb_s) / sum(x * x for x, _ in logged_mb_s)
    t = load_target("imx8mp-npu-vx")
    assert t.graph_compile_s == 0.0
    assert t.graph_compile_s_per_weight_byte * 1e6 == pytest.approx(slope_s_per_mb, rel=0.005)
    for name in ("mobilenet_v1_a025_128_int8", "ds_cnn_kws_int8"):
        model = _models(published_dir)[name]
        fc = estimate(model, t)
        assert all(w.unit == "npu" for _, w in fc.works if w.weight_bytes)
        m = tfl_schema.Model.GetRootAsModel(model.read_bytes(), 0)
        const_bytes = sum(m.Buffers(i).DataLength() for i in range(m.BuffersLength()))
        assert fc.one_time_s == pytest.approx(slope_s_per_mb * const_bytes / 1e6, rel=0.15)


def test_vx_profile_log_from_an_imx8mp_board() -> None:
    """The real VIV_VX_PROFILE=1 log (i.MX 8M Plus EVK, SOURCES.md): counters per NPU
    operation, no names. Numbers anyone can recount with awk on the file."""
    log = read_vx_profile_log(PROFILE_LOG)
    # benchmark_model's warm-up (one inference, before 'count=1') holds 75 operations; the
    # timed inference kept in the excerpt holds as many.
    assert [len(r) for r in log.runs] == [75, 75]
    timed = log.timed[0]
    assert sum(op.busy_cycles for op in timed) == 11_682_079
    assert sum(op.total_cycles for op in timed) == 37_690_307
    assert all(op.total_cycles == op.busy_cycles + op.idle_cycles for op in timed)
    # The same operation costs the same in the warm-up and the timed run (operation 2:
    # 2,611,023 vs 2,610,222 busy cycles).
    assert log.runs[0][2].busy_cycles == pytest.approx(timed[2].busy_cycles, rel=0.01)
    # The cycles of one inference over benchmark_model's average wall time (38909.9 us)
    # give the NPU clock: within 5% of the 1 GHz NXP states (overdrive), which the target
    # file uses.
    npu_clock = load_target("imx8mp-npu-vx").units["npu"].clock_hz
    assert log.inference_avg_s == pytest.approx(38909.9e-6)
    assert log.implied_clock_hz() == pytest.approx(npu_clock, rel=0.05)
    assert log.busy_s(1e9) == pytest.approx(11_682_079 / 1e9)


def test_vx_profile_log_feeds_calibrate(
    published_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`calibrate --from LOG` takes the counter log: the measured device time of the row is
    the log's busy time (the mechanics; the log's own model, a YOLOv3-tiny variant, is not
    public, so any model stands in)."""
    model = _models(published_dir)["mobilenet_v1_a025_128_int8"]
    out = tmp_path / "npu.toml"
    argv = ["calibrate", "-t", "imx8mp-npu-vx", "--from", str(PROFILE_LOG), "--model", str(model)]
    assert main([*argv, "--param", "units.npu.op_overhead_s", "-o", str(out), "-f", "json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["rows"]
    assert row["measured_s"] == pytest.approx(read_vx_profile_log(PROFILE_LOG).busy_s())
    cut = tmp_path / "cut.log"
    cut.write_text("\n".join(PROFILE_LOG.read_text().splitlines()[:1000]))
    assert main([*argv[:3], "--from", str(cut), "--model", str(model), "-o", str(out)]) == 2
    assert "do not split into inferences" in capsys.readouterr().err


def test_cli_validate_published(
    published_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INFERCAST_PUBLISHED_MODELS", str(published_dir))
    assert main(["validate", "--published", "-t", "k210-kpu", "-f", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (dev,) = doc["devices"]
    rows = {r["row_id"]: r for r in doc["rows"]}
    assert dev["target"] == "k210-kpu" and dev["rows"] == len(rows)
    # k210-kpu records the kinds its fitted rows exercise (conv on the KPU and the CPU): its
    # own fitted micro-benchmarks lie inside them; a row not built has no share at all.
    assert dev["rows_outside"] == 0
    assert all((r["outside_evidence"] is None) == (r["status"] != "ok") for r in rows.values())
    assert all(r["outside_evidence"] < 0.2 for r in rows.values() if r["status"] == "ok")
    built = [r for r in rows.values() if r["status"] == "ok"]
    assert len(built) == 4  # the micro-benchmarks the fixture group builds
    assert rows["k210-maixpy/mbnet75"]["status"] == "not built"
    for r in built:
        assert r["error"] == pytest.approx(r["forecast_s"] / r["published_s"] - 1)
        assert r["in_fit"] and r["loo_error"] is not None
    errs = sorted(abs(r["loo_error"]) for r in built)
    assert dev["prediction_median_abs_error"] == pytest.approx((errs[1] + errs[2]) / 2)
    # NPU-vs-CPU pairs: rows of one board and model on an NPU target and a CPU target.
    assert main(["validate", "--published", "-f", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    pairs = {(p["accelerator"], p["cpu"]) for p in doc["pairs"]}
    assert ("imx8mp-vx/ds-cnn", "imx8mp-cpu4/ds-cnn") in pairs
    assert ("imx93-u65/ad-autoencoder", "imx93-cpu2/ad-autoencoder") in pairs
    for fmt in ("table", "csv"):
        assert main(["validate", "--published", "-t", "k210-kpu", "-f", fmt]) == 0
        assert "k210-micro/conv-64" in capsys.readouterr().out
    assert main(["validate", "--published", "-t", "t4-gpu"]) == 2
    assert "no published measurements" in capsys.readouterr().err
    assert main(["validate"]) == 2
    # -t repeats with --published: each target's rows, one device summary each.
    argv = ["validate", "--published", "-t", "k210-kpu", "-t", "imx8mp-npu-vx", "-f", "json"]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert sorted(d["target"] for d in doc["devices"]) == ["imx8mp-npu-vx", "k210-kpu"]
    assert {r["row_id"].split("/")[0] for r in doc["rows"]} >= {"k210-micro", "imx8mp-vx"}
    # Measuring here takes one target.
    assert main(["validate", "x.tflite", "-t", "host", "-t", "rpi4-cpu"]) == 2
    assert "one --target" in capsys.readouterr().err


# --------------------------------------------------------------------------- #
# Per-channel convs on the VeriSilicon NPU: the driver's split and its rule
# --------------------------------------------------------------------------- #

# MobileNet v1 (Howard et al. 2017, Table 1) at 128 px, width 0.25: each conv's output
# (H, W, C), the stem, then 13 depthwise / pointwise pairs, then the 1x1 classifier conv of
# keras.applications (1000 classes).
_MNV1_BLOCKS = [  # (output H = W, depthwise channels, pointwise output channels)
    (64, 8, 16), (32, 16, 32), (32, 32, 32), (16, 32, 64), (16, 64, 64), (8, 64, 128),
    *[(8, 128, 128)] * 5, (4, 128, 256), (4, 256, 256),
]  # fmt: skip
_MNV1_025_128 = [
    (64, 64, 8),
    *[s for hw, c_dw, c_pw in _MNV1_BLOCKS for s in ((hw, hw, c_dw), (hw, hw, c_pw))],
    (1, 1, 1000),
]


def test_per_channel_convs_pay_the_drivers_extra_pass(published_dir: Path) -> None:
    """VeriSilicon's OpenVX driver (6.4.3.p0, vxoGraphOptimization_pcq_splitPerChannel) runs
    a per-channel conv it keeps per channel as a uint8 conv writing float16 plus a pass that
    applies the per-channel scales to the output. The VX target charges that pass per output
    element to every per-channel conv and depthwise conv (MobileNet v1's outputs, from the
    paper's Table 1), and nothing to the per-tensor twin; the vectorised fit agrees with the
    per-kernel forecast, and a fit on rows generated from known values recovers them."""
    t = load_target("imx8mp-npu-vx")
    m = _models(published_dir)
    pc = estimate(m["mobilenet_v1_a025_128_int8"], t)
    pt = estimate(m["mobilenet_v1_a025_128_int8pt"], t)
    per_el = pc.params.per_channel_pass_s["npu"]
    assert per_el > 0
    convs = [w for _, w in pc.works if w.per_channel_out_elements]
    assert len(convs) == len(_MNV1_025_128) == 28
    total = sum(h * w * c for h, w, c in _MNV1_025_128)
    assert sum(w.per_channel_out_elements for w in convs) == total
    passes = [kernel_time(w, pc.params).pass_s for _, w in pc.works]
    assert sum(passes) == pytest.approx(per_el * total)
    assert all(kernel_time(w, pt.params).pass_s == 0 for _, w in pt.works)
    assert not any(w.per_channel_out_elements for _, w in pt.works)
    note = next(n for n in pc.notes if "extra pass" in n)
    assert f"28 conv(s) with per-channel weights on npu: an extra pass over their {total}" in note
    # The fit: per-channel and per-tensor rows generated from known values.
    keys = [
        "units.npu.per_channel_pass_s_per_element",
        "units.npu.efficiency.depthwise_conv",
        "units.npu.op_overhead_s",
    ]
    prior = Params.of(t, prior_for=keys)
    truth = prior.with_values({keys[0]: 2.0e-9, keys[1]: 0.2, keys[2]: 1.5e-5})
    samples = []
    for stem in ("mobilenet_v1_a025_128_int8", "mobilenet_v1_a025_128_int8pt",
                 "ds_cnn_kws_int8", "ad_autoencoder_int8"):  # fmt: skip
        works = tuple(w for _, w in estimate(load(m[stem]), t).works)
        samples.append(Sample(stem, works, predict(Sample(stem, works, 1.0), truth)))
    b = Batch(samples, truth, [])
    assert list(b.latencies(b.full())) == pytest.approx([s.measured_s for s in samples])
    f = fit_values(samples, prior, keys, prior_weight=0.0)
    assert f.values[keys[0]] == pytest.approx(2.0e-9, rel=1e-3)
    assert f.values[keys[2]] == pytest.approx(1.5e-5, rel=1e-3)


def test_the_drivers_requantisation_rule_reads_the_weights(published_dir: Path) -> None:
    """The driver re-quantises a per-channel conv per tensor when the Gini coefficient of its
    weights' magnitudes is at most 0.5 (0.6 depthwise) and keeps it per channel above
    (gc_vx_graph_optimization.c, vxoGraphOptimization_pcq). Textbook values: magnitudes of
    uniform weights (a freshly initialised Keras layer, glorot_uniform) have Gini 1/3, of
    Laplace ones (exponential magnitudes, as trained weights tend to) 1/2; weights that
    vary 20x from channel to channel go above it. The forecast note counts the convs above."""
    from infercast.estimate.work import weight_magnitude_gini

    g = load(_models(published_dir)["mobilenet_v1_a025_128_int8"])
    node = next(n for n in g.nodes if n.op == "conv" and n.name and n.inputs)
    w = g.tensors[node.inputs[1]]
    assert w.quant is not None and w.quant.per_channel and w.quant.axis == 0
    assert weight_magnitude_gini(g, node) == pytest.approx(1 / 3, abs=0.03)
    rng = np.random.default_rng(3)
    shape = tuple(int(d or 0) for d in w.shape or ())

    def with_weights(real: np.ndarray) -> float | None:
        scale = np.abs(real).reshape(shape[0], -1).max(axis=1) / 127
        q = np.clip(np.round(real / scale.reshape(-1, 1, 1, 1)), -127, 127).astype(np.int8)
        quant = dataclasses.replace(w.quant, scale=tuple(scale), zero_point=(0,) * shape[0])
        t2 = dataclasses.replace(w, value=q, quant=quant)
        return weight_magnitude_gini(g.with_tensors({**g.tensors, w.name: t2}), node)

    laplace = rng.laplace(size=(shape[0], 4096 // shape[0] + 1, 1, 1))
    laplace = np.resize(laplace, shape)
    assert with_weights(laplace) == pytest.approx(0.5, abs=0.04)
    spread = laplace * np.geomspace(0.05, 1.0, shape[0]).reshape(-1, 1, 1, 1)
    assert with_weights(spread) > 0.6
    # Hostile files (found by tests/test_fuzz.py): the rule reads 8-bit weights only, so a
    # per-channel int32 tensor in the weight slot or a zero point far outside int8 gives no
    # figure (and no allocation sized by the bad values).
    from infercast.ir.dtypes import DType

    q = g.constant_value(w.name)
    assert q is not None
    wide = dataclasses.replace(w, dtype=DType.INT32, value=q.astype(np.int32) * 100_000)
    assert weight_magnitude_gini(g.with_tensors({**g.tensors, w.name: wide}), node) is None
    far = dataclasses.replace(w.quant, zero_point=(10**6,) * shape[0])
    off = dataclasses.replace(w, quant=far)
    assert weight_magnitude_gini(g.with_tensors({**g.tensors, w.name: off}), node) is None
    fc = estimate(g, "imx8mp-npu-vx")
    note = next(n for n in fc.notes if "extra pass" in n)
    assert "exceeds 0.5 (0.6 depthwise)" in note and "0 of 28 here exceed it" in note
