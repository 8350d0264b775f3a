"""Placement on real models: per-op placement and reasons, segments, crossings, memory fit.

Expected values are derived in the tests from the models' shapes (read through
LiteRT's own interpreter where a byte count is compared) and from the rules the
target files cite, never copied from infercast's output.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from infercast import check as place
from infercast.analysis.memory import plan_graph
from infercast.cli import main
from infercast.report.placement import crossings_dict, fit_dict
from infercast.targets import load_target
from infercast.targets import place as place_graph

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_placement_craft import write_all

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def _craft(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_all(tmp_path_factory.mktemp("craft"))


def _by_name(report: Any) -> dict[str, Any]:
    return {ly.name.rsplit("/", 2)[-2] if "/" in ly.name else ly.name: ly for ly in report.layers}


# --------------------------------------------------------------------------- #
# A runtime's own view of a TFLite graph (LiteRT), for byte counts
# --------------------------------------------------------------------------- #


def litert_graph(
    path: Path,
) -> tuple[list[dict[str, Any]], dict[int, dict[str, Any]], list[int], list[int]]:
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(path))
    ops = it._get_ops_details()
    tensors = {d["index"]: d for d in it.get_tensor_details()}
    return (
        ops,
        tensors,
        [d["index"] for d in it.get_input_details()],
        [d["index"] for d in it.get_output_details()],
    )


def litert_memory(path: Path, float_bytes: int | None = None) -> tuple[int, int]:
    """(weight bytes, peak bytes of simultaneously live activations) from LiteRT's graph.

    Weights: constants carrying values (float, or with quantisation scales), not shape /
    axis / padding arguments. Live: from the producing op (inputs: from the start) to the
    last reader (outputs: to the end). ``float_bytes`` re-sizes float tensors (a compiler
    that quantises them).
    """
    ops, tensors, inputs, outputs = litert_graph(path)
    produced = {o for op in ops for o in op["outputs"]}

    def nbytes(t: dict[str, Any]) -> int:
        n = int(np.prod(t["shape"])) if len(t["shape"]) else 1
        size = np.dtype(t["dtype"]).itemsize
        if float_bytes is not None and np.dtype(t["dtype"]).kind == "f":
            size = float_bytes
        return n * size

    consts = {
        i for op in ops for i in op["inputs"] if i >= 0 and i not in produced and i not in inputs
    }
    weights = sum(
        nbytes(tensors[i])
        for i in consts
        if np.dtype(tensors[i]["dtype"]).kind == "f"
        or len(tensors[i]["quantization_parameters"]["scales"])
    )
    born = {i: 0 for i in inputs}
    last: dict[int, int] = {}
    for step, op in enumerate(ops):
        for i in op["inputs"]:
            if i >= 0 and i not in consts:
                last[i] = step
        for o in op["outputs"]:
            born.setdefault(o, step)
            last.setdefault(o, step)
    for o in outputs:
        last[o] = len(ops) - 1
    peak = max(
        sum(nbytes(tensors[t]) for t, b in born.items() if b <= step <= last[t])
        for step in range(len(ops))
    )
    return weights, peak


# --------------------------------------------------------------------------- #
# Required models
# --------------------------------------------------------------------------- #


def test_float_model_on_edgetpu_places_nothing(
    keras_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Edge TPU: fully 8-bit models only (coral.ai models-intro)."""
    model = keras_dir / "mobilenet_v2_fp32.tflite"
    report = place(model, "edgetpu-usb")
    assert report.counts() == {"accelerator": 0, "partial": 0, "cpu": len(report.layers)}
    for ly in report.layers:
        checks = {r.check for r in ly.reasons}
        assert "tensor_dtypes_in" in checks and "quantized" in checks, ly.name
        assert any("float32" in r.detail for r in ly.reasons)
    assert report.fit["parameter_cache"].required_bytes == 0
    assert [s.processor for s in report.segments] == ["cpu"]
    assert main(["check", str(model), "--target", "edgetpu-usb", "--format", "json"]) == 3
    d = json.loads(capsys.readouterr().out)
    assert d["schema"] == "infercast.check/1" and d["target"] == "edgetpu-usb"
    assert {ly["placement"] for ly in d["layers"]} == {"cpu"}
    assert set(d["layers"][0]) >= {"index", "name", "op", "placement", "reasons"}
    assert set(d["fit"]["host_ram"]) >= {"required_bytes", "capacity_bytes", "fits"}
    assert "segments" in d and "crossings" in d


