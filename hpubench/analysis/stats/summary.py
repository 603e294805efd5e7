"""Pure statistics for step times: summaries, and throughput with a bootstrap confidence interval.

No torch and no I/O, so every number a report or a gate shows can be checked by a direct unit test.
Intervals come from a seeded percentile bootstrap: step times are skewed (a slow step now and then, a
long right tail), so normal-theory intervals would be too narrow on one side; the bootstrap makes no
such assumption, and a fixed seed makes a record's interval reproducible from its stored step times.

The gate's statistics live beside this module, one topic each: run locations with standard errors
(``locations``), tests of a ratio between two sides (``ratiotests``), Student's t distribution
(``studentt``), multiple-comparison corrections (``correction``) and pytest-benchmark's summary of a sample
(``benchmarkstats``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

# Above this many resampled values per batch the bootstrap runs in chunks, so a long run (say 100k steps)
# does not allocate n_boot * n floats at once. Chunking never changes results for a given seed.
_MAX_CHUNK_ELEMENTS = 2_000_000
# Below ~100 resamples the 2.5% / 97.5% tails are estimated from a handful of values: not an interval.
_MIN_BOOT = 100
# The defaults every stored interval was made with; reports quote them, so they live in one place.
DEFAULT_CONFIDENCE = 0.95
DEFAULT_N_BOOT = 2000
DEFAULT_SEED = 0


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


def as_samples(values: Sequence[float] | np.ndarray, what: str = "step times") -> np.ndarray:
    """``values`` as a flat float array of at least 2 positive finite numbers; ValueError naming them."""
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"{what} must be a flat sequence, got shape {x.shape}")
    if x.size < 2:
        # A spread from one sample is undefined; a silent 0 would read as "perfectly stable".
        raise ValueError(f"need at least 2 {what}, got {x.size}")
    if not np.all(np.isfinite(x)) or np.any(x <= 0):
        raise ValueError(f"{what} must be positive finite numbers")
    return x


def check_confidence(confidence: float) -> None:
    """ValueError unless ``confidence`` is a level strictly between 0 and 1 (shared by every interval)."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence}")


def _check_ci_args(confidence: float, n_boot: int) -> None:
    check_confidence(confidence)
    if n_boot < _MIN_BOOT:
        raise ValueError(f"n_boot must be at least {_MIN_BOOT}, got {n_boot}")


def describe(step_times_s: Sequence[float] | np.ndarray) -> StepStats:
    """Summary statistics; percentiles use linear interpolation (numpy's default), so they match numpy."""
    x = as_samples(step_times_s)
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
    units_per_step: float | Sequence[float],
    confidence: float = DEFAULT_CONFIDENCE,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
) -> Estimate:
    """Units (samples, tokens) per second over the measured steps, with a bootstrap CI.

    The value is the ratio of totals, ``sum(units) / sum(times)``, not the mean of per-step rates
    ``units / t_i``. The ratio of totals is what a training run actually delivers (work done over
    wall time). The mean of rates weights each step equally regardless of its duration, so fast steps
    count for more than the time they took; by Jensen's inequality it always reads high (E[1/T] >= 1/E[T]),
    and more so the noisier the steps.

    ``units_per_step`` is one figure for every step, or one per step where steps differ (a trainer's
    variable batches): the interval then resamples (units, time) pairs, so a short step carries its own
    work. Either way it resamples whole steps with replacement and recomputes the same ratio: a seeded
    percentile bootstrap, identical for identical inputs and seed.
    """
    x = as_samples(step_times_s)
    each = np.asarray(units_per_step, dtype=float)
    if each.ndim == 0:
        each = np.full(x.size, float(each))
    if each.shape != x.shape or not np.all(np.isfinite(each)) or np.any(each <= 0):
        raise ValueError(
            f"units_per_step must be a positive finite number, or one per step, got {units_per_step}"
        )
    _check_ci_args(confidence, n_boot)
    n = x.size
    value = float(each.sum()) / float(x.sum())
    rng = np.random.default_rng(seed)
    boot = np.concatenate(
        [each[idx].sum(axis=1) / x[idx].sum(axis=1) for idx in _resample_batches(rng, n, n_boot)]
    )
    lo, hi = _interval(boot, value, confidence)
    return Estimate(
        value=value,
        lo=lo,
        hi=hi,
        confidence=confidence,
        method=f"percentile bootstrap over steps (n_boot={n_boot}, seed={seed})",
    )


# ---- repetitions: one cell measured in several independent runs (``hpubench run --repeat N``) ----------

Repeats = Sequence[Sequence[float] | np.ndarray]


def _repeat_arrays(repeats: Repeats, what: str) -> list[np.ndarray]:
    if len(repeats) == 0:
        raise ValueError(f"need at least one repetition of {what}")
    return [as_samples(r, what) for r in repeats]


def repeats_mean(repeats: Repeats) -> float:
    """Mean step time of a cell over its repetitions: each repetition counts once, however long it ran."""
    return float(np.mean([x.mean() for x in _repeat_arrays(repeats, "step times")]))


def _boot_repeat_means(reps: list[np.ndarray], n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """``n_boot`` resampled values of :func:`repeats_mean`, by a two-level bootstrap.

    Steps are resampled within every repetition, then the repetitions themselves are resampled, so the
    interval carries run-to-run variation (a different process, allocator state, clocks) and not only
    step-to-step noise. With a single repetition this is the ordinary bootstrap over steps.
    """
    per_repeat = [
        np.concatenate([x[idx].mean(axis=1) for idx in _resample_batches(rng, x.size, n_boot)]) for x in reps
    ]
    boot = np.stack(per_repeat, axis=1)  # (n_boot, repetitions)
    if len(reps) > 1:
        boot = np.take_along_axis(boot, rng.integers(0, len(reps), size=boot.shape), axis=1)
    return boot.mean(axis=1)


def bootstrap_repeats_throughput(
    repeats: Repeats,
    units_per_step: float,
    confidence: float = DEFAULT_CONFIDENCE,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
) -> Estimate:
    """Units per second of a cell over all its repetitions: ``units_per_step / repeats_mean``.

    With one repetition this is exactly :func:`throughput` (same value, same resamples for the same
    seed), so a cell run once reads the same in a report as in its own record.
    """
    reps = _repeat_arrays(repeats, "step times")
    if not np.isfinite(units_per_step) or units_per_step <= 0:
        raise ValueError(f"units_per_step must be a positive finite number, got {units_per_step}")
    _check_ci_args(confidence, n_boot)
    value = float(units_per_step) / repeats_mean(reps)
    boot = float(units_per_step) / _boot_repeat_means(reps, n_boot, np.random.default_rng(seed))
    lo, hi = _interval(boot, value, confidence)
    return Estimate(
        value=value,
        lo=lo,
        hi=hi,
        confidence=confidence,
        method=(
            f"percentile bootstrap over {len(reps)} repetition(s), then steps within each "
            f"(n_boot={n_boot}, seed={seed})"
        ),
    )
