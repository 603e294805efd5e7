"""Results at 80 columns (issue 15): every line fits, rows stay distinguishable, figures keep 3 digits."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from gatedata import make_result
from rich.console import Console

from hpubench.analysis.quality import with_quality
from hpubench.plan.cell import Cell
from hpubench.present.narrowtable import WIDE_MIN_COLUMNS, compact_rows, results_view
from hpubench.store.record import CellResult


def _render(results: list[CellResult], width: int, wide: bool = False) -> str:
    console = Console(width=width, record=True)
    console.print(*results_view(results, "run", width, wide), sep="\n")
    return console.export_text()


def _matrix() -> list[CellResult]:
    rng = np.random.default_rng(1)
    cells = [Cell("mlp"), Cell("gpt"), Cell("mlp", precision="bf16-mixed"), Cell("gpt", size="standard")]
    out = [with_quality(make_result(c, rng.lognormal(-7, 0.01, 50))) for c in cells[:3]]
    out.append(make_result(cells[3], np.full(20, 10.1)))  # 0.0099 samples/step-second: .1f printed 0.0
    out.append(CellResult(Cell("resnet"), "failed", reason="RuntimeError: boom"))
    return out


def test_fits_80_columns_with_distinct_rows() -> None:
    text = _render(_matrix(), 80)
    assert max(len(line) for line in text.splitlines()) <= 80
    common, rows, _ = compact_rows(_matrix())
    labels = [r.cell for r in rows]
    assert len(set(labels)) == len(labels) == 5  # every row tells itself apart
    assert "gpt/standard/32-true" in labels and "mlp/tiny/bf16-mixed" in labels
    assert f"every cell: {common}" in text.replace("\n", " ") and common.startswith("*/*/cpu/1x1/*/")


def test_figures_have_three_significant_digits_and_units() -> None:
    _, rows, _ = compact_rows(_matrix())
    slow = next(r for r in rows if r.cell == "gpt/standard/32-true")
    assert slow["samples_per_s"] == "6.34" and slow["step_time_p50_s"] == "10.1 s"  # 64 samples / 10.1 s
    fast = next(r for r in rows if r.cell == "mlp/tiny/32-true")
    assert fast["samples_per_s"].endswith("k") and fast["step_time_p50_s"].endswith("µs")
    assert fast["samples_per_s_spread"].startswith("±")


def test_failed_cell_shows_its_status_and_reason_under_the_table() -> None:
    text = _render(_matrix(), 80)
    _, rows, _ = compact_rows(_matrix())
    (row,) = [r for r in rows if r.cell.startswith("resnet")]
    assert (row["verdict"], row["samples_per_s"]) == ("failed", "-")
    assert "resnet/tiny/32-true: failed: RuntimeError: boom" in text


def test_repeats_show_the_median_run_and_the_range() -> None:
    cell = Cell("mlp")
    runs = [make_result(cell, np.full(20, t), repeat=i) for i, t in enumerate((0.010, 0.020, 0.016))]
    _, (row,), _ = compact_rows(runs)
    # 6400 and 3200 around the median 4000
    assert row["samples_per_s"] == "4000" and row["samples_per_s_spread"] == "±60%"


def test_wide_or_a_wide_console_gets_the_full_table() -> None:
    records = _matrix()
    assert "bootstrap" in _render(records, 80, wide=True)  # the full table's caption
    assert "bootstrap" in _render(records, WIDE_MIN_COLUMNS)
    assert "bootstrap" not in _render(records, WIDE_MIN_COLUMNS - 1)


def test_a_lone_status_is_not_called_ok() -> None:
    bad = replace(make_result(Cell("mlp"), np.full(20, 0.01)), status="failed", reason="x")
    _, (row,), _ = compact_rows([bad])
    assert row["verdict"] == "failed"


def test_most_figures_unstable_point_at_the_host_in_both_tables() -> None:
    rng = np.random.default_rng(2)
    drifting = np.concatenate(
        [rng.lognormal(-7, 0.01, 25), rng.lognormal(-7.2, 0.01, 25)]
    )  # halves 18% apart
    steady = rng.lognormal(-7, 0.01, 50)
    cells = [Cell("mlp"), Cell("gpt"), Cell("mlp", precision="bf16-mixed")]
    two = [with_quality(make_result(c, t)) for c, t in zip(cells, [drifting, drifting, steady], strict=True)]
    assert [r.quality for r in two] == ["unstable", "unstable", "ok"]
    for width in (80, WIDE_MIN_COLUMNS):  # the compact table and the full one
        text = " ".join(_render(two, width).split())
        assert text.count("2 of 3 figures are unstable") == 1, text
        assert "hpubench doctor (its 'host speed' line)" in text
    one = two[:1] + [with_quality(make_result(c, steady)) for c in cells[1:]]
    assert "figures are unstable" not in " ".join(_render(one, WIDE_MIN_COLUMNS).split())
