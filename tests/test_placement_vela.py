"""A real peer: Arm Vela decides NPU vs CPU for every op; infercast must agree.

``vela --show-cpu-operations`` (ethos-u-vela, its default C++ core) lists the
operators it leaves on the CPU by their output tensor; every other operator of
the model goes to the NPU. We run it with the system config and memory mode
the target file names (``[toolchain]``) and compare op by op. A disagreement is
a test failure unless listed in ``EXCEPTIONS`` with the reason.

Models: the keras int8 and fp32 fixtures, the edge fixtures, and two crafted
int8 models (tests/tflite_craft.py) whose ops sit on both sides of Vela's
numeric limits (stride 4, 9x9 pools, 3x upscales, weight sums, reduced-axis
sizes, softmax sizes).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from infercast import check as place
from infercast.estimate.work import vela_view
from infercast.targets import load_target

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_placement_craft import (
    edgetpu_int8_model,
    limits_int8_model,
    mixed_int8_model,
    zero_point_model,
)

REPO = Path(__file__).resolve().parents[1]
_CPU_LINE = re.compile(r"^\s+CPU: \S+ = (.*) \(outputs \[")
_COUNTS = re.compile(r"^(CPU|NPU) operators = (\d+)")

# (model file name, layer name) -> why Vela and infercast differ. Empty: none known.
EXCEPTIONS: dict[tuple[str, str], str] = {}


@pytest.fixture(scope="session")
def _crafted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("crafted")
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    for name, build in (
        ("mixed_int8.tflite", mixed_int8_model),
        ("limits_int8.tflite", limits_int8_model),
        ("edgetpu_int8.tflite", edgetpu_int8_model),
        ("zero_point.tflite", zero_point_model),
    ):
        data = build()
        # A real model: LiteRT's reference kernels run it.
        it = Interpreter(
            model_content=data,
            experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
        )
        it.allocate_tensors()
        it.invoke()
        (d / name).write_bytes(data)
    return d


def vela_cpu_ops(model: Path, target_name: str, out_dir: Path) -> tuple[set[str], int, int]:
    """Output-tensor names of the ops Vela leaves on the CPU; its CPU and NPU op counts."""
    vela = shutil.which("vela")
    assert vela, "ethos-u-vela is a test dependency (pip install ethos-u-vela)"
    tc = load_target(target_name).raw["toolchain"]
    cmd = [
        vela,
        str(model),
        "--show-cpu-operations",
        "--output-dir",
        str(out_dir),
        "--accelerator-config",
        tc["vela_accelerator_config"],
        "--system-config",
        tc["vela_system_config"],
        "--memory-mode",
        tc["vela_memory_mode"],
        "--config",
        "Arm/vela.ini",
    ]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    cpu: set[str] = set()
    counts = {"CPU": -1, "NPU": -1}
    for line in res.stdout.splitlines():
        m = _CPU_LINE.match(line)
        if m:
            cpu.add(m.group(1))
        c = _COUNTS.match(line)
        if c:
            counts[c.group(1)] = int(c.group(2))
    return cpu, counts["CPU"], counts["NPU"]


def agreement(model: Path, target_name: str, out_dir: Path) -> tuple[int, int, list[str]]:
    """(agreeing ops, total ops, disagreements) between Vela and infercast."""
    vela_cpu, n_cpu, _ = vela_cpu_ops(model, target_name, out_dir)
    # Arm's Vela is compared with the target as Arm's Vela sees it: the rules an NXP-fork
    # target states on top of its base (the U65's pool strides and rescaled MEANs) dropped
    report = place(model, vela_view(load_target(target_name)))
    # Constant-decoding ops (fp16 weights' DEQUANTIZE) are "folded" in infercast: done once on
    # the CPU at load time. Vela lists them as CPU operators too, so they are compared as CPU.
    layers = list(report.layers)
    ours_cpu = {ly.name for ly in layers if ly.placement == "cpu"}
    names = {ly.name for ly in layers}
    assert vela_cpu <= names, f"Vela names ops infercast does not have: {vela_cpu - names}"
    assert n_cpu == len(vela_cpu)
    bad = []
    for ly in layers:
        if (ly.name in vela_cpu) != (ly.name in ours_cpu):
            key = (model.name, ly.name)
            if key in EXCEPTIONS:
                continue
            ours = ly.placement + (
                ": " + "; ".join(f"{r.check}: {r.detail}" for r in ly.reasons) if ly.reasons else ""
            )
            bad.append(
                f"{ly.index} {ly.native_op} {ly.name}: "
                f"Vela {'CPU' if ly.name in vela_cpu else 'NPU'}, "
                f"infercast {ours}"
            )
    return len(layers) - len(bad), len(layers), bad


def _check(model: Path, target: str, tmp_path: Path, expect_cpu: int | None = None) -> None:
    ok, total, bad = agreement(model, target, tmp_path)
    print(f"vela agreement {model.name} on {target}: {ok}/{total}")
    assert not bad, "\n".join(bad)
    if expect_cpu is not None:
        assert (
            sum(
                ly.placement == "cpu"
                for ly in place(model, vela_view(load_target(target))).inference_layers
            )
            == expect_cpu
        )


@pytest.mark.parametrize("name", ["mobilenet_v1_int8", "mobilenet_v2_int8"])
def test_keras_int8_agrees_with_vela(keras_dir: Path, tmp_path: Path, name: str) -> None:
    _check(keras_dir / f"{name}.tflite", "ethos-u55-128", tmp_path, expect_cpu=0)


@pytest.mark.slow
def test_resnet50_int8_agrees_with_vela(keras_dir: Path, tmp_path: Path) -> None:
    _check(keras_dir / "resnet50_int8.tflite", "ethos-u55-128", tmp_path, expect_cpu=0)


@pytest.mark.parametrize("name", ["mobilenet_v1_fp32", "mobilenet_v2_fp16"])
def test_float_keras_models_stay_on_the_cpu_like_vela(
    keras_dir: Path, tmp_path: Path, name: str
) -> None:
    model = keras_dir / f"{name}.tflite"
    _check(model, "ethos-u55-128", tmp_path)
    report = place(model, "ethos-u55-128")
    assert all(ly.placement == "cpu" for ly in report.layers)
    assert all(
        any(r.check == "tensor_dtypes_in" for r in ly.reasons) for ly in report.inference_layers
    )


# Not compared: lstm.tflite (Vela 5.2 aborts: "UNIDIRECTIONAL_SEQUENCE_LSTM ... Does not have
# valid TFLite Semantics" on this float LSTM, so it gives no placement), and the models with
# WHILE / resource variables (Vela lists the ops of the loop bodies; infercast places the main
# graph only -- every op of those float models is on the CPU in both).
@pytest.mark.parametrize(
    "name", ["convs_5x5_7x7_int8.tflite", "convs_5x5_7x7.tflite", "dynamic_range.tflite"]
)
def test_edge_fixtures_agree_with_vela(edge_dir: Path, tmp_path: Path, name: str) -> None:
    _check(edge_dir / name, "ethos-u55-128", tmp_path)


@pytest.mark.parametrize("target", ["ethos-u55-128", "ethos-u65-256"])
@pytest.mark.parametrize(
    ("name", "cpu_ops"),
    [
        ("mixed_int8.tflite", 6),
        ("limits_int8.tflite", 9),
        ("edgetpu_int8.tflite", 0),
        ("zero_point.tflite", 1),
    ],
)
def test_crafted_limits_agree_with_vela(
    _crafted: Path, tmp_path: Path, target: str, name: str, cpu_ops: int
) -> None:
    """Each constraint on both sides of its limit; Vela's CPU count is stated too."""
    model = _crafted / name
    _, n_cpu, n_npu = vela_cpu_ops(model, target, tmp_path / "v")
    assert n_cpu == cpu_ops and n_npu > 0  # Vela's own count, stated in the test
    _check(model, target, tmp_path, expect_cpu=cpu_ops)


