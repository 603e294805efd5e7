"""The bootstrap helpers behind the report: repetitions."""

import numpy as np
import pytest

from hpubench.analysis.stats.summary import (
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
