"""The bootstrap helpers behind compare and report: repetitions, geometric means."""

import math

import numpy as np
import pytest

from hpubench.stats import (
    bootstrap_geomean_ratio_ci,
    bootstrap_ratio_ci,
    bootstrap_repeats_ratio_ci,
    bootstrap_repeats_throughput,
    repeats_mean,
    throughput,
)


def _steps(mean, n=30, seed=0, sigma=0.05):
    return np.random.default_rng(seed).lognormal(np.log(mean), sigma, n)


def test_one_repetition_is_exactly_the_plain_throughput():
    x = _steps(0.05)
    a, b = throughput(x, 64), bootstrap_repeats_throughput([x], 64)
    assert b.value == pytest.approx(a.value, rel=1e-12)
    assert (b.lo, b.hi) == pytest.approx((a.lo, a.hi), rel=1e-12)


def test_repeats_mean_weighs_every_repetition_once():
    assert repeats_mean([[1.0, 1.0], [3.0, 3.0, 3.0, 3.0]]) == 2.0


def test_run_to_run_variation_widens_the_interval():
    """Three runs that disagree (a different process each time) must not look as sure as one long run."""
    runs = [_steps(m, seed=i, sigma=0.01) for i, m in enumerate((0.050, 0.056, 0.062))]
    pooled = throughput(np.concatenate(runs), 64)
    two_level = bootstrap_repeats_throughput(runs, 64)
    assert two_level.value == pytest.approx(pooled.value, rel=1e-9)  # equal-length runs: same point
    assert (two_level.hi - two_level.lo) > 3 * (pooled.hi - pooled.lo)


def test_single_pair_ratio_agrees_with_the_plain_ratio_interval():
    a, b = _steps(0.05, seed=1), _steps(0.04, seed=2)
    plain = bootstrap_ratio_ci(a, b)
    rep = bootstrap_repeats_ratio_ci([a], [b])
    assert rep.value == pytest.approx(plain.value)
    assert rep.lo == pytest.approx(plain.lo, rel=0.02) and rep.hi == pytest.approx(plain.hi, rel=0.02)


def test_geomean_of_ratios():
    pairs = [([_steps(0.1, seed=i)], [_steps(0.1 * f, seed=10 + i)]) for i, f in enumerate((2.0, 0.5, 4.0))]
    e = bootstrap_geomean_ratio_ci(pairs)
    ratios = [repeats_mean(b) / repeats_mean(a) for a, b in pairs]
    assert e.value == pytest.approx(math.exp(np.mean(np.log(ratios))))
    assert e.value == pytest.approx(
        4 ** (1 / 3), rel=0.05
    )  # 2x and 0.5x cancel; the 4x remains, over 3 cells
    assert e.lo < e.value < e.hi and e.confidence == 0.95
    assert "geometric mean over 3 cell(s)" in e.method
    assert bootstrap_geomean_ratio_ci(pairs) == e  # seeded: reproducible


def test_geomean_interval_narrows_with_more_cells():
    one = bootstrap_geomean_ratio_ci([([_steps(0.1, seed=0)], [_steps(0.2, seed=1)])])
    many = bootstrap_geomean_ratio_ci([([_steps(0.1, seed=i)], [_steps(0.2, seed=50 + i)]) for i in range(8)])
    assert many.hi - many.lo < one.hi - one.lo


@pytest.mark.parametrize(
    "pairs",
    [[], [([], [[0.1, 0.2]])], [([[0.1, 0.2]], [[0.1]])], [([[0.1, -0.2]], [[0.1, 0.2]])]],
)
def test_bad_input_is_rejected(pairs):
    with pytest.raises(ValueError):
        bootstrap_geomean_ratio_ci(pairs)
