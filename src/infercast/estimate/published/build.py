"""Build (and cache) the models of the published measurements.

Usage::

    python -m infercast.estimate.published.build [--only RECIPE ...] [--quant Q ...]

Models go to ``$INFERCAST_CACHE/published/v<VERSION>/`` (default
``~/.cache/infercast``), one ``<recipe>_<quant>.tflite`` per row variant. Each
architecture is built in its own subprocess (TensorFlow's memory is returned
between models) under a per-recipe file lock, written atomically; a file that
exists is never rebuilt. Needs TensorFlow (``pip install tensorflow-cpu``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

from infercast.errors import InfercastError
from infercast.files import file_lock

VERSION = 1


def cache_root() -> Path:
    """Where the models are: ``$INFERCAST_PUBLISHED_MODELS``, else
    ``$INFERCAST_CACHE/published/v<VERSION>`` (default ``~/.cache/infercast``)."""
    direct = os.environ.get("INFERCAST_PUBLISHED_MODELS")
    if direct:
        return Path(direct).expanduser()
    base = os.environ.get("INFERCAST_CACHE") or str(Path.home() / ".cache" / "infercast")
    return Path(base) / "published" / f"v{VERSION}"


def ensure(
    wanted: Iterable[tuple[str, str]], root: Path | None = None, *, log: bool = True
) -> dict[tuple[str, str], Path]:
    """Paths of the (recipe, quant) models, building the missing ones first."""
    from infercast.estimate.published.recipes import RECIPES, file_name

    d = root or cache_root()
    d.mkdir(parents=True, exist_ok=True)
    by_recipe: dict[str, list[str]] = {}
    for recipe, quant in wanted:
        if recipe not in RECIPES:
            raise InfercastError(f"no recipe named '{recipe}'")
        if quant not in by_recipe.setdefault(recipe, []):
            by_recipe[recipe].append(quant)
    out: dict[tuple[str, str], Path] = {}
    for recipe, quants in by_recipe.items():
        with file_lock(d / f".{recipe}.lock"):
            missing = [q for q in quants if not (d / file_name(recipe, q)).exists()]
            if missing:
                t0 = time.monotonic()
                _build_in_subprocess(recipe, missing, d)
                if log:
                    took = time.monotonic() - t0
                    print(f"  built {recipe} {','.join(missing)} in {took:.0f} s", file=sys.stderr)
        for q in quants:
            out[(recipe, q)] = d / file_name(recipe, q)
    return out


def _build_in_subprocess(recipe: str, quants: list[str], dest: Path) -> None:
    src = str(Path(__file__).resolve().parents[3])  # the folder holding the infercast package
    path = os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="",
               TF_ENABLE_ONEDNN_OPTS="0", PYTHONHASHSEED="0", PYTHONPATH=path)  # fmt: skip
    cmd = [sys.executable, "-m", "infercast.estimate.published.build", "--_one", recipe,
           ",".join(quants), str(dest)]  # fmt: skip
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise InfercastError(
            f"building {recipe} ({','.join(quants)}) failed:\n{proc.stderr[-3000:]}",
            "TensorFlow is needed to build the published models: pip install tensorflow-cpu",
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="*", help="recipes to build (default: every row's)")
    ap.add_argument("--_one", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args._one:
        from infercast.estimate.published.recipes import build

        recipe, quants, dest = args._one
        info = build(recipe, quants.split(","), Path(dest))
        print(json.dumps(info))
        return 0
    from infercast.estimate.published.data import load_rows

    rows = load_rows()
    wanted = sorted({(r.recipe, r.quant) for r in rows if r.recipe})
    if args.only:
        wanted = [w for w in wanted if w[0] in args.only]
    paths = ensure(wanted)
    print(f"{len(paths)} models in {cache_root()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
