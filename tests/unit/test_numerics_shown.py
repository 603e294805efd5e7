"""The numerics verdict where a user reads a figure (issue 33, items 1 and 2): beside quality in the
terminal tables, the exports and the report; a regression of it fails the gate on its own; and no page or
comparison names a configuration best whose numerics are not ok. Synthetic records only."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from gatedata import make_result, make_side
from reportdata import fake_result, write_run
from rich.console import Console

from hpubench.analysis.compare import compare
from hpubench.analysis.gate.decide import gate
from hpubench.analysis.gate.outcomes import NUMERICS_REGRESSION
from hpubench.analysis.numerics import DIVERGED, DRIFT, OK, UNCHECKED
from hpubench.analysis.prices import Tables
from hpubench.analysis.ranking import NOT_COMPARABLE, ONLY, WINNER, Contender, rank
from hpubench.analysis.runspread import run_to_run_figures
from hpubench.plan.cell import Cell
from hpubench.present.export import results_frame
from hpubench.present.gate_report import junit_xml, markdown, terminal_table
from hpubench.present.narrowcompare import compact_compare_table
from hpubench.present.narrowtable import compact_results_table
from hpubench.present.tables import results_table
from hpubench.store import baselines
from hpubench.store.readback import load_results
from hpubench.store.record import CellResult
from reports.celltable import cell_table
from reports.frames import cell_frame, headlines
from reports.sources import load_result_sets

CELLS = [Cell("mlp"), Cell("gpt")]
WHY = "step 3: loss 4.1 vs reference 2.3, relative deviation 0.78 > tolerance 0.05"


def _text(renderables: list) -> str:
    console = Console(width=400, record=True, file=io.StringIO())
    console.print(*renderables, sep="\n")
    return console.export_text()


def _judged(
    records: list[CellResult], verdict: str | None, reasons: tuple[str, ...] = ()
) -> list[CellResult]:
    return [replace(r, numerics=verdict, numerics_reasons=reasons) for r in records]


# ---- gate --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("now", [DRIFT, DIVERGED])
@pytest.mark.parametrize("repeats", [1, 3])
def test_numerics_that_regress_fail_the_gate_even_at_equal_throughput(now: str, repeats: int) -> None:
    side = make_side(np.random.default_rng(3), CELLS, repeats=repeats)
    base = _judged(side, OK)
    cur = _judged(side, OK)
    cur[0] = replace(cur[0], numerics=now, numerics_reasons=(WHY,))  # same step times: throughput unchanged
    result = gate(base, cur)
    assert not result.passed and result.exit_code == 1
    v = next(v for v in result.cells if v.key == CELLS[0].match_key)
    assert v.outcome == NUMERICS_REGRESSION and v.fails
    assert v.reason.startswith(f"numerics ok -> {now}: {WHY}")
    assert "throughput" in v.reason  # what throughput decided is still said, separately
    assert (v.baseline_numerics, v.current_numerics) == (OK, now)
    other = next(v for v in result.cells if v.key == CELLS[1].match_key)
    assert not other.fails and other.current_numerics == OK
    assert f"1 {NUMERICS_REGRESSION}" in result.summary()


@pytest.mark.parametrize("before", [None, UNCHECKED])
def test_a_baseline_without_numerics_or_unchecked_is_not_a_regression(before: str | None) -> None:
    side = make_side(np.random.default_rng(4), CELLS, repeats=3)
    result = gate(_judged(side, before), _judged(side, DRIFT, (WHY,)))
    assert result.passed and all(v.outcome != NUMERICS_REGRESSION for v in result.cells)
    (note,) = [n for n in result.notes if n.startswith("numerics not compared")]
    assert "never a failure" in note and "(drift)" in note
    assert ("re-save the baseline" in note) == (before is None)


def test_unchecked_now_is_not_a_regression_and_is_noted() -> None:
    side = make_side(np.random.default_rng(5), CELLS, repeats=3)
    result = gate(_judged(side, OK), _judged(side, UNCHECKED, ("several ranks draw their own batches",)))
    assert result.passed
    assert any("unchecked in current" in n for n in result.notes)


def test_a_failed_cell_keeps_its_outcome_and_names_its_numerics() -> None:
    side = _judged(make_side(np.random.default_rng(6), CELLS), OK)
    failed = replace(
        side[0], status="failed", reason="loss is nan", numerics=DIVERGED, numerics_reasons=("nan",)
    )
    v = gate(side, [failed, side[1]]).cells[0]
    assert v.outcome == "failed" and v.fails and v.reason.endswith("numerics ok -> diverged: nan")


def test_gate_outputs_show_each_sides_numerics_and_the_named_reason() -> None:
    side = make_side(np.random.default_rng(8), CELLS, repeats=3)
    cur = _judged(side, OK)
    cur[0] = replace(cur[0], numerics=DRIFT, numerics_reasons=(WHY,))
    result = gate(_judged(side, OK), cur)
    md = markdown(result)
    assert "numerics base/cur" in md and "| ok/drift |" in md and "**numerics regression**" in md
    assert "numerics ok -&gt; drift" in md or "numerics ok -> drift" in md
    table = _text([terminal_table(result)])
    assert "numerics base/cur" in table and "ok/drift" in table and "numerics regression" in table
    suite = ET.fromstring(junit_xml(result))
    (failure,) = suite.iter("failure")
    assert (
        failure.get("type") == NUMERICS_REGRESSION and "numerics: baseline ok, current drift" in failure.text
    )


def test_a_saved_baseline_keeps_numerics(tmp_path: Path) -> None:
    run = write_run(
        tmp_path / "run", [fake_result("mlp", "cpu", "cpu0", numerics=DRIFT, numerics_reasons=(WHY,))]
    )
    saved = baselines.save(run, "main", tmp_path / "baselines", spreads_of=run_to_run_figures)
    (back,) = load_results([str(saved)])
    assert (back.numerics, back.numerics_reasons) == (DRIFT, (WHY,))


# ---- ranking, the report's headline and compare ------------------------------------------------------------


def test_rank_passes_over_a_faster_configuration_whose_numerics_drift() -> None:
    fp8 = Contender(200, 198, 202, OK, 3, numerics=DRIFT, name="fp8")
    bf16 = Contender(150, 149, 151, OK, 3, numerics=OK, name="bf16")
    fp32 = Contender(100, 99, 101, OK, 3, numerics=OK, name="fp32")
    r = rank([fp32, fp8, bf16])
    assert (r.best, r.runner_up, r.passed_over) == (2, 0, (1,))
    assert r.decision.outcome == WINNER
    assert r.decision.text.startswith("fastest with ok numerics; fp8 is faster but its numerics are drift")
    alone = rank([fp8, bf16])
    assert alone.best == 1 and alone.decision.outcome == ONLY and not alone.decision.names_winner
    assert "the only configuration with ok numerics" in alone.decision.text
    cheap = rank([fp8, bf16], higher_is_better=False, words=("cheapest", "cheaper"))
    assert cheap.best == 1 and cheap.passed_over == ()  # fp8 is dearer here: nothing passed over


def test_rank_names_nothing_best_where_no_numerics_are_ok() -> None:
    unknown = [Contender(200, 199, 201, OK, 3), Contender(100, 99, 101, OK, 3)]  # recorded before numerics
    r = rank(unknown)
    assert r.best == 0 and r.decision.outcome == NOT_COMPARABLE and "not recorded" in r.decision.text
    only = rank([Contender(100, 99, 101, OK, 3, numerics=UNCHECKED)])
    assert only.decision.outcome == ONLY and only.decision.text.endswith("numerics: unchecked")


def test_the_report_headline_skips_a_drift_configuration(tmp_path: Path) -> None:
    records = [
        fake_result(
            "mlp", "cpu", "cpu0", precision="bf16-true", step_s=0.05, numerics=DRIFT, numerics_reasons=(WHY,)
        ),
        fake_result("mlp", "cpu", "cpu0", precision="bf16-mixed", step_s=0.08, seed=1),
        fake_result("mlp", "cpu", "cpu0", precision="32-true", step_s=0.2, seed=2),
    ]
    df = cell_frame(load_result_sets([str(write_run(tmp_path / "run", records))]), Tables())
    (h,) = headlines(df)
    assert h.fastest["precision"] == "bf16-mixed" and h.runner_up["precision"] == "32-true"
    assert [r["precision"] for r in h.passed_over] == ["bf16-true"]
    assert "fastest with ok numerics" in h.speed.text and "bf16-true" in h.speed.text
    assert "its numerics are drift" in h.speed.text


def test_compare_never_calls_a_drift_side_faster() -> None:
    base = [fake_result("mlp", "hpu", "GAUDI", step_s=0.10, seed=1)]
    fast = [fake_result("mlp", "hpu", "GAUDI2", step_s=0.05, seed=2, numerics=DRIFT, numerics_reasons=(WHY,))]
    (x,) = compare(base, fast, Tables()).cells
    assert x.verdict == "not a win: candidate numerics drift"
    assert (x.base.numerics, x.candidate.numerics) == (OK, DRIFT)
    (y,) = compare(fast, base, Tables()).cells  # the drift side is the base now, and still the faster
    assert y.verdict == "not a win: base numerics drift"
    ok = [fake_result("mlp", "hpu", "GAUDI2", step_s=0.05, seed=2)]
    assert compare(base, ok, Tables()).cells[0].verdict.startswith("faster")
    worst = compare(base, [*fast, replace(ok[0], repeat=1, numerics=DIVERGED)], Tables())
    assert worst.cells[0].candidate.numerics == DIVERGED  # each side's worst over its repetitions
    assert len(worst.numerics_not_ok) == 1
    narrow = _text(compact_compare_table(compare(base, fast, Tables())))
    assert "numerics not ok" in narrow and "base ok, candidate drift" in narrow
    assert "ok on both sides of every cell" in _text(compact_compare_table(compare(base, ok, Tables())))


# ---- the column: terminal tables, exports, the report's table ----------------------------------------------


def _mixed() -> list[CellResult]:
    return [
        replace(make_result(Cell("mlp"), np.full(20, 0.01)), numerics=DRIFT, numerics_reasons=(WHY,)),
        replace(make_result(Cell("gpt"), np.full(20, 0.05)), numerics=OK),
        make_result(Cell("resnet"), np.full(20, 0.02), numerics=None),  # recorded before numerics
    ]


def test_the_column_shows_in_both_terminal_tables_and_a_missing_verdict_is_a_dash() -> None:
    records = _mixed()
    wide = _text([results_table(records)])
    assert "numerics" in wide.splitlines()[1]
    line = {r.cell.workload: next(x for x in wide.splitlines() if r.key in x) for r in records}
    assert "drift" in line["mlp"] and " ok " in line["gpt"]
    assert " - " in line["resnet"] and line["resnet"].count(" ok ") == 1  # quality ok; numerics "-", not ok
    assert f"{records[0].key}: numerics drift: {WHY}" in wide  # the reason under the table
    narrow = _text(compact_results_table(records))  # no room for the column: a line under the table
    assert f"numerics drift: {WHY}" in narrow
    assert "reference): drift: mlp; ok 1; not recorded: resnet" in narrow
    assert "ok in every measured cell" in _text(compact_results_table(records[1:2]))


def test_the_column_is_in_the_exports_and_the_report(tmp_path: Path) -> None:
    records = _mixed()
    df = results_frame(records)
    assert list(df["numerics"][:2]) == [DRIFT, OK] and df["numerics"].isna().iloc[2]
    assert df["numerics_reasons"].iloc[0] == WHY
    header = df.to_csv(index=False).splitlines()[0].split(",")
    assert header.index("numerics") == header.index("quality_reasons") + 1
    frame = cell_frame(load_result_sets([str(write_run(tmp_path / "run", records))]), Tables())
    table = cell_table(frame, None)
    at = [c.id for c in table.columns].index("numerics")
    assert [row.cells[at].text for row in table.rows] == [DRIFT, OK, "–"]  # "–": recorded before, not ok
    drift = table.rows[0].cells[at]
    assert drift.title == WHY and drift.badge_cls == "n-drift"
