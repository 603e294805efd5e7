"""The decisions behind ``hpubench bisect`` (``hpubench.analysis.bisect``): which cells are followed, how a
candidate is placed from the gate's verdicts on synthetic runs, and the binary search with skips."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gatedata import ar1_steps, make_result

from hpubench.analysis import bisect as b
from hpubench.analysis.gate.decide import gate
from hpubench.analysis.gate.rules import GateSettings
from hpubench.plan.cell import Cell
from hpubench.store.record import CellResult

CELL = Cell("mlp")
OTHER = Cell("gpt")
SETTINGS = GateSettings(missing="ignore")


def runs(seed: int, mean: float, n: int = 3, cell: Cell = CELL) -> list[CellResult]:
    rng = np.random.default_rng(seed)
    return [
        make_result(cell, ar1_steps(rng, mean=mean * rng.uniform(0.99, 1.01)), repeat=i) for i in range(n)
    ]


def failed(cell: Cell = CELL) -> list[CellResult]:
    return [CellResult(cell, "failed", reason="RuntimeError: boom")]


# ---- which cells bisect follows --------------------------------------------------------------------------


def test_a_regressed_cell_is_followed_with_its_ratio_and_an_unchanged_one_is_dropped() -> None:
    good = runs(1, 0.010) + runs(2, 0.010, cell=OTHER)
    bad = runs(3, 0.013) + runs(4, 0.010, cell=OTHER)
    c = b.confirm(gate(good, bad, SETTINGS), repeat=3)
    assert c.problem is None
    assert [f.key for f in c.followed] == [CELL.match_key]
    (f,) = c.followed
    assert f.kind == b.KIND_THROUGHPUT
    assert f.bad_ratio == pytest.approx(1 / 1.3, rel=0.03)
    assert f.midpoint == pytest.approx(math.sqrt(f.bad_ratio))


def test_a_cell_that_fails_only_at_bad_is_followed_as_a_failure() -> None:
    c = b.confirm(gate(runs(1, 0.010), failed(), SETTINGS), repeat=3)
    assert [(f.key, f.kind) for f in c.followed] == [(CELL.match_key, b.KIND_FAILURE)]


def test_no_regression_is_a_problem_and_not_a_lack_of_evidence() -> None:
    c = b.confirm(gate(runs(1, 0.010), runs(2, 0.010), SETTINGS), repeat=3)
    assert not c.followed and not c.insufficient
    assert c.problem.startswith("no regression between GOOD and BAD")


def test_one_run_a_side_is_insufficient_evidence_and_asks_for_more_repeats() -> None:
    c = b.confirm(gate(runs(1, 0.010, n=1), runs(2, 0.013, n=1), SETTINGS), repeat=3)
    assert c.insufficient and "--repeat 6" in c.problem


# ---- placing a candidate ---------------------------------------------------------------------------------


def followed() -> tuple[b.Followed, ...]:
    return b.confirm(gate(runs(1, 0.010), runs(2, 0.020), SETTINGS), repeat=3).followed


@pytest.mark.parametrize(
    ("mean", "call"),
    [(0.010, b.GOOD), (0.0102, b.GOOD), (0.020, b.BAD), (0.0195, b.BAD)],
)
def test_a_candidate_is_placed_on_the_side_it_resembles(mean: float, call: str) -> None:
    got, evidence = b.judge(gate(runs(5, 0.010), runs(6, mean), SETTINGS), followed())
    assert got == call, evidence
    assert evidence[0].interval[0] <= evidence[0].ratio <= evidence[0].interval[1]


def test_a_candidate_at_the_midpoint_is_undecided() -> None:
    mid = 0.010 * math.sqrt(2)
    got, evidence = b.judge(gate(runs(5, 0.010), runs(6, mid), SETTINGS), followed())
    assert got == b.UNDECIDED and "midpoint" in evidence[0].why


def test_a_followed_failure_is_bad_where_it_fails_and_good_where_it_runs() -> None:
    f = b.confirm(gate(runs(1, 0.010), failed(), SETTINGS), repeat=3).followed
    assert b.judge(gate(runs(2, 0.010), failed(), SETTINGS), f)[0] == b.BAD
    assert b.judge(gate(runs(2, 0.010), runs(3, 0.010), SETTINGS), f)[0] == b.GOOD


def test_any_bad_cell_makes_the_candidate_bad() -> None:
    good = runs(1, 0.010) + runs(2, 0.010, cell=OTHER)
    f = b.confirm(gate(good, runs(3, 0.020) + runs(4, 0.020, cell=OTHER), SETTINGS), repeat=3).followed
    cand = runs(5, 0.010) + runs(6, 0.020, cell=OTHER)
    call, evidence = b.judge(gate(good, cand, SETTINGS), f)
    assert call == b.BAD and sorted(e.call for e in evidence) == [b.BAD, b.GOOD]


# ---- the search ------------------------------------------------------------------------------------------


def bisect_with(n: int, oracle) -> tuple[b.Search, list[int]]:
    calls = {n - 1: b.BAD}
    order = []
    s = b.Search(n, calls)
    while (i := s.next()) is not None:
        order.append(i)
        calls[i] = oracle(i)
        s = b.Search(n, calls)
    return s, order


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8, 13])
def test_the_search_finds_every_first_bad_commit_in_log2_tests(n: int) -> None:
    for first in range(n):
        s, order = bisect_with(n, lambda i, first=first: b.BAD if i >= first else b.GOOD)
        assert s.first_bad == first
        assert len(order) <= math.ceil(math.log2(n)) if n > 1 else not order
        assert len(set(order)) == len(order)


def test_a_skipped_candidate_is_stepped_around() -> None:
    s, order = bisect_with(6, lambda i: b.SKIPPED if i == 2 else b.BAD if i >= 4 else b.GOOD)
    assert s.first_bad == 4 and order[0] == 2


def test_a_skipped_candidate_just_before_the_first_bad_leaves_both_open() -> None:
    s, _ = bisect_with(5, lambda i: b.SKIPPED if i == 2 else b.BAD if i >= 3 else b.GOOD)
    assert s.first_bad is None and s.skipped_range == (2, 3)


def test_only_skipped_candidates_between_gives_the_range() -> None:
    s, _ = bisect_with(5, lambda i: b.SKIPPED if i in (1, 2) else b.BAD if i >= 2 else b.GOOD)
    assert s.first_bad is None and s.skipped_range == (1, 3)


def test_an_undecided_candidate_stops_the_search_without_a_guess() -> None:
    s, order = bisect_with(5, lambda i: b.UNDECIDED if i == 2 else b.BAD if i >= 3 else b.GOOD)
    assert order[-1] == 2 and s.undecided == 2 and s.first_bad is None and s.next() is None


def test_steps_left_counts_halvings() -> None:
    assert b.Search(8, {7: b.BAD}).steps_left() == 3
    assert b.Search(2, {1: b.BAD}).steps_left() == 1
    assert b.Search(1, {0: b.BAD}).steps_left() == 0
