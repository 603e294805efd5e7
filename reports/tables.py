"""Tables of a page: columns with their help text, and cells that carry a sort value, a tooltip, a muted
interval and a badge, rendered by the ``html_table`` macro (sortable and filterable in the page)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reports import fmt


@dataclass(frozen=True)
class Column:
    id: str
    label: str
    help: str = ""
    numeric: bool = False


@dataclass(frozen=True)
class TableCell:
    text: str
    sort: str = ""  # raw value the table sorts by ("" sorts last); the text where empty and not numeric
    title: str = ""
    sub: str = ""  # muted second part, e.g. an interval
    badge: str = ""
    badge_cls: str = ""


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


def raw(x: Any) -> str:
    return "" if fmt.missing(x) else repr(float(x))


def number(x: Any, text: str | None = None, **kw: str) -> TableCell:
    return TableCell(text=fmt.num(x) if text is None else text, sort=raw(x), **kw)


def integer(x: Any) -> str:
    return fmt.MISSING if fmt.missing(x) else str(int(x))


def text(x: Any, **kw: str) -> TableCell:
    s = "" if fmt.missing(x) else str(x)
    return TableCell(text=s or fmt.MISSING, sort=s, **kw)
