"""The ``--steps auto`` stopping rule, fed synthetic step times (no timing, no torch)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hpubench.measure import stopping
from hpubench.measure.stopping import (
    MAX_AUTO_STEPS,
    Agree,
    AutoStop,
    decide,
    fixed_steps,
    half_width,
    next_check,
)
from hpubench.plan.autosteps import AutoSteps, parse_knob, parse_steps, with_knobs


def _run(times: list[float], rule: AutoSteps, agree: Agree | None = None) -> tuple[int, str]:
    """Feed ``times`` one by one, elapsed = their running sum, as measure_steps would."""
    stop = AutoStop(rule, agree)
    seen: list[float] = []
    elapsed = 0.0
    for t in times:
        seen.append(t)
        elapsed += t
        reason = stop(seen, elapsed)
        if reason is not None:
            return len(seen), reason
    raise AssertionError(f"never stopped within {len(times)} steps")


def _noisy(n: int, mean: float, cv: float, seed: int = 0) -> list[float]:
    rng = np.random.default_rng(seed)
    return list(np.abs(rng.normal(mean, cv * mean, n)) + mean * 1e-3)


def _round_ends(rule: AutoSteps, upto: int) -> set[int]:
    ends, n = set(), 0
    while n < upto:
        n = next_check(n, rule)
        ends.add(n)
    return ends


def test_fixed_steps_stops_exactly_at_n() -> None:
    stop = fixed_steps(5)
    times: list[float] = []
    reasons = []
    for _ in range(5):
        times.append(1.0)
        reasons.append(stop(times, 1e9))
    assert reasons == [None, None, None, None, "fixed: 5 steps"]


def test_stops_at_the_target_on_a_quiet_cell() -> None:
    rule = AutoSteps(target_ci=0.02, min_steps=10, min_time_s=0.0, max_time_s=1e6)
    n, reason = _run(_noisy(5000, 0.01, cv=0.02), rule)
    assert reason.startswith("target: interval half-width ")
    assert f"after {n} steps" in reason
    assert n == rule.min_steps  # 2% step noise: the first round already pins the mean to well under 2%


def test_stops_later_for_noisier_steps_and_the_interval_it_saw_is_within_target() -> None:
    rule = AutoSteps(target_ci=0.02, min_steps=10, min_time_s=0.0, max_time_s=1e6)
    quiet, _ = _run(_noisy(5000, 0.01, cv=0.05), rule)
    times = _noisy(5000, 0.01, cv=0.3)
    noisy, reason = _run(times, rule)
    assert noisy > quiet
    assert reason.startswith("target:")
    assert half_width(times[:noisy]) <= 0.02
    previous = max(e for e in _round_ends(rule, noisy) if e < noisy)
    assert half_width(times[:previous]) > 0.02  # it did not stop at the round before: not there yet


def test_target_is_checked_only_at_round_ends() -> None:
    rule = AutoSteps(target_ci=0.02, min_steps=10, min_time_s=0.0, max_time_s=1e6)
    n, _ = _run(_noisy(5000, 0.01, cv=0.3, seed=3), rule)
    assert n in _round_ends(rule, n)


def test_never_stops_before_min_steps_even_past_max_time() -> None:
    rule = AutoSteps(target_ci=0.5, min_steps=12, min_time_s=0.0, max_time_s=1.0)
    n, reason = _run([10.0] * 100, rule)  # every step alone is past max_time
    assert n == 12
    assert reason.startswith("max-time: 1 s reached")
    assert "after 12 steps" in reason


def test_honours_min_time_before_stopping_for_the_target() -> None:
    rule = AutoSteps(target_ci=0.05, min_steps=10, min_time_s=2.0, max_time_s=100.0)
    n, reason = _run(_noisy(10_000, 0.01, cv=0.01), rule)  # the target is met from the first round on
    assert reason.startswith("target:")
    assert sum(_noisy(10_000, 0.01, cv=0.01)[:n]) >= 2.0
    assert n < 260  # and not much later: the first round end after 2 s (200 steps of 10 ms, +25%)


def test_stops_at_max_time_when_the_target_is_out_of_reach() -> None:
    rule = AutoSteps(target_ci=0.001, min_steps=10, min_time_s=0.0, max_time_s=3.0)
    times = _noisy(10_000, 0.01, cv=0.5)
    n, reason = _run(times, rule)
    assert reason.startswith("max-time: 3 s reached, half-width ")
    assert sum(times[:n]) >= 3.0 > sum(times[: n - 1])  # alone, the limit is checked after every step
    hw = float(reason.split("half-width ")[1].split("%")[0]) / 100
    assert hw > 0.001


def test_step_cap_bounds_the_record() -> None:
    rule = AutoSteps(target_ci=0.0001, min_steps=10, min_time_s=0.0, max_time_s=1e9)
    n, reason = _run(_noisy(MAX_AUTO_STEPS + 10, 1e-4, cv=0.5), rule)
    assert n == MAX_AUTO_STEPS
    assert reason.startswith(f"max-steps: {MAX_AUTO_STEPS} steps reached")


def test_distributed_ranks_decide_at_round_ends_and_adopt_rank_zeros_decision() -> None:
    rule = AutoSteps(target_ci=0.02, min_steps=10, min_time_s=0.0, max_time_s=5.0)
    asked: list[int] = []
    seen: list[float] = []

    def agree(mine: str | None) -> str | None:  # rank 0 says stop at its third round end
        asked.append(len(seen))
        return "target: rank 0 says so" if len(asked) == 3 else None

    stop = AutoStop(rule, agree)
    reason = None
    # Every step is past max_time and the target is met at once: this rank alone would stop at 10.
    while reason is None:
        seen.append(10.0)
        reason = stop(seen, sum(seen))
    assert reason == "target: rank 0 says so"
    assert asked == sorted(_round_ends(rule, len(seen)))[:3]  # asked exactly at the round ends
    assert len(seen) == asked[-1]


def test_half_width_is_a_relative_t_interval_on_batch_means() -> None:
    assert half_width([1.0] * 5) == math.inf  # too few steps for an interval
    constant = half_width([0.01] * 100)
    assert constant == 0.0
    times = _noisy(400, 0.01, cv=0.2, seed=1)
    hw = half_width(times)
    iid = 1.96 * float(np.std(times, ddof=1)) / float(np.mean(times)) / math.sqrt(len(times))
    assert 0.5 * iid < hw < 3 * iid  # independent steps: close to the textbook interval
    assert half_width(times[:100]) > hw  # fewer steps, wider


def test_half_width_widens_for_drifting_steps() -> None:
    rng = np.random.default_rng(2)
    iid = list(0.01 * (1 + 0.1 * rng.standard_normal(400)))
    drift = sorted(iid)  # same values, slow trend: batch means see the correlation
    assert half_width(drift) > 3 * half_width(iid)


def test_no_decision_before_min_steps() -> None:
    rule = AutoSteps(min_steps=10)
    assert decide([1.0] * 9, 1e9, rule, round_end=True) == (None, None)


# ---- the settings ---------------------------------------------------------------------------------------
def test_parse_steps() -> None:
    assert parse_steps("auto") is None
    assert parse_steps("AUTO") is None
    assert parse_steps("25") == 25
    assert parse_steps(7) == 7
    for bad in ("foo", "1", 1, True, 2.5, "2.5"):
        with pytest.raises(ValueError):
            parse_steps(bad)


def test_parse_knobs() -> None:
    assert parse_knob("target_ci", "2%") == pytest.approx(0.02)
    assert parse_knob("target_ci", "0.05") == pytest.approx(0.05)
    assert parse_knob("max_time", 3) == 3.0
    assert parse_knob("min_steps", "20") == 20
    for name, bad in (
        ("target_ci", "0"),
        ("target_ci", "0%"),
        ("target_ci", "150%"),
        ("max_time", "-1"),
        ("max_time", "0"),
        ("min_time", "-0.5"),
        ("min_steps", "2"),
        ("min_steps", "10.5"),
        ("max_time", "nan"),
        ("max_time", "soon"),
    ):
        with pytest.raises(ValueError):
            parse_knob(name, bad)


def test_auto_steps_validation_and_knob_replacement() -> None:
    with pytest.raises(ValueError, match="longer than max_time"):
        AutoSteps(min_time_s=5, max_time_s=2)
    a = with_knobs(AutoSteps(max_time_s=2.0), {"target_ci": 0.05})
    assert (a.target_ci, a.max_time_s) == (0.05, 2.0)


def _notes(rule: AutoSteps, n: int) -> tuple[list[str], list[float], list[int]]:
    """(the live display's notes, the step times fed, the round ends) for ``n`` noisy steps."""
    notes: list[str] = []
    stop = AutoStop(rule, on_round=notes.append)
    times = _noisy(n, 0.01, cv=0.2)
    for k in range(1, len(times) + 1):
        stop(times[:k], sum(times[:k]))
    return notes, times, sorted(e for e in _round_ends(rule, n) if e <= n)


def test_each_round_end_reports_the_interval_width_for_the_live_display() -> None:
    rule = AutoSteps(target_ci=0.001, min_steps=10, min_time_s=0.0, max_time_s=1e6)
    notes, times, ends = _notes(rule, 60)
    assert len(notes) == len(ends)
    assert notes[0].startswith(f"step {ends[0]}, interval ±") and notes[0].endswith("(target 0.1%)")
    assert notes[-1] == f"step {ends[-1]}, interval ±{half_width(times[: ends[-1]]):.1%} (target 0.1%)"


def test_rounds_before_min_time_compute_no_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    """The interval's work runs between two steps and slows the steps after it: rounds ending before
    min_time do none, and say when the interval will first be looked at; from then on the note shows the
    width the rule itself saw, computed once."""
    widths: list[int] = []

    def counted(times: list[float], *args: float) -> float:
        widths.append(len(times))
        return half_width(times, *args)

    monkeypatch.setattr(stopping, "half_width", counted)
    rule = AutoSteps(target_ci=0.001, min_steps=10, min_time_s=0.5, max_time_s=1e6)
    notes, times, ends = _notes(rule, 120)
    late = [e for e in ends if sum(times[:e]) >= 0.5]
    assert late and len(late) < len(ends)  # rounds on both sides of min_time
    assert widths == late  # one interval per round once min_time has passed, none before
    early_notes = notes[: len(ends) - len(late)]
    assert early_notes[0] == f"step {ends[0]}, interval from 0.5 s (target 0.1%)"
    assert all("±" not in note for note in early_notes)
    assert notes[-1] == f"step {late[-1]}, interval ±{half_width(times[: late[-1]]):.1%} (target 0.1%)"
