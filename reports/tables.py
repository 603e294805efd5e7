"""Tables of a page: columns with their help text, and rows of cells that carry a sort value, a tooltip, a
muted interval and a badge (``hpubench.present.columns.cells``), rendered by the ``html_table`` macro
(sortable and filterable in the page)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hpubench.present.columns.cells import TableCell, integer, number, raw, text

__all__ = ["Column", "HtmlTable", "TableCell", "TableRow", "integer", "number", "raw", "text"]


@dataclass(frozen=True)
class Column:
    id: str
    label: str
    help: str = ""
    numeric: bool = False


@dataclass(frozen=True)
class TableRow:
    id: str
    cells: list[TableCell]
    cls: str = ""


@dataclass(frozen=True)
class HtmlTable:
    id: str
    columns: list[Column]
    rows: list[TableRow] = field(default_factory=list)
