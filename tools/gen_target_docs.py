#!/usr/bin/env python3
"""Write docs/targets/<name>.md for every built-in target (``--check``: compare only).

The documents come from the same constraint functions and target files that
placement uses (infercast.report.target_docs), so they cannot drift from the code.
CI runs ``python tools/gen_target_docs.py --check`` (and tests/test_targets_docs.py
does the same comparison).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "targets"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--check", action="store_true", help="fail if a document is missing or stale")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(REPO / "src"))
    from infercast.report.target_docs import render_all

    docs = render_all()
    stale = []
    OUT.mkdir(parents=True, exist_ok=True)
    for name, text in docs.items():
        path = OUT / name
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        stale.append(name)
        if not args.check:
            path.write_text(text, encoding="utf-8")
    extra = sorted(p.name for p in OUT.glob("*.md") if p.name not in docs)
    if args.check:
        if stale or extra:
            print(
                f"stale target docs: {', '.join(stale + extra)}; "
                "run python tools/gen_target_docs.py",
                file=sys.stderr,
            )
            return 1
        return 0
    for name in extra:
        (OUT / name).unlink()
    print(
        f"wrote {len(stale)} of {len(docs)} documents to {OUT.relative_to(REPO)}"
        + (f"; removed {', '.join(extra)}" if extra else "")
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
