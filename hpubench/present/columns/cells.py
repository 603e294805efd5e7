"""Cells of a page's table: the text, the raw value it sorts by, a tooltip, a muted interval and a badge
(rendered by the report's ``html_table`` macro; ``reports.tables`` holds the table around them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hpubench import numfmt


@dataclass(frozen=True)
class TableCell:
    text: str
    sort: str = ""  # raw value the table sorts by ("" sorts last); the text where empty and not numeric
    title: str = ""
    sub: str = ""  # muted second part, e.g. an interval
    badge: str = ""
    badge_cls: str = ""


def raw(x: Any) -> str:
    return "" if numfmt.missing(x) else repr(float(x))


def number(x: Any, text: str | None = None, **kw: str) -> TableCell:
    return TableCell(text=numfmt.num(x) if text is None else text, sort=raw(x), **kw)


def integer(x: Any) -> str:
    return numfmt.MISSING if numfmt.missing(x) else str(int(x))


def text(x: Any, **kw: str) -> TableCell:
    s = "" if numfmt.missing(x) else str(x)
    return TableCell(text=s or numfmt.MISSING, sort=s, **kw)
