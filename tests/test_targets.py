"""Target files: loading, ``extends``, validation errors, host detection, figures.

Figures are checked against their sources where a machine-readable one is here:
Vela's own ``vela.ini`` (installed with ethos-u-vela) for the Ethos-U system
configs, and first-principles arithmetic (MACs/cycle x 2 x clock) elsewhere.
"""

from __future__ import annotations

import configparser
import json
import os
import tomllib
from pathlib import Path

import pytest

from infercast.cli import main
from infercast.targets import TargetError, builtin_names, list_targets, load_target
from infercast.targets.constraints import REGISTRY
from infercast.targets.loader import to_toml

REQUIRED = {
    "imx8mp-npu-vx",
    "imx8mp-npu-nnapi",
    "imx8mp-cpu",
    "k210-kpu",
    "edgetpu-usb",
    "edgetpu-pcie",
    "ethos-u55-128",
    "ethos-u65-256",
    "rpi4-cpu",
    "jetson-nano-gpu",
    "t4-gpu",
    "host",
}


def test_required_targets_are_built_in_and_valid() -> None:
    names = set(builtin_names())
    assert names >= REQUIRED
    assert not any(n.startswith("_") for n in names), "bases are not listed"
    for t in list_targets():
        assert t.fallback.kind == "cpu"
        assert all(u.peak_ops_per_s for u in t.units.values())
        cal = t.calibration
        if cal.calibrated:  # fitted on published rows: says on which, and how well
            assert cal.rows and cal.parameters and cal.values, t.name
            assert cal.loo_worst_ratio >= 1 and cal.loo_median_abs_error >= 0, t.name
        for key in t.uncertain:  # every uncertain key names a real key
            cur: object = t.raw
            for part in key.split("."):
                assert isinstance(cur, dict) and part in cur, (t.name, key)
                cur = cur[part]


def test_extends_merges_recursively_and_accumulates_sources() -> None:
    vx = load_target("imx8mp-npu-vx")
    nnapi = load_target("imx8mp-npu-nnapi")
    # Both inherit the CPU from _imx8mp and the NPU from _imx8mp-npu ...
    assert vx.units["cpu"].clock_hz == nnapi.units["cpu"].clock_hz == 1.8e9
    assert vx.units["npu"].peak("int8") == nnapi.units["npu"].peak("int8") == 2.3e12
    # ... and NNAPI reads the NPU numbers the VX delegate's fit found (one NPU, one driver).
    from infercast.estimate.forecast import Params

    assert nnapi.calibration.values_from == "imx8mp-npu-vx"
    for cls in ("conv", "depthwise_conv"):
        assert Params.of(nnapi).eff("npu", cls) == Params.of(vx).eff("npu", cls)
    assert [Path(p).name for p in nnapi.chain] == [
        "imx8mp-npu-nnapi.toml",
        "_imx8mp-npu.toml",
        "_imx8mp.toml",
    ]
    assert any("AN13854" in s for s in nnapi.sources) and any("#35" in s for s in nnapi.sources)
    # "treat the NNAPI op set as a subset of VX's" (targets.md section 2)
    assert set(nnapi.support.ops) < set(vx.support.ops)
    assert "support.ops" in nnapi.uncertain


def test_nnapi_runs_the_vx_drivers_engines(whatif_dir: Path) -> None:
    """Both delegates end in one NPU driver: the engine it picks for an op (a MUL on the
    shader core) is the same through NNAPI, and NNAPI only adds its per-call cost. On a
    SiLU / squeeze-excite model both take whole (Keras EfficientNet-B0 int8), the NNAPI
    forecast is the VX one plus that cost, less the layout permutes TIM-VX inserts for the
    VX delegate (NNAPI states no such pass); it once came out 2x faster (13.2 vs 27.2 ms)."""
    from infercast import estimate

    model = whatif_dir / "efficientnet_b0_int8.tflite"
    vx, nnapi = estimate(model, "imx8mp-npu-vx"), estimate(model, "imx8mp-npu-nnapi")
    units = {r["unit"] for r in nnapi.to_records() if r["op"] == "mul"}
    assert units == {r["unit"] for r in vx.to_records() if r["op"] == "mul"} == {"sh"}
    layout = sum(ly.layout_s for ly in vx.layers)
    assert layout > 0 and not any(ly.layout_s for ly in nnapi.layers)
    extra = nnapi.latency_s - (vx.latency_s - layout)
    fitted = load_target("imx8mp-npu-nnapi").calibration.values["calibration.invoke_overhead_s"]
    assert fitted > 0 and extra == pytest.approx(fitted, rel=1e-6)


