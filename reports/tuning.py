"""The report's view of the two host conditions: each configuration's tuned figure beside what a plain
script gets (``hpubench.analysis.tuning``), the plain processes' heap modes, and the measured tips."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hpubench.analysis.tuning import tunings
from reports.sources import ResultSet
from reports.tables import Column, HtmlTable, TableRow, number, text

COLUMNS = [
    Column("result_set", "Result set"),
    Column("key", "Configuration", "the tuned cell's key; its plain twin adds condition=plain"),
    Column("tuned", "Tuned samples/s", "the harness's host settings (median over runs)", numeric=True),
    Column(
        "plain", "Plain samples/s", "glibc's own heap, torch's default threads, fresh process", numeric=True
    ),
    Column("ratio", "Plain / tuned", "below 1: a plain script of this work is slower", numeric=True),
    Column("modes", "Plain processes", "heap mode of each plain process, from its page faults per step"),
]


@dataclass(frozen=True)
class TuningView:
    """The table (None: no configuration was measured under both conditions) and the tips, one per line."""

    table: HtmlTable | None
    tips: list[str]


def tuning_view(sets: Sequence[ResultSet]) -> TuningView:
    table = HtmlTable("tuning-table", list(COLUMNS))
    tips: list[str] = []
    for rs in sets:
        for t in tunings(rs.results):
            table.rows.append(
                TableRow(
                    f"{rs.label}|{t.key}",
                    [
                        text(rs.label),
                        text(t.key),
                        number(t.tuned_samples_per_s),
                        number(t.plain_samples_per_s),
                        number(t.ratio, text=f"{t.ratio:.2f}"),
                        text(t.modes_text()),
                    ],
                )
            )
            tips += [f"{rs.label}: {tip}" for tip in t.tips()]
    return TuningView(table if table.rows else None, tips)