def _global_avgpool_int8_model() -> bytes:
    """conv 3x3 -> AVERAGE_POOL_2D 16x16 stride 16 VALID (a global pool, the form DS-CNN,
    ResNet-8 and the selfie segmenter's SE blocks are written in) -> conv 1x1, and a 2x2
    stride-2 pool on a second branch."""
    from test_placement_craft import Craft

    c = Craft()
    x = c.tensor("input", (1, 16, 16, 8))
    t1 = c.tensor("conv3x3", (1, 16, 16, 8))
    c.conv(x, t1, 3, 8, 8, 1, "SAME", "RELU")
    t2 = c.tensor("avgpool16x16_s16", (1, 1, 1, 8))
    c.pool("AVERAGE_POOL_2D", t1, t2, 16, 16, "VALID")
    t3 = c.tensor("conv1x1", (1, 1, 1, 8))
    c.conv(t2, t3, 1, 8, 8, 1, "VALID")
    t4 = c.tensor("avgpool2x2_s2", (1, 8, 8, 8))
    c.pool("AVERAGE_POOL_2D", t1, t4, 2, 2, "VALID")
    return c.build([x], [t3, t4], "global_avgpool_int8")


def test_imx93_npu_runs_large_stride_average_pools_on_the_cpu(tmp_path: Path) -> None:
    """NXP's Vela for the i.MX 93 (nxp-imx/ethos-u-vela lf-6.1.22_2.0.0 / lf-6.1.36_2.1.0,
    tflite_supported_operators.py: every pooling op within stride_range (1, 3)) leaves a
    stride-16 AVERAGE_POOL_2D on the CPU; Arm's Vela 5.2 (the U55 target) runs it on the
    NPU. The stride-2 pool stays on the NPU for both."""
    model = tmp_path / "global_avgpool_int8.tflite"
    model.write_bytes(_global_avgpool_int8_model())
    vela_cpu, n_cpu, _ = vela_cpu_ops(model, "ethos-u55-128", tmp_path / "v")
    assert n_cpu == 0 and not vela_cpu  # Vela 5.2: all on the NPU
    _check(model, "ethos-u55-128", tmp_path, expect_cpu=0)
    u65 = {ly.name: ly.placement for ly in place(model, "ethos-u65-256").inference_layers}
    assert u65 == {
        "conv3x3": "accelerator",
        "avgpool16x16_s16": "cpu",
        "conv1x1": "accelerator",
        "avgpool2x2_s2": "accelerator",
    }


def test_imx93_npu_runs_rescaled_large_means_on_the_cpu(_crafted: Path) -> None:
    """NXP's Vela 3.7 (tflite_supported_operators.py constraint_mean_height_width_product,
    64 x 64) leaves a MEAN that keeps its dimensions over more than 4096 pixels on the CPU:
    the crafted 144 x 144 "mean_hw" (keep_dims) runs on the A55 of the i.MX 93, on the NPU
    for Arm's Vela 5.2 (test_crafted_limits_agree_with_vela checks that against Vela)."""
    model = _crafted / "mixed_int8.tflite"
    nxp = {ly.name: ly.placement for ly in place(model, "ethos-u65-256").layers}
    arm = {
        ly.name: ly.placement for ly in place(model, vela_view(load_target("ethos-u65-256"))).layers
    }
    assert nxp["mean_hw"] == "cpu" and arm["mean_hw"] == "accelerator"