# K210 on the 5x5/7x7 model (nncase FAQ rules, targets.md section 3):
# conv5x5 same -> CPU (kernel); conv3x3/2 SAME on 64 -> TF pads 0/1 -> partial (Pad + KPU conv
# + Crop); conv7x7/2 VALID -> CPU (kernel); dwconv3x3 SAME on 13 -> pads 1/1 -> KPU;
# transposed conv -> partial (Pad + KPU conv); ReLU -> KPU; global average pool -> CPU;
# dense -> partial (MatMul -> 1x1 KPU conv).
K210_CONVS = [
    ("cpu", {"kernel_square_in"}),
    ("partial", {"symmetric_padding"}),
    ("cpu", {"kernel_square_in"}),
    ("accelerator", set()),
    ("partial", {"always_rewritten"}),
    ("accelerator", set()),
    ("cpu", {"op_listed"}),
    ("partial", {"always_rewritten"}),
]


def test_k210_kernels_and_asymmetric_padding(edge_dir: Path) -> None:
    report = place(edge_dir / "convs_5x5_7x7.tflite", "k210-kpu")
    got = [
        (ly.placement, {r.check for r in ly.reasons if r.outcome != "note"}) for ly in report.layers
    ]
    for (placement, checks), (want_p, want_c) in zip(got, K210_CONVS, strict=True):
        assert placement == want_p
        assert want_c <= checks
    asym = report.layers[1].reasons[0]
    assert (
        asym.detail == "padding top 0, bottom 1, left 0, right 1"
        and asym.rewrite == "Pad + KPU conv + Crop"
    )
    assert report.layers[0].reasons[0].detail == "kernel 5x5"
    assert report.layers[2].reasons[0].detail == "kernel 7x7"
    # The VALID 7x7 conv also needs the Pad + Crop rewrite; all reasons are listed.
    assert {r.check for r in report.layers[2].reasons} == {"kernel_square_in", "symmetric_padding"}
    assert report.exit_code == 3
    # KPU RAM: the largest KPU layer's input + output, 8-bit after nncase quantisation:
    # conv3x3/2: 64*64*8 in + 32*32*16 out.
    assert report.fit["kpu_ram"].required_bytes == 64 * 64 * 8 + 32 * 32 * 16
    assert report.fit["kpu_ram"].fits


def test_k210_same_rules_on_the_onnx_export(edge_dir: Path) -> None:
    """tf2onnx's export: a leading Transpose and a separate Relu per conv, same decisions."""
    report = place(edge_dir / "convs_5x5_7x7.onnx", "k210-kpu")
    convs = [
        ly
        for ly in report.layers
        if ly.op in ("conv", "depthwise_conv", "conv_transpose", "matmul")
    ]
    assert [ly.placement for ly in convs] == [
        "cpu",
        "partial",
        "cpu",
        "accelerator",
        "partial",
        "partial",
    ]
    assert all(ly.placement == "accelerator" for ly in report.layers if ly.op == "relu")


def _float_k210(tmp_path: Path) -> str:
    """nncase --inference-type float: the model stays float; the KPU computes 8-bit only."""
    f = tmp_path / "k210-float.toml"
    f.write_text('extends = "k210-kpu"\n[compile]\nquantize_float_to = "none"\n')
    return str(f)


def test_fp32_activations_exceed_k210_memory(keras_dir: Path, tmp_path: Path) -> None:
    """ResNet-50 in fp32: the live activations alone exceed the 6 MB main RAM."""
    model = keras_dir / "resnet50_fp32.tflite"
    report = place(model, _float_k210(tmp_path))
    assert report.counts()["accelerator"] == 0
    assert all(any(r.check == "tensor_dtypes_in" for r in ly.reasons) for ly in report.layers)
    weights, peak = litert_memory(model)
    fit = report.fit["main_ram"]
    assert fit.parts["activations_bytes"] == peak
    assert fit.parts["weights_bytes"] == weights
    assert peak > 6 * 1024 * 1024  # activations alone do not fit
    assert not fit.fits and fit.over_by_bytes == weights + peak - 6 * 1024 * 1024
    assert report.exit_code == 3


