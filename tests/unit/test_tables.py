"""The terminal results table: one row per cell, repetitions folded into the median run and its range."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from gatedata import make_result
from rich.console import Console

from hpubench.plan.cell import Cell
from hpubench.present.tables import results_table
from hpubench.store.record import CellResult


def _render(results: list[CellResult]) -> str:
    console = Console(width=400, record=True)
    console.print(results_table(results))
    return console.export_text()


def _rows(text: str, key: str) -> list[str]:
    return [line for line in text.splitlines() if key in line]


def test_repetitions_fold_into_one_row_with_the_median_run_and_the_range() -> None:
    cell, other = Cell("mlp"), Cell("gpt")
    steps = [0.010, 0.020, 0.016, 0.0125]  # 64 samples per step: 6400, 3200, 4000, 5120 samples/s
    records = [make_result(cell, np.full(20, t), repeat=i) for i, t in enumerate(steps)]
    records.append(make_result(other, np.full(20, 0.01)))
    text = _render(records)
    (row,) = _rows(text, cell.key)
    assert "4,560.0 [3,200.0, 6,400.0]" in row  # median of 4 runs, lowest and highest run
    assert "4 runs;" in row and "20 steps" in row
    (single,) = _rows(text, other.key)
    assert "6,400.0 [6,400.0, 6,400.0]" in single and "runs" not in single  # one run: its own interval
    assert "median of the runs" in text


def test_failed_repetitions_are_counted_and_flag_the_row() -> None:
    cell = Cell("mlp")
    ok = [make_result(cell, np.full(20, 0.01), repeat=i) for i in range(2)]
    bad = CellResult(cell, "failed", reason="RuntimeError: boom", repeat=2)
    (row,) = _rows(_render([*ok, bad]), cell.key)
    assert "failed" in row and "3 runs, 1 failed" in row
    (all_bad,) = _rows(_render([bad, replace(bad, repeat=3)]), cell.key)
    assert "2 runs, 2 failed: RuntimeError: boom" in all_bad


def test_the_quality_column_and_the_reasons_under_the_table() -> None:
    from hpubench.analysis.quality import with_quality

    quiet, busy, old = Cell("mlp"), Cell("gpt"), Cell("resnet")
    steps = np.random.default_rng(0).lognormal(-4, 0.01, 20)
    records = [
        with_quality(make_result(quiet, steps)),
        with_quality(replace(make_result(busy, steps), runtime={"interference": 0.48})),
        make_result(old, steps),  # written before verdicts: shown as "-", never as ok
    ]
    text = _render(records)
    assert "quality" in text.splitlines()[1]

    def cells(key: str) -> list[str]:  # cell, status, quality
        (row,) = _rows(text, key + " ")
        return [c.strip() for c in row.split("│")][1:4]

    assert cells(quiet.key) == [quiet.key, "ok", "ok"]
    assert cells(busy.key) == [busy.key, "ok", "interfered"]
    assert cells(old.key) == [old.key, "ok", "-"]
    assert f"{busy.key}: other processes used 48% of the window's core time (> 10% bound)" in text
    assert f"{quiet.key}:" not in text
    # At 120 columns every key is still there in full (folded, never cut) and the verdict is not split.
    narrow = Console(width=120, record=True)
    narrow.print(results_table(records))
    lines = narrow.export_text().splitlines()
    assert all(len(line.rstrip()) <= 120 for line in lines)
    first_column = "".join(line.split("│")[1].strip() for line in lines if line.startswith("│"))
    assert all(c.key in first_column for c in (quiet, busy, old))
    assert any("│ interfered │" in line for line in lines)
