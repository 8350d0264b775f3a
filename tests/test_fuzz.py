"""Fuzzing as part of the suite (issue 14): seeded, time-bounded mutation campaigns
over real models, target files and profiles; every input must keep the contract.

Each campaign mutates real seeds (``tools/fuzz_mutate.py``: byte level, and field
level through the TFLite schema, ONNX's protobuf classes, TOML and JSON) and runs
the CLI on every mutant in a forked child limited to 20 s and 1.5 GiB of address
space (``tools/fuzz_driver.py``), then checks the documented contract: exit code
0/2/3/4, one stderr line on 2, no signal, nothing on stderr on success, no
control characters, strict JSON with ``-f json``, inputs never overwritten.
The input sequence is fixed by the seed; the time budget decides how far it
goes (slower machines try fewer inputs, the same ones first). Together the
campaigns take about 2.5 minutes. A failure prints the command and keeps the
input under pytest's temporary directory; a failure found once becomes a file of
``tests/data/hostile/`` (``tools/make_hostile.py``).

Longer campaigns: ``python tools/fuzz.py --budget 1800 --seed N``.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from fuzz import Seed, campaign, model_run, model_seeds, mutant, text_seeds
from fuzz_driver import ForkServer, run_subprocess, violations

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server() -> Iterator[ForkServer]:
    with ForkServer(REPO / "src") as s:
        yield s


@pytest.fixture(scope="module")
def seeds(example_model: Path, edge_dir: Path, onnx_node_dir: Path, silero_dir: Path) -> list[Seed]:
    return model_seeds(example_model, edge_dir, onnx_node_dir, silero_dir, n_node=60)


def _run(server: ForkServer, seeds: list[Seed], tmp: Path, *, budget_s: float, seed: int,
         minimum: int, small: Path | None = None) -> None:  # fmt: skip
    report = campaign(
        server,
        seeds,
        budget_s=budget_s,
        work=tmp / "work",
        rng_seed=seed,
        small_model=small,
        keep=tmp / "failures",
    )
    print(report.summary())
    assert not report.failures, report.summary()
    assert report.tried >= minimum, f"only {report.tried} inputs in {budget_s:g} s"
    assert report.kept_contract == report.tried


def test_fuzz_models(server: ForkServer, seeds: list[Seed], tmp_path: Path) -> None:
    """TFLite and ONNX mutants through analyze (json / csv / table / --memory-plan /
    --input-shape / -o), check and estimate."""
    _run(server, seeds, tmp_path, budget_s=95.0, seed=14, minimum=80)


def test_fuzz_targets_and_profiles(
    server: ForkServer, edge_dir: Path, example_model: Path, tmp_path: Path
) -> None:
    """Target files (estimate, check, targets show) and profiles (ORT JSON,
    benchmark_model text, TVM table; profile import, calibrate --from -o)."""
    small = edge_dir / "convs_5x5_7x7.onnx"
    seeds = text_seeds(small, example_model)
    _run(server, seeds, tmp_path, budget_s=35.0, seed=9, minimum=40, small=small)


def test_fork_server_verdicts_match_real_processes(
    server: ForkServer, seeds: list[Seed], tmp_path: Path
) -> None:
    """The fork server runs ``main()`` in forked children; a sample of mutants run as
    real ``python -m infercast`` processes under the same limits end the same way."""
    rng = random.Random(3)
    pool = [s for s in seeds if s.kind in ("tflite", "onnx") and s.path.stat().st_size < 1 << 20]
    for i in range(6):
        seed = pool[rng.randrange(len(pool))]
        path = tmp_path / f"m{i}{seed.path.suffix}"
        path.write_bytes(mutant(seed, seed.path.read_bytes(), rng))
        run = model_run(seed, path, rng, tmp_path)
        forked = server.run(run.argv, inputs=run.inputs, cwd=tmp_path)
        real = run_subprocess(run.argv, cwd=tmp_path, src=REPO / "src")
        assert not violations(real, json_out=run.json_out), (run.argv, real.stderr)
        assert (real.rc, real.stderr) == (forked.rc, forked.stderr), run.argv
        if run.json_out and real.rc in (0, 4) and "-o" not in run.argv:
            assert real.stdout == forked.stdout
