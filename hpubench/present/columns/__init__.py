"""The columns of the results, declared once (issue 32): each says what it is (name, titles, help), where
to read it (a getter from a cell's records, a getter from a frame row), how each rendering shows it (a
formatter per rendering) and which renderings show it. The full terminal table
(``hpubench.present.tables``), the 80-column one (``hpubench.present.narrowtable``), the report's table of
every cell (``reports.celltable``) and the csv/json exports (``hpubench.present.export.with_columns``) all
take their columns from :data:`COLUMNS`, in its order.

Adding a figure is one entry here plus its field: a new :class:`~hpubench.store.record.Metrics` field is a
column of every frame and export already, and an entry such as::

    Column("step_time_p99_s", "p99 step ms", "99th percentile of the measured step times", figure=True,
           wide=Term(lambda s: numfmt.fixed(s * 1e3, ".2f"), "p99 ms"), html=Html(numeric=True))

shows it in the full terminal table (the median over a cell's repetitions) and on the page. Every table
builder also takes the registry as an argument (``columns=``), so a copy with one more entry is the whole
change a test needs.
"""

from __future__ import annotations

from collections.abc import Sequence

from hpubench.present.columns.cells import TableCell, integer, number, raw, text
from hpubench.present.columns.model import (
    Column,
    FrameRow,
    Html,
    Page,
    Runs,
    Spread,
    Term,
    cell_runs,
    markup,
)
from hpubench.present.columns.registry import COLUMNS

__all__ = [
    "COLUMNS",
    "Column",
    "FrameRow",
    "Html",
    "Page",
    "Runs",
    "Spread",
    "TableCell",
    "Term",
    "cell_runs",
    "exported",
    "integer",
    "markup",
    "narrow_columns",
    "number",
    "page_columns",
    "raw",
    "text",
    "wide_columns",
]


def wide_columns(columns: Sequence[Column] = COLUMNS) -> list[tuple[Column, Term]]:
    """The full terminal table's columns, each with how it shows there."""
    return [(c, c.wide) for c in columns if c.wide is not None]


def narrow_columns(columns: Sequence[Column] = COLUMNS) -> list[tuple[Column, Term]]:
    """The 80-column table's columns, each with how it shows there."""
    return [(c, c.narrow) for c in columns if c.narrow is not None]


def page_columns(page: Page, columns: Sequence[Column] = COLUMNS) -> list[Column]:
    """The report table's columns for this page (the workload's and the repetitions' where they apply)."""
    return [c for c in columns if c.html is not None and (c.html.shown is None or c.html.shown(page))]


def exported(columns: Sequence[Column] = COLUMNS) -> list[Column]:
    """The columns the exports compute where a frame lacks them."""
    return [c for c in columns if c.export]
