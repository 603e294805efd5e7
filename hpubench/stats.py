"""Pure statistics for step times: summaries, throughput with a confidence interval, ratio CIs.

No torch and no I/O, so every number a report or a gate shows can be checked by a direct unit test.
Intervals come from a seeded percentile bootstrap: step times are skewed (a slow step now and then, a
long right tail), so normal-theory intervals would be too narrow on one side; the bootstrap makes no
such assumption, and a fixed seed makes a record's interval reproducible from its stored step times.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

# Above this many resampled values per batch the bootstrap runs in chunks, so a long run (say 100k steps)
# does not allocate n_boot * n floats at once. Chunking never changes results for a given seed.
_MAX_CHUNK_ELEMENTS = 2_000_000
# Below ~100 resamples the 2.5% / 97.5% tails are estimated from a handful of values: not an interval.
_MIN_BOOT = 100

Stat = Callable[..., np.ndarray]


@dataclass(frozen=True)
class StepStats:
    """Summary of measured step times, in seconds."""

    n: int
    mean: float
    std: float  # sample standard deviation (ddof=1)
    min: float
    max: float
    p50: float
    p90: float
    p99: float
    cv: float  # coefficient of variation: std / mean


@dataclass(frozen=True)
class Estimate:
    """A point estimate with a confidence interval; ``method`` says how the interval was made."""

    value: float
    lo: float
    hi: float
    confidence: float
    method: str

    def contains(self, x: float) -> bool:
        return self.lo <= x <= self.hi

    @property
    def rel_halfwidth(self) -> float:
        """Half the interval's width relative to the value: 0.02 reads as "±2%"."""
        return (self.hi - self.lo) / 2 / abs(self.value) if self.value else float("inf")


def _as_samples(values: Sequence[float] | np.ndarray, what: str = "step times") -> np.ndarray:
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"{what} must be a flat sequence, got shape {x.shape}")
    if x.size < 2:
        # A spread from one sample is undefined; a silent 0 would read as "perfectly stable".
        raise ValueError(f"need at least 2 {what}, got {x.size}")
    if not np.all(np.isfinite(x)) or np.any(x <= 0):
        raise ValueError(f"{what} must be positive finite numbers")
    return x


def _check_ci_args(confidence: float, n_boot: int) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence}")
    if n_boot < _MIN_BOOT:
        raise ValueError(f"n_boot must be at least {_MIN_BOOT}, got {n_boot}")


def describe(step_times_s: Sequence[float] | np.ndarray) -> StepStats:
    """Summary statistics; percentiles use linear interpolation (numpy's default), so they match numpy."""
    x = _as_samples(step_times_s)
    mean = float(x.mean())
    std = float(x.std(ddof=1))
    p50, p90, p99 = (float(v) for v in np.percentile(x, [50, 90, 99]))
    return StepStats(
        n=int(x.size),
        mean=mean,
        std=std,
        min=float(x.min()),
        max=float(x.max()),
        p50=p50,
        p90=p90,
        p99=p99,
        cv=std / mean,
    )


def _resample_batches(rng: np.random.Generator, n: int, n_boot: int) -> Iterator[np.ndarray]:
    """Index arrays of shape (rows, n) covering n_boot resamples in total, drawn in a fixed order."""
    rows = max(1, _MAX_CHUNK_ELEMENTS // n)
    done = 0
    while done < n_boot:
        k = min(rows, n_boot - done)
        yield rng.integers(0, n, size=(k, n))
        done += k


def _interval(samples: np.ndarray, value: float, confidence: float) -> tuple[float, float]:
    """The percentile interval of the bootstrap samples, widened to contain the point estimate."""
    alpha = 1.0 - confidence
    lo, hi = (float(v) for v in np.quantile(samples, [alpha / 2, 1 - alpha / 2]))
    # The point estimate can fall a rounding error outside (all-equal samples) or, for tiny n, a
    # resampling-noise step outside; an interval that excludes its own estimate is never useful.
    return min(lo, value), max(hi, value)


def throughput(
    step_times_s: Sequence[float] | np.ndarray,
    units_per_step: float,
    confidence: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> Estimate:
    """Units (samples, tokens) per second over the measured steps, with a bootstrap CI.

    The value is the ratio of totals, ``units_per_step * n / sum(times)``, not the mean of per-step rates
    ``units_per_step / t_i``. The ratio of totals is what a training run actually delivers (work done over
    wall time). The mean of rates weights each step equally regardless of its duration, so fast steps
    count for more than the time they took; by Jensen's inequality it always reads high (E[1/T] >= 1/E[T]),
    and more so the noisier the steps.

    The interval resamples whole steps with replacement and recomputes the same ratio: a seeded
    percentile bootstrap, identical for identical inputs and seed.
    """
    x = _as_samples(step_times_s)
    if not np.isfinite(units_per_step) or units_per_step <= 0:
        raise ValueError(f"units_per_step must be a positive finite number, got {units_per_step}")
    _check_ci_args(confidence, n_boot)
    n = x.size
    work = float(units_per_step) * n
    value = work / float(x.sum())
    rng = np.random.default_rng(seed)
    boot = np.concatenate([work / x[idx].sum(axis=1) for idx in _resample_batches(rng, n, n_boot)])
    lo, hi = _interval(boot, value, confidence)
    return Estimate(
        value=value,
        lo=lo,
        hi=hi,
        confidence=confidence,
        method=f"percentile bootstrap over steps (n_boot={n_boot}, seed={seed})",
    )


def bootstrap_ratio_ci(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    stat: Stat = np.mean,
    confidence: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> Estimate:
    """``stat(b) / stat(a)`` with a CI from resampling ``a`` and ``b`` independently.

    Made for comparing two result sets (a = baseline step times, b = current): the two runs are
    independent measurements, so each is resampled on its own rather than in pairs. ``stat`` is a
    numpy-style reducer taking ``axis`` (``np.mean``, ``np.median``); the mean is the default because a
    ratio of mean step times is exactly the inverse ratio of throughputs. Values must be positive (step
    times or rates), which keeps the ratio defined in every resample.
    """
    xa = _as_samples(a, "values in a")
    xb = _as_samples(b, "values in b")
    _check_ci_args(confidence, n_boot)
    value = float(stat(xb)) / float(stat(xa))
    rng = np.random.default_rng(seed)
    rows = max(1, _MAX_CHUNK_ELEMENTS // max(xa.size, xb.size))
    parts = []
    done = 0
    while done < n_boot:
        k = min(rows, n_boot - done)
        ia = rng.integers(0, xa.size, size=(k, xa.size))
        ib = rng.integers(0, xb.size, size=(k, xb.size))
        parts.append(np.asarray(stat(xb[ib], axis=1)) / np.asarray(stat(xa[ia], axis=1)))
        done += k
    lo, hi = _interval(np.concatenate(parts), value, confidence)
    name = getattr(stat, "__name__", "stat")
    return Estimate(
        value=value,
        lo=lo,
        hi=hi,
        confidence=confidence,
        method=(
            f"percentile bootstrap of {name}(b)/{name}(a), independent resampling "
            f"(n_boot={n_boot}, seed={seed})"
        ),
    )