def test_resnet50_does_not_fit_k210_even_quantised(keras_dir: Path) -> None:
    """With nncase's uint8 quantisation every float element becomes one byte."""
    model = keras_dir / "resnet50_fp32.tflite"
    report = place(model, "k210-kpu")
    weights, peak = litert_memory(model, float_bytes=1)
    fit = report.fit["main_ram"]
    assert (fit.parts["weights_bytes"], fit.parts["activations_bytes"]) == (weights, peak)
    assert fit.over_by_bytes == weights + peak - 6 * 1024 * 1024 > 0


def test_kpu_ram_overflow_by_one_layer(_craft: dict[str, Path]) -> None:
    """A 3x3 conv 4 -> 64 channels at 200x200: 8-bit input + output = 2.72 MB > 2 MiB KPU RAM
    ("KPU allocator cannot allocate more memory")."""
    report = place(_craft["conv_big_map"], "k210-kpu")
    assert report.layers[0].placement == "accelerator"
    fit = report.fit["kpu_ram"]
    need = 4 * 200 * 200 + 64 * 200 * 200
    assert fit.required_bytes == need and fit.capacity_bytes == 2 * 1024 * 1024
    assert fit.over_by_bytes == need - 2 * 1024 * 1024
    assert fit.blocking and report.exit_code == 3


def test_op_the_vx_delegate_lacks(edge_dir: Path) -> None:
    """WHILE is "no" in tflite-vx-delegate's op_status.md."""
    report = place(edge_dir / "while_loop.tflite", "imx8mp-npu-vx")
    (ly,) = report.layers
    assert ly.native_op == "WHILE" and ly.placement == "cpu"
    assert [r.check for r in ly.reasons] == ["op_listed"] and ly.reasons[0].detail == "WHILE"
    assert "WHILE" in load_target("imx8mp-npu-vx").support.known_unsupported


def test_vx_fallback_in_the_middle_costs_two_crossings(edge_dir: Path) -> None:
    """gru.tflite: RESHAPE -> WHILE -> STRIDED_SLICE. The WHILE falls back, so the graph has
    three segments and two crossings: the reshaped input (10x1x8 fp32) into the loop, and the
    loop's hidden state (1x1x16 fp32) back to the NPU."""
    report = place(edge_dir / "gru.tflite", "imx8mp-npu-vx")
    assert [ly.placement for ly in report.layers] == ["accelerator", "cpu", "accelerator"]
    assert [s.processor for s in report.segments] == ["accelerator", "cpu", "accelerator"]
    c = crossings_dict(report)
    assert c["count"] == 2 and c["bytes"] == 10 * 1 * 8 * 4 + 1 * 1 * 16 * 4
    assert c["switches"] == 2
    # Model input (1x10x8) in and output (1x16) out, both fp32.
    assert c["boundary_count"] == 2 and c["boundary_bytes"] == 10 * 8 * 4 + 16 * 4
    # Float runs on the NPU's slow programmable engine, with a note saying so.
    assert report.layers[0].unit == "ppu"
    assert [n.check for n in report.layers[0].notes] == ["integer_compute"]
    t = load_target("imx8mp-npu-vx")
    assert c["estimated_s"] == pytest.approx(
        2 * t.crossing.fixed_s + c["bytes"] / t.crossing.bytes_per_s
    )


def test_vx_per_channel_weights_are_found(keras_dir: Path) -> None:
    """Every conv / depthwise / FC whose weights LiteRT reports with several scales is a
    per-channel kernel for the forecast (whose cost the NPU's ``per_channel_slowdown``
    sets); the int8 path stays on the NN core."""
    from infercast import estimate

    model = keras_dir / "mobilenet_v2_int8.tflite"
    ops, tensors, _, _ = litert_graph(model)
    per_channel = 0
    for op in ops:
        if op["op_name"] in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"):
            w = tensors[op["inputs"][1]]
            per_channel += len(w["quantization_parameters"]["scales"]) > 1
    report = place(model, "imx8mp-npu-vx")
    flagged = [w for _k, w in estimate(model, "imx8mp-npu-vx").works if w.per_channel]
    assert len(flagged) == per_channel > 0
    assert report.all_on_accelerator and {ly.unit for ly in report.layers} == {"npu"}
    assert report.target.graph_compile_s_per_weight_byte > 0  # one-time OpenVX graph compile


