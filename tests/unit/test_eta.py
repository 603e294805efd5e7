"""Progress inside a cell and time left: the arithmetic and the wording the live display uses."""

from __future__ import annotations

import pytest

from hpubench.present.liveview import describe, format_duration
from hpubench.run.eta import (
    SCALE_BOUNDS,
    RunEstimate,
    StepProgress,
    Throttle,
    run_left_s,
    step_progress,
)
from hpubench.run.stepfeed import FeedHeader, FeedState

HEADER = FeedHeader(
    steps=100, warmup_steps=3, samples_per_step=10, tokens_per_step=None, flops_per_step=None, world_size=1
)


def test_measured_progress_counts_steps_rates_the_recent_ones_and_projects_the_rest() -> None:
    slow, fast = (0.5,) * 10, (0.1,) * 20
    p = step_progress(FeedState(HEADER, (1.0,), slow + fast), elapsed_s=12.0, recent=20)
    assert (p.phase, p.done, p.planned) == ("measured", 30, 100)
    assert p.samples_per_s == pytest.approx(10 / 0.1)  # the last 20 steps: current, not overall
    mean = (5.0 + 2.0) / 30
    assert p.cell_left_s == pytest.approx(70 * mean)
    assert p.elapsed_s == 12.0


def test_warm_up_and_start_have_no_rate_and_no_time_left() -> None:
    w = step_progress(FeedState(HEADER, (2.0,)), elapsed_s=3.0)
    assert (w.phase, w.done, w.planned, w.samples_per_s, w.cell_left_s) == ("warmup", 1, 3, None, None)
    s = step_progress(FeedState(), elapsed_s=0.5)
    assert (s.phase, s.done, s.cell_left_s) == ("starting", 0, None)


def test_adaptive_steps_have_no_planned_count_and_show_the_loops_own_detail() -> None:
    header = FeedHeader(None, 1, 10, None, None, 1)
    p = step_progress(FeedState(header, (1.0,), (0.1,) * 5, detail="half-width 3.1% (target 2%)"), 2.0)
    assert p.planned is None and p.cell_left_s is None
    assert describe(p).startswith("half-width 3.1% (target 2%), 100 samples/s")


def test_run_time_left_is_cells_left_times_the_mean_cell_plus_the_current_cells_rest() -> None:
    assert run_left_s(3, [10.0, 20.0], cell_elapsed_s=4.0, cell_left_s=6.0) == pytest.approx(6 + 3 * 15)
    # the current cell's step rate unknown yet: the mean stands in for its total
    assert run_left_s(2, [10.0], cell_elapsed_s=4.0) == pytest.approx(6 + 2 * 10)
    assert run_left_s(2, [10.0], cell_elapsed_s=40.0) == pytest.approx(0 + 2 * 10)
    # nothing finished yet: the current cell's projection is the mean
    assert run_left_s(2, [], cell_elapsed_s=4.0, cell_left_s=6.0) == pytest.approx(6 + 2 * 10)
    assert run_left_s(2, []) is None and run_left_s(0, [5.0]) == 0.0
    with pytest.raises(ValueError):
        run_left_s(-1, [])


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.4, "0 s"), (59.4, "59 s"), (200, "3 min 20 s"), (725, "12 min"), (7500, "2 h 05 min")],
)
def test_durations_read_as_people_say_them(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


def test_the_line_names_step_rate_and_both_times_left_and_says_the_run_figure_is_an_estimate() -> None:
    p = StepProgress("measured", 12, 40, 812.4, 3.2, 5.0)
    assert describe(p, 250.0) == "step 12/40, 812 samples/s, cell ~3 s left, run ~4 min 10 s left (estimate)"
    assert describe(StepProgress("warmup", 1, 3, None, None, 2.0)) == "warm-up step 1/3"
    assert describe(StepProgress("starting", 0, None, None, None, 2.0)) == "setting up (2 s)"


def test_the_throttle_lets_one_through_per_interval_and_restarts_with_a_cell() -> None:
    t = Throttle(10.0)
    assert t.ready(0.0)  # never started: at once
    assert [t.ready(x) for x in (1.0, 9.9, 10.0, 15.0, 20.5)] == [False, False, True, False, True]
    t.restart(100.0)
    assert not t.ready(105.0) and t.ready(110.0)
    with pytest.raises(ValueError):
        Throttle(0)


def test_the_run_left_comes_from_the_estimates_of_the_cells_still_to_run_scaled_by_the_finished() -> None:
    # five positions: a 100 s cell, a skip, three 1 s cells
    est = RunEstimate([100.0, None, 1.0, 1.0, 1.0])
    assert est.left_s(1, running=True, cell_elapsed_s=0.0) == pytest.approx(103.0)
    # with the running cell's own projection, that wins over its estimate
    assert est.left_s(1, True, cell_elapsed_s=10.0, cell_left_s=50.0) == pytest.approx(53.0)
    est.finished(1, 200.0)  # ran twice as long as estimated: the rest is scaled by 2
    assert est.scale() == pytest.approx(2.0)
    assert est.left_s(1, running=False) == pytest.approx(6.0)
    assert est.left_s(3, running=True, cell_elapsed_s=0.5) == pytest.approx(1.5 + 4.0)
    assert est.left_s(5, running=False) == 0.0
    est.finished(2, 999.0)  # a position without an estimate does not move the scale
    assert est.scale() == pytest.approx(2.0)


def test_the_scale_is_bounded_like_the_budgets() -> None:
    est = RunEstimate([1.0, 1.0])
    est.finished(1, 1000.0)
    assert est.scale() == SCALE_BOUNDS[1]
    fast = RunEstimate([1.0, 1.0])
    fast.finished(1, 0.0)
    assert fast.scale() == SCALE_BOUNDS[0]


def test_under_a_budget_the_run_left_never_passes_the_budgets_end() -> None:
    est = RunEstimate([100.0, 100.0], deadline=1000.0)
    assert est.left_s(1, running=True, cell_elapsed_s=0.0, now=900.0) == pytest.approx(100.0)  # capped
    assert est.left_s(1, running=True, cell_elapsed_s=0.0, now=500.0) == pytest.approx(200.0)  # estimate
    assert est.left_s(2, running=False, now=1200.0) == 0.0
    assert RunEstimate([100.0]).left_s(1, running=True, now=1e9) == pytest.approx(100.0)  # no deadline


@pytest.mark.parametrize(("rate", "shown"), [(0.0987, "0.0987"), (81234.0, "81.2k"), (812.4, "812")])
def test_the_live_rate_keeps_three_significant_digits_so_a_slow_cell_never_reads_zero(
    rate: float, shown: str
) -> None:
    # gpt standard on 2 CPU ranks ran at 0.1 samples/s and the live line said "0 samples/s"
    p = StepProgress("measured", 1, 2, rate, None, 10.0)
    assert describe(p) == f"step 1/2, {shown} samples/s"