def test_peaks_follow_from_macs_and_clock() -> None:
    """ops/s = MACs/cycle x 2 x clock wherever both are stated (1 MAC = 2 ops)."""
    for name, unit in [
        ("ethos-u55-128", "npu"),
        ("ethos-u65-256", "npu"),
        ("edgetpu-pcie", "tpu"),
        ("imx8mp-npu-vx", "npu"),
    ]:
        u = load_target(name).units[unit]
        assert u.macs_per_cycle and u.clock_hz
        assert u.peak("int8") == pytest.approx(u.macs_per_cycle * 2 * u.clock_hz, rel=0.01), name
    # K210: Sipeed's "0.23 TOPS" counts multiplications (MAC/s) -> 0.46 T ops/s.
    assert load_target("k210-kpu").units["kpu"].peak("int8") == pytest.approx(2 * 0.23e12)
    # libedgetpu-std runs the USB Edge TPU at 250 MHz instead of 500 MHz: half of 4 TOPS.
    usb, pcie = load_target("edgetpu-usb"), load_target("edgetpu-pcie")
    assert usb.units["tpu"].peak("int8") == pytest.approx(pcie.units["tpu"].peak("int8") / 2)
    assert pcie.units["tpu"].peak("int8") == 4e12
    # Jetson Nano: 128 cores x 2 (FMA) x 921.6 MHz; fp16 twice that.
    g = load_target("jetson-nano-gpu").units["gpu"]
    assert g.peak("fp32") == pytest.approx(128 * 2 * 921.6e6, rel=0.01)
    assert g.peak("fp16") == pytest.approx(2 * g.peak("fp32"), rel=0.01)


def _vela_ini() -> configparser.ConfigParser:
    import ethosu.vela

    path = Path(ethosu.vela.__file__).parents[1] / "config_files" / "Arm" / "vela.ini"
    assert path.is_file()
    cp = configparser.ConfigParser()
    cp.read(path)
    return cp


@pytest.mark.parametrize(("name", "axi_bytes"), [("ethos-u55-128", 8), ("ethos-u65-256", 16)])
def test_ethos_targets_match_velas_system_configs(name: str, axi_bytes: int) -> None:
    """Clock and memory bandwidths equal Vela's: core_clock x clock_scale x AXI width."""
    t = load_target(name)
    ini = _vela_ini()
    tc = t.raw["toolchain"]
    sysc = ini[f"System_Config.{tc['vela_system_config']}"]
    clock = float(sysc["core_clock"])
    assert t.units["npu"].clock_hz == clock
    assert t.units["npu"].macs_per_cycle == int(tc["vela_accelerator_config"].rsplit("-", 1)[1])
    for mem in t.memories.values():
        port = {"sram": "Sram", "flash": "OffChipFlash", "dram": "Dram"}[mem.name]
        scale = float(sysc[f"{port}_clock_scale"])
        assert mem.bandwidth_bytes_per_s == pytest.approx(clock * scale * axi_bytes), mem.name
    mode = ini[f"Memory_Mode.{tc['vela_memory_mode']}"]
    if "arena_cache_size" in mode:
        assert t.memories["sram"].size_bytes == int(mode["arena_cache_size"])


def test_host_is_detected_from_this_machine() -> None:
    t = load_target("host")
    cpu = t.units["cpu"]
    assert cpu.cores == os.cpu_count()
    with open("/proc/meminfo") as f:
        total = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemTotal:"))
    assert t.memories["ram"].size_bytes == total
    assert "detected" in cpu.description and not t.calibration.calibrated
    assert "units.cpu.peak_fp32_ops_per_s" in t.uncertain
    # Without detection, the file's own placeholders stay (documents are made that way).
    assert load_target("host", detect=False).units["cpu"].cores == 1


@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_show_output_is_a_valid_target_file(name: str, tmp_path: Path) -> None:
    t = load_target(name)
    text = to_toml(dict(t.raw))
    assert tomllib.loads(text) == t.raw
    f = tmp_path / "copy.toml"
    f.write_text(text)
    again = load_target(str(f))
    assert again.raw == t.raw


def test_user_target_file_extends_a_built_in(tmp_path: Path) -> None:
    f = tmp_path / "my-u55.toml"
    f.write_text(
        'extends = "ethos-u55-128"\n'
        'description = "U55 with 2 MiB SRAM"\n'
        "[memories.sram]\nsize_bytes = 2097152\n"
    )
    t = load_target(str(f))
    assert t.name == "my-u55"
    assert t.memories["sram"].size_bytes == 2097152
    assert t.memories["sram"].bandwidth_bytes_per_s == 4e9  # inherited
    assert t.support.ops == load_target("ethos-u55-128").support.ops


# --------------------------------------------------------------------------- #
# Bad input: errors that name the file, the key and the problem
# --------------------------------------------------------------------------- #

