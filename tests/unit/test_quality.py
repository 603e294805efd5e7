"""The quality verdict (hpubench.analysis.quality), the halves test behind "unstable"
(hpubench.analysis.trend) and the rule that decides when a page may name a winner
(hpubench.analysis.ranking)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpubench.analysis import quality, trend
from hpubench.analysis.metrics import build_metrics
from hpubench.analysis.quality import (
    INTERFERED,
    NOISY,
    OK,
    PARTIAL,
    PRECEDENCE,
    RECOMPILED,
    UNMEASURED,
    UNSTABLE,
    Quality,
    assess,
    assess_record,
    assess_repeats,
    with_quality,
)
from hpubench.analysis.ranking import NO_DIFFERENCE, NOT_COMPARABLE, ONLY, WINNER, Contender, decide
from hpubench.plan.cell import Cell
from hpubench.store.record import STATUS_FAILED, STATUS_OK, STATUS_SKIPPED, CellResult


def lognormal(n: int, sigma: float, seed: int, median: float = 0.01) -> np.ndarray:
    return np.random.default_rng(seed).lognormal(math.log(median), sigma, n)


TIGHT = lognormal(40, 0.01, 0)  # ~0.3% interval half-width, no trend: ok on its own


# ---- one verdict each, with its reason text ---------------------------------------------------------------


def test_tight_steady_steps_are_ok():
    assert assess(TIGHT) == Quality(OK, ())


def test_noisy_names_the_half_width_and_the_bound():
    q = assess(TIGHT, rel_halfwidth=0.073)
    assert q == Quality(NOISY, ("interval half-width 7.3% > 5% bound (40 steps)",))
    assert assess(TIGHT, rel_halfwidth=0.05).verdict == OK  # at the bound: ok


def test_noisy_from_the_bootstrap_over_the_steps():
    # One 17 ms stall among 20 steps of ~1 ms: the example, which moves the figure by ~40%.
    steps = [0.001] * 19 + [0.017]
    q = assess(steps)
    assert q.verdict == NOISY
    hw = quality.stats.throughput(steps, 1.0).rel_halfwidth
    assert q.reasons == (f"interval half-width {hw:.1%} > 5% bound (20 steps)",)


def test_noisy_says_why_measurement_stopped():
    q = assess(TIGHT, {"steps_stop": "max-time: 30 s reached, half-width 7.3%"}, rel_halfwidth=0.073)
    assert q.reasons == (
        "interval half-width 7.3% > 5% bound (40 steps, max-time: 30 s reached, half-width 7.3%)",
    )


def test_one_step_has_no_interval():
    assert assess([0.01]) == Quality(NOISY, ("only 1 measured step: no interval",))


def test_a_handful_of_steps_is_noisy_however_close_they_are():
    # 2 steps 1% apart: the bootstrap "interval" is ±0.5%, a restatement of the two values
    few = [0.010, 0.0101]
    assert assess(few) == Quality(NOISY, ("only 2 measured steps: too few for an interval (at least 5)",))
    assert assess([0.01] * (quality.MIN_INTERVAL_STEPS - 1)).verdict == NOISY
    assert assess([0.01] * quality.MIN_INTERVAL_STEPS).verdict == OK


def test_planted_step_change_is_unstable_with_direction_and_p_value():
    steps = lognormal(40, 0.02, 1)
    steps[20:] *= 1.12
    q = assess(steps)
    assert q.verdict == UNSTABLE
    assert q.reasons[0].startswith("second half 1")  # 10-14%: 12% planted, medians of noisy halves
    assert "slower than first (Mann-Whitney p=" in q.reasons[0]
    assert "20 vs 20 steps, bound 3% at p < 0.01" in q.reasons[0]
    faster = lognormal(40, 0.02, 1)
    faster[:20] *= 1.12  # still warming up in the first half
    assert "faster than first" in assess(faster).reasons[0]


def test_a_drift_in_a_cell_crowded_by_its_own_threads_names_that_cause():
    steps = lognormal(40, 0.02, 1)
    steps[20:] *= 1.12
    own = {"busy_threads": 8, "on_cpu_s": 4.2, "wait_s": 1.8, "available": False}
    rt = {"run_queue_detail": own, "interference_detail": {"cpus": [0, 1], "window_s": 2.9}}
    reason = assess(steps, rt).reasons[0]
    assert reason.startswith("second half 1")
    assert "likely cause: the cell's own 8 busy threads outnumber its 2 CPUs" in reason
    assert "waited for each other 30% of their runnable time" in reason
    assert "outnumber" not in assess(steps, {**rt, "run_queue_detail": {**own, "busy_threads": 2}}).reasons[0]
    assert "outnumber" not in assess(steps, {"run_queue_detail": own}).reasons[0]  # CPUs unknown: no claim
    no_cpus = {**rt, "interference_detail": {"cpus": []}}
    assert "outnumber" not in assess(steps, no_cpus).reasons[0]
    steady = lognormal(40, 0.02, 1)
    assert assess(steady, rt).verdict != UNSTABLE  # the cause alone is no verdict


def test_a_significant_but_small_drift_is_not_unstable():
    steps = lognormal(2000, 0.02, 2)
    steps[1000:] *= 1.01
    t = trend.halves_test(steps)
    assert t.p_value < quality.UNSTABLE_ALPHA  # the rank test alone would flag it...
    assert assess(steps).verdict == OK  # ...but 1% is under the effect-size bound


def test_one_stall_in_the_second_half_is_not_a_trend():
    steps = lognormal(40, 0.02, 3)
    steps[30] = 1.0  # a 100x stall: one rank, not a shift of the half
    assert UNSTABLE not in {f.verdict for f in quality.findings(steps, rel_halfwidth=0.0)}


def test_too_few_steps_are_not_tested_for_a_trend():
    steps = [0.01] * 4 + [0.02] * 5  # a doubling, but 9 steps: no split can reach p < 0.01
    assert len(steps) < quality.MIN_TREND_STEPS
    assert assess(steps, rel_halfwidth=0.0).verdict == OK


def test_interfered_catches_a_uniformly_collapsed_cell():
    # Every step equally slow: a tight interval, no trend. Only the interference share gives it away.
    collapsed = TIGHT * 80
    assert assess(collapsed).verdict == OK
    q = assess(collapsed, {"interference": 0.5})
    assert q == Quality(INTERFERED, ("other processes used 50% of the window's core time (> 10% bound)",))
    assert assess(collapsed, {"interference": 0.10}).verdict == OK  # at the bound: ok


def test_recompiled_counts_compilations_and_says_what_was_counted():
    q = assess(TIGHT, {"compiles_measured": 3})
    assert q == Quality(RECOMPILED, ("3 graph compilations during the measured steps",))
    q = assess(TIGHT, {"compiles_measured": 1, "compile_counter": "torch._dynamo frames compiled"})
    assert q.reasons == (
        "1 graph compilation during the measured steps (counted: torch._dynamo frames compiled)",
    )
    assert assess(TIGHT, {"compiles_measured": 0}).verdict == OK


def test_partial_says_how_far_it_got_and_why():
    q = assess(TIGHT[:12], {"partial": {"steps_done": 12, "reason": "timed out"}}, planned_steps=20)
    assert q == Quality(PARTIAL, ("stopped after 12 of 20 steps: timed out",))
    q = assess(TIGHT[:12], {"partial": {"reason": "killed by signal 9"}})
    assert q.reasons == ("stopped after 12 steps: killed by signal 9",)


@pytest.mark.parametrize(
    "runtime",
    [
        {},
        {"interference": None, "compiles_measured": None, "partial": None, "steps_stop": None},
        {"interference": "high", "compiles_measured": "3", "partial": "yes"},
        {"interference": float("nan"), "compiles_measured": True},
    ],
)
def test_absent_or_unreadable_facts_are_ignored(runtime):
    assert assess(TIGHT, runtime).verdict == OK


# ---- several problems: every reason, the verdict by precedence ------------------------------------------

FACTS = {
    PARTIAL: {"partial": {"steps_done": 40, "reason": "timed out"}},
    RECOMPILED: {"compiles_measured": 2},
    INTERFERED: {"interference": 0.4},
    UNMEASURED: {"interference_error": "FileNotFoundError: /proc/stat"},
}


def _problem(verdict: str) -> tuple[np.ndarray, dict, float]:
    """Steps, runtime facts and half-width giving exactly one problem of this verdict."""
    steps = TIGHT.copy()
    if verdict == UNSTABLE:
        steps[20:] *= 1.2
    return steps, FACTS.get(verdict, {}), 0.09 if verdict == NOISY else 0.0


def test_precedence_is_cause_before_symptom():
    assert PRECEDENCE == (PARTIAL, RECOMPILED, INTERFERED, UNSTABLE, NOISY, UNMEASURED, OK)


# Interfered and unmeasured never come together: a window in which interference was seen was measured.
PAIRS = [p for p in itertools.combinations(PRECEDENCE[:-1], 2) if p != (INTERFERED, UNMEASURED)]


@pytest.mark.parametrize("a,b", PAIRS)
def test_two_problems_list_both_reasons_and_take_the_more_severe_verdict(a, b):
    steps_a, facts_a, hw_a = _problem(a)
    steps_b, facts_b, hw_b = _problem(b)
    steps = steps_a if a == UNSTABLE else steps_b
    q = assess(steps, {**facts_a, **facts_b}, rel_halfwidth=max(hw_a, hw_b))
    assert q.verdict == a  # combinations() keeps PRECEDENCE order: a is the more severe
    assert len(q.reasons) == 2
    assert q.reasons[0] == assess(*_problem(a)[:2], rel_halfwidth=hw_a).reasons[0]


def test_every_problem_at_once():
    steps = TIGHT.copy()
    steps[20:] *= 1.2
    facts = {k: v for f in FACTS.values() for k, v in f.items()}
    q = assess(steps, facts, rel_halfwidth=0.2)
    assert q.verdict == PARTIAL
    assert [r.split()[0] for r in q.reasons] == ["stopped", "2", "other", "second", "interval"]


def test_unknown_verdict_is_refused():
    with pytest.raises(ValueError, match="verdict must be one of"):
        Quality("great")


# ---- statistical properties of the halves test -----------------------------------------------------------


@settings(derandomize=True, max_examples=25, deadline=None)
@given(n=st.integers(10, 400), sigma=st.floats(0.01, 0.5), seed=st.integers(0, 2**32 - 1))
def test_iid_steps_are_almost_never_unstable(n, sigma, seed):
    rng = np.random.default_rng(seed)
    flagged = sum(
        UNSTABLE in {f.verdict for f in quality.findings(rng.lognormal(-4, sigma, n), rel_halfwidth=0.0)}
        for _ in range(200)
    )
    assert flagged < 10  # under 5% of 200 sequences; the test's own level is 1%


@settings(derandomize=True, max_examples=25, deadline=None)
@given(n=st.integers(40, 400), sigma=st.floats(0.005, 0.03), seed=st.integers(0, 2**32 - 1))
def test_a_planted_ten_percent_step_in_the_middle_is_unstable(n, sigma, seed):
    steps = np.random.default_rng(seed).lognormal(-4, sigma, n)
    steps[n // 2 :] *= 1.10
    assert assess(steps, rel_halfwidth=0.0).verdict == UNSTABLE


def test_exact_mann_whitney_matches_enumeration():
    rng = np.random.default_rng(4)
    for n, m in ((3, 4), (5, 5), (6, 2), (7, 8)):
        a, b = rng.random(n), rng.random(m) + 0.3
        ranks = np.concatenate([a, b]).argsort().argsort() + 1
        w = ranks[n:].sum()
        sums = [sum(c) for c in itertools.combinations(range(1, n + m + 1), m)]
        expected = min(1.0, 2 * min(np.mean([s <= w for s in sums]), np.mean([s >= w for s in sums])))
        p, method = trend.mann_whitney(a, b)
        assert method == "Mann-Whitney, exact"
        assert p == pytest.approx(expected, rel=1e-12)


def test_normal_approximation_is_close_to_exact_where_they_meet(monkeypatch):
    rng = np.random.default_rng(5)
    a, b = rng.random(25), rng.random(25) + 0.25
    exact, _ = trend.mann_whitney(a, b)
    monkeypatch.setattr(trend, "EXACT_MAX_STEPS", 0)
    approx, method = trend.mann_whitney(a, b)
    assert method == "Mann-Whitney, normal approximation"
    assert 0.001 < exact < 0.2
    assert approx == pytest.approx(exact, rel=0.1)


def test_ties_use_the_approximation_and_all_equal_is_p_one():
    assert trend.mann_whitney([1.0] * 6, [1.0] * 6) == (1.0, "Mann-Whitney, normal approximation")
    p, method = trend.mann_whitney([1.0, 1.0, 2.0, 2.0] * 5, [3.0, 3.0, 4.0, 4.0] * 5)
    assert method.endswith("approximation") and p < 1e-6


# ---- records ---------------------------------------------------------------------------------------------


def _record(steps=TIGHT, status=STATUS_OK, runtime=None, repeat=0, reason=None) -> CellResult:
    cell = Cell(workload="mlp", accelerator="cpu", steps=len(TIGHT))
    metrics = None
    if len(steps) >= 2:
        metrics = build_metrics(
            warmup_s=(0.1,),
            measured_s=tuple(steps),
            loss_first=1.0,
            loss_last=0.5,
            samples_per_step=32,
            tokens_per_step=None,
            flops_per_step=None,
            world_size=1,
            peak=None,
        )
    return CellResult(
        cell,
        status,
        reason=reason,
        metrics=metrics,
        runtime=runtime or {},
        step_times_s=tuple(float(t) for t in steps),
        repeat=repeat,
    )


def test_old_records_read_as_unjudged():
    d = _record().to_dict()
    del d["quality"], d["quality_reasons"]
    r = CellResult.from_dict(d)
    assert r.quality is None and r.quality_reasons == ()


def test_the_verdict_survives_a_round_trip():
    r = with_quality(_record(runtime={"interference": 0.3}))
    assert r.quality == INTERFERED and len(r.quality_reasons) == 1
    assert CellResult.from_dict(r.to_dict()) == r


def test_a_record_is_judged_on_its_own_interval():
    r = _record(steps=[0.001] * 19 + [0.017])
    lo, hi = r.metrics.samples_per_s_ci
    hw = (hi - lo) / 2 / r.metrics.samples_per_s
    assert assess_record(r) == Quality(NOISY, (f"interval half-width {hw:.1%} > 5% bound (20 steps)",))


def test_records_without_measured_steps_have_no_verdict():
    assert assess_record(_record(steps=(), status=STATUS_SKIPPED, reason="no device")) is None
    assert assess_record(_record(steps=(), status=STATUS_FAILED, reason="boom")) is None
    assert with_quality(_record(steps=(), status=STATUS_FAILED)).quality is None


def test_a_failed_record_with_steps_is_partial_even_without_the_partial_fact():
    r = with_quality(_record(steps=TIGHT[:12], status=STATUS_FAILED, reason="timed out after 900 s"))
    assert r.quality == PARTIAL
    assert r.quality_reasons[0] == f"stopped after 12 of {len(TIGHT)} steps: timed out after 900 s"


def _judged(**kw) -> CellResult:
    return with_quality(_record(**kw))


def test_repeats_keep_every_runs_problem_and_judge_noise_on_the_combined_interval():
    runs = [_judged(repeat=0), _judged(repeat=1, runtime={"interference": 0.6}), _judged(repeat=2)]
    q = assess_repeats(runs)
    assert q == Quality(
        INTERFERED, ("run 1: other processes used 60% of the window's core time (> 10% bound)",)
    )
    noisy = [_judged(repeat=0), _judged(steps=[0.001] * 19 + [0.017], repeat=1)]
    assert assess_repeats(noisy).verdict == NOISY  # judged per run
    assert assess_repeats(noisy, rel_halfwidth=0.02).verdict == OK  # the row's interval over both runs
    assert assess_repeats(noisy, rel_halfwidth=0.08).reasons == (
        "interval half-width 8.0% > 5% bound (over all runs)",
    )
    assert assess_repeats([_judged(steps=(), status=STATUS_SKIPPED)]) is None
    # Records from before verdicts stay unjudged: no facts to catch a collapse with.
    assert assess_repeats([_record(repeat=0), _record(repeat=1)]) is None
    assert assess_repeats([_record(repeat=0, runtime={"interference": 0.6}), _judged(repeat=1)]).verdict == OK


def test_quality_imports_no_torch():
    import subprocess
    import sys

    code = (
        "import sys, hpubench.analysis.quality, hpubench.analysis.ranking; assert 'torch' not in sys.modules"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


# ---- when a page may name a winner ------------------------------------------------------------------------


def c(value: float, half: float, q: str | None = OK, runs: int = 3) -> Contender:
    return Contender(value, value - half, value + half, q, runs)


def test_a_winner_from_single_runs_says_its_interval_is_within_one_run():
    single = decide(c(110, 2, runs=1), c(100, 2))
    assert single.outcome == WINNER and "within-run only" in single.text and "--repeat 3" in single.text
    assert "within-run" not in decide(c(110, 2), c(100, 2)).text
    assert "within-run" not in decide(c(110, 6, runs=1), c(100, 6, runs=1)).text  # no winner, no caveat


def test_a_winner_needs_intervals_apart_and_both_ok():
    assert decide(c(110, 2), c(100, 2)).outcome == WINNER
    overlapping = decide(c(110, 6), c(100, 6))
    assert (overlapping.outcome, overlapping.text) == (NO_DIFFERENCE, "no significant difference")
    assert not overlapping.names_winner


@pytest.mark.parametrize(
    "best_q,runner_q,text",
    [
        (NOISY, OK, "not comparable: noisy"),
        (OK, INTERFERED, "not comparable: interfered"),
        (NOISY, RECOMPILED, "not comparable: recompiled"),
        (None, OK, "not comparable: no quality verdict"),
    ],
)
def test_no_winner_when_either_is_not_ok(best_q, runner_q, text):
    d = decide(c(200, 1, best_q), c(100, 1, runner_q))  # far apart, yet not comparable
    assert (d.outcome, d.text, d.names_winner) == (NOT_COMPARABLE, text, False)


def test_lower_is_better_for_costs():
    assert decide(c(1.0, 0.1), c(2.0, 0.1), higher_is_better=False).outcome == WINNER
    assert decide(c(1.0, 0.6), c(2.0, 0.6), higher_is_better=False).outcome == NO_DIFFERENCE


def test_a_single_configuration_is_never_called_a_winner():
    assert decide(c(100, 1), None).outcome == ONLY
    assert decide(c(100, 1, NOISY), None).text == "the only configuration measured; quality: noisy"
    assert (
        decide(Contender(100, float("nan"), float("nan"), OK), c(90, 1)).text == "not comparable: no interval"
    )


def test_interference_within_its_tick_resolution_is_not_called_interference():
    # A 30 ms window on 2 CPUs: /proc/stat's 10 ms ticks leave the share known to about +-60%.
    short = {"interference": 0.15, "interference_detail": {"resolution": 0.62}}
    assert assess(TIGHT, {**short, "run_queue_wait": 0.0}).verdict == OK
    # Without the run-queue figure nothing measured that window: never ok.
    assert assess(TIGHT, short).verdict == UNMEASURED
    # The same share measured over a long window (fine resolution) is interference.
    fine = {"interference": 0.15, "interference_detail": {"resolution": 0.01}}
    q = assess(TIGHT, fine)
    assert q == Quality(
        INTERFERED, ("other processes used 15% of the window's core time (> 10% bound, resolution ±1%)",)
    )
    # A collapsed cell (a half-busy machine over a long window) is caught whatever its resolution says,
    # as long as the share is beyond the bound by more than it.
    assert assess(TIGHT * 80, {"interference": 0.5, "interference_detail": {"resolution": 0.05}}).verdict == (
        INTERFERED
    )
