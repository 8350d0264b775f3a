"""Shared fixtures: model files built by ``tools/build_fixtures.py`` (cached).

Each fixture returns a group directory; the first use builds the group (minutes
for ``keras``), later runs find it in ``~/.cache/infercast/fixtures`` (or
``$INFERCAST_FIXTURES``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

from build_fixtures import ensure  # noqa: E402


def _group(name: str) -> Path:
    return ensure(name)


def run_keras_script(code: str, *args: str) -> None:
    """Run ``code`` (a script that builds models with keras and the TFLite converter) in a
    fresh interpreter, ``args`` its argv, with this checkout's ``src`` importable: the
    TensorFlow import stays out of the test process."""
    src = str(Path(__file__).resolve().parents[1] / "src")
    path = os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="", PYTHONPATH=path)
    subprocess.run([sys.executable, "-c", code, *args], env=env, check=True, capture_output=True)


def manifest(group_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((group_dir / "manifest.json").read_text())
    return data


@pytest.fixture(scope="session")
def keras_dir() -> Path:
    return _group("keras")


@pytest.fixture(scope="session")
def edge_dir() -> Path:
    return _group("edge")


@pytest.fixture(scope="session")
def mediapipe_dir() -> Path:
    return _group("mediapipe")


@pytest.fixture(scope="session")
def onnx_node_dir() -> Path:
    return _group("onnx_node")


@pytest.fixture(scope="session")
def onnx_light_dir() -> Path:
    return _group("onnx_light")


@pytest.fixture(scope="session")
def silero_dir() -> Path:
    return _group("silero")


@pytest.fixture(scope="session")
def published_dir() -> Path:
    return _group("published")


@pytest.fixture(scope="session")
def detection_dir() -> Path:
    return _group("detection")


@pytest.fixture(scope="session")
def whatif_dir() -> Path:
    return _group("whatif")


@pytest.fixture(scope="session")
def example_model() -> Path:
    return REPO / "examples" / "mobilenet_v2_int8.tflite"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="Rewrite tests/golden/ from the current outputs (tests/test_golden.py).",
    )


@pytest.fixture(scope="session")
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


def roofline_target(name: str) -> Any:
    """The built-in target ``name`` with its CPU's ``isa`` cleared: its built-in int8 kernels
    priced by the MAC roofline (efficiencies, the ADD-element table, the im2col rate), as a
    unit that states no ISA level is; the instruction model has its own tests
    (test_aarch64_insns)."""
    import dataclasses

    from infercast.targets import load_target

    t = load_target(name)
    cpu = dataclasses.replace(t.units["cpu"], isa="")
    return dataclasses.replace(t, units={**t.units, "cpu": cpu})
