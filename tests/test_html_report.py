"""The HTML report, opened in headless Chromium with the network off.

The page must load from a file without asking the network for anything, draw
every chart (each SVG has a size and all its marks), log no script error, sort
and filter its layer table, fit the window without sideways scrolling, and show
model strings literally. A screenshot of the whole page is taken and checked:
its size and that it holds the report's colours (not a blank page).

Set ``INFERCAST_SCREENSHOTS=DIR`` to keep the screenshots.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import infercast
from headless import Browser, find_chromium, png_colours
from infercast.api import estimate
from infercast.bench.join import INTERNAL, join
from infercast.bench.profiles import read_profile
from infercast.cli import main
from infercast.report.units import human_seconds

REPO = Path(__file__).resolve().parents[1]
PROFILE = REPO / "tests" / "data" / "profiles" / "ort_convs_opt_all.json"

if find_chromium() is None:
    if os.environ.get("CI"):
        raise RuntimeError("CI must install Debian's chromium (.ci/run does)")
    pytest.skip("no chromium (apt-get install -y chromium)", allow_module_level=True)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with Browser() as b:
        yield b


def _keep(shot: bytes, name: str) -> None:
    where = os.environ.get("INFERCAST_SCREENSHOTS")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        (Path(where) / name).write_bytes(shot)


def _open(browser: Browser, page: Path, width: int = 1280) -> None:
    browser.log.__init__()  # type: ignore[misc]
    browser.set_viewport(width, 900)
    browser.load(page)


CHARTS = """[...document.querySelectorAll('figure.chart')].map(f => {
  const svg = f.querySelector('svg'); const r = svg.getBoundingClientRect();
  return {id: f.id, kind: f.dataset.kind, want: +f.dataset.marks,
          marks: svg.querySelectorAll('.mark').length, w: r.width, h: r.height,
          lines: svg.querySelectorAll('line.roof, line.arena, line.devmem, line.crossing').length};
})"""


def _charts(browser: Browser) -> list[dict[str, Any]]:
    charts: list[dict[str, Any]] = browser.evaluate(CHARTS)
    return charts


def _no_sideways_scroll(browser: Browser, width: int) -> None:
    browser.set_viewport(width, 900)
    sw = browser.evaluate("document.documentElement.scrollWidth")
    assert sw <= width, f"the page scrolls sideways at {width} px ({sw} px wide)"


def test_report_in_chromium(browser: Browser, example_model: Path, tmp_path: Path) -> None:
    targets = ["edgetpu-usb", "ethos-u55-128", "rpi4-cpu"]
    page = tmp_path / "report.html"
    argv = ["report", str(example_model), "-o", str(page)]
    for t in targets:
        argv += ["-t", t]
    assert main(argv) == 0
    text = page.read_text()
    # Self-contained: no reference to anything outside the file.
    for needle in ("http://", "https://", "src=", "<link", "@import"):
        assert needle not in text, f"the page refers to something outside: {needle}"
    _open(browser, page)
    assert browser.evaluate("document.documentElement.dataset.ready") == "1"
    assert browser.log.errors == []
    assert browser.log.requests == [page.resolve().as_uri()]

    a = infercast.analyze(example_model)
    charts = _charts(browser)
    kinds = [c["kind"] for c in charts]
    assert kinds.count("bars") == 3 and kinds.count("roofline") == 3
    assert kinds.count("timeline") == 1
    assert kinds.count("placement") == 2  # rpi4-cpu has no accelerator
    for c in charts:
        assert c["w"] > 300 and c["h"] > 60, c
        assert c["marks"] == c["want"] > 0, c
        if c["kind"] in ("roofline", "timeline"):
            assert c["lines"] >= 1, c
    # One bar per layer that carries time; one strip cell per inference layer.
    bars = next(c for c in charts if c["id"] == "bars-2")
    fc = estimate(a.graph, "rpi4-cpu")
    assert bars["marks"] == sum(1 for ly in fc.layers if ly.latency_s > 0)
    place = next(c for c in charts if c["id"] == "placement-0")
    assert place["marks"] == len(a.graph.nodes)

    # The summary states the published MobileNetV2 figure and the arena plan.
    compute = browser.evaluate("document.getElementById('card-compute').textContent")
    assert "300,774,272" in compute and a.totals.macs == 300_774_272
    mem = browser.evaluate("document.getElementById('card-memory').textContent")
    assert "no fit" in mem  # the 1.4 MiB arena is larger than Ethos-U55's 512 KiB SRAM

    # Sort by MACs (largest first), then filter.
    rows = browser.evaluate(
        """(() => { const th = [...document.querySelectorAll('#layer-table th')]
                 .find(h => h.textContent === 'MACs'); th.click();
           return [...document.querySelectorAll('#layer-table tbody tr')]
                 .map(r => r.cells[4].dataset.v); })()"""
    )
    macs = [int(v) for v in rows if v != ""]
    assert macs == sorted(macs, reverse=True)
    assert macs[0] == max(ly.macs or 0 for ly in a.layers)
    visible = browser.evaluate(
        """(() => { const box = document.querySelector('.filters');
           const q = box.querySelector('.f-text'); q.value = 'depthwise';
           q.dispatchEvent(new Event('input'));
           return [...document.querySelectorAll('#layer-table tbody tr')]
                 .filter(r => !r.hidden).length; })()"""
    )
    assert visible == sum(1 for ly in a.layers if "depthwise" in f"{ly.name} {ly.op}".lower())
    assert browser.log.errors == []

    for width in (1280, 1024, 800, 640):
        _no_sideways_scroll(browser, width)

    shot = browser.screenshot(1280)
    _keep(shot, "report_mnv2_3targets.png")
    w, h, colours = png_colours(shot)
    assert w == 1280 and h > 3000
    assert len(shot) > 200_000
    assert colours > 50  # bars in four bound colours, placements, text: not a blank page
    assert len(text.encode()) < 1_000_000


def test_report_with_profile_and_crossings(
    browser: Browser, edge_dir: Path, tmp_path: Path
) -> None:
    model = edge_dir / "convs_5x5_7x7.onnx"
    page = tmp_path / "convs.html"
    infercast.html_report(model, ["rpi4-cpu", "k210-kpu"], profile=PROFILE, output=page)
    _open(browser, page)
    assert browser.log.errors == []
    assert browser.log.requests == [page.resolve().as_uri()]
    charts = _charts(browser)
    roof = next(c for c in charts if c["id"] == "roofline-0")
    measured = browser.evaluate("document.querySelectorAll('#roofline-0 polygon.measured').length")
    joined = join(infercast.analyze(model), read_profile(PROFILE))
    want = sum(
        1
        for r in joined.rows
        if r.flops and r.measured_s > 0 and r.layers and r.provider != INTERNAL
    )
    assert measured == want > 0
    assert roof["marks"] > measured
    # k210: layers the KPU cannot run make accelerator <-> CPU crossings, drawn and tabled.
    place = next(c for c in charts if c["kind"] == "placement")
    report = estimate(infercast.load(model), "k210-kpu").placement
    assert place["lines"] == len(report.internal_crossings()) > 0
    header = browser.evaluate(
        "[...document.querySelectorAll('#layer-table th')].map(t => t.textContent)"
    )
    assert header[-1] == "measured" and "k210-kpu" in header
    shot = browser.screenshot(1024)
    _keep(shot, "report_convs_profile.png")
    assert png_colours(shot)[2] > 30


def _hostile_model(path: Path) -> str:
    """A two-conv ONNX model whose names are markup, script and terminal escapes."""
    evil = "[/bold]</script><script>window.pwned=1</script>\x1b[31m{{ 7*7 }}\n<b>x</b>"
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["y"], name=evil, pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["y"], ["z"], name=evil + "2"),
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4, 8, 8])],
        [w],
    )
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return evil


def test_model_strings_shown_literally(browser: Browser, tmp_path: Path) -> None:
    model = tmp_path / "evil.onnx"
    evil = _hostile_model(model)
    page = tmp_path / "evil.html"
    infercast.html_report(model, ["k210-kpu"], output=page)
    assert "<script>window.pwned" not in page.read_text()
    _open(browser, page)
    assert browser.log.errors == []
    assert browser.evaluate("window.pwned === undefined")
    title = browser.evaluate(
        "document.querySelector('#layer-table tbody tr td.name').getAttribute('title')"
    )
    assert title == evil.replace("\x1b", "\\x1b").replace("\n", "\\n")
    assert browser.evaluate("document.querySelectorAll('b').length") == 0


def test_whatif_variants(
    browser: Browser, edge_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The hook for what-if results: a JSON document with a ``variants`` list is tabled."""
    model = edge_dir / "convs_5x5_7x7_int8.tflite"
    out = tmp_path / "r.html"
    bad = tmp_path / "bad.json"
    bad.write_text('{"no": "variants"}')
    assert main(["report", str(model), "--whatif", str(bad), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "variants" in err[0] and not out.exists()
    base = infercast.analyze(model).totals.macs
    variants = [
        {"name": "as is", "macs": base, "latency_s": 1.5e-3, "fits": True},
        {"name": "width 0.5", "macs": base // 4, "latency_s": 0.5e-3, "fits": True, "x": {}},
    ]
    good = tmp_path / "whatif.json"
    good.write_text(json.dumps({"title": "What-if: width", "variants": variants}))
    assert (
        main(["report", str(model), "-t", "rpi4-cpu", "--whatif", str(good), "-o", str(out)]) == 0
    )
    _open(browser, out)
    assert browser.log.errors == []
    cells = browser.evaluate(
        "[...document.querySelectorAll('#whatif-table tbody tr')].map(r => r.cells[1].dataset.v)"
    )
    assert [int(c) for c in cells] == [base, base // 4]


def test_report_runs_whatif_variants(
    browser: Browser, example_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``report`` with the what-if options runs the variants on each target and tables
    them as ``infercast whatif`` computes them; ``--fit``'s variant is highlighted."""
    page = tmp_path / "whatif.html"
    axes = ["-r", "160,384", "-w", "0.5,1.0", "--fit"]
    argv = ["report", str(example_model), "-t", "k210-kpu", "-t", "edgetpu-usb", *axes]
    assert main([*argv, "-o", str(page)]) == 0
    capsys.readouterr()
    want = infercast.whatif(
        example_model, "k210-kpu", resolution=[160, 384], width=[0.5, 1.0], fit=True
    ).to_dict()
    best = want["fit"]["best"]
    assert best is not None and any(not v["totals"]["fits"] for v in want["variants"])
    _open(browser, page)
    assert browser.log.errors == []
    assert browser.log.requests == [page.resolve().as_uri()]
    tables = browser.evaluate("[...document.querySelectorAll('#whatif table')].map(t => t.id)")
    assert tables == ["whatif-table", "whatif-table-1"]  # one per target
    rows = browser.evaluate(
        """[...document.querySelectorAll('#whatif-table tbody tr')].map(r => ({
             cls: r.className, cells: [...r.cells].map(c => [c.textContent, c.dataset.v,
             c.className])}))"""
    )
    head = browser.evaluate(
        "[...document.querySelectorAll('#whatif-table th')].map(h => h.textContent)"
    )
    macs, kpu = head.index("MACs"), head.index("kpu_ram")
    assert len(rows) == 1 + len(want["variants"])
    assert [r["cells"][0][0] for r in rows] == [
        "model as it is",
        *(v["label"] for v in want["variants"]),
    ]
    for r, v in zip(rows, [want["base"], *want["variants"]], strict=True):
        assert int(r["cells"][macs][1]) == v["totals"]["macs"]
        need = v["memories"]["kpu_ram"]
        assert int(r["cells"][kpu][1]) == need["required_bytes"]
        assert ("bad" in r["cells"][kpu][2]) == (not need["fits"])
    highlighted = [r["cells"][0][0] for r in rows if r["cls"] == "best"]
    assert highlighted == [best["label"]]
    verdict = browser.evaluate("document.querySelector('#whatif p.verdict').textContent")
    assert best["label"] in verdict and "k210-kpu" in verdict
    for width in (1280, 800):
        _no_sideways_scroll(browser, width)
    shot = browser.screenshot(1280)
    _keep(shot, "report_mnv2_whatif.png")
    assert png_colours(shot)[2] > 30

    # The latency bars on the K210: one fallback layer takes 77% of the time; the axis is
    # cut so that the others are readable, and the cut layers are named.
    fc = estimate(infercast.load(example_model), "k210-kpu")
    bars = browser.evaluate(
        """(() => { const f = document.getElementById('bars-0');
           const box = f.querySelector('rect.plot').getBBox();
           return {plot: box.height, caption: f.querySelector('.caption').textContent,
                   bars: [...f.querySelectorAll('rect.mark')].map(r => ({
                     over: r.classList.contains('over'), h: r.getBBox().height,
                     title: r.querySelector('title').textContent}))}; })()"""
    )
    timed = [ly for ly in fc.layers if ly.latency_s > 0]
    assert len(bars["bars"]) == len(timed)
    over = [ly for ly, b in zip(timed, bars["bars"], strict=True) if b["over"]]
    under = [ly for ly, b in zip(timed, bars["bars"], strict=True) if not b["over"]]
    slowest = max(timed, key=lambda ly: ly.latency_s)
    assert slowest in over and slowest.bound == "fallback"
    assert slowest.latency_s > 0.5 * fc.latency_s
    assert min(ly.latency_s for ly in over) > max(ly.latency_s for ly in under)
    tallest_under = max(b["h"] for b in bars["bars"] if not b["over"])
    assert tallest_under > 0.5 * bars["plot"]  # the other layers are readable
    for ly in over:
        assert (
            f"#{ly.index} " in bars["caption"] and human_seconds(ly.latency_s) in (bars["caption"])
        )
    # the Edge TPU's bars need no cut
    assert browser.evaluate("document.querySelectorAll('#bars-1 rect.over').length") == 0

    # The same run saved as JSON (`infercast whatif -f json`) and given with --whatif FILE
    saved = tmp_path / "whatif.json"
    saved.write_text(json.dumps(want))
    again = tmp_path / "saved.html"
    argv = ["report", str(example_model), "-t", "k210-kpu", "--whatif", str(saved)]
    assert main([*argv, "-o", str(again)]) == 0
    html = again.read_text()
    section = html[html.index('<section id="whatif">') : html.index('<section id="layers">')]
    assert section.count("<tr") == 2 + len(want["variants"])  # heading row, base, variants
    best_row = section[section.index('<tr class="best"') :]
    assert f">{best['label']}<" in best_row[: best_row.index("</tr>")]


def test_report_whatif_bad_input(
    example_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "r.html"
    saved = tmp_path / "w.json"
    saved.write_text(json.dumps({"variants": []}))
    m = str(example_model)
    for argv, words in (
        (["-t", "k210-kpu", "--whatif", str(saved), "-r", "160"], "either --whatif FILE"),
        (["-r", "160"], "give --target"),
        (["-t", "k210-kpu", "--keep", "Conv1"], "add an axis"),
        (["-t", "k210-kpu", "--budget-ms", "5", "-r", "160"], "--budget-ms applies to --fit"),
        (["-t", "k210-kpu", "-w", "abc"], "width"),
    ):
        assert main(["report", m, *argv, "-o", str(page)]) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and words in err[0], (argv, err)
        assert not page.exists()
