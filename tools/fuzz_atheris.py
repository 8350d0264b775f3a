"""Coverage-guided fuzzing of infercast's readers with atheris (libFuzzer), for long
runs outside CI (the suite runs the seeded mutation campaigns of ``tools/fuzz.py``).

    pip install atheris                       # 3.0.0 installs from a wheel on Python 3.11
    python tools/fuzz_atheris.py --make-corpus /tmp/corpus
    python tools/fuzz_atheris.py /tmp/corpus -rss_limit_mb=1536 -timeout=20 \\
        -max_total_time=3600 -artifact_prefix=/tmp/findings/

The first byte of an input picks the reader, the rest is the file: a model
(``infercast.load``, ``analyze``, ``plan_memory``, ``check`` on k210-kpu and
``estimate`` on rpi4-cpu, each result's JSON written strictly), a target file
(``load_target`` and an estimate of a small model on it), or a profile
(``profile_import`` against a small model). Any exception other than
:class:`~infercast.errors.InfercastError` is a finding (libFuzzer writes the input
as ``crash-*``), and so are a run past ``-timeout`` and memory past
``-rss_limit_mb``. A finding becomes a file of ``tests/data/hostile/`` with a case
in ``tools/make_hostile.py``; replay one with ``python tools/fuzz_atheris.py FILE``.

Steps that execute model content (ONNX shape inference and folding, LiteRT) run in
infercast's own sandboxed children, so a crash there is reported by infercast as
an error, as the CLI would, not taken down with the fuzzer.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KINDS = ("model", "target", "profile")
"""Index = the input's first byte modulo 3."""

_TMP = Path(tempfile.mkdtemp(prefix="infercast-atheris-"))
_SMALL = _TMP / "small.onnx"


def _strict(doc: object) -> None:
    json.dumps(doc, allow_nan=False)  # NaN / Infinity would be invalid JSON: a finding


def _one(kind: str, data: bytes) -> None:
    import infercast
    from infercast.errors import InfercastError

    suffix = {"model": ".onnx" if data[4:8] != b"TFL3" else ".tflite", "target": ".toml"}
    path = _TMP / f"input{suffix.get(kind, '.json' if data.lstrip()[:1] in b'[{' else '.txt')}"
    path.write_bytes(data)
    try:
        if kind == "model":
            graph = infercast.load(path)
            _strict(infercast.analyze(graph).to_dict())
            _strict(infercast.plan_memory(graph).to_dict())
            _strict(infercast.check(graph, "k210-kpu").to_dict())
            _strict(infercast.estimate(graph, "rpi4-cpu").to_dict())
        elif kind == "target":
            target = infercast.load_target(str(path))
            _strict(infercast.estimate(_SMALL, target).to_dict())
        else:
            _strict(infercast.profile_import(path, _SMALL).to_dict())
    except InfercastError:
        pass  # bad input, said in one line: the contract


def test_one_input(data: bytes) -> None:
    if len(data) < 2:
        return
    _one(KINDS[data[0] % len(KINDS)], data[1:])


def make_corpus(out: Path) -> None:
    """Seed files, each prefixed with the byte of its reader."""
    sys.path.insert(0, str(REPO / "tools"))
    from build_fixtures import ensure

    out.mkdir(parents=True, exist_ok=True)
    seeds: list[tuple[int, Path]] = [(0, REPO / "examples" / "mobilenet_v2_int8.tflite")]
    seeds += [(0, p) for p in sorted(ensure("edge").iterdir()) if p.suffix in (".onnx", ".tflite")]
    seeds += [(0, p) for p in sorted(ensure("silero").glob("*.onnx"))]
    seeds += [(0, p) for p in sorted((REPO / "tests" / "data" / "hostile").glob("*.onnx"))]
    seeds += [(1, p) for p in sorted((REPO / "src/infercast/targets/data").glob("*.toml"))]
    seeds += [(2, p) for p in sorted((REPO / "tests/data/profiles").iterdir()) if p.suffix != ".md"]
    for i, (k, p) in enumerate(seeds):
        (out / f"seed{i:03d}_{p.name}").write_bytes(bytes([k]) + p.read_bytes())
    print(f"{len(seeds)} seeds in {out}")


def main() -> None:
    sys.path.insert(0, str(REPO / "src"))
    if sys.argv[1:2] == ["--make-corpus"]:
        make_corpus(Path(sys.argv[2]))
        return
    import atheris

    sys.path.insert(0, str(REPO / "tools"))
    from build_fixtures import ensure

    shutil.copyfile(ensure("edge") / "convs_5x5_7x7.onnx", _SMALL)
    with atheris.instrument_imports():
        import infercast
        import infercast.bench.profiles
        import infercast.frontends.onnx
        import infercast.frontends.tflite
        import infercast.targets.loader  # noqa: F401
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
