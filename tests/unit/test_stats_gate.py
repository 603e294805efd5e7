"""The gate's statistics (hpubench.analysis: studentt, locations, ratiotests, correction,
benchmarkstats): t distribution, batch means, run combination,
corrections, and the pytest-benchmark summary, each checked against closed forms or an independent
implementation."""

from __future__ import annotations

import importlib.metadata
import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpubench.analysis.stats import benchmark as benchmarkstats
from hpubench.analysis.stats import correction, locations, ratiotests, studentt
from hpubench.analysis.stats.locations import LogLocation


def _ar1(rng: np.random.Generator, n: int, rho: float, cv: float = 0.05) -> np.ndarray:
    e = rng.normal(size=n)
    x = np.empty(n)
    x[0] = e[0]
    for i in range(1, n):
        x[i] = rho * x[i - 1] + math.sqrt(1 - rho**2) * e[i]
    return 0.01 * np.exp(cv * x)


@pytest.mark.parametrize("t", [-30.0, -2.0, -0.3, 0.0, 0.7, 3.0, 12.0, 1e4])
def test_t_sf_matches_closed_forms(t: float) -> None:
    # df = 1 is the Cauchy distribution, df = 2 has an algebraic tail, df = inf is the normal.
    assert studentt.student_t_sf(t, 1) == pytest.approx(0.5 - math.atan(t) / math.pi, rel=1e-10, abs=1e-15)
    assert studentt.student_t_sf(t, 2) == pytest.approx(
        0.5 - t / (2 * math.sqrt(2 + t * t)), rel=1e-9, abs=1e-15
    )
    assert studentt.student_t_sf(t, math.inf) == pytest.approx(0.5 * math.erfc(t / math.sqrt(2)), rel=1e-12)


