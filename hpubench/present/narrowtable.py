"""Results at 80 columns: the figures that decide, keys cut to what differs, everything else below.

The full results table (``tables.results_table``, eleven columns and whole keys) needs about 160
columns; at 80 or 120 rich folded every key over eight lines and cut the figures to ``70,…``. Under that
width the CLI prints this compact table instead (``--wide`` asks for the full one): the parts of the key
every row shares are said once above the table, figures carry three significant digits and a unit, the
interval is a relative ``±``, and the notes and reasons follow the table as lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich import box
from rich.console import RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from hpubench import numfmt
from hpubench.analysis.quality import assess_repeats
from hpubench.measure.ranks import rank_peaks
from hpubench.present.columns import COLUMNS, Column, cell_runs, markup, narrow_columns
from hpubench.present.shortkeys import shorten
from hpubench.present.tables import host_notes, numerics_line, numerics_notes, results_table
from hpubench.store.record import CellResult

WIDE_MIN_COLUMNS = 160  # below this the full table folds its keys; measured with an 8-dimension key


@dataclass(frozen=True)
class Row:
    """One line of the compact table: a cell, or every repetition of a cell together; each column's plain
    text by its name in the registry (``hpubench.present.columns``), with its style."""

    cell: str
    texts: dict[str, str]
    styles: dict[str, str]

    def __getitem__(self, name: str) -> str:
        return self.texts[name]


def compact_rows(
    results: Sequence[CellResult], columns: Sequence[Column] = COLUMNS
) -> tuple[str, list[Row], dict[str, str]]:
    """The shared key parts, one row per cell (repetitions together), and each key's short label."""
    keys = shorten([r.key for r in results])
    shown = narrow_columns(columns)
    rows = []
    for runs in cell_runs(results, keys.short):
        cells = {col.name: col.term_cell(runs, term) for col, term in shown}
        rows.append(
            Row(runs.label, {k: t for k, (t, _) in cells.items()}, {k: s for k, (_, s) in cells.items()})
        )
    return keys.common, rows, keys.short


def _notes(results: Sequence[CellResult], short: dict[str, str]) -> list[str]:
    """Why a figure is not ok, and why a cell has none, one line each, by short key."""
    lines: list[str] = []
    seen: set[str] = set()
    for r in results:
        if r.key in seen:
            continue
        seen.add(r.key)
        mine = [x for x in results if x.key == r.key]
        if all(x.status != "ok" for x in mine) and r.reason:
            lines.append(f"{short[r.key]}: {r.status}: {r.reason}")
            continue
        q = assess_repeats(mine) if len(mine) > 1 else None
        reasons = q.reasons if q is not None else r.quality_reasons if len(mine) == 1 else ()
        lines += [f"{short[r.key]}: {reason}" for reason in reasons]
    return lines


def rank_peak_lines(results: Sequence[CellResult], short: dict[str, str] | None = None) -> list[str]:
    """Each rank's own peak memory, one line per cell of several ranks (its first record that has them):
    the table's peak is the highest rank's, so what sharding (fsdp) saves per rank shows here."""
    lines: dict[str, str] = {}
    for r in results:
        peaks = rank_peaks(r.runtime) if r.status == "ok" else None
        if peaks and len(peaks) > 1 and r.key not in lines:
            shown = ", ".join(numfmt.size(p) for p in peaks)
            lines[r.key] = f"{(short or {}).get(r.key, r.key)}: {shown} ({r.runtime.strategy or '?'})"
    return ["peak memory per rank (rank 0, 1, ...):\n" + "\n".join(lines.values())] if lines else []


def compact_results_table(
    results: Sequence[CellResult], title: str = "", columns: Sequence[Column] = COLUMNS
) -> list[RenderableType]:
    """The table and the lines under it, to print in order."""
    common, rows, short = compact_rows(results, columns)
    table = Table(title=escape(title), box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    shown = narrow_columns(columns)
    for col, term in shown:
        table.add_column(
            term.title or col.title, justify=term.justify, overflow=term.overflow, no_wrap=term.no_wrap
        )
    for row in rows:
        table.add_row(*(markup(row.texts[col.name], row.styles[col.name]) for col, _ in shown))
    under: list[RenderableType] = []
    if common:
        under.append(Text(f"every cell: {common} (* = the parts in the cell column)"))
    under.append(
        Text(
            "samples/s: mean over the measured steps, ±CI its 95% interval; repeated cells: the median run, "
            "± the range of the runs. Warm-up excluded, device synchronised per step. --wide: every column."
        )
    )
    if any(col.name == "numerics" for col in columns):
        under.append(Text(numerics_line(results, short)))
    under += [Text(line) for line in rank_peak_lines(results, short)]
    notes = _notes(results, short) + numerics_notes(results, short) + host_notes(results)
    if notes:
        under.append(Text("why not ok:\n" + "\n".join(notes)))
    return [table, *under]


def results_view(
    results: Sequence[CellResult],
    title: str,
    width: int,
    wide: bool = False,
    columns: Sequence[Column] = COLUMNS,
) -> list[RenderableType]:
    """What to print for these results on a console ``width`` columns wide: full or compact."""
    if wide or width >= WIDE_MIN_COLUMNS:
        table = results_table(results, title=title, columns=columns)
        return [table, *(Text(line) for line in rank_peak_lines(results))]
    return compact_results_table(results, title, columns)
