"""The Edge TPU compiler's own figures, read back from compiled models.

The files are Google's (tests/data/edgetpu/SOURCES.md); the figures asserted are the
compiler's, readable by anyone with libedgetpu's executable/executable.fbs and flatc, and
cross-checked here against the TFLite model around the package (its tensors' names and
shapes)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

import infercast
from infercast.frontends.edgetpu_package import PackageError, read_package

DATA = Path(__file__).parent / "data" / "edgetpu"
SPLIT = DATA / "split_concat_edgetpu.tflite"
LSTM = DATA / "keras_lstm_mnist_ptq_edgetpu.tflite"


def _options(path: Path) -> bytes:
    import tflite

    m = tflite.Model.GetRootAsModel(path.read_bytes(), 0)
    op = m.Subgraphs(0).Operators(0)
    assert m.OperatorCodes(op.OpcodeIndex()).CustomCode() == b"edgetpu-custom-op"
    return bytes(op.CustomOptionsAsNumpy().tobytes())


@pytest.mark.parametrize("path", [SPLIT, LSTM], ids=["split_concat", "keras_lstm"])
def test_layers_match_the_tflite_tensors_around_the_package(path: Path) -> None:
    pkg = read_package(_options(path))
    run = [e for e in pkg.executables if e.kind == "EXECUTION_ONLY"]
    assert len(run) == 1 and [e.kind for e in pkg.executables].count("PARAMETER_CACHING") == 1
    g = infercast.load(path)
    (node,) = g.nodes
    for layers, names in ((run[0].inputs, node.inputs), (run[0].outputs, node.outputs)):
        by_name = {layer.name: layer for layer in layers}
        assert set(names) <= set(by_name)  # the package may add state outputs (the LSTM's)
        for name in names:
            assert by_name[name].elements == math.prod(g.tensors[name].shape)
            assert by_name[name].size_bytes >= by_name[name].elements  # padding only adds


def test_compiler_split_of_parameters_scratch_and_instructions() -> None:
    lstm = read_package(_options(LSTM))
    assert (lstm.cached_parameter_bytes, lstm.streamed_parameter_bytes) == (43968, 576)
    assert lstm.scratch_bytes == 672
    assert lstm.narrow_memory_bytes_per_tile == 4876
    assert lstm.instruction_bytes == 60864
    split = read_package(_options(SPLIT))
    assert (split.cached_parameter_bytes, split.streamed_parameter_bytes) == (192, 0)
    assert split.scratch_bytes == 0 and split.compiler_version == "cl/343520747"


def test_analyze_reports_the_package_and_counts_nothing_it_cannot_see() -> None:
    a = infercast.analyze(LSTM)
    (note,) = [n for n in a.notes if "edgetpu_compiler" in n]
    assert "43,968 B of parameters cached on chip" in note
    assert "576 B streamed from host memory every inference" in note
    assert "672 B of activations in a host scratch buffer" in note
    assert a.totals.macs == 0 and a.unsupported  # unknown, not a zero passed off as a count


def _corrupt(path: Path, tmp_path: Path, old: bytes, new: bytes) -> Path:
    data = path.read_bytes()
    at = data.find(old)
    assert at > 0
    out = tmp_path / path.name
    out.write_bytes(data[:at] + new + data[at + len(old) :])
    return out


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        (b"DWN1", b"XXXX", "no 'DWN1' identifier"),
        (b"\xbc\x0f\x00\x00DWN1", b"\xf0\xff\xff\x7fDWN1", "outside its"),
    ],
    ids=["identifier", "root-offset"],
)
def test_a_damaged_package_is_named_not_a_crash(
    tmp_path: Path, old: bytes, new: bytes, says: str
) -> None:
    bad = _corrupt(SPLIT, tmp_path, old, new)
    with pytest.raises(PackageError, match=says):
        read_package(_options(bad))
    r = subprocess.run(
        [sys.executable, "-m", "infercast", "analyze", str(bad), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 4, r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    (note,) = [n for n in json.loads(r.stdout)["notes"] if "edgetpu-custom-op" in n]
    assert "compiled package could not be read" in note and says in note


def test_every_truncation_and_byte_flip_is_a_package_error_or_a_package() -> None:
    opts = _options(LSTM)
    cuts = [*range(0, 256), *range(256, len(opts), 997)]
    flips = range(0, len(opts), 61)
    for data in [opts[:c] for c in cuts] + [
        opts[:i] + bytes([opts[i] ^ 0xA5]) + opts[i + 1 :] for i in flips
    ]:
        try:
            pkg = read_package(data)
        except PackageError:
            continue
        assert all(e.parameter_bytes >= 0 for e in pkg.executables)


def test_an_aliased_list_is_bounded_before_it_is_walked() -> None:
    """A MultiExecutable whose one entry is listed a million times (flatbuffer offsets may
    alias): refused by count, not walked."""
    import flatbuffers

    b = flatbuffers.Builder(0)
    blob = b.CreateByteVector(b"\x00" * 16)
    b.StartVector(4, 1_000_000, 4)
    for _ in range(1_000_000):
        b.PrependUOffsetTRelative(blob)
    vec = b.EndVector()
    b.StartObject(1)
    b.PrependUOffsetTRelativeSlot(0, vec, 0)
    b.Finish(b.EndObject())
    multi = bytes(b.Output())
    p = flatbuffers.Builder(0)
    mv = p.CreateByteVector(multi)
    p.StartObject(5)
    p.PrependUOffsetTRelativeSlot(1, mv, 0)
    p.Finish(p.EndObject(), file_identifier=b"DWN1")
    with pytest.raises(PackageError, match="at most 64"):
        read_package(b"1\x004\x00\x00\xe0" + bytes(p.Output()))
