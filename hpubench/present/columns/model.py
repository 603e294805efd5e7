"""What a column declaration is, and the two things its getters read: a cell's runs (the terminal tables)
and a frame row (the report's table and the exports)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from statistics import median
from typing import Any, Literal

from rich.markup import escape

from hpubench import numfmt
from hpubench.analysis.scaling import Scaling, scaling_efficiencies
from hpubench.present.columns.cells import TableCell, number, text
from hpubench.store.record import CellResult, Metrics

METRIC_FIELDS = frozenset(f.name for f in fields(Metrics))


@dataclass(frozen=True)
class Spread:
    """A figure with its interval: one run's 95% CI, or the lowest and highest of repeated runs."""

    value: float
    lo: float
    hi: float
    runs: int | None = None  # None: (lo, hi) is one run's interval; else how many runs it ranges over


@dataclass(frozen=True)
class Runs:
    """A terminal row: one cell's records (its repetitions, in order), each with its scaling, and the
    runs whose figures the row shows (``measured``; a row without any shows ``-`` for every figure)."""

    label: str  # the cell as the table names it: its key, or the part of it that differs
    records: tuple[CellResult, ...]
    scaling: tuple[Scaling | None, ...]
    measured: tuple[tuple[CellResult, Scaling | None], ...]

    @property
    def repeated(self) -> bool:
        return len(self.records) > 1

    @property
    def metrics(self) -> list[Metrics]:
        return [r.metrics for r, _ in self.measured if r.metrics is not None]


def cell_runs(
    results: Sequence[CellResult], labels: Mapping[str, str] | None = None, *, lone_by_metrics: bool = False
) -> list[Runs]:
    """The records grouped by cell key, in first-seen order. A run is measured when it finished ok with
    figures; ``lone_by_metrics``: a cell run once shows whatever figures it has, whatever its status (the
    full table's rule)."""
    scaling = scaling_efficiencies(list(results))
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(results):
        groups.setdefault(r.key, []).append(i)
    out = []
    for key, idx in groups.items():
        pairs = [(results[i], scaling[i]) for i in idx]
        if lone_by_metrics and len(pairs) == 1:
            measured = [p for p in pairs if p[0].metrics is not None]
        else:
            measured = [p for p in pairs if p[0].status == "ok" and p[0].metrics]
        label = key if labels is None else labels[key]
        out.append(Runs(label, tuple(r for r, _ in pairs), tuple(s for _, s in pairs), tuple(measured)))
    return out


@dataclass(frozen=True)
class FrameRow:
    """A row of a frame (``hpubench.store.frame``'s, or the report's ``cell_frame``), as a column's getter
    and its page cell read it."""

    values: Any  # a pandas Series, or any mapping of column name -> value

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    @property
    def ok(self) -> bool:
        """Measured: finished ok with a throughput."""
        return self["status"] == "ok" and not numfmt.missing(self["samples_per_s"])

    @property
    def unpriced(self) -> bool:
        """Measured on a device with no price: its dollar figures do not apply (not "not measured")."""
        return self.ok and numfmt.missing(self.values.get("price_usd_per_device_hour"))


@dataclass(frozen=True)
class Page:
    """What the report's table is built for: which optional columns it shows and their titles' ``{n}``."""

    workload_samples: int | None = None
    repeated: bool = False  # some row folds several repetitions

    def fill(self, s: str) -> str:
        return s.replace("{n}", f"{self.workload_samples:,}" if self.workload_samples else "")


Justify = Literal["left", "right"]
Overflow = Literal["ellipsis", "fold"]


@dataclass(frozen=True)
class Term:
    """How a column shows in a terminal table: its value as plain text (escaped there) and its colour.
    ``text`` is given None where the value is missing (a metric none of the measured runs has)."""

    text: Callable[[Any], str]
    title: str | None = None  # None: the column's title
    style: Callable[[Any], str] | None = None  # a rich style from the value ("" for none)
    justify: Justify = "right"
    overflow: Overflow = "ellipsis"
    no_wrap: bool = False
    get: Callable[[Runs], Any] | None = None  # this table's own getter, where it differs from the column's


@dataclass(frozen=True)
class Html:
    """How a column shows in the report's table: its value as a cell (the tooltip read from the row)."""

    cell: Callable[[Any, FrameRow], TableCell] | None = None  # None: number() if numeric, else text()
    numeric: bool = False
    shown: Callable[[Page], bool] | None = None  # None: always


@dataclass(frozen=True)
class Column:
    """One column of the results: what it is, where to read it, and how each rendering shows it.

    ``name`` is its column in the frames and the exports, and its id in the page. A column whose name is
    a :class:`~hpubench.store.record.Metrics` field needs no getters: a frame has that field as a column
    already, and a terminal row shows the median over its measured runs. ``export``: a column the frames
    lack is computed by ``get`` into the csv/json exports (``hpubench.present.export.with_columns``).
    Titles and help may say ``{n}``: the report's workload size."""

    name: str
    title: str  # the page's header; the terminal tables' unless their Term names one
    help: str = ""  # what the figure is and how it was made (the page header's tooltip)
    get: Callable[[FrameRow], Any] | None = None  # from a frame row; None: the row's own column
    get_runs: Callable[[Runs], Any] | None = None  # from a cell's runs; None: the metric's median
    figure: bool = False  # a measured figure: "-" in a terminal row without a measured run
    wide: Term | None = None  # the full terminal table (``hpubench.present.tables``)
    narrow: Term | None = None  # the 80-column table (``hpubench.present.narrowtable``)
    html: Html | None = None  # the report's table of every cell (``reports.celltable``)
    export: bool = False

    def __post_init__(self) -> None:
        terminal = self.wide is not None or self.narrow is not None
        if terminal and self.get_runs is None and self.name not in METRIC_FIELDS:
            shown = [t for t in (self.wide, self.narrow) if t is not None]
            if any(t.get is None for t in shown):
                raise ValueError(f"column {self.name!r} is no Metrics field: give it get_runs")

    def value(self, row: FrameRow) -> Any:
        return row[self.name] if self.get is None else self.get(row)

    def runs_value(self, runs: Runs, term: Term) -> Any:
        get = term.get or self.get_runs
        if get is not None:
            return get(runs)
        values = [getattr(m, self.name) for m in runs.metrics]
        values = [v for v in values if v is not None]
        return median(values) if values else None

    def term_cell(self, runs: Runs, term: Term) -> tuple[str, str]:
        """This column's cell in a terminal row: its plain text and its rich style ("" for none)."""
        if self.figure and not runs.measured:
            return numfmt.DASH, ""
        value = self.runs_value(runs, term)
        return term.text(value), term.style(value) if term.style is not None else ""

    def page_cell(self, row: FrameRow) -> TableCell:
        value = self.value(row)
        html = self.html or Html()
        if html.cell is not None:
            return html.cell(value, row)
        return number(value) if html.numeric else text(value)


def markup(text: str, style: str = "") -> str:
    """Plain text as rich markup (brackets in a key or a reason stay text), in its style where it has one."""
    return f"[{style}]{escape(text)}[/]" if style else escape(text)
