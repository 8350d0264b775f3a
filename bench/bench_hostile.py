#!/usr/bin/env python3
"""Wall time and peak memory of the CLI on every hostile reproducer, as real processes.

Usage::

    python bench/bench_hostile.py [--top 10] [--no-cap]

Every case of ``tools/make_hostile.py`` (the committed files of
``tests/data/hostile/`` and the large ones, made in a scratch directory) runs as
``python -m infercast ...`` under the contract's bounds (``RLIMIT_AS`` 1.5 GiB,
killed at 20 s; ``fuzz_driver.run_subprocess``) and is checked against the
contract; so does the largest model accepted, a chain of ``MAX_NODES`` ONNX Relu
nodes, through analyze, estimate, check and report (``--no-cap`` leaves these
out). Printed: each case's exit code, wall time and peak RSS (``wait4``: the
largest of the CLI process and the isolated children it waited for), the
slowest and largest cases, and the maxima. The wall time includes the
interpreter's start and imports, and on a shared machine the wait for a core.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

from fuzz_driver import MEMORY_BYTES, TIME_S, run_subprocess, violations  # noqa: E402
from infercast.errors import MAX_NODES  # noqa: E402
from make_hostile import CASES, LARGE, OUT, Case, make_large, onnx_many_nodes  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--top", type=int, default=8)
    ap.add_argument("--no-cap", action="store_true", help="leave out the MAX_NODES model")
    args = ap.parse_args()
    cases = list(CASES)
    if not args.no_cap:
        cap = "onnx_max_nodes.onnx"
        cases += [
            Case(cap, ("analyze", "{f}", "-f", "json"), (0,), issue="MAX_NODES nodes"),
            Case(cap, ("estimate", "{f}", "-t", "rpi4-cpu", "-f", "json"), (0,), issue="MAX_NODES"),
            Case(cap, ("check", "{f}", "-t", "rpi4-cpu", "-f", "json"), (0,), issue="MAX_NODES"),
            Case(
                cap,
                ("report", "{f}", "-t", "rpi4-cpu", "-o", "{d}/r.html"),
                (0,),
                issue="MAX_NODES",
            ),
        ]
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        for p in OUT.iterdir():
            shutil.copyfile(p, d / p.name)
        for name in LARGE:
            make_large(name, d)
        if not args.no_cap:
            (d / "onnx_max_nodes.onnx").write_bytes(onnx_many_nodes(MAX_NODES))
        rows = []
        for case in cases:
            o = run_subprocess(case.argv_in(d), cwd=d, src=REPO / "src")
            rc, wall, rss = o.rc, o.wall_s, o.maxrss_bytes
            why = violations(o, json_out=case.json_out)
            rows.append((case, rc, wall, rss))
            print(
                f"{case.name:42} {case.argv[0]:9} rc={rc} {wall:6.2f} s {rss / 2**20:7.0f} MiB"
                + (f"  CONTRACT: {'; '.join(why)}" if why else "")
            )
    print(f"\n{len(rows)} runs of {len({c.name for c, *_ in rows})} reproducers")
    print(f"slowest {args.top}:")
    for case, rc, wall, _ in sorted(rows, key=lambda r: -r[2])[: args.top]:
        print(f"  {wall:6.2f} s  rc={rc}  {case.name} ({case.issue})")
    print(f"largest {args.top}:")
    for case, rc, _, rss in sorted(rows, key=lambda r: -r[3])[: args.top]:
        print(f"  {rss / 2**20:6.0f} MiB  rc={rc}  {case.name} ({case.issue})")
    bad = [c.name for c, rc, *_ in rows if rc not in c.rcs]
    print(
        f"max wall {max(r[2] for r in rows):.2f} s, max RSS {max(r[3] for r in rows) / 2**20:.0f} "
        f"MiB; bounds {TIME_S:g} s, {MEMORY_BYTES / 2**20:.0f} MiB; exit codes off: {bad or 'none'}"
    )


if __name__ == "__main__":
    main()
