"""The column registry (issue 32, item 5): one entry per column drives the full and the 80-column terminal
tables, the report's table of every cell and the csv/json exports, so a new column is one entry."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from gatedata import make_result
from rich.console import Console

from hpubench import numfmt
from hpubench.analysis.frame import to_dataframe
from hpubench.analysis.prices import Tables
from hpubench.plan.cell import Cell
from hpubench.present.columns import (
    COLUMNS,
    Column,
    Html,
    Page,
    Term,
    narrow_columns,
    number,
    page_columns,
    wide_columns,
)
from hpubench.present.export import results_frame, with_columns
from hpubench.present.narrowtable import compact_results_table, compact_rows
from hpubench.present.tables import results_table
from hpubench.store.record import CellResult
from hpubench.store.rundir import ResultStore
from reports import fmt
from reports.celltable import cell_table
from reports.frames import cell_frame
from reports.sources import load_result_sets


def _records() -> list[CellResult]:
    cell = Cell("mlp")
    runs = [make_result(cell, np.full(20, t), repeat=i) for i, t in enumerate((0.010, 0.020, 0.016))]
    return [
        *runs,
        make_result(Cell("gpt"), np.full(20, 0.05)),
        CellResult(Cell("resnet"), "failed", reason="x"),
    ]


def _text(renderables: list) -> str:
    console = Console(width=400, record=True, file=io.StringIO())
    console.print(*renderables, sep="\n")
    return console.export_text()


def _report_frame(tmp_path: Path, records: list[CellResult]):
    store = ResultStore(tmp_path / "run")
    for r in records:
        store.append(r)
    return cell_frame(load_result_sets([str(tmp_path / "run")]), Tables())


# A figure no table shows yet, computed from fields every frame and record has.
MS_PER_SAMPLE = Column(
    "ms_per_sample",
    "ms/sample",
    "mean step time ÷ samples per step",
    get=lambda row: row["step_time_mean_s"] * 1e3 / row["samples_per_step"],
    get_runs=lambda runs: runs.metrics[0].step_time_mean_s * 1e3 / runs.metrics[0].samples_per_step,
    figure=True,
    wide=Term(lambda v: f"{v:.4f}", "ms/sample"),
    narrow=Term(lambda v: numfmt.sig(v), "ms/smp"),
    html=Html(numeric=True),
    export=True,
)


def test_one_more_entry_is_one_more_column_everywhere(tmp_path: Path) -> None:
    records = _records()
    registry = (*COLUMNS, MS_PER_SAMPLE)
    gpt = records[3]  # 50 ms a step, 64 samples: 0.78125 ms a sample

    wide = _text([results_table(records, columns=registry)])
    assert "ms/sample" in wide.splitlines()[1]
    assert "0.7813" in next(line for line in wide.splitlines() if gpt.key in line)
    assert "ms/sample" not in _text([results_table(records)])  # the registry as shipped: not there

    narrow = _text(compact_results_table(records, columns=registry))
    assert "ms/smp" in narrow and "0.781" in narrow
    _, rows, _ = compact_rows(records, registry)
    assert [r["ms_per_sample"] for r in rows][2] == "-"  # the failed cell: no measured run, no figure

    csv = results_frame(records, registry).to_csv(index=False)
    header, *lines = csv.splitlines()
    assert header.endswith(",ms_per_sample")
    assert float(lines[3].rsplit(",", 1)[1]) == pytest.approx(0.78125)
    assert "ms_per_sample" not in results_frame(records).columns

    df = _report_frame(tmp_path, records)
    table = cell_table(df, None, registry)
    ids = [c.id for c in table.columns]
    assert ids[-2:] == ["key", "ms_per_sample"]  # in registry order: the copy put it last
    at = ids.index("ms_per_sample")
    (row,) = [r for r in table.rows if r.id.endswith(gpt.key)]
    assert row.cells[at].text == "0.781" and table.columns[at].help == "mean step time ÷ samples per step"
    assert "ms_per_sample" in with_columns(df, registry).to_json(orient="records")


def test_a_metrics_field_needs_only_its_entry(tmp_path: Path) -> None:
    """A Metrics field is a frame column already; its entry alone puts it in the tables, each repetition's
    value folded into the median as every figure is."""
    p99 = Column(
        "step_time_p99_s",
        "p99 step ms",
        figure=True,
        wide=Term(lambda s: numfmt.fixed(s * 1e3, ".2f"), "p99 ms"),
        html=Html(lambda v, _: number(v, text=numfmt.ms(v)), numeric=True),
    )
    records = _records()
    registry = (*COLUMNS, p99)
    wide = _text([results_table(records, columns=registry)])
    mlp = next(line for line in wide.splitlines() if records[0].key in line)
    assert "p99 ms" in wide and "16.00" in mlp  # median of 10, 20 and 16 ms
    table = cell_table(_report_frame(tmp_path, records), None, registry)
    assert "step_time_p99_s" in [c.id for c in table.columns]
    assert "step_time_p99_s" in to_dataframe(records).columns  # the export had it all along


def test_each_rendering_takes_its_columns_from_the_registry_in_order() -> None:
    titles = [t.title or c.title for c, t in wide_columns()]
    assert titles == [
        "cell",
        "status",
        "quality",
        "numerics",
        "samples/s [CI]",
        "p50 ms",
        "p90 ms",
        "1st step s",
        "peak MiB",
        "MFU",
        "scaling",
        "fwd/bwd/opt",
        "note",
    ]
    narrow = [t.title or c.title for c, t in narrow_columns()]
    assert narrow == [
        "cell",
        "quality",
        "samples/s",
        "±CI",
        "step p50",
        "peak mem",
        "MFU",
        "scaling",
    ]
    page = [c.name for c in page_columns(Page())]
    assert page[:3] == ["result_set", "hardware", "workload"] and page[-1] == "key"
    assert "workload_time_s" not in page and "repeats" not in page
    full = [c.name for c in page_columns(Page(workload_samples=1000, repeated=True))]
    assert {"workload_time_s", "workload_cost_usd", "repeats"} <= set(full)


def test_the_registry_is_well_formed() -> None:
    names = [c.name for c in COLUMNS]
    assert len(names) == len(set(names))
    assert all(c.wide or c.narrow or c.html for c in COLUMNS)  # every entry shows somewhere
    # As shipped, the exports are the frames' own columns: nothing is computed into them.
    df = to_dataframe(_records())
    assert with_columns(df) is df


def test_a_terminal_column_needs_a_getter_unless_it_is_a_metric() -> None:
    with pytest.raises(ValueError, match="get_runs"):
        Column("not_a_field", "x", wide=Term(str))
    Column("step_time_p99_s", "p99", wide=Term(str))  # a Metrics field: the median is its getter


def test_one_number_formatter_family() -> None:
    """The page's formatters are numfmt's own, not a second family."""
    for name in ("num", "ci", "money", "pct", "ratio", "mib", "rank_mib", "ms", "duration", "missing"):
        assert getattr(fmt, name) is getattr(numfmt, name)
    assert fmt.MISSING == numfmt.MISSING == "–" and numfmt.DASH == "-"
    assert numfmt.mib(20 * 2**30) == "20,480" and numfmt.mib(20 * 2**30, ".0f", numfmt.DASH) == "20480"
    assert numfmt.mib(None, ".0f", numfmt.DASH) == "-" and numfmt.mib(float("nan")) == "–"
    assert numfmt.fixed(None) == "-" and numfmt.fixed(1234.56, ",.1f") == "1,234.6"


def test_text_from_records_is_never_markup() -> None:
    """A reason with brackets shows as written in a row of repetitions too (rich read "[hf]" as a style)."""
    bad = CellResult(Cell("bert"), "skipped", reason="pip install 'hpubench[hf]'")
    text = _text([results_table([bad, replace(bad, repeat=1)])])
    assert "2 runs: pip install 'hpubench[hf]'" in text
