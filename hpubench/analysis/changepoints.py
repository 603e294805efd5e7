"""Where a cell's throughput stepped across saved baselines (``hpubench history``): change points with a
stated false-alarm rate. Pure.

The gate between two neighbouring baselines misses a regression that came in small steps, each under the
threshold or lost in noise; a level shift is plain once several baselines sit on each side of it. Each
baseline is one value: the mean over its runs of the gate's per-run statistic (log seconds per sample).

The method: binary segmentation, each split tested by permutation.
- The statistic of a series is the largest two-sample t over every split point leaving at least
  ``MIN_SIDE`` baselines on each side (pooled within-segment variance).
- Its p-value is the share of relabellings of the *baselines* (whole baselines, not runs: baselines taken
  on different days differ by more than one day's runs do, and that must not read as a step) whose
  statistic is as large, over ``PERMUTATIONS`` seeded random orders (add-one, so the test is exact).
- A split with p <= alpha is a change point, and each side is searched again the same way.

The false-alarm rate: where nothing changed, the baselines are exchangeable, so the first test rejects with
probability at most alpha, and nothing else is ever tested: the chance of marking any step in a series
without one is at most alpha (per cell; across C cells at most C x alpha are expected), whatever the shape
of the noise. A step is shown when it is also past the gate's threshold (a drop past it, or the mirror-image
gain), as the gate asks of a regression. The price is power on short histories: a permutation test of n
baselines cannot give a p-value below about 1 / C(n, n/2), so at alpha 0.01 it needs 9 baselines before it
can mark anything; a shorter history says so instead of staying silent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hpubench.analysis.stats.studentt import student_t_ppf

MIN_SIDE = 2  # baselines on each side of a split: one baseline cannot tell a step from an outlier
PERMUTATIONS = 4999
SEED = 20261128  # fixed: the same baselines always give the same change points


@dataclass(frozen=True)
class Shift:
    """A step between baselines ``since`` and ``at`` (indices into the series; those between, if any, did
    not measure the cell)."""

    since: int
    at: int
    change: float  # throughput after / before - 1, over the segments on either side
    interval: tuple[float, float]  # of change, at the confidence given
    p_value: float
    before: int  # baselines in the segment before ...
    after: int  # ... and after
    past_threshold: bool  # a drop past the threshold or the mirror-image gain: shown as a step


@dataclass(frozen=True)
class Detection:
    shifts: tuple[Shift, ...]  # every significant split, in order; ``shown`` filters by the threshold
    note: str | None  # why nothing could have been found, where that is so

    @property
    def shown(self) -> tuple[Shift, ...]:
        return tuple(s for s in self.shifts if s.past_threshold)


def method_text(alpha: float, threshold: float, confidence: float) -> str:
    """How the steps were found and how often one is marked by chance, as every output states it."""
    return (
        f"binary segmentation, each split a permutation test over whole baselines at alpha {alpha:g} "
        f"(in a series without a step, the chance of marking one is at most {alpha:g} per cell); shown past "
        f"the {threshold:.0%} threshold, with a {confidence:.0%} interval over the baselines on either side"
    )


def min_baselines(alpha: float) -> int:
    """The fewest baselines whose permutation test can reach ``alpha`` (the best split: the middle one)."""
    n = 2 * MIN_SIDE
    while 1 / math.comb(n, n // 2) > alpha:
        n += 1
    return n


def _split_stats(x: np.ndarray) -> np.ndarray:
    """Rows of series in; per row, |t| at each split point k (MIN_SIDE <= k <= n - MIN_SIDE): the two-sample
    t of the first k values against the rest, with the variance pooled within the two segments."""
    n = x.shape[-1]
    k = np.arange(MIN_SIDE, n - MIN_SIDE + 1)
    c1 = np.cumsum(x, axis=-1)
    c2 = np.cumsum(x * x, axis=-1)
    total, total2 = c1[..., -1:], c2[..., -1:]
    left, left2 = c1[..., k - 1], c2[..., k - 1]
    right, right2 = total - left, total2 - left2
    m1, m2 = left / k, right / (n - k)
    ss = (left2 - k * m1 * m1) + (right2 - (n - k) * m2 * m2)
    var = np.maximum(ss, 0.0) / (n - 2)
    diff = np.abs(m1 - m2)
    se = np.sqrt(var * (1 / k + 1 / (n - k)))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(se > 0, diff / se, np.where(diff > 1e-12, np.inf, 0.0))


def _test(x: np.ndarray, rng: np.random.Generator) -> tuple[int, float]:
    """(split point, permutation p-value) of the best split of ``x``."""
    stats = _split_stats(x[None, :])[0]
    observed = float(stats.max())
    perms = np.argsort(rng.random((PERMUTATIONS, x.size)), axis=1)
    null = _split_stats(x[perms]).max(axis=-1)
    p = (1 + int(np.sum(null >= observed * (1 - 1e-9)))) / (PERMUTATIONS + 1)
    return MIN_SIDE + int(np.argmax(stats)), p


def _splits(
    x: np.ndarray, lo: int, hi: int, alpha: float, rng: np.random.Generator, out: dict[int, float]
) -> None:
    if hi - lo < 2 * MIN_SIDE:
        return
    split, p = _test(x[lo:hi], rng)
    if p > alpha:
        return
    out[lo + split] = p
    _splits(x, lo, lo + split, alpha, rng, out)
    _splits(x, lo + split, hi, alpha, rng, out)


def _size(before: np.ndarray, after: np.ndarray, confidence: float) -> tuple[float, tuple[float, float]]:
    """Throughput change after / before - 1 and its Welch interval (values are log seconds per sample)."""
    d = float(before.mean() - after.mean())  # log throughput ratio
    va, vb = before.var(ddof=1) / before.size, after.var(ddof=1) / after.size
    se = math.sqrt(va + vb)
    if se == 0:
        return math.exp(d) - 1, (math.exp(d) - 1, math.exp(d) - 1)
    df = (va + vb) ** 2 / (va**2 / (before.size - 1) + vb**2 / (after.size - 1))
    q = student_t_ppf(1 - (1 - confidence) / 2, max(1.0, df))
    return math.exp(d) - 1, (math.exp(d - q * se) - 1, math.exp(d + q * se) - 1)


def detect(
    values: Sequence[float | None], alpha: float, threshold: float, confidence: float = 0.95
) -> Detection:
    """Change points of one cell's series (one log value per baseline, None where it was not measured)."""
    index = [i for i, v in enumerate(values) if v is not None and math.isfinite(v)]
    x = np.array([values[i] for i in index], dtype=np.float64)
    need = min_baselines(alpha)
    if x.size < need:
        return Detection(
            (), f"{x.size} baseline(s) measured it: a step can be shown at alpha {alpha:g} from {need}"
        )
    found: dict[int, float] = {}
    _splits(x, 0, x.size, alpha, np.random.default_rng(SEED), found)
    bounds = [0, *sorted(found), x.size]
    shifts = []
    for j in range(1, len(bounds) - 1):
        before, after = x[bounds[j - 1] : bounds[j]], x[bounds[j] : bounds[j + 1]]
        change, interval = _size(before, after, confidence)
        past = -change > threshold if change < 0 else change > 1 / (1 - threshold) - 1
        shifts.append(
            Shift(
                index[bounds[j] - 1],
                index[bounds[j]],
                change,
                interval,
                found[bounds[j]],
                before.size,
                after.size,
                past,
            )
        )
    return Detection(tuple(shifts), None)
