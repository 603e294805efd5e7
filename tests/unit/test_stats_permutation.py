"""The permutation test between runs in hpubench.analysis.stats.ratiotests: p-values against a brute-force
count, what slow runs do to it, the random-relabelling branch, and what a test of few runs can reach."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpubench.analysis.stats import locations, ratiotests


def _counted_tails(base: list[float], cur: list[float]) -> tuple[float, float]:
    """P(shift >= observed) and P(shift <= observed) over every relabelling, written the plain way."""
    pooled = base + cur
    observed = ratiotests.fast_half_mean(cur) - ratiotests.fast_half_mean(base)
    shifts = []
    for idx in itertools.combinations(range(len(pooled)), len(cur)):
        c = [pooled[i] for i in idx]
        b = [pooled[i] for i in range(len(pooled)) if i not in idx]
        shifts.append(ratiotests.fast_half_mean(c) - ratiotests.fast_half_mean(b))
    n = len(shifts)
    return (
        sum(s >= observed - 1e-12 for s in shifts) / n,
        sum(s <= observed + 1e-12 for s in shifts) / n,
    )


def test_fast_half_mean() -> None:
    assert ratiotests.fast_half_mean([5.0, 1.0, 3.0, 100.0]) == pytest.approx(2.0)  # 1 and 3
    assert ratiotests.fast_half_mean([5.0, 1.0, 3.0]) == pytest.approx(2.0)  # ceil(3/2) = 2 values
    assert ratiotests.fast_half_mean([7.0]) == 7.0


@settings(max_examples=50, deadline=None)
@given(
    base=st.lists(st.integers(0, 6), min_size=1, max_size=6),
    cur=st.lists(st.integers(0, 6), min_size=1, max_size=6),
)
def test_exact_pvalues_equal_a_plain_count_including_ties(base: list[int], cur: list[int]) -> None:
    b, c = [float(v) / 10 for v in base], [float(v) / 10 for v in cur]
    t = ratiotests.permutation_shift_test(b, c)
    p_inc, p_dec = _counted_tails(b, c)
    assert t.exact and t.permutations == math.comb(len(b) + len(c), len(c))
    assert t.p_increase == pytest.approx(p_inc, abs=1e-12)
    assert t.p_decrease == pytest.approx(p_dec, abs=1e-12)
    assert t.log_ratio == pytest.approx(ratiotests.fast_half_mean(c) - ratiotests.fast_half_mean(b))


def test_complete_separation_gives_the_smallest_possible_pvalue() -> None:
    t = ratiotests.permutation_shift_test(
        [0.0, 0.01, 0.02, 0.03, 0.04, 0.05], [0.1, 0.11, 0.12, 0.13, 0.14, 0.15]
    )
    assert t.p_increase == pytest.approx(1 / math.comb(12, 6)) == ratiotests.smallest_permutation_pvalue(6, 6)
    assert t.p_decrease == 1.0
    assert ratiotests.smallest_permutation_pvalue(3, 3) == pytest.approx(0.05)  # 3 runs a side never reach 1%
    assert ratiotests.smallest_permutation_pvalue(0, 3) == 1.0


@pytest.mark.parametrize("where", ["baseline", "current"])
def test_a_run_slowed_as_a_whole_on_either_side_does_not_hide_a_change(where: str) -> None:
    base = [0.000, 0.004, -0.003, 0.002, -0.002, 0.001, 0.003, -0.001]
    cur = [v + 0.1 for v in base[::-1]]  # 10% slower, every run
    if where == "baseline":
        base[3] = 0.45  # slower than every current run: a rank test would count 8 pairs against the change
    else:
        cur[3] = 0.55
    t = ratiotests.permutation_shift_test(base, cur)
    # At most the 8 relabellings that trade the slow run for one current run tie with what was seen.
    assert t.p_increase <= 9 / math.comb(16, 8)
    assert t.log_ratio == pytest.approx(0.1, abs=0.004)  # the shift is not dragged by the slow run
    welch = ratiotests.welch_log_ratio(
        locations.combine_runs([locations.LogLocation(v, 0.0, 1, 1, 0.0, "") for v in base]),
        locations.combine_runs([locations.LogLocation(v, 0.0, 1, 1, 0.0, "") for v in cur]),
    )
    assert welch.p_increase > 0.003  # the same runs blind a t test: the slow run swells its variance


def test_shift_is_equivariant_and_the_interval_holds_the_estimate() -> None:
    rng = np.random.default_rng(0)
    b, c = rng.normal(0, 0.02, size=6), rng.normal(0.05, 0.02, size=7)
    t = ratiotests.permutation_shift_test(b, c)
    moved = ratiotests.permutation_shift_test(b, c + 0.3)
    assert moved.log_ratio == pytest.approx(t.log_ratio + 0.3)
    assert moved.ratio == pytest.approx(math.exp(t.log_ratio + 0.3))
    lo, hi = t.interval(0.9)
    assert lo <= t.ratio <= hi and hi / lo > 1.0
    wide = t.interval(0.99)
    assert wide[0] <= lo and hi <= wide[1]
    with pytest.raises(ValueError, match="confidence"):
        t.interval(1.0)


def test_null_rejections_stay_at_alpha_under_heavy_tailed_runs() -> None:
    rng = np.random.default_rng(3)
    trials = 3000
    p = np.array(
        [
            ratiotests.permutation_shift_test(rng.standard_cauchy(6), rng.standard_cauchy(6)).p_increase
            for _ in range(trials)
        ]
    )
    # Exact under exchangeability, whatever the distribution: P(p <= a) <= a up to sampling error.
    for a in (0.01, 0.05):
        assert np.mean(p <= a) <= a + 3 * math.sqrt(a * (1 - a) / trials)


def test_random_relabellings_agree_with_the_full_count(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(4)
    b, c = rng.normal(0, 0.03, size=7), rng.normal(0.03, 0.03, size=7)
    exact = ratiotests.permutation_shift_test(b, c)
    monkeypatch.setattr(ratiotests, "EXACT_PERMUTATIONS", 100)
    drawn = ratiotests.permutation_shift_test(b, c)
    assert exact.exact and not drawn.exact and drawn.permutations == ratiotests.RANDOM_PERMUTATIONS
    assert drawn.p_increase == pytest.approx(exact.p_increase, abs=4 * math.sqrt(0.25 / drawn.permutations))
    assert drawn.log_ratio == exact.log_ratio
    # Drawn p-values are never zero: (1 + hits) / (1 + draws).
    far = ratiotests.permutation_shift_test(np.zeros(7) + rng.normal(0, 1e-3, 7), np.ones(7))
    assert 1 / (ratiotests.RANDOM_PERMUTATIONS + 1) <= far.p_increase == pytest.approx(1 / 3432, rel=0.5)
    assert ratiotests.smallest_permutation_pvalue(7, 7) == pytest.approx(
        1 / (ratiotests.RANDOM_PERMUTATIONS + 1)
    )


def test_bad_run_values_raise() -> None:
    with pytest.raises(ValueError, match="at least one run"):
        ratiotests.permutation_shift_test([], [1.0])
    with pytest.raises(ValueError, match="finite"):
        ratiotests.permutation_shift_test([1.0, math.nan], [1.0])


def test_run_value_summaries() -> None:
    x = [0.02, 0.01, 0.03, 0.01, 0.10]
    assert math.exp(locations.run_value(x, "min", units_per_step=2)) == pytest.approx(0.005)
    assert math.exp(locations.run_value(x, "median")) == pytest.approx(0.02)
    assert math.exp(locations.run_value(x, "mean")) == pytest.approx(0.034)
    with pytest.raises(ValueError, match="statistic"):
        locations.run_value(x, "p90")
    with pytest.raises(ValueError, match="units_per_step"):
        locations.run_value(x, "min", units_per_step=0)
