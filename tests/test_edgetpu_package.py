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
from infercast.frontends.tflite import EDGETPU_OP

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
    # The loaded op carries the activation memory too (bench_edgetpu_placement.py reads it).
    (op,) = [n for n in infercast.load(LSTM).nodes if n.native_op == EDGETPU_OP]
    assert op.attrs["edgetpu_activation_bytes_per_tile"] == 4876


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


LSTM_SOURCE = DATA / "keras_lstm_mnist_ptq.tflite"


def test_placement_leaves_on_the_cpu_what_the_compiler_left() -> None:
    """The compiled file keeps as TFLite ops exactly what edgetpu_compiler left on the CPU:
    for this full-integer LSTM (int16 gates and state) nothing."""
    left = [n.native_op for n in infercast.load(LSTM).nodes if n.native_op != EDGETPU_OP]
    report = infercast.check(LSTM_SOURCE, "edgetpu-usb")
    assert left == [] and report.all_on_accelerator


def test_compiled_split_makes_the_forecast_stream_the_compilers_bytes() -> None:
    plain = infercast.estimate(LSTM_SOURCE, "edgetpu-usb")
    taken = infercast.estimate(LSTM_SOURCE, "edgetpu-usb", edgetpu_compiled=LSTM)
    assert sum(w.streamed_bytes for _k, w in plain.works) == 0
    assert sum(w.streamed_bytes for _k, w in taken.works) == 576  # the compiler's figure
    cache = taken.target.memories["parameter_cache"]
    assert not cache.size_varies
    assert any("streams 576 B every inference" in n for n in taken.notes)
    assert taken.latency_s > plain.latency_s


def test_compiled_option_errors_say_what_to_pass(tmp_path: Path) -> None:
    from infercast.errors import InfercastError

    with pytest.raises(InfercastError, match="no custom:edgetpu-custom-op"):
        infercast.estimate(LSTM_SOURCE, "edgetpu-usb", edgetpu_compiled=LSTM_SOURCE)
    with pytest.raises(InfercastError, match="has no parameter cache"):
        infercast.estimate(LSTM_SOURCE, "imx8mp-npu-vx", edgetpu_compiled=LSTM)
    r = subprocess.run(
        [sys.executable, "-m", "infercast", "estimate", str(LSTM_SOURCE), "-t", "edgetpu-usb",
         "--edgetpu-compiled", str(LSTM_SOURCE)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode not in (0, 1) and "Traceback" not in r.stderr
    assert "_edgetpu.tflite" in r.stderr


def test_one_segment_follows_dependencies_not_operator_order(tmp_path: Path) -> None:
    """edgetpu_compiler's one Edge TPU subgraph holds every mappable op not fed by an op it
    left on the CPU after Edge TPU ops (Coral's compiled MoveNet keeps its heads, which come
    after the CPU decode in operator order, on the Edge TPU). A real converter model: a conv
    trunk, an ARG_MAX branch (not mappable) first, then an independent conv branch, and a
    conv fed by the ARG_MAX's output."""
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    w = {k: tf.constant(rng.standard_normal(s).astype(np.float32)) for k, s in
         (("trunk", (3, 3, 8, 8)), ("fed", (1, 1, 1, 4)), ("free", (1, 1, 8, 4)))}  # fmt: skip

    @tf.function(input_signature=[tf.TensorSpec((1, 16, 16, 8), tf.float32)])
    def branches(x: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        trunk = tf.nn.relu(tf.nn.conv2d(x, w["trunk"], 1, "SAME"))
        am = tf.cast(tf.argmax(trunk, axis=-1), tf.float32)[..., None]
        fed = tf.nn.conv2d(am, w["fed"], 1, "SAME")
        free = tf.nn.conv2d(trunk, w["free"], 1, "SAME")
        return fed, free

    conv = tf.lite.TFLiteConverter.from_concrete_functions(
        [branches.get_concrete_function()], branches
    )
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = lambda: (
        [rng.standard_normal((1, 16, 16, 8)).astype(np.float32)] for _ in range(8)
    )
    path = tmp_path / "branches.tflite"
    path.write_bytes(conv.convert())
    g = infercast.load(path)
    order = [n.native_op for n in g.nodes]
    report = infercast.check(path, "edgetpu-usb")
    by = {ly.index: ly for ly in report.layers}
    argmax = order.index("ARG_MAX")
    convs = [i for i, op in enumerate(order) if op == "CONV_2D"]
    after = [i for i in convs if i > argmax]
    assert after, order  # some conv comes after the ARG_MAX in operator order
    producer = {o: i for i, n in enumerate(g.nodes) for o in n.outputs}

    def fed_by_argmax(i: int) -> bool:
        seen, todo = set(), [i]
        while todo:
            j = todo.pop()
            if j == argmax:
                return True
            for t in g.nodes[j].inputs:
                if t in producer and producer[t] not in seen:
                    seen.add(producer[t])
                    todo.append(producer[t])
        return False

    for i in after:
        want = "cpu" if fed_by_argmax(i) else "accelerator"
        assert by[i].placement == want, (order, i)
    assert {fed_by_argmax(i) for i in after} == {True, False} or len(after) == 1


def test_a_compiled_model_on_an_edge_tpu_target_keeps_the_compilers_placement() -> None:
    """In a compiled file the compiler has placed everything: its op on the Edge TPU (not
    'CUSTOM: not supported'), the rest where it left them; the op's time stays unknown."""
    report = infercast.check(LSTM, "edgetpu-usb")
    ((only,),) = [report.layers]
    assert (only.native_op, only.placement, only.unit) == (EDGETPU_OP, "accelerator", "tpu")
    assert any("already compiled for the Edge TPU" in n for n in report.notes)
    fc = infercast.estimate(LSTM, "edgetpu-usb")
    assert fc.unknown_layers == 1 and not fc.complete
    assert any("already compiled for the Edge TPU" in n for n in fc.notes)
    other = infercast.check(LSTM, "imx8mp-npu-vx")  # another accelerator: not its op
    assert [ly.placement for ly in other.layers] == ["cpu"]