def test_edgetpu_one_segment_unless_multi(_craft: dict[str, Path], tmp_path: Path) -> None:
    """edgetpu_compiler maps ops up to the first one it cannot map; with -a it makes more
    segments. The stride-2 STRIDED_SLICE and the channel PAD are not mappable."""
    model = _craft["edgetpu_int8"]
    single = place(model, "edgetpu-usb")
    p = {ly.name: ly for ly in single.layers}
    assert [p[n].placement for n in ("conv_a", "pad_hw", "conv_b", "slice_s1")] == [
        "accelerator"
    ] * 4
    assert [r.check for r in p["slice_s2"].reasons] == ["unit_strides"]
    assert [r.check for r in p["conv_c"].reasons] == ["single_segment"]
    assert [r.check for r in p["pad_channels"].reasons] == ["pad_spatial_only"]  # falls back anyway
    assert [r.check for r in p["conv_d"].reasons] == ["single_segment"]
    assert [s.processor for s in single.segments] == ["accelerator", "cpu"]
    c = crossings_dict(single)
    assert c["count"] == 1 and c["bytes"] == 1 * 8 * 16 * 8  # slice_s1's output
    f = tmp_path / "edgetpu-usb-multi.toml"
    f.write_text('extends = "edgetpu-usb"\n[placement]\nsegments = "multi"\n')
    multi = place(model, str(f))
    assert [ly.placement for ly in multi.layers] == [
        "accelerator",
        "accelerator",
        "accelerator",
        "accelerator",
        "cpu",
        "accelerator",
        "cpu",
        "accelerator",
    ]
    c = crossings_dict(multi)
    # slice_s1 out (8x16x8), slice_s2 out (4x8x8), conv_c out (4x8x8), pad_channels out (4x8x10)
    assert c["count"] == 4 and c["bytes"] == 8 * 16 * 8 + 4 * 8 * 8 + 4 * 8 * 8 + 4 * 8 * 10
    assert len(multi.segments) == 5


def test_edgetpu_parameters_beyond_the_cache_are_streamed(keras_dir: Path) -> None:
    """ResNet-50 int8: ~25 MB of parameters; the on-chip SRAM (8,346,664 B) first keeps the
    largest layer's activations, conv2_block1's residual add (two 56x56x256 inputs and a
    56x56x256 output, one byte each: LiteRT's shapes), then parameters; the rest is
    streamed each inference (not run on the CPU)."""
    from ai_edge_litert.interpreter import Interpreter

    model = keras_dir / "resnet50_int8.tflite"
    report = place(model, "edgetpu-pcie")
    assert report.all_on_accelerator
    weights, _ = litert_memory(model)
    it = Interpreter(model_path=str(model))
    adds = [
        d
        for d in it._get_ops_details()
        if d["op_name"] == "ADD"
        and "conv2_block1" in (it.get_tensor_details()[d["outputs"][0]]["name"])
    ]
    assert len(adds) == 1
    shape = {t["index"]: int(np.prod(t["shape"])) for t in it.get_tensor_details()}
    add_io = sum(shape[i] for i in (*adds[0]["inputs"], *adds[0]["outputs"]))
    assert add_io == 3 * 56 * 56 * 256
    fit = report.fit["parameter_cache"]
    assert fit.parts == {"accelerator_weights_bytes": weights, "layer_io_bytes": add_io}
    assert fit.worst_layer is not None and "conv2_block1_add" in fit.worst_layer
    assert not fit.fits and fit.on_overflow == "stream" and not fit.blocking
    assert fit_dict(fit)["streamed_bytes"] == weights - (8346664 - add_io)
    assert report.exit_code == 0


