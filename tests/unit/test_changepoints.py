"""Steps in level over saved baselines (``hpubench.analysis.changepoints``): one planted step is found where
it is and sized, none is marked in A/A series more often than alpha (with normal and heavy-tailed noise),
two steps are both found, a step under the threshold is not shown, and a history too short says so."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hpubench.analysis import changepoints as cp

BASE = math.log(0.01 / 64)  # log seconds per sample: a 10 ms step of 64 samples


def series(
    seed: int, n: int = 12, noise: float = 0.015, steps: dict[int, float] | None = None
) -> list[float]:
    """Baseline levels with log-normal noise; ``steps`` maps an index to a slowdown from there on."""
    x = BASE + np.random.default_rng(seed).normal(scale=noise, size=n)
    for at, slow in (steps or {}).items():
        x[at:] += math.log(1 + slow)
    return x.tolist()


def test_the_smallest_history_that_can_show_a_step() -> None:
    assert cp.min_baselines(0.01) == 9  # 1 / C(9, 4) = 0.008
    assert cp.min_baselines(0.05) == 6  # 1 / C(6, 3) = 0.05


@pytest.mark.parametrize("seed", range(10))
def test_one_planted_10pct_slowdown_is_found_where_it_is(seed: int) -> None:
    d = cp.detect(series(seed, steps={7: 0.10}), alpha=0.01, threshold=0.05)
    (shift,) = d.shown
    assert (shift.since, shift.at) == (6, 7)
    assert shift.interval[0] < shift.change < shift.interval[1] < 0
    assert shift.p_value <= 0.01 and (shift.before, shift.after) == (7, 5)


def test_the_steps_interval_covers_the_planted_size_as_often_as_it_says() -> None:
    covered = []
    for seed in range(100):
        (shift,) = cp.detect(series(seed, noise=0.01, steps={7: 0.10}), alpha=0.01, threshold=0.05).shown
        covered.append(shift.interval[0] <= 1 / 1.1 - 1 <= shift.interval[1])
    assert sum(covered) / len(covered) >= 0.88  # 95% intervals; 100 trials spread by about 2%


def test_a_speed_up_is_a_step_too() -> None:
    (shift,) = cp.detect(series(3, steps={5: -0.2}), alpha=0.01, threshold=0.05).shown
    assert shift.at == 5 and shift.change == pytest.approx(1 / 0.8 - 1, abs=0.03)


def test_two_steps_are_both_found() -> None:
    d = cp.detect(series(4, n=20, steps={6: 0.15, 14: 0.15}), alpha=0.01, threshold=0.05)
    assert [s.at for s in d.shown] == [6, 14]


def test_a_significant_step_under_the_threshold_is_not_shown() -> None:
    d = cp.detect(series(5, noise=0.002, steps={6: 0.02}), alpha=0.01, threshold=0.05)
    assert [s.at for s in d.shifts] == [6] and not d.shown


def test_an_unmeasured_baseline_is_stepped_over() -> None:
    x: list[float | None] = list(series(6, n=13, steps={7: 0.10}))
    x[6] = None
    (shift,) = cp.detect(x, alpha=0.01, threshold=0.05).shown
    assert (shift.since, shift.at) == (5, 7)


def test_too_short_a_history_says_so_and_marks_nothing() -> None:
    d = cp.detect(series(7, n=8, steps={4: 0.5}), alpha=0.01, threshold=0.05)
    assert not d.shifts and d.note == "8 baseline(s) measured it: a step can be shown at alpha 0.01 from 9"


@pytest.mark.parametrize(
    ("alpha", "noise"),
    [(0.05, "normal"), (0.05, "heavy"), (0.01, "normal")],
)
def test_aa_series_are_marked_at_most_alpha_of_the_time(alpha: float, noise: str) -> None:
    rng = np.random.default_rng(11)
    trials = 300
    marked = 0
    for _ in range(trials):
        # heavy: a t with 2 degrees of freedom (a baseline now and then far off), the permutation's case
        e = rng.normal(size=12) if noise == "normal" else rng.standard_t(2, size=12)
        marked += bool(cp.detect((BASE + 0.02 * e).tolist(), alpha=alpha, threshold=0.0).shifts)
    # at most alpha, with room for the binomial spread of 300 trials (3 standard deviations)
    assert marked / trials <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / trials)


def test_the_same_baselines_give_the_same_steps() -> None:
    x = series(8, steps={6: 0.08})
    assert cp.detect(x, 0.01, 0.05) == cp.detect(list(x), 0.01, 0.05)


def test_the_vectorised_statistic_equals_the_one_split_formula() -> None:
    def two_sample_t(a: np.ndarray, b: np.ndarray) -> float:  # the textbook pooled-variance t, one split
        ss = ((a - a.mean()) ** 2).sum() + ((b - b.mean()) ** 2).sum()
        return abs(a.mean() - b.mean()) / math.sqrt(ss / (a.size + b.size - 2) * (1 / a.size + 1 / b.size))

    x = np.array(series(9))
    direct = [two_sample_t(x[:i], x[i:]) for i in range(cp.MIN_SIDE, x.size - cp.MIN_SIDE + 1)]
    assert cp._split_stats(x[None, :])[0] == pytest.approx(direct)
    assert cp._split_stats(x[None, :])[0].max() == pytest.approx(max(direct))
