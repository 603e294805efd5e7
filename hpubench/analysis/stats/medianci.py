"""A distribution-free interval for a median: the order statistics a binomial count puts around it.

Why: a benchmark that pairs two sides round by round (``benchmarks/overhead.py``: hpubench against a bare
loop) needs to say whether their ratio is shown to lie near 1, not only what its median was; per-round
ratios on a shared machine are skewed by stalls, so an interval that assumes no distribution is the honest
one. Pure: no torch, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import comb


@dataclass(frozen=True)
class MedianInterval:
    """The sample median and ``[low, high]``, which holds the true median with ``coverage`` (at least the
    confidence asked, exactly computable; the widest, min-max, where too few values allow no more)."""

    median: float
    low: float
    high: float
    coverage: float
    n: int

    def within(self, low: float, high: float) -> bool:
        """The whole interval inside ``[low, high]``: the rounds show the median there."""
        return low <= self.low and self.high <= high

    def clear_of(self, low: float, high: float) -> bool:
        """The whole interval past one side of ``[low, high]``: the rounds show the median outside it."""
        return self.high < low or self.low > high


def _below(n: int, k: int) -> float:
    """P(Binomial(n, 1/2) <= k)."""
    return sum(comb(n, i) for i in range(k + 1)) / 2**n


def median_interval(values: Sequence[float], confidence: float = 0.95) -> MedianInterval:
    """``[x_(k), x_(n+1-k)]`` for the largest k whose coverage ``1 - 2 P(B <= k-1)`` reaches
    ``confidence``; with fewer values than that needs, min-max and the coverage it has."""
    if not values:
        raise ValueError("median_interval needs at least one value")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence}")
    xs = sorted(values)
    n = len(xs)
    mid = n // 2
    median = xs[mid] if n % 2 else (xs[mid - 1] + xs[mid]) / 2
    k = 1
    while k + 1 <= (n + 1) // 2 and 1 - 2 * _below(n, k) >= confidence:
        k += 1
    return MedianInterval(median, xs[k - 1], xs[n - k], 1 - 2 * _below(n, k - 1), n)
