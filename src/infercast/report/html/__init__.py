"""The HTML report: one self-contained file (inline CSS, SVG charts and a little script).

Charts are inline SVG drawn by Jinja2 templates (``templates/``) from geometry
computed in :mod:`~infercast.report.html.charts`: no plotting library, no
script needed to see them, nothing fetched from the network (the page's
Content-Security-Policy forbids it). The only script sorts and filters the
layer table.

* :func:`render_html` -- results already computed (:class:`ReportInputs`) -> HTML text;
* :func:`html_report` -- a model (path or :class:`~infercast.ir.graph.Graph`), targets,
  optionally a per-op profile and a what-if result -> HTML text (and the file, with
  ``output``). The model is loaded once and each stage runs once per target.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from infercast.errors import InfercastError
from infercast.ir.graph import Graph, Shape
from infercast.report.html.view import ReportInputs, build_view
from infercast.targets.schema import Target

__all__ = ["ReportInputs", "html_report", "load_whatif", "render_html"]


def _environment() -> Any:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("infercast.report.html", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )


def _asset(name: str) -> str:
    return (resources.files("infercast.report.html") / "templates" / name).read_text("utf-8")


def render_html(inputs: ReportInputs) -> str:
    """The report page for results already computed."""
    from markupsafe import Markup

    env = _environment()
    page = env.get_template("report.html.j2")
    text: str = page.render(
        v=build_view(inputs),
        css=Markup(_asset("report.css")),
        js=Markup(_asset("report.js")),
    )
    return text


def load_whatif(path: str | Path) -> dict[str, Any]:
    """A what-if result written as JSON (its ``variants`` list is what the report tables)."""
    p = Path(path)
    try:
        data = json.loads(p.read_text("utf-8"))
    except OSError as exc:
        raise InfercastError(f"cannot read {p}: {exc.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InfercastError(f"{p}: not a JSON what-if result ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("variants"), list):
        raise InfercastError(
            f"{p}: not a what-if result (no 'variants' list)",
            "give the JSON that `infercast whatif ... --format json` writes",
        )
    return data


def _whatif_dict(whatif: Any) -> Mapping[str, Any] | None:
    if whatif is None:
        return None
    if isinstance(whatif, Mapping):
        return whatif
    if isinstance(whatif, str | Path):
        return load_whatif(whatif)
    to_dict = getattr(whatif, "to_dict", None)
    if callable(to_dict):
        doc = to_dict()
        if isinstance(doc, Mapping):
            return doc
    raise InfercastError(
        f"a what-if result must be a mapping, a JSON file or have to_dict(), "
        f"not {type(whatif).__name__}"
    )


def html_report(
    model: str | Path | Graph,
    targets: Sequence[str | Target] = (),
    *,
    input_shapes: Mapping[str, Shape] | None = None,
    profile: str | Path | None = None,
    profile_kind: str | None = None,
    whatif: Any = None,
    output: str | Path | None = None,
) -> str:
    """The HTML report of ``model`` on ``targets`` (names, paths or :class:`Target`).

    ``profile``: a per-op profile measured on a runtime (ONNX Runtime JSON, TFLite
    ``benchmark_model`` output, TVM debug table), joined with the static cost and
    shown as measured points on the roofline and a column of the layer table.
    ``whatif``: a what-if result (its ``to_dict()``, the JSON document, or a path to
    it): the variant table. Returns the HTML; writes it to ``output`` when given.
    """
    import infercast.api as api

    # load once; every stage once, on the graph and the earlier stages' results
    loaded = [t if isinstance(t, Target) else api.load_target(t) for t in targets]
    whatif_doc = _whatif_dict(whatif)  # bad input is reported before the work
    graph = model if isinstance(model, Graph) else api.load(model, input_shapes)
    memory = api.plan_memory(graph)
    analysis = api.analyze(graph, memory=memory)
    forecasts = [
        api.estimate(graph, t, analysis=analysis, placement=api.check(graph, t, memory=memory))
        for t in loaded
    ]
    joined = None
    if profile is not None:
        joined = api.profile_import(profile, graph, kind=profile_kind, analysis=analysis)
    inputs = ReportInputs(
        analysis=analysis,
        memory=memory,
        forecasts=tuple(forecasts),
        joined=joined,
        profile_source=str(profile) if profile is not None else "",
        whatif=whatif_doc,
    )
    text = render_html(inputs)
    if output is not None:
        write_text_atomic(Path(output), text)
    return text


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file beside it (no half-written report)."""
    import os
    import tempfile

    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or Path("."))
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise InfercastError(f"cannot write {path}: {exc.strerror}") from None
