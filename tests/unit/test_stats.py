import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpubench.analysis.stats import summary as stats
from hpubench.analysis.stats.summary import describe, throughput

# ---- describe ---------------------------------------------------------------------------------------


def test_describe_matches_numpy():
    rng = np.random.default_rng(1)
    x = rng.lognormal(mean=-3, sigma=0.4, size=37)
    s = describe(x)
    assert s.n == 37
    assert s.mean == pytest.approx(np.mean(x))
    assert s.std == pytest.approx(np.std(x, ddof=1))
    assert (s.min, s.max) == (x.min(), x.max())
    assert s.p50 == pytest.approx(np.percentile(x, 50))
    assert s.p90 == pytest.approx(np.percentile(x, 90))
    assert s.p99 == pytest.approx(np.percentile(x, 99))
    assert s.cv == pytest.approx(np.std(x, ddof=1) / np.mean(x))


def test_percentiles_interpolate_linearly():
    s = describe([1.0, 2.0, 3.0, 4.0])
    assert s.p50 == 2.5
    assert s.p90 == pytest.approx(3.7)
    assert s.p99 == pytest.approx(3.97)


@pytest.mark.parametrize(
    "bad",
    [[], [0.1], [0.1, -0.2], [0.1, 0.0], [0.1, float("nan")], [0.1, float("inf")], [[0.1, 0.2], [0.3, 0.4]]],
)
def test_describe_rejects_bad_input(bad):
    with pytest.raises(ValueError):
        describe(bad)


# ---- throughput -------------------------------------------------------------------------------------


def test_throughput_is_the_ratio_of_totals_not_the_mean_of_rates():
    times = [0.1, 0.3]
    est = throughput(times, units_per_step=10)
    assert est.value == pytest.approx(20 / 0.4)  # 50/s; the mean of rates would say (100 + 33.3) / 2
    assert est.lo <= est.value <= est.hi
    assert est.confidence == 0.95
    assert "bootstrap" in est.method


def test_throughput_is_deterministic_for_a_seed():
    x = np.random.default_rng(3).lognormal(-2, 0.3, 40)
    assert throughput(x, 64) == throughput(list(x), 64)
    assert throughput(x, 64, seed=1) != throughput(x, 64, seed=2)


def test_equal_step_times_give_a_point_interval():
    est = throughput([0.5] * 10, 4)
    assert est.value == est.lo == est.hi == pytest.approx(8.0)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"step_times_s": [0.1]},
        {"step_times_s": [0.1, 0.2], "units_per_step": 0},
        {"step_times_s": [0.1, 0.2], "units_per_step": float("nan")},
        {"step_times_s": [0.1, 0.2], "confidence": 1.0},
        {"step_times_s": [0.1, 0.2], "confidence": 0.0},
        {"step_times_s": [0.1, 0.2], "n_boot": 10},
        {"step_times_s": [0.1, -0.2]},
    ],
)
def test_throughput_rejects_bad_input(kwargs):
    kwargs.setdefault("units_per_step", 8)
    with pytest.raises(ValueError):
        throughput(**kwargs)


def test_ci_covers_the_true_throughput_at_about_the_nominal_rate():
    # Lognormal step times: E[T] = exp(mu + sigma^2 / 2), so the true throughput is units / E[T].
    mu, sigma, n, units = -3.0, 0.3, 60, 32
    truth = units / math.exp(mu + sigma**2 / 2)
    rng = np.random.default_rng(12345)
    trials = 200
    hits = 0
    for trial in range(trials):
        x = rng.lognormal(mu, sigma, n)
        est = throughput(x, units, n_boot=1000, seed=trial)
        hits += est.lo <= truth <= est.hi
    coverage = hits / trials
    assert 0.90 <= coverage <= 0.99, coverage


def test_ci_narrows_with_more_samples():
    rng = np.random.default_rng(7)
    small = throughput(rng.lognormal(-3, 0.3, 20), 32)
    large = throughput(rng.lognormal(-3, 0.3, 500), 32)
    assert (large.hi - large.lo) < (small.hi - small.lo) / 2
    assert large.rel_halfwidth < small.rel_halfwidth


def test_long_runs_are_chunked_without_changing_results(monkeypatch):
    x = np.random.default_rng(0).lognormal(-3, 0.3, 300)
    whole = throughput(x, 8, n_boot=500)
    monkeypatch.setattr(stats, "_MAX_CHUNK_ELEMENTS", 300 * 7)  # 7 resamples per chunk
    assert throughput(x, 8, n_boot=500) == whole


_times = st.lists(
    st.floats(min_value=1e-4, max_value=10.0, allow_nan=False, allow_infinity=False), min_size=2, max_size=40
)


@settings(max_examples=80, deadline=None)
@given(times=_times, units=st.floats(min_value=1, max_value=1e6), seed=st.integers(0, 2**32 - 1))
def test_interval_contains_the_estimate(times, units, seed):
    est = throughput(times, units, n_boot=200, seed=seed)
    assert est.lo <= est.value <= est.hi
    assert est.lo > 0


@settings(max_examples=60, deadline=None)
@given(times=_times, k=st.floats(min_value=0.01, max_value=100))
def test_scaling_step_times_scales_throughput_inversely(times, k):
    base = throughput(times, 10, n_boot=200)
    scaled = throughput([t * k for t in times], 10, n_boot=200)
    assert scaled.value == pytest.approx(base.value / k, rel=1e-9)
    assert scaled.lo == pytest.approx(base.lo / k, rel=1e-9)
    assert scaled.hi == pytest.approx(base.hi / k, rel=1e-9)
