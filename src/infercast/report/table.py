"""Terminal tables that fit: columns chosen by the width the table is printed at.

A :class:`Grid` is the table as data: columns (:class:`Col`) with a key, a
header, whether they hold numbers, and a priority; rows of cells keyed by
column. :class:`FitTable` renders it with Rich at the console's width:

1. when the natural width is too wide, headers take their short forms;
2. then text columns (names, ops, reasons) fold onto several lines, down to
   their minimum widths;
3. then whole columns are dropped, the least important first (highest ``prio``;
   priority 0 is never dropped) -- never a number cut: numeric cells do not wrap
   and are never shortened;
4. a footnote names the columns left out and how to get them (``--columns``).

Piped to a file or another program without ``COLUMNS`` set, the console is
unbounded: every column, one line per row, no colour (``cli.common.render``).

:class:`TableOptions` carries ``--columns``, ``--sort``, ``--top``; every cell
is a :class:`rich.text.Text` built from escaped strings (:func:`shown`), so a
model's names are never read as markup.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from infercast.errors import InfercastError
from infercast.report.text import shown

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions
    from rich.table import Table


WORD_WIDTH = 20
"""Text columns fold between words; a word up to this wide is never broken."""


@dataclass(frozen=True)
class Col:
    key: str
    """Name for ``--columns`` and ``--sort``."""
    header: str
    numeric: bool = True
    prio: int = 1
    """0: always shown; larger numbers are dropped first when the width is short."""
    short: str = ""
    """A shorter header for narrow terminals."""
    min_width: int = 0
    """Text columns: the narrowest they fold to (0: the header's width)."""


@dataclass(frozen=True)
class Cell:
    text: str
    sort: float | str | None = None
    """Sort key (the raw number); None sorts last."""
    style: str = ""


def entry(text: object, sort: float | str | None = None, style: str = "") -> Cell:
    """A cell showing ``text`` (escaped: control characters as ``\\x1b``)."""
    return Cell(shown(text), sort, style)


Row = Mapping[str, Cell]


@dataclass(frozen=True)
class TableOptions:
    """What the user asked for: ``--columns``, ``--sort``, ``--top``."""

    columns: tuple[str, ...] = ()
    sort: str | None = None
    top: int | None = None
    ascending: bool | None = None

    @staticmethod
    def parse(
        columns: str | None = None, sort: str | None = None, top: int | None = None
    ) -> TableOptions:
        cols = tuple(c.strip() for c in (columns or "").split(",") if c.strip())
        asc = None
        key = sort
        if sort and sort.startswith("-"):
            key, asc = sort[1:], False
        elif sort and sort.startswith("+"):
            key, asc = sort[1:], True
        if top is not None and top < 1:
            raise InfercastError(f"--top must be a positive number of rows, not {top}")
        return TableOptions(cols, key, top, asc)


@dataclass
class Grid:
    cols: list[Col]
    rows: list[Row]
    title: str = ""
    total: Row | None = None
    row_styles: list[str] = field(default_factory=list)
    default_sort: str | None = None
    """Column ``--top`` sorts by when no ``--sort`` is given (the heaviest rows first)."""
    noun: str = "rows"
    more: str = "--columns to choose, --format csv for every figure"
    """How to get the columns a narrow terminal leaves out (the command's options)."""

    def column_keys(self) -> list[str]:
        return [c.key for c in self.cols]


def _check_keys(grid: Grid, keys: Sequence[str], what: str) -> None:
    bad = [k for k in keys if k not in grid.column_keys()]
    if bad:
        raise InfercastError(
            f"{what} {', '.join(bad)}: no such column",
            f"choose from {', '.join(grid.column_keys())}",
        )


def select_rows(grid: Grid, opts: TableOptions) -> tuple[list[Row], list[str], str]:
    """(rows, their styles, a note) after ``--sort`` and ``--top``."""
    rows = list(grid.rows)
    styles = list(grid.row_styles) or [""] * len(rows)
    key = opts.sort or (grid.default_sort if opts.top else None)
    note = ""
    if key is not None:
        _check_keys(grid, [key], "--sort")
        col = next(c for c in grid.cols if c.key == key)
        asc = opts.ascending if opts.ascending is not None else not col.numeric
        present = [(r, s) for r, s in zip(rows, styles, strict=True) if r[key].sort is not None]
        absent = [(r, s) for r, s in zip(rows, styles, strict=True) if r[key].sort is None]

        def k(rs: tuple[Row, str]) -> Any:
            v = rs[0][key].sort
            return (0, v) if isinstance(v, int | float) else (1, str(v))

        present.sort(key=k, reverse=not asc)
        pairs = present + absent
        rows, styles = [p[0] for p in pairs], [p[1] for p in pairs]
        note = f"sorted by {key}{'' if asc else ', largest first'}"
    if opts.top is not None and opts.top < len(rows):
        note = f"top {opts.top} of {len(rows)} {grid.noun}" + (f", {note}" if note else "")
        rows, styles = rows[: opts.top], styles[: opts.top]
    return rows, styles, note


class FitTable:
    """A Rich renderable: ``grid`` laid out to the width it is printed at."""

    def __init__(self, grid: Grid, opts: TableOptions | None = None) -> None:
        self.grid = grid
        self.opts = opts or TableOptions()
        if self.opts.columns:
            _check_keys(grid, self.opts.columns, "--columns")

    def _table(self, cols: list[Col], short: bool, fold: Mapping[str, int]) -> Table:
        from rich import box
        from rich.table import Table
        from rich.text import Text

        rows, styles, _note = select_rows(self.grid, self.opts)
        t = Table(
            box=box.SIMPLE_HEAD,
            show_edge=False,
            pad_edge=False,
            padding=(0, 1),
            collapse_padding=True,
            header_style="bold",
            expand=False,
        )
        for c in cols:
            header = (c.short or c.header) if short else c.header
            if c.numeric:
                # never narrower than its widest number: Rich may not shorten it
                t.add_column(
                    header, justify="right", no_wrap=True, min_width=self._col_width(c, short)
                )
            else:
                t.add_column(
                    header,
                    justify="left",
                    overflow="fold",
                    no_wrap=c.key not in fold,
                    max_width=fold.get(c.key),
                )
        for r, st in zip(rows, styles, strict=True):
            t.add_row(*(Text(r[c.key].text, style=r[c.key].style) for c in cols), style=st)
        if self.grid.total is not None:
            t.add_section()
            tot = self.grid.total
            t.add_row(*(Text(tot[c.key].text if c.key in tot else "") for c in cols), style="bold")
        return t

    def _natural(self, console: Console, options: ConsoleOptions, table: Table) -> int:
        from rich.measure import Measurement

        return Measurement.get(console, options.update(width=1_000_000), table).maximum

    def layout(self, console: Console, options: ConsoleOptions) -> tuple[Table, list[str]]:
        """The table that fits ``options.max_width``, and the keys of the columns left out."""
        width = options.max_width
        chosen = list(self.opts.columns)
        cols = [c for c in self.grid.cols if not chosen or c.key in chosen]
        if chosen:
            cols.sort(key=lambda c: chosen.index(c.key))
        dropped: list[str] = []
        short = False
        fold: dict[str, int] = {}
        stage = 0
        while True:
            table = self._table(cols, short, fold)
            natural = self._natural(console, options, table)
            if natural <= width:
                return table, dropped
            if stage == 0:  # short headers
                short, stage = True, 1
                continue
            droppable = [c for c in cols if c.prio > 0 and c.key not in chosen]
            if stage == 1:  # the least important columns go before names fold
                minor = [c for c in droppable if c.prio >= 3]
                if minor:
                    worst = max(minor, key=lambda c: (c.prio, cols.index(c)))
                    cols.remove(worst)
                    dropped.append(worst.key)
                    continue
                stage = 2
            if stage == 2:  # fold text columns, widest first, down to their minimum
                texts = [c for c in cols if not c.numeric]
                cur = {c.key: fold.get(c.key) or self._col_width(c, short) for c in texts}
                floor = {c.key: self._floor(c, short) for c in texts}
                shrinkable = [c for c in texts if cur[c.key] > floor[c.key]]
                if shrinkable:
                    c = max(shrinkable, key=lambda c: cur[c.key] - floor[c.key])
                    fold[c.key] = max(floor[c.key], cur[c.key] - (natural - width))
                    continue
                stage = 3
            if not droppable:
                return table, dropped
            worst = max(droppable, key=lambda c: (c.prio, cols.index(c)))
            cols.remove(worst)
            dropped.append(worst.key)

    def _floor(self, c: Col, short: bool) -> int:
        """The narrowest a text column folds to: its minimum, its header, and its longest
        word up to :data:`WORD_WIDTH` (a short label is not broken mid-word)."""
        from rich.cells import cell_len

        words = [w for r in self.grid.rows for w in r[c.key].text.split()]
        longest = max((cell_len(w) for w in words), default=0)
        return max(c.min_width, cell_len(c.short or c.header), 4, min(longest, WORD_WIDTH))

    def _col_width(self, c: Col, short: bool) -> int:
        """Natural width of a column: its widest cell or header."""
        from rich.cells import cell_len

        header = (c.short or c.header) if short else c.header
        cells = [r[c.key].text for r in self.grid.rows]
        if self.grid.total is not None and c.key in self.grid.total:
            cells.append(self.grid.total[c.key].text)
        return max([cell_len(header), *(cell_len(x) for x in cells)])

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Any]:
        from rich.text import Text

        _rows, _styles, note = select_rows(self.grid, self.opts)
        title = "  ".join(x for x in (self.grid.title, f"({note})" if note else "") if x)
        if title:
            yield Text(title, style="bold")
        table, dropped = self.layout(console, options)
        yield table
        if dropped:
            yield Text(
                f"(narrow terminal: left out {', '.join(dropped)}; {self.grid.more})",
                style="dim",
            )


def by_op_grid(
    title: str,
    rows: Sequence[tuple[str, int, Mapping[str, float]]],
    fields: Sequence[tuple[str, str, Any]],
    count_header: str = "layers",
) -> Grid:
    """A per-op summary table: (op, count, sums) rows; ``fields`` are (key, header, formatter)."""
    cols = [Col("op", "op", numeric=False, prio=0, min_width=8), Col("count", count_header, prio=0)]
    cols += [Col(k, h, prio=1) for k, h, _f in fields]
    out: list[Row] = []
    for op, count, values in rows:
        r: dict[str, Cell] = {"op": entry(op, op), "count": entry(count, count)}
        for k, _h, f in fields:
            r[k] = entry(f(values[k]), values[k])
        out.append(r)
    return Grid(cols, out, title=title, noun="ops")


def with_cols(grid: Grid, keys: Sequence[str]) -> Grid:
    """``grid`` with only the columns ``keys`` (for a fixed, narrow summary)."""
    return replace(grid, cols=[c for c in grid.cols if c.key in keys])
