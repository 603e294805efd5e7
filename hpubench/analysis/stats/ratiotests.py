"""Tests of a ratio current / baseline between two sides: a Welch t test on log locations, and a
permutation test on per-run log values comparing the fastest half of each side's runs.

The t tail is exact for normal batch/run means and is computed in closed form (:mod:`studentt`), so tiny
p-values cost nothing, unlike a bootstrap that would need millions of resamples to resolve p = 0.0001.

Runs on a shared machine do not vary like a normal sample: most land close together and a few are slowed
as a whole (seconds-long stretches in which the host runs the VM slower), never sped up. One such run
inflates a t test's variance, and a rank test counts it as slower than every run of the other side; either
can then miss a real change. Comparing the fastest half of each side's runs, with a permutation test for the
significance, ignores such runs on either side and needs no assumption about how the rest vary.

Separate from :mod:`locations` (what one side measured): this module only decides between two sides.
Pure: no torch, no I/O.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from hpubench.analysis.stats.locations import LogLocation
from hpubench.analysis.stats.studentt import student_t_ppf, student_t_sf
from hpubench.analysis.stats.summary import DEFAULT_CONFIDENCE, DEFAULT_SEED, check_confidence


@dataclass(frozen=True)
class LogRatioTest:
    """Welch t test of ``current - baseline`` on the log scale; ``exp(log_ratio)`` is current / baseline."""

    log_ratio: float
    se: float
    df: float
    p_increase: float  # one-sided p-value against "no increase"
    p_decrease: float  # one-sided p-value against "no decrease"

    @property
    def ratio(self) -> float:
        return math.exp(self.log_ratio)

    def interval(self, confidence: float = DEFAULT_CONFIDENCE) -> tuple[float, float]:
        """Two-sided interval for the ratio current / baseline."""
        check_confidence(confidence)
        if self.se == 0:
            return self.ratio, self.ratio
        half = student_t_ppf(0.5 + confidence / 2, self.df) * self.se
        return math.exp(self.log_ratio - half), math.exp(self.log_ratio + half)


def welch_log_ratio(baseline: LogLocation, current: LogLocation) -> LogRatioTest:
    """Compare two locations; degrees of freedom by Welch-Satterthwaite."""
    d = current.value - baseline.value
    var = baseline.se**2 + current.se**2
    if var == 0:
        # Identical steps on both sides (synthetic data): the sign of d is all there is to go on.
        p_inc = 0.0 if d > 0 else (0.5 if d == 0 else 1.0)
        p_dec = 0.0 if d < 0 else (0.5 if d == 0 else 1.0)
        return LogRatioTest(d, 0.0, math.inf, p_inc, p_dec)
    terms = [s**4 / nu for s, nu in ((baseline.se, baseline.df), (current.se, current.df)) if s > 0]
    df = var**2 / sum(terms)
    t = d / math.sqrt(var)
    return LogRatioTest(d, math.sqrt(var), df, student_t_sf(t, df), student_t_sf(-t, df))


EXACT_PERMUTATIONS = 200_000  # relabellings counted exactly up to this many (10 runs a side), else drawn
RANDOM_PERMUTATIONS = 100_000


def _fast_half_rows(rows: np.ndarray) -> np.ndarray:
    """fast_half_mean of each row of a 2-d array."""
    x = np.sort(rows, axis=1)
    return x[:, : math.ceil(x.shape[1] / 2)].mean(axis=1)


def fast_half_mean(values: Sequence[float] | np.ndarray) -> float:
    """The mean of the fastest (smallest) half of the values, rounded up: the runs that ran undisturbed."""
    return float(_fast_half_rows(np.asarray(values, dtype=np.float64)[np.newaxis, :])[0])


def _fast_half_means(sorted_values: np.ndarray, masks: np.ndarray, keep: int) -> np.ndarray:
    """fast_half_mean of the values each row of ``masks`` selects (values sorted ascending)."""
    taken = np.cumsum(masks, axis=1, dtype=np.int32) <= keep
    return (sorted_values * (masks & taken)).sum(axis=1) / keep


@lru_cache(maxsize=32)
def _all_relabellings(n: int, k: int) -> np.ndarray:
    """Every way to pick which k of n runs are "current", as a boolean matrix, one row per way."""
    rows = math.comb(n, k)
    idx = np.fromiter(itertools.chain.from_iterable(itertools.combinations(range(n), k)), np.int64, rows * k)
    masks = np.zeros((rows, n), dtype=bool)
    masks[np.repeat(np.arange(rows), k), idx] = True
    masks.setflags(write=False)
    return masks


def smallest_permutation_pvalue(n_base: int, n_cur: int) -> float:
    """The smallest one-sided p-value a permutation test of n_base against n_cur runs can give.

    1 / C(N, n_cur) when every relabelling is counted: 0.05 with 3 runs a side, so no test of 3 runs can
    pass a 1% gate however large the change. This is how the gate knows whether the test can see
    anything with the runs it was given.
    """
    if n_base < 1 or n_cur < 1:
        return 1.0
    ways = math.comb(n_base + n_cur, n_cur)
    return 1.0 / ways if ways <= EXACT_PERMUTATIONS else 1.0 / (RANDOM_PERMUTATIONS + 1)


@dataclass(frozen=True)
class PermutationShiftTest:
    """Current against baseline on per-run log values: the shift of the fastest half of the runs.

    ``log_ratio`` is fast_half_mean(current) - fast_half_mean(baseline), so ``exp(log_ratio)`` estimates
    current / baseline. The p-values count the relabellings of runs into baseline and current whose shift
    is at least as large (or as small), every relabelling up to EXACT_PERMUTATIONS, else a random sample
    (p = (1 + hits) / (1 + draws), never zero). ``interval`` is a bootstrap over runs, for display.
    """

    log_ratio: float
    n_base: int
    n_cur: int
    p_increase: float
    p_decrease: float
    permutations: int
    exact: bool
    boot: tuple[float, ...]  # bootstrap shifts, sorted

    @property
    def ratio(self) -> float:
        return math.exp(self.log_ratio)

    def interval(self, confidence: float = DEFAULT_CONFIDENCE) -> tuple[float, float]:
        """Two-sided percentile interval for the ratio current / baseline."""
        check_confidence(confidence)
        b = np.asarray(self.boot)
        lo, hi = np.quantile(b, [(1 - confidence) / 2, (1 + confidence) / 2])
        return math.exp(float(lo)), math.exp(float(hi))

    def describe(self) -> str:
        how = "all" if self.exact else "random"
        return (
            f"permutation test on {self.n_base} vs {self.n_cur} runs ({how} {self.permutations:,} "
            "relabellings), fastest half of the runs"
        )


def permutation_shift_test(
    baseline: Sequence[float], current: Sequence[float], seed: int = DEFAULT_SEED, n_boot: int = 2000
) -> PermutationShiftTest:
    """Compare two sets of per-run log values by the shift of their fastest halves.

    Valid whenever the runs are exchangeable under "nothing changed" (the same cell on the same machine,
    best interleaved), whatever their distribution: the slow runs a shared machine throws in cost some
    power but never make false alarms more likely than ``alpha``.
    """
    b = np.asarray(baseline, dtype=np.float64)
    c = np.asarray(current, dtype=np.float64)
    if b.ndim != 1 or c.ndim != 1 or b.size < 1 or c.size < 1:
        raise ValueError("need at least one run value on each side")
    if not (np.all(np.isfinite(b)) and np.all(np.isfinite(c))):
        raise ValueError("run values must be finite numbers")
    observed = fast_half_mean(c) - fast_half_mean(b)
    pooled = np.concatenate([b, c])
    order = np.argsort(pooled, kind="stable")
    values = pooled[order]
    n, k = pooled.size, c.size
    rng = np.random.default_rng(seed)
    exact = math.comb(n, k) <= EXACT_PERMUTATIONS
    if exact:
        masks = _all_relabellings(n, k)
    else:
        picks = np.argsort(rng.random((RANDOM_PERMUTATIONS, n)), axis=1)[:, :k]
        masks = np.zeros((RANDOM_PERMUTATIONS, n), dtype=bool)
        np.put_along_axis(masks, picks, True, axis=1)
    shifts = _fast_half_means(values, masks, math.ceil(k / 2)) - _fast_half_means(
        values, ~masks, math.ceil((n - k) / 2)
    )
    tol = 1e-12 * max(1.0, abs(observed))
    hi, lo = int(np.sum(shifts >= observed - tol)), int(np.sum(shifts <= observed + tol))
    rows = masks.shape[0]
    if exact:
        p_inc, p_dec = hi / rows, lo / rows
    else:
        p_inc, p_dec = (1 + hi) / (1 + rows), (1 + lo) / (1 + rows)
    boot_b = _fast_half_rows(b[rng.integers(0, b.size, (n_boot, b.size))])
    boot = _fast_half_rows(c[rng.integers(0, c.size, (n_boot, c.size))]) - boot_b
    return PermutationShiftTest(
        log_ratio=float(observed),
        n_base=int(b.size),
        n_cur=int(c.size),
        p_increase=min(1.0, p_inc),
        p_decrease=min(1.0, p_dec),
        permutations=rows,
        exact=exact,
        boot=tuple(float(v) for v in np.sort(boot)),
    )
