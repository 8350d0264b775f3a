"""docs/targets/*.md are generated from the target files and constraint docstrings;
regenerating them must give the committed text (CI: tools/gen_target_docs.py --check)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from infercast.report.target_docs import render, render_all
from infercast.targets import builtin_names, load_target

REPO = Path(__file__).resolve().parents[1]


def test_target_docs_are_current() -> None:
    docs = render_all()
    assert set(docs) == {f"{n}.md" for n in builtin_names()}
    stale = [
        name
        for name, text in docs.items()
        if not (REPO / "docs" / "targets" / name).is_file()
        or (REPO / "docs" / "targets" / name).read_text(encoding="utf-8") != text
    ]
    assert not stale, f"run python tools/gen_target_docs.py: stale {stale}"
    res = subprocess.run(
        [sys.executable, str(REPO / "tools" / "gen_target_docs.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 0, res.stderr


def test_docs_show_the_reasons_placement_gives() -> None:
    """The document lists each rule with the same text a placement reason carries."""
    text = render(load_target("k210-kpu", detect=False))
    assert (
        "The kernel must be square, with a size in 1, 3 — else runs on the cpu (`kernel_square_in`)"
        in text
    )
    assert "else partial: Pad + KPU conv + Crop (`symmetric_padding`)" in text
    assert "| `kpu_ram` | 2.0 MiB |" in text
    vela = render(load_target("ethos-u55-128"))
    assert (
        "The sum of absolute (zero-point corrected) weights of each output channel must not "
        "exceed 8323072" in vela
    )
    edgetpu = render(load_target("edgetpu-usb"))
    assert "Only one tpu segment" in edgetpu


def test_docs_list_a_targets_notes() -> None:
    """``notes`` (findings in words) appear in the document under their own heading, once
    each, before the calibration; a target without notes has no such heading."""
    t = load_target("edgetpu-pcie")
    assert t.notes
    text = render(t)
    assert text.count("## Notes") == 1
    assert text.index("## Notes") < text.index("## Calibration")
    assert all(f"- {n}" in text for n in t.notes)
    assert "## Notes" not in render(load_target("k210-kpu", detect=False))
