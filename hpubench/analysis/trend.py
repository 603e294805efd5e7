"""Did the measured steps drift? A rank test of the first half of the steps against the second. Pure.

A cell that is still warming up (caches, allocator, clocks ramping) or that a neighbour starts to disturb
halfway through has a throughput that depends on when you stop measuring: its interval describes a
mixture, not a steady state. Comparing the two halves catches both a slow drift and a step change near
the middle. The comparison is by ranks (Mann-Whitney U), so the occasional long stall that every shared
machine throws in counts as one slow step, not as a shift of the whole half; the effect size is the ratio
of the halves' medians, for the same reason.

Step times on a real machine are somewhat autocorrelated, which makes any test that assumes independent
steps too eager on long runs; :mod:`hpubench.analysis.quality` therefore asks for a minimum effect size as
well as significance, so a real but negligible drift over thousands of steps is not called unstable.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from hpubench.analysis.stats.summary import as_samples

# Exact null distribution up to this many steps in total (a one-off table of at most 51 x 1276 counts);
# above it the tie-corrected normal approximation, which is within a few percent of exact from ~20 per side.
EXACT_MAX_STEPS = 50


@dataclass(frozen=True)
class HalvesTest:
    """First half of the measured steps against the second (the middle step of an odd count is left out).

    ``shift`` is median(second) / median(first) - 1: +0.12 reads "second half 12% slower".
    ``p_value`` is two-sided: a half that got faster (warm-up not finished) counts as much as one that
    got slower.
    """

    n_first: int
    n_second: int
    shift: float
    p_value: float
    method: str


@lru_cache(maxsize=64)
def _rank_sum_counts(m: int, n_total: int) -> np.ndarray:
    """counts[s]: how many ways m of the ranks 1..n_total sum to s (the exact null of Wilcoxon's W)."""
    top = n_total * (n_total + 1) // 2
    c = np.zeros((m + 1, top + 1), dtype=np.int64)  # C(50, 25) ~ 1.3e14 fits in int64
    c[0, 0] = 1
    for rank in range(1, n_total + 1):
        # Each rank used at most once: numpy buffers the overlapping right-hand side, so the update reads
        # the counts from before this rank was offered (0/1 knapsack).
        c[1:, rank:] += c[:-1, :-rank]
    out = c[m]
    out.setflags(write=False)
    return out


def _ranks(x: np.ndarray) -> tuple[np.ndarray, bool]:
    """Mid-ranks (1-based) and whether any tie occurred."""
    order = np.argsort(x, kind="stable")
    ranks = np.empty(x.size, dtype=np.float64)
    ranks[order] = np.arange(1, x.size + 1, dtype=np.float64)
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    ties = bool(np.any(counts > 1))
    if ties:  # each tied group gets the mean of the ranks it spans
        sums = np.bincount(inverse, weights=ranks)
        ranks = (sums / counts)[inverse]
    return ranks, ties


def mann_whitney(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> tuple[float, str]:
    """Two-sided p-value of the Mann-Whitney U test that ``a`` and ``b`` come from the same distribution.

    Exact (the full null distribution of the rank sum) for at most EXACT_MAX_STEPS values without ties,
    else the normal approximation with tie and continuity corrections. Returns (p, method).
    """
    xa = np.asarray(a, dtype=np.float64)
    xb = np.asarray(b, dtype=np.float64)
    if xa.ndim != 1 or xb.ndim != 1 or xa.size < 1 or xb.size < 1:
        raise ValueError("need at least one value on each side")
    if not (np.all(np.isfinite(xa)) and np.all(np.isfinite(xb))):
        raise ValueError("values must be finite numbers")
    m, n = xb.size, xa.size
    total = m + n
    ranks, ties = _ranks(np.concatenate([xa, xb]))
    w = float(ranks[n:].sum())  # rank sum of b
    if not ties and total <= EXACT_MAX_STEPS:
        counts = _rank_sum_counts(m, total)
        ways = float(counts.sum())
        w_int = round(w)
        low = float(counts[: w_int + 1].sum()) / ways
        high = float(counts[w_int:].sum()) / ways
        return min(1.0, 2 * min(low, high)), "Mann-Whitney, exact"
    mean = m * (total + 1) / 2
    _, tie_counts = np.unique(np.concatenate([xa, xb]), return_counts=True)
    tie_term = float(np.sum(tie_counts.astype(np.float64) ** 3 - tie_counts)) / (total * (total - 1))
    var = m * n / 12 * ((total + 1) - tie_term)
    if var <= 0:  # every value equal: nothing to tell apart
        return 1.0, "Mann-Whitney, normal approximation"
    z = max(0.0, abs(w - mean) - 0.5) / math.sqrt(var)
    return min(1.0, math.erfc(z / math.sqrt(2))), "Mann-Whitney, normal approximation"


def halves_test(step_times_s: Sequence[float] | np.ndarray) -> HalvesTest:
    """Compare the first half of the steps with the second; needs at least 2 steps."""
    x = as_samples(step_times_s)
    half = x.size // 2
    first, second = x[:half], x[x.size - half :]
    p, method = mann_whitney(first, second)
    shift = statistics.median(second.tolist()) / statistics.median(first.tolist()) - 1
    return HalvesTest(n_first=half, n_second=half, shift=shift, p_value=p, method=method)