def test_edgetpu_keeps_at_most_192_kib_a_tile_of_activations(tmp_path: Path) -> None:
    """A 3x3 conv 16 -> 16 channels at 640x640 moves 13.1 MB in + out, more than the Edge TPU
    compiler keeps on chip: Coral's compiled PoseNet 721x1281 (google-coral/test_data) uses
    196,596 B of activation memory in each of 16 tiles, under 192 KiB, and DeepLab
    EdgeTPU-slim Cityscapes spills to a host buffer beside its 189,544 B a tile. The
    parameter room is the SRAM less 16 x 192 KiB, and the forecast streams what is beyond
    it, saying so."""
    from ai_edge_litert.interpreter import Interpreter

    from infercast import estimate
    from test_placement_craft import Craft

    c = Craft()
    x = c.tensor("x", (1, 640, 640, 16))
    y = c.tensor("y", (1, 640, 640, 16))
    c.conv(x, y, 3, 16, 16, 1, "SAME", "RELU")
    # Parameters over the SRAM less the activations, under the whole SRAM: 5.8 MB.
    prev = y
    for i in range(8):
        a = c.tensor(f"grow{i}", (1, 8, 8, 256))
        if i == 0:
            pooled = c.tensor("pooled", (1, 8, 8, 16))
            c.conv(prev, pooled, 80, 16, 16, 80, "VALID")
            c.conv(pooled, a, 3, 256, 16, 1, "SAME")
        else:
            c.conv(prev, a, 3, 256, 256, 1, "SAME")
        prev = a
    path = tmp_path / "big_maps.tflite"
    path.write_bytes(c.build([x], [prev], "big_maps"))
    it = Interpreter(model_path=str(path))
    it.allocate_tensors()
    it.invoke()

    report = place(path, "edgetpu-usb")
    assert report.all_on_accelerator
    fit = report.fit["parameter_cache"]
    cap = 16 * 192 * 1024
    assert fit.parts["layer_io_bytes"] == cap < 2 * 640 * 640 * 16
    weights = fit.parts["accelerator_weights_bytes"]
    room = 8346664 - cap
    assert room < weights < 8346664
    fc = estimate(path, "edgetpu-usb")
    streamed = [n for n in fc.notes if "streamed over the link" in n]
    assert len(streamed) == 1
    assert f"{weights - room} weight bytes beyond its {room} bytes" in streamed[0]


def test_kpu_layer_io_from_shapes(keras_dir: Path) -> None:
    """MobileNet v1 on the K210: the largest KPU layer is conv_pw_1, 112x112x32 in and
    112x112x64 out, one byte each after quantisation: 1.2 MB of the 2 MB KPU RAM."""
    report = place(keras_dir / "mobilenet_v1_fp32.tflite", "k210-kpu")
    fit = report.fit["kpu_ram"]
    assert fit.required_bytes == 112 * 112 * (32 + 64) and fit.fits
    assert fit.worst_layer is not None and "conv_pw_1" in fit.worst_layer


def test_peak_of_a_chain_is_the_largest_in_plus_out(keras_dir: Path) -> None:
    """In a pure chain (MobileNet v1) each tensor feeds only the next op, so the live peak
    is max over ops of input + output bytes."""
    from infercast.frontends import load

    g = load(keras_dir / "mobilenet_v1_int8.tflite")
    io = []
    for n in g.nodes:
        ins = [g.tensors[i] for i in n.inputs if i and not g.tensors[i].is_constant]
        io.append(
            sum(t.nbytes or 0 for t in ins) + sum(g.tensors[o].nbytes or 0 for o in n.outputs)
        )
    memory = plan_graph(g)
    assert memory.lower_bound_bytes == max(io) == 112 * 112 * (32 + 64)
    assert memory.arena_bytes == memory.lower_bound_bytes


def test_a_memory_plan_given_is_the_one_placement_uses(keras_dir: Path) -> None:
    from infercast.frontends import load

    g = load(keras_dir / "mobilenet_v1_int8.tflite")
    target = load_target("ethos-u65-256")
    plan = plan_graph(g)
    base = place_graph(g, target, memory=plan)
    assert base.fit["dram"].parts["activations_bytes"] == plan.arena_bytes
    assert base.fit["dram"].fits
    huge = place_graph(g, target, memory=dataclasses.replace(plan, arena_bytes=2**40))
    assert huge.fit["dram"].parts["activations_bytes"] == 2**40 and not huge.fits


