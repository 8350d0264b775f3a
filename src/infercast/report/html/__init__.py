"""The HTML report: one self-contained file (inline CSS, SVG charts and a little script).

Charts are inline SVG drawn by Jinja2 templates (``templates/``) from geometry
computed in :mod:`~infercast.report.html.charts`: no plotting library, no
script needed to see them, nothing fetched from the network (the page's
Content-Security-Policy forbids it). The only script sorts and filters the
layer table.

* :func:`render_html` -- results already computed (:class:`ReportInputs`) -> HTML text;
* ``infercast.html_report`` (:mod:`infercast.api`) -- a model, targets, optionally a
  per-op profile and a what-if result -> HTML text (and the file): the model is loaded
  once and each stage runs once per target.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from typing import Any

from infercast.errors import InfercastError
from infercast.report.html.view import ReportInputs, build_view

__all__ = ["ReportInputs", "render_html", "whatif_document"]


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


def whatif_document(data: Any, where: str = "the what-if result") -> Mapping[str, Any]:
    """A what-if result as the report reads it: a mapping with a ``variants`` list (the
    JSON document, or an object with ``to_dict()``, as ``infercast.whatif`` returns)."""
    to_dict = getattr(data, "to_dict", None)
    if not isinstance(data, Mapping) and callable(to_dict):
        data = to_dict()
    if not isinstance(data, Mapping) or not isinstance(data.get("variants"), list):
        raise InfercastError(
            f"{where}: not a what-if result (no 'variants' list)",
            "give the JSON document of a what-if run (its variants are tabled)",
        )
    return data