BASE = 'extends = "k210-kpu"\n'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            BASE + '[memories.kpu_ram]\nsize_bytes = "2MB"\n',
            "bad.toml: memories.kpu_ram.size_bytes must be a positive integer, got '2MB'",
        ),
        (
            BASE + "[memories.kpu_ram]\nsize_byte = 5\n",
            "memories.kpu_ram.size_byte is not a known key (did you mean 'size_bytes'?)",
        ),
        (
            BASE + "[units.kpu]\npeak_int8_ops_per_s = -1.0\n",
            "units.kpu.peak_int8_ops_per_s must be a positive number, got -1.0",
        ),
        (
            BASE + "[units.kpu]\npeak_int8_macs = 1.0\n",
            "units.kpu.peak_int8_macs is not a known key",
        ),
        (
            BASE + '[placement]\nsegments = "two"\n',
            "placement.segments must be one of multi, single, got 'two'",
        ),
        (
            BASE + '[placement]\naccelerator = "gpu"\n',
            "placement.accelerator must name a unit of this target",
        ),
        (
            BASE + '[support.rules.conv]\nchecks = [{ check = "stride_inn", lo = 1, hi = 2 }]\n',
            "support.rules.conv.checks[0].check names no known constraint: 'stride_inn' "
            "(did you mean 'stride_in'?)",
        ),
        (
            BASE + '[support.rules.conv]\nchecks = [{ check = "stride_in", lo = 1 }]\n',
            "support.rules.conv.checks[0].hi is required by stride_in (int)",
        ),
        (
            BASE + '[support.rules.conv]\nchecks = [{ check = "stride_in", lo = 1, hi = "3" }]\n',
            "support.rules.conv.checks[0].hi must be int, got '3'",
        ),
        (
            BASE
            + '[support.rules.conv]\nchecks = [{ check = "dilation_one", on_fail = "partial" }]\n',
            'support.rules.conv.checks[0].rewrite is required when on_fail = "partial"',
        ),
        (
            BASE + 'uncertain = ["memories.nowhere.size_bytes"]\n',
            "uncertain lists 'memories.nowhere.size_bytes', which is not a key of this target",
        ),
        (
            BASE + "[support.rules.softmax]\nchecks = []\n",
            "support.rules.softmax has rules but the op is not in support.ops",
        ),
        ('extends = "k210"\n', "bad.toml: extends unknown target 'k210'"),
        (BASE + "[memories.kpu_ram\n", "bad.toml: not valid TOML"),
    ],
)
def test_malformed_target_file_names_the_key(tmp_path: Path, text: str, expected: str) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(TargetError) as exc:
        load_target(str(f))
    assert expected in str(exc.value)


def test_extends_cycle_is_reported(tmp_path: Path) -> None:
    (tmp_path / "a.toml").write_text('extends = "./b.toml"\n')
    (tmp_path / "b.toml").write_text('extends = "./a.toml"\n')
    with pytest.raises(
        TargetError, match=r"a.toml: extends itself in a cycle \(a.toml -> b.toml -> a.toml\)"
    ):
        load_target(str(tmp_path / "a.toml"))


def test_unknown_target_lists_the_known_ones() -> None:
    with pytest.raises(TargetError) as exc:
        load_target("k210")
    msg = str(exc.value)
    assert "unknown target 'k210'" in msg
    for n in REQUIRED:
        assert n in msg


def test_every_constraint_a_target_uses_is_registered_and_documented() -> None:
    used = set()
    for t in list_targets():
        for c in t.support.generic:
            used.add(c.name)
        for rule in t.support.rules.values():
            used.update(c.name for c in rule.checks)
    assert used <= set(REGISTRY)
    assert used == set(REGISTRY), f"registered but unused: {set(REGISTRY) - used}"
    for c in REGISTRY.values():
        assert c.fn.__doc__ and c.template[0].isupper(), c.name
        for p in c.params:  # every parameter appears in the reason text
            assert "{" + p + "}" in c.template, (c.name, p)


# --------------------------------------------------------------------------- #
# CLI
# --------------------------------------------------------------------------- #


def test_cli_targets_list_and_show(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["targets"]) == 0
    assert "list" in capsys.readouterr().out
    assert main(["targets", "list", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["name"] for r in rows} == set(builtin_names())
    assert main(["targets", "show", "ethos-u55-128"]) == 0
    text = capsys.readouterr().out
    raw = tomllib.loads(text)
    assert raw["units"]["npu"]["peak_int8_ops_per_s"] == 1.28e11
    assert raw["support"]["generic"][0]["check"] == "model_format_in"  # from the base file
    assert main(["targets", "show", "k210-kpu", "--format", "json"]) == 0
    assert (
        json.loads(capsys.readouterr().out)["memories"]["kpu_ram"]["size_bytes"] == 2 * 1024 * 1024
    )


def test_cli_bad_target_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "m.tflite"
    model.write_bytes(b"\0" * 16)
    assert main(["check", str(model), "--target", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("infercast: error: unknown target 'nope'") and "k210-kpu" in err
    assert err.count("\n") == 1
    bad = tmp_path / "bad.toml"
    bad.write_text('extends = "k210-kpu"\n[memories.kpu_ram]\nsize_bytes = "2MB"\n')
    assert main(["targets", "show", str(bad)]) == 2
    assert "memories.kpu_ram.size_bytes must be a positive integer" in capsys.readouterr().err