def test_cpu_only_target_runs_everything_on_the_cpu(
    keras_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = keras_dir / "mobilenet_v2_int8.tflite"
    report = place(model, "rpi4-cpu")
    assert {ly.placement for ly in report.layers} == {"cpu"} and not report.crossings
    weights, peak = litert_memory(model)
    assert report.fit["dram"].required_bytes == weights + peak
    assert main(["check", str(model), "--target", "rpi4-cpu"]) == 0
    out = capsys.readouterr().out
    assert "OK: fits (a CPU-only target" in out


def test_check_exit_codes(
    keras_dir: Path, edge_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["check", str(edge_dir / "convs_5x5_7x7_int8.tflite"), "--target", "ethos-u55-128"])
        == 0
    )
    assert main(["check", str(edge_dir / "convs_5x5_7x7.tflite"), "--target", "k210-kpu"]) == 3
    out = capsys.readouterr().out
    assert "kernel 5x5" in out and "Pad + KPU conv + Crop" in out
    assert main(["check", str(tmp_path / "missing.tflite"), "--target", "k210-kpu"]) == 2
    assert "no such file" in capsys.readouterr().err
    # A target file given by path works wherever --target is taken.
    f = tmp_path / "big-sram-u55.toml"
    f.write_text('extends = "ethos-u55-128"\n[memories.sram]\nsize_bytes = 4194304\n')
    mv1 = keras_dir / "mobilenet_v1_int8.tflite"
    assert (
        main(["check", str(mv1), "--target", "ethos-u55-128", "-f", "json"]) == 3
    )  # 1.15 MiB arena > 512 KiB
    d = json.loads(capsys.readouterr().out)
    assert d["fit"]["sram"]["over_by_bytes"] == 112 * 112 * (32 + 64) - 524288
    assert main(["check", str(mv1), "--target", str(f), "-f", "json"]) == 0
    assert math.isclose(
        json.loads(capsys.readouterr().out)["fit"]["sram"]["capacity_bytes"], 4194304
    )


def test_vx_every_mul_runs_on_the_shader(tmp_path: Path) -> None:
    """imx8mp-npu-vx: a MUL runs on the shader core's integer (EVIS) kernels, never on the NN
    core or the TP (driver 6.4.3.p0's TensorMul table), whether its inputs broadcast (a
    per-channel [C] scale) or not: the table's EVIS check reads data types and rank only.
    The model is a real TFLite file (LiteRT runs it)."""
    from ai_edge_litert.interpreter import Interpreter

    from test_placement_craft import Craft, S

    c = Craft()
    x = c.tensor("x", (1, 8, 8, 16))
    scale = c.tensor("scale", (16,), data=np.arange(1, 17, dtype=np.int8))
    scaled = c.tensor("scaled", (1, 8, 8, 16))
    c.op("MUL", [x, scale], [scaled], S.BuiltinOptions.MulOptions, S.MulOptionsT())
    squared = c.tensor("squared", (1, 8, 8, 16))
    c.op("MUL", [scaled, scaled], [squared], S.BuiltinOptions.MulOptions, S.MulOptionsT())
    path = tmp_path / "mul.tflite"
    path.write_bytes(c.build([x], [squared], "mul"))
    it = Interpreter(model_path=str(path))
    it.allocate_tensors()
    it.invoke()

    layers = {lp.name: lp for lp in place(path, "imx8mp-npu-vx").layers}
    for lp in (layers["scaled"], layers["squared"]):
        assert lp.placement == "accelerator" and lp.unit == "sh"
        assert [r.check for r in lp.notes] == ["runs_on_engine"]


def test_vx_cropping_batch_to_space_runs_on_the_shader(tmp_path: Path) -> None:
    """imx8mp-npu-vx: a BATCH_TO_SPACE_ND that crops (a TF1 dilated conv on an odd map,
    DeepLabV3's 65x65) is refused by the TP (driver 6.4.3.p0 vxoNNReorgLayer2_TP_Support:
    any non-zero crop) and runs on the shader core; one that crops nothing stays on the TP.
    The model is a real TFLite file: LiteRT runs it and gives the 65x65 / 66x66 shapes."""
    from ai_edge_litert.interpreter import Interpreter

    from test_placement_craft import batch_to_space_model

    path = tmp_path / "b2s.tflite"
    path.write_bytes(batch_to_space_model())
    it = Interpreter(model_path=str(path))
    it.allocate_tensors()
    it.invoke()
    shapes = {d["name"]: d["shape"].tolist() for d in it.get_output_details()}
    assert shapes == {"b2s_cropped": [1, 65, 65, 8], "b2s_whole": [1, 66, 66, 8]}

    layers = {lp.name: lp for lp in place(path, "imx8mp-npu-vx").layers}
    assert layers["b2s_cropped"].unit == "sh"
    assert [r.check for r in layers["b2s_cropped"].notes] == ["crops_zero"]
    assert layers["b2s_whole"].placement == "accelerator" and layers["b2s_whole"].unit == "npu"
