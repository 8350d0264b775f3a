"""Bad input: one line on stderr, a non-zero exit, no traceback, no partial output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from infercast.cli import main


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _assert_one_line_error(code: int, out: str, err: str, *needles: str) -> None:
    assert code == 2, (code, err)
    assert out == "", "no partial output may pretend to be complete"
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert lines[0].startswith("infercast: error: ")
    for n in needles:
        assert n in lines[0], (n, lines[0])


@pytest.fixture(scope="module")
def tflite_bytes(keras_dir: Path) -> bytes:
    return (keras_dir / "mobilenet_v2_int8.tflite").read_bytes()


@pytest.fixture(scope="module")
def onnx_bytes(keras_dir: Path) -> bytes:
    return (keras_dir / "mobilenet_v2_fp32.onnx").read_bytes()


@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path, fmt: str) -> None:
    code, out, err = _run(capsys, "analyze", str(tmp_path / "nope.onnx"), "--format", fmt)
    _assert_one_line_error(code, out, err, "no such file")


@pytest.mark.parametrize("suffix", [".tflite", ".onnx"])
def test_empty_file(capsys: pytest.CaptureFixture[str], tmp_path: Path, suffix: str) -> None:
    p = tmp_path / f"empty{suffix}"
    p.write_bytes(b"")
    _assert_one_line_error(*_run(capsys, "analyze", str(p)), "empty")


@pytest.mark.parametrize("keep", [16, 1000, 100_000, 0.5, 0.9])
def test_truncated_tflite(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, tflite_bytes: bytes, keep: float
) -> None:
    n = int(keep * len(tflite_bytes)) if keep < 1 else int(keep)
    p = tmp_path / "cut.tflite"
    p.write_bytes(tflite_bytes[:n])
    _assert_one_line_error(*_run(capsys, "analyze", str(p), "--format", "json"), "truncated")


@pytest.mark.parametrize("keep", [16, 1000, 100_000, 0.5, 0.9])
def test_truncated_onnx(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, onnx_bytes: bytes, keep: float
) -> None:
    n = int(keep * len(onnx_bytes)) if keep < 1 else int(keep)
    p = tmp_path / "cut.onnx"
    p.write_bytes(onnx_bytes[:n])
    _assert_one_line_error(*_run(capsys, "analyze", str(p), "--format", "json"), str(p))


def test_byte_flipped_tflite_header_region(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, tflite_bytes: bytes
) -> None:
    """Flip bytes in the flatbuffer's tables (the root offset and the vtables after
    the identifier): the structure must be rejected, not misread."""
    failures = 0
    rng = __import__("random").Random(0)
    for trial in range(20):
        data = bytearray(tflite_bytes)
        # the root table offset (bytes 0-3) and a few random structural bytes
        data[0] ^= 0xFF if trial % 2 == 0 else 0x40
        for _ in range(4):
            i = rng.randrange(8, 4096)
            data[i] ^= 0xFF
        p = tmp_path / f"flip{trial}.tflite"
        p.write_bytes(bytes(data))
        code, out, err = _run(capsys, "analyze", str(p), "--format", "json")
        assert "Traceback" not in err
        if code != 0:
            _assert_one_line_error(code, out, err, str(p))
            failures += 1
    assert failures == 20


def test_byte_flipped_onnx(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, onnx_bytes: bytes
) -> None:
    """Random byte flips anywhere: never a traceback; a failure is one line, exit 2."""
    rng = __import__("random").Random(1)
    for trial in range(20):
        data = bytearray(onnx_bytes)
        for _ in range(8):
            i = rng.randrange(0, min(len(data), 20000))
            data[i] ^= 0xFF
        p = tmp_path / f"flip{trial}.onnx"
        p.write_bytes(bytes(data))
        code, out, err = _run(capsys, "analyze", str(p), "--format", "json")
        assert "Traceback" not in err
        assert code in (0, 2), err
        if code == 2:
            _assert_one_line_error(code, out, err)


def test_tflite_renamed_to_onnx_is_still_read_by_content(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, tflite_bytes: bytes
) -> None:
    p = tmp_path / "really_tflite.onnx"
    p.write_bytes(tflite_bytes)
    code, out, err = _run(capsys, "analyze", str(p), "--format", "json")
    assert code == 0, err
    assert '"format": "tflite"' in out
    # The mismatch is said, in the output's notes.
    assert "is a TFLite flatbuffer (named .onnx); read as TFLite" in out


def test_onnx_renamed_to_tflite(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, onnx_bytes: bytes
) -> None:
    p = tmp_path / "really_onnx.tflite"
    p.write_bytes(onnx_bytes)
    _assert_one_line_error(*_run(capsys, "analyze", str(p)), "no TFLite identifier")


def test_text_file_as_onnx(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    p = tmp_path / "notes.onnx"
    p.write_text("this is not a model\n" * 10)
    _assert_one_line_error(*_run(capsys, "analyze", str(p)))


def test_unknown_op_is_reported_not_zero(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import json

    import onnx
    from onnx import TensorProto, helper

    node = helper.make_node("FrobnicateV9", ["x"], ["y"], domain="com.example")
    relu = helper.make_node("Relu", ["y"], ["z"])
    g = helper.make_graph(
        [node, relu],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 8])],
        value_info=[helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
    )
    m = helper.make_model(
        g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.example", 1)]
    )
    p = tmp_path / "unknown.onnx"
    onnx.save(m, p)
    code, out, err = _run(capsys, "analyze", str(p), "--format", "json")
    # The full output, marked incomplete, plus one stderr line and exit 4.
    assert code == 4, err
    assert err.strip().splitlines() == [
        "infercast: incomplete: 1 layer(s) of op(s) with no cost rule (FrobnicateV9); "
        "the totals exclude them (exit 4)"
    ]
    doc = json.loads(out)
    assert doc["totals"]["complete"] is False
    assert doc["unsupported_ops"] == [
        {
            "op": "com.example:frobnicate_v9",
            "native_op": "FrobnicateV9",
            "count": 1,
            "layers": ["y"],
        }
    ]
    layer = doc["layers"][0]
    assert layer["status"] == "unsupported" and layer["macs"] is None and layer["flops"] is None
    assert doc["layers"][1]["flops"] == 8  # the Relu after it is still counted


def test_symbolic_input_needs_input_shape(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import onnx
    from onnx import TensorProto, helper

    g = helper.make_graph(
        [helper.make_node("Relu", ["images"], ["y"])],
        "g",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, ["batch", 3, "h", "w"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3, "h", "w"])],
    )
    p = tmp_path / "sym.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), p)
    _assert_one_line_error(
        *_run(capsys, "analyze", str(p)), "images [?x3x?x?]", "--input-shape images=1x3x1x1"
    )
    code, out, err = _run(
        capsys, "analyze", str(p), "--input-shape", "images=2x3x8x8", "-f", "json"
    )
    assert code == 0, err
    assert '"flops": 384' in out  # 2*3*8*8 Relu outputs
    _assert_one_line_error(
        *_run(capsys, "analyze", str(p), "--input-shape", "imgs=1x3x8x8"), "imgs", "images"
    )
    _assert_one_line_error(*_run(capsys, "analyze", str(p), "--input-shape", "images=1x3xbig"))


def test_console_script_prints_no_traceback(tmp_path: Path) -> None:
    p = tmp_path / "junk.tflite"
    p.write_bytes(b"\x00" * 64)
    r = subprocess.run(
        [sys.executable, "-m", "infercast", "analyze", str(p)], capture_output=True, text=True
    )
    assert r.returncode == 2
    assert r.stdout == ""
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