def test_t_matches_scipy_where_available() -> None:
    sst = pytest.importorskip("scipy.stats")
    for df in (1.0, 1.7, 3.0, 8.4, 30.0, 400.0):
        for t in (-5.0, -1.0, 0.2, 2.5, 9.0, 60.0):
            assert studentt.student_t_sf(t, df) == pytest.approx(sst.t.sf(t, df), rel=1e-8, abs=1e-300)
        for q in (0.01, 0.5, 0.9, 0.995, 0.9999, 1 - 1e-8):
            assert studentt.student_t_ppf(q, df) == pytest.approx(sst.t.ppf(q, df), rel=1e-8, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(q=st.floats(1e-6, 1 - 1e-6), df=st.floats(0.5, 1e5))
def test_t_ppf_inverts_sf(q: float, df: float) -> None:
    t = studentt.student_t_ppf(q, df)
    assert 1 - studentt.student_t_sf(t, df) == pytest.approx(q, rel=1e-7, abs=1e-12)


def test_t_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        studentt.student_t_sf(1.0, 0)
    with pytest.raises(ValueError):
        studentt.student_t_ppf(1.0, 3)


def test_adjusted_pvalues_hand_computed() -> None:
    p = [0.01, 0.04, 0.03, 0.005, 0.5, 0.2]
    assert correction.adjust_pvalues(p, "holm") == pytest.approx([0.05, 0.12, 0.12, 0.03, 0.5, 0.4])
    assert correction.adjust_pvalues(p, "bh") == pytest.approx([0.03, 0.06, 0.06, 0.03, 0.5, 0.24])
    assert correction.adjust_pvalues(p, "none") == p
    assert correction.adjust_pvalues([], "holm") == []
    with pytest.raises(ValueError):
        correction.adjust_pvalues([1.5], "holm")
    with pytest.raises(ValueError):
        correction.adjust_pvalues([0.1], "bonferroni")


@settings(max_examples=60, deadline=None)
@given(p=st.lists(st.floats(0, 1), min_size=1, max_size=50))
def test_adjusted_pvalues_invariants(p: list[float]) -> None:
    holm, bh = correction.adjust_pvalues(p, "holm"), correction.adjust_pvalues(p, "bh")
    for raw, h, b in zip(p, holm, bh, strict=True):
        assert raw <= b + 1e-12 and b <= h + 1e-12 and h <= 1  # BH never stricter than Holm
    order = np.argsort(p, kind="stable")
    assert np.all(np.diff(np.array(holm)[order]) >= -1e-12)  # order preserved
    assert np.all(np.diff(np.array(bh)[order]) >= -1e-12)


def test_run_location_of_independent_steps() -> None:
    rng = np.random.default_rng(0)
    x = 0.01 * np.exp(rng.normal(0, 0.05, size=400))
    loc = locations.run_location(x, units_per_step=64)
    assert math.exp(loc.value) * 64 == pytest.approx(x[400 - (400 // 20) * 20 :].mean(), rel=1e-12)
    # Independent steps: batch means give about the textbook error sd / sqrt(n) / mean.
    assert loc.se == pytest.approx(x.std(ddof=1) / math.sqrt(x.size) / x.mean(), rel=0.4)
    assert loc.runs == 1 and loc.spread == loc.se and loc.df == 400 // 20 - 1


def test_batches_grow_with_autocorrelation() -> None:
    rng = np.random.default_rng(1)
    assert locations.batch_length(_ar1(rng, 400, 0.0)) == 20
    assert locations.batch_length(_ar1(rng, 400, 0.9)) > 40
    assert locations.batch_length(_ar1(rng, 12, 0.99)) == 4  # never fewer than 3 batches


def test_batch_means_keep_p_values_near_nominal_under_autocorrelation() -> None:
    """The p-values of A/A comparisons of AR(1) runs: near-uniform, and never badly anti-conservative."""
    rng = np.random.default_rng(2)
    for rho in (0.0, 0.5):
        p = np.array(
            [
                ratiotests.welch_log_ratio(
                    locations.run_location(_ar1(rng, 60, rho)), locations.run_location(_ar1(rng, 60, rho))
                ).p_increase
                for _ in range(600)
            ]
        )
        assert (p < 0.05).mean() < 0.05 * 2
        assert 0.4 < np.median(p) < 0.6


def test_median_location_and_bad_input() -> None:
    x = np.array([1.0, 1.0, 1.0, 9.0] * 4)
    assert math.exp(locations.run_location(x, "median").value) == pytest.approx(1.0)
    assert math.exp(locations.run_location(x, "mean").value) == pytest.approx(3.0)
    with pytest.raises(ValueError):
        locations.run_location(x, "mode")
    with pytest.raises(ValueError):
        locations.run_location([0.1])
    with pytest.raises(ValueError):
        locations.run_location(x, units_per_step=0)


def _loc(value: float, se: float, df: float = 9.0) -> LogLocation:
    return LogLocation(value, se, df, 1, se, "test")


def test_combine_runs_uses_between_run_spread_with_a_within_run_floor() -> None:
    spread = locations.combine_runs([_loc(0.0, 0.01), _loc(0.1, 0.01), _loc(0.2, 0.01)])
    assert spread.value == pytest.approx(0.1)
    assert spread.se == pytest.approx(0.1 / math.sqrt(3))
    assert spread.df == 2 and spread.runs == 3 and spread.spread == pytest.approx(0.1)
    # Runs that agree by luck cannot be more precise than their own steps allow.
    lucky = locations.combine_runs([_loc(0.0, 0.05), _loc(0.0001, 0.05)])
    assert lucky.se == pytest.approx(0.05 / math.sqrt(2))
    assert locations.combine_runs([_loc(1.0, 0.1)]) == _loc(1.0, 0.1)
    with pytest.raises(ValueError):
        locations.combine_runs([])


def test_borrow_spread_only_widens() -> None:
    several = locations.combine_runs([_loc(0.0, 0.01), _loc(0.1, 0.01), _loc(0.2, 0.01)])
    single = _loc(0.05, 0.01)
    borrowed = locations.borrow_spread(single, several)
    assert borrowed.se == pytest.approx(0.1) and borrowed.df == 2
    assert locations.borrow_spread(_loc(0.05, 0.5), several).se == 0.5  # already noisier: kept
    assert locations.borrow_spread(several, single) is several  # only a single run borrows


def test_welch_log_ratio() -> None:
    t = ratiotests.welch_log_ratio(_loc(0.0, 0.03, 4), _loc(math.log(1.1), 0.04, 6))
    assert t.ratio == pytest.approx(1.1)
    assert t.se == pytest.approx(0.05)
    expected_df = 0.05**4 / (0.03**4 / 4 + 0.04**4 / 6)
    assert t.df == pytest.approx(expected_df)
    assert t.p_increase == pytest.approx(studentt.student_t_sf(math.log(1.1) / 0.05, expected_df))
    assert t.p_increase + t.p_decrease == pytest.approx(1.0)
    lo, hi = t.interval(0.95)
    assert lo < 1.1 < hi
    assert math.log(hi) - math.log(1.1) == pytest.approx(studentt.student_t_ppf(0.975, expected_df) * 0.05)
    same = ratiotests.welch_log_ratio(_loc(0.0, 0.0), _loc(0.0, 0.0))
    assert same.p_increase == same.p_decrease == 0.5 and same.interval() == (1.0, 1.0)


OLD_HD15IQR = tuple(int(p) for p in importlib.metadata.version("pytest-benchmark").split(".")[:2]) < (5, 3)
# Fields pytest_benchmark_stats computes itself rather than taking from Stats (see its docstring): the same
# figures up to the last digit (an exactly rounded sum where Stats sums in step order).
COMPUTED_HERE = {"mean", "stddev", "total", "ops", "stddev_outliers", "outliers", "hd15iqr"}


def test_pytest_benchmark_stats_match_pytest_benchmark() -> None:
    from pytest_benchmark.stats import Stats

    rng = np.random.default_rng(3)
    for n in [*range(2, 30), 101]:
        x = rng.lognormal(size=n)
        theirs = Stats()
        for v in x:
            theirs.update(float(v))
        ours = benchmarkstats.pytest_benchmark_stats(x)
        for name, value in theirs.as_dict().items():
            if name == "hd15iqr" and OLD_HD15IQR:
                continue  # pytest-benchmark < 5.3 returned the first value above the fence here
            if name not in COMPUTED_HERE:
                assert ours[name] == value and type(ours[name]) is type(value), (n, name)
                continue
            expected = value if isinstance(value, str) else pytest.approx(value, rel=1e-12)
            assert ours[name] == expected, (n, name)
        assert ours["hd15iqr"] == max(v for v in x if v <= ours["q3"] + 1.5 * ours["iqr"])
        assert ours["iterations"] == 1
        assert list(ours) == [*Stats.fields, "iterations"]


def test_pytest_benchmark_stats_import_leaves_pytest_out() -> None:
    # The export imports pytest_benchmark.stats at its top: fine while that pulls in neither pytest nor
    # pluggy (a child process, since this one has pytest loaded).
    code = (
        "import sys, hpubench.analysis.stats.benchmark as b; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pytest', '_pytest', 'pluggy', 'torch')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
