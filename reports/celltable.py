"""The report's table of every cell: one row per cell and result set, each figure with the tooltip that
says how it was made (the peak behind an MFU, the source and date of a price, what memory measured).

Its columns are the column registry's (``hpubench.present.columns``) that the page shows, in the
registry's order, with the dimensions a plugin added before the outcome (``status``)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from hpubench import numfmt
from hpubench.analysis.frame import added_dimension_columns
from hpubench.plan import dimensions
from hpubench.present.columns import COLUMNS, Column, FrameRow, Html, Page, page_columns, text
from reports.tables import Column as Header
from reports.tables import HtmlTable, TableRow

DIMENSIONS_BEFORE = "status"  # where the added dimensions' columns go: after the built-in ones


def _dimension_column(name: str) -> Column:
    """An added dimension's column: its value as text, a dash where the cell has none."""
    return Column(
        name,
        dimensions.header_of(name),
        html=Html(lambda v, _: text(numfmt.MISSING if numfmt.missing(v) else str(v))),
    )


def table_columns(df: pd.DataFrame, page: Page, columns: Sequence[Column] = COLUMNS) -> list[Column]:
    """The registry's page columns, with one per added dimension of ``df`` before the outcome."""
    cols = page_columns(page, columns)
    at = next((i for i, c in enumerate(cols) if c.name == DIMENSIONS_BEFORE), len(cols))
    cols[at:at] = [_dimension_column(name) for name in added_dimension_columns(df.columns)]
    return cols


def cell_table(
    df: pd.DataFrame, workload_samples: int | None, columns: Sequence[Column] = COLUMNS
) -> HtmlTable:
    """Every cell of every result set, with the tooltip that says how each figure was made."""
    page = Page(workload_samples, bool((df["repeats"] > 1).any()))
    cols = table_columns(df, page, columns)
    headers = [
        Header(c.name, page.fill(c.title), page.fill(c.help), c.html is not None and c.html.numeric)
        for c in cols
    ]
    table = HtmlTable("cell-table", headers)
    for _, r in df.iterrows():
        row = FrameRow(r)
        cls = " ".join(c for c, on in (("double", r["test_double"]), ("notok", not row.ok)) if on)
        table.rows.append(TableRow(f"{r['result_set']}|{r['key']}", [c.page_cell(row) for c in cols], cls))
    return table
