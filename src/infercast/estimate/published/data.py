"""The published device measurements shipped with infercast.

The file is ``estimate/data/published-latency.csv``.

One row per published figure: the board and target it was measured on, the
architecture (a :mod:`~infercast.estimate.published.recipes` name) and how it was
quantised, the thread count, the runtime, the latency, whether the built-in target
was fitted on it, and the source. The file's header comments state the format.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from infercast.errors import InfercastError

DATA_FILE = Path(__file__).resolve().parents[1] / "data" / "published-latency.csv"
FORMAT = "infercast.published/1"
COLUMNS = ("row_id", "board", "target", "model", "recipe", "quant", "threads", "clock_hz",
           "runtime", "timed", "latency_ms", "fit", "source", "conditions")  # fmt: skip


@dataclass(frozen=True)
class PublishedRow:
    row_id: str
    board: str
    target: str
    model: str
    recipe: str
    quant: str
    threads: int
    clock_hz: float | None
    """Clock of the measured unit when it differs from the target file's."""
    runtime: str
    timed: str
    """``call`` (a whole inference call) or ``device`` (the accelerator's own time)."""
    latency_s: float
    fit: bool
    source: str
    conditions: str
    excluded: bool = False
    """The figure contradicts the model infercast builds for the row (``fit = excluded``;
    the conditions column says why): reported with its forecast, never fitted, and left
    out of every per-device figure."""

    @property
    def accelerated(self) -> bool:
        """True when the row's target has an accelerator (the NPU side of a pair)."""
        from infercast.targets.loader import load_target

        return load_target(self.target).placement.accelerator is not None


FIT_VALUES = ("yes", "no", "excluded")


def _parse(rec: dict[str, str], where: str) -> PublishedRow:
    fit = rec.get("fit", "").strip().lower()
    if fit not in FIT_VALUES:
        raise InfercastError(f"{where}: fit must be one of {', '.join(FIT_VALUES)}, not {fit!r}")
    try:
        row = PublishedRow(
            row_id=rec["row_id"],
            board=rec["board"],
            target=rec["target"],
            model=rec["model"],
            recipe=rec["recipe"],
            quant=rec["quant"],
            threads=int(rec["threads"] or 1),
            clock_hz=float(rec["clock_hz"]) if rec["clock_hz"] else None,
            runtime=rec["runtime"],
            timed=rec["timed"],
            latency_s=float(rec["latency_ms"]) / 1e3,
            fit=fit == "yes",
            source=rec["source"],
            conditions=rec["conditions"],
            excluded=fit == "excluded",
        )
    except (KeyError, ValueError) as exc:
        raise InfercastError(f"{where}: malformed published row ({exc})") from exc
    if row.timed not in ("call", "device"):
        raise InfercastError(f"{where}: timed must be call or device, not {row.timed!r}")
    return row


def load_rows(path: str | Path | None = None) -> list[PublishedRow]:
    """Every row of the published data file (``path``: another file of the same format)."""
    p = Path(path) if path else DATA_FILE
    lines = [ln for ln in p.read_text().splitlines() if ln and not ln.startswith("#")]
    reader = csv.DictReader(lines)
    if tuple(reader.fieldnames or ()) != COLUMNS:
        raise InfercastError(f"{p}: columns must be {', '.join(COLUMNS)}")
    rows = [_parse(rec, f"{p.name} line {i + 2}") for i, rec in enumerate(reader)]
    ids = [r.row_id for r in rows]
    if len(set(ids)) != len(ids):
        raise InfercastError(f"{p}: duplicate row_id")
    return rows


def rows_for(target: str, rows: list[PublishedRow] | None = None) -> list[PublishedRow]:
    return [r for r in (rows if rows is not None else load_rows()) if r.target == target]


def paired_row(row: PublishedRow, rows: list[PublishedRow], target: str) -> PublishedRow | None:
    """The same measurement as ``row`` on ``target``: one board, model, quantisation, thread
    count, clock, timing method and source (None: that source timed no such row)."""
    key = (row.board, row.recipe, row.quant, row.threads, row.clock_hz, row.timed, row.source)
    found = [
        r
        for r in rows
        if r.target == target
        and (r.board, r.recipe, r.quant, r.threads, r.clock_hz, r.timed, r.source) == key
    ]
    return found[0] if len(found) == 1 else None
