"""Pure statistics for step times: summaries, throughput with a confidence interval, ratio CIs.

No torch and no I/O, so every number a report or a gate shows can be checked by a direct unit test.
Intervals come from a seeded percentile bootstrap: step times are skewed (a slow step now and then, a
long right tail), so normal-theory intervals would be too narrow on one side; the bootstrap makes no
such assumption, and a fixed seed makes a record's interval reproducible from its stored step times.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

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


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence}")


def _check_ci_args(confidence: float, n_boot: int) -> None:
    _check_confidence(confidence)
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
    units_per_step: float,
    confidence: float = DEFAULT_CONFIDENCE,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
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
    x = as_samples(step_times_s)
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


# ---- regression gating: run locations with standard errors, Welch t tests, multiple comparisons --------
#
# A gate needs p-values that stay meaningful far out in the tail (a 200-cell matrix under Holm tests each
# cell at alpha / 200) and that respect how step times really behave: autocorrelated within a run (a
# stretch of slow steps when the machine is busy) and drifting between runs. So a run's typical step
# time comes from *batch means* (contiguous batches are close to independent even when single steps are
# not), several runs combine through their between-run spread, and two sides are compared with a Welch t
# test on the log scale (ratios become differences; a 10% slowdown is the same distance at any speed).
# The t tail is exact for normal batch/run means and is computed in closed form, so tiny p-values cost
# nothing, unlike a bootstrap that would need millions of resamples to resolve p = 0.0001.

LOCATIONS: tuple[str, ...] = ("mean", "median", "min")


@dataclass(frozen=True)
class LogLocation:
    """The natural log of a typical step time (per unit of work), its standard error and degrees of freedom.

    ``spread`` is the standard deviation of *one run's* value: for a single run its own standard error,
    for several runs their between-run spread. A side measured once can borrow it from a side measured
    several times, because run-to-run variation belongs to the cell and the machine, not to one side.
    """

    value: float
    se: float
    df: float
    runs: int
    spread: float
    method: str


def batch_length(step_times_s: Sequence[float] | np.ndarray) -> int:
    """Steps per batch for batch means: long enough that neighbouring batches are nearly independent.

    At least sqrt(n) (the classic choice, balancing batch independence against the number of batches)
    and at least three integrated autocorrelation times, estimated from the lag-1 autocorrelation of the
    log step times as for an AR(1) series, (1 + r) / (1 - r); but never fewer than 3 batches. A run on a
    busy machine has long stretches of slow steps (r of 0.8 and more), and sqrt(n) batches then stay
    correlated and understate the error several-fold; with the autocorrelation time the p-values stay
    within about 2x of nominal even there (checked by simulation in the unit tests).
    """
    x = np.log(as_samples(step_times_s))
    n = x.size
    x = x - x.mean()
    denom = float(np.dot(x, x))
    r = float(np.dot(x[:-1], x[1:])) / denom if denom > 0 else 0.0
    r = min(max(r, 0.0), 0.95)
    tau = (1 + r) / (1 - r)
    b = max(math.isqrt(n), math.ceil(3 * tau))
    return max(1, min(b, n // 3))


def run_location(
    step_times_s: Sequence[float] | np.ndarray, statistic: str = "mean", units_per_step: float = 1.0
) -> LogLocation:
    """One run: log of its typical step time per unit of work, with a batch-means standard error.

    The measured steps are cut into ``k = n // b`` contiguous batches of ``b`` steps
    (:func:`batch_length`; the earliest ``n - k*b`` steps, closest to the warm-up, are left out). Each
    batch gives one value (its mean, or its median for ``statistic="median"``), the location is the
    average of those values, and its standard error is their spread over sqrt(k), taken to the log scale
    with the delta method; the t reference has ``k - 1`` degrees of freedom. Treating single steps as
    independent would shrink the error by the autocorrelation the steps have; batches absorb most of it.

    ``statistic="mean"`` matches what training delivers (throughput is work over total time);
    ``"median"`` ignores the occasional descheduled step that a shared machine adds, at the price of not
    seeing a change that only adds rare stalls; ``"min"`` (the fastest step of each batch) is the
    uncontended cost of a step, by far the steadiest figure on a busy machine, and sees a change only if
    it slows every step. Between runs, :func:`run_value` summarises a run instead.
    """
    if statistic not in LOCATIONS:
        raise ValueError(f"statistic must be one of {', '.join(LOCATIONS)}, got {statistic!r}")
    x = as_samples(step_times_s)
    if not math.isfinite(units_per_step) or units_per_step <= 0:
        raise ValueError(f"units_per_step must be a positive finite number, got {units_per_step}")
    b = batch_length(x)
    k = x.size // b
    batches = x[x.size - k * b :].reshape(k, b)
    if statistic == "mean":
        values = batches.mean(axis=1)
    elif statistic == "median":
        values = np.median(batches, axis=1)
    else:
        values = batches.min(axis=1)
    loc = float(values.mean())
    se = float(values.std(ddof=1)) / math.sqrt(k) / loc
    return LogLocation(
        value=math.log(loc / units_per_step),
        se=se,
        df=float(k - 1),
        runs=1,
        spread=se,
        method=f"{statistic} of {x.size} steps, batch means ({k} batches of {b})",
    )


def run_value(
    step_times_s: Sequence[float] | np.ndarray, statistic: str = "mean", units_per_step: float = 1.0
) -> float:
    """One run as one number, for comparisons between runs: log seconds per unit of work.

    "mean" and "median" are those of all measured steps; "min" is the fastest step. On a machine whose
    speed changes for seconds at a time, the batches' minima still move with it, while the fastest step
    comes from whichever stretch ran at full speed. It has no within-run error of its own, which is why
    :func:`run_location` (batch means, with an error) serves when a side ran only once.
    """
    if statistic not in LOCATIONS:
        raise ValueError(f"statistic must be one of {', '.join(LOCATIONS)}, got {statistic!r}")
    if not math.isfinite(units_per_step) or units_per_step <= 0:
        raise ValueError(f"units_per_step must be a positive finite number, got {units_per_step}")
    x = as_samples(step_times_s)
    v = (
        float(x.mean())
        if statistic == "mean"
        else float(np.median(x))
        if statistic == "median"
        else float(x.min())
    )
    return math.log(v / units_per_step)


def combine_runs(runs: Sequence[LogLocation]) -> LogLocation:
    """Several independent runs of one cell: their average, with a standard error from between runs.

    The error is the larger of the between-run one (spread of the run values over sqrt(R)) and the one
    the runs' own noise implies (root mean square of their errors over sqrt(R)): with two or three runs
    the between-run spread can come out near zero by luck, and a run can never be more precise than its
    own steps allow. The t reference keeps ``R - 1`` degrees of freedom either way, whose heavy tails are
    what makes a test from three runs honest.
    """
    if not runs:
        raise ValueError("need at least one run")
    if len(runs) == 1:
        return runs[0]
    r = len(runs)
    vals = np.array([run.value for run in runs])
    within = math.sqrt(float(np.mean([run.se**2 for run in runs])))
    spread = max(float(vals.std(ddof=1)), within)
    return LogLocation(
        value=float(vals.mean()),
        se=spread / math.sqrt(r),
        df=float(r - 1),
        runs=r,
        spread=spread,
        method=f"{r} runs, between-run spread",
    )


def borrow_spread(single: LogLocation, other: LogLocation) -> LogLocation:
    """A side measured once, given the run-to-run spread measured on the other side.

    One run's value varies by the between-run spread, not only by its steps' noise; without this a single
    current run against a repeated baseline would be judged with its within-run error alone, and any
    drift between runs would read as significant.
    """
    if single.runs != 1 or other.runs < 2 or other.spread <= single.se:
        return single
    return LogLocation(
        value=single.value,
        se=other.spread,
        df=other.df,
        runs=1,
        spread=other.spread,
        method=f"{single.method}; run-to-run spread from the other side's {other.runs} runs",
    )


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
        _check_confidence(confidence)
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


# ---- a permutation test between runs --------------------------------------------------------------------
# Runs on a shared machine do not vary like a normal sample: most land close together and a few are slowed
# as a whole (seconds-long stretches in which the host runs the VM slower), never sped up. One such run
# inflates a t test's variance, and a rank test counts it as slower than every run of the other side; either
# can then miss a real change. Comparing the fastest half of each side's runs, with a permutation test for the
# significance, ignores such runs on either side and needs no assumption about how the rest vary.

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
        _check_confidence(confidence)
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


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b), by its continued fraction (DLMF 8.17.22, Lentz's method)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    if x > (a + 1) / (a + b + 2):  # the fraction converges fast only below this point; use symmetry
        return 1.0 - _incomplete_beta(b, a, 1.0 - x)
    log_front = (
        a * math.log(x)
        + b * math.log1p(-x)
        - math.log(a)
        - (math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b))
    )
    tiny = 1e-300
    f = c = 1.0  # the fraction 1 + d1/(1 + d2/(1 + ...)), evaluated forwards
    dd = 0.0
    for j in range(1, 1000):
        m = j // 2
        if j % 2:
            coef = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        else:
            coef = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        dd = 1.0 + coef * dd
        dd = 1.0 / (dd if abs(dd) > tiny else tiny)
        c = 1.0 + coef / c
        c = c if abs(c) > tiny else tiny
        delta = c * dd
        f *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return math.exp(log_front) / f


def student_t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with ``df`` (any real > 0, or inf for the normal) degrees of freedom."""
    if math.isnan(t) or not df > 0:
        raise ValueError(f"need a number t and df > 0, got t={t}, df={df}")
    if math.isinf(df) or df > 1e7:
        return 0.5 * math.erfc(t / math.sqrt(2))
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    tail = 0.5 * _incomplete_beta(df / 2, 0.5, df / (df + t * t))
    return tail if t >= 0 else 1.0 - tail


def _student_t_pdf(t: float, df: float) -> float:
    if math.isinf(df) or df > 1e7:
        return math.exp(-t * t / 2) / math.sqrt(2 * math.pi)
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_c - (df + 1) / 2 * math.log1p(t * t / df))


def student_t_ppf(q: float, df: float) -> float:
    """The ``q`` quantile of Student's t: safeguarded Newton on :func:`student_t_sf` (bisection fallback)."""
    if not 0 < q < 1:
        raise ValueError(f"q must be strictly between 0 and 1, got {q}")
    if q == 0.5:
        return 0.0
    if q < 0.5:
        return -student_t_ppf(1 - q, df)
    target = 1 - q  # the upper tail we want, solved as sf(t) = target for t > 0
    lo, hi = 0.0, 1.0
    while student_t_sf(hi, df) > target:
        lo, hi = hi, hi * 2
        if hi > 1e12:
            return math.inf
    t = (lo + hi) / 2
    for _ in range(200):
        f = student_t_sf(t, df) - target  # decreasing in t
        if f > 0:
            lo = t
        else:
            hi = t
        pdf = _student_t_pdf(t, df)
        step = f / pdf if pdf > 0 else math.inf
        nxt = t + step  # Newton: sf' = -pdf
        if not lo < nxt < hi:
            nxt = (lo + hi) / 2
        if abs(nxt - t) <= 1e-13 * max(1.0, abs(t)) or hi - lo <= 1e-13 * hi:
            return nxt
        t = nxt
    return t


CORRECTIONS: tuple[str, ...] = ("holm", "bh", "none")


def adjust_pvalues(pvalues: Sequence[float], method: str = "holm") -> list[float]:
    """Multiple-comparison adjusted p-values, in the input order; compare each with the plain alpha.

    ``holm`` controls the family-wise error rate (the chance of *any* false alarm) and is uniformly more
    powerful than Bonferroni; ``bh`` (Benjamini-Hochberg) controls the false discovery rate, which equals
    the family-wise rate when nothing changed, and finds more when many cells really did change.
    """
    if method not in CORRECTIONS:
        raise ValueError(f"correction must be one of {', '.join(CORRECTIONS)}, got {method!r}")
    p = np.asarray(pvalues, dtype=np.float64)
    if p.ndim != 1 or np.any(~np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise ValueError("p-values must be a flat sequence of numbers in [0, 1]")
    m = p.size
    if m == 0 or method == "none":
        return [float(v) for v in p]
    order = np.argsort(p, kind="stable")
    ranked = p[order]
    if method == "holm":
        adj = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * ranked))
    else:
        adj = np.minimum.accumulate(np.minimum(1.0, m * ranked / np.arange(1, m + 1))[::-1])[::-1]
    out = np.empty(m)
    out[order] = adj
    return [float(v) for v in out]


# ---- pytest-benchmark's summary of a sample ------------------------------------------------------------


def _quartiles(x: Sequence[float]) -> tuple[float, float]:
    """Q1 and Q3 as pytest-benchmark defines them, so exported figures read the same in its tools.

    Even n: medians of the lower and upper halves. Odd n = 4m+1 or 4m+3: interpolations weighted 1/4
    and 3/4 between neighbouring order statistics (the "method 3" quartiles).
    """
    n = len(x)
    if n == 1:
        return float(x[0]), float(x[0])
    if n % 2 == 0:
        return statistics.median(x[: n // 2]), statistics.median(x[n // 2 :])
    m, r = divmod(n, 4)
    if r == 1:
        return 0.25 * x[m - 1] + 0.75 * x[m], 0.75 * x[3 * m] + 0.25 * x[3 * m + 1]
    return 0.75 * x[m] + 0.25 * x[m + 1], 0.25 * x[3 * m + 1] + 0.75 * x[3 * m + 2]


def pytest_benchmark_stats(times_s: Sequence[float] | np.ndarray) -> dict[str, float | int | str]:
    """The ``stats`` block of a pytest-benchmark JSON benchmark, computed from step times (one round each).

    Field meanings follow pytest-benchmark: ``ld15iqr`` is the lowest value within 1.5 IQR below Q1,
    ``hd15iqr`` its upper counterpart, ``outliers`` is
    "<beyond 1 std>;<beyond 1.5 IQR>", ``ops`` is rounds per second of total time.
    """
    x = sorted(float(v) for v in as_samples(times_s))
    n = len(x)
    mean = math.fsum(x) / n
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in x) / (n - 1))
    q1, q3 = _quartiles(x)
    iqr = q3 - q1
    lo_fence, hi_fence = q1 - 1.5 * iqr, q3 + 1.5 * iqr
    iqr_out = sum(v < lo_fence or v > hi_fence for v in x)
    std_out = sum(v < mean - std or v > mean + std for v in x)
    total = math.fsum(x)
    return {
        "min": x[0],
        "max": x[-1],
        "mean": mean,
        "stddev": std,
        "rounds": n,
        "median": statistics.median(x),
        "iqr": iqr,
        "q1": q1,
        "q3": q3,
        "iqr_outliers": iqr_out,
        "stddev_outliers": std_out,
        "outliers": f"{std_out};{iqr_out}",
        "ld15iqr": next(v for v in x if v >= lo_fence),
        # The documented meaning, "highest datum within 1.5 IQR of Q3", which pytest-benchmark computes
        # from 5.3 on (5.2 returned the first value above the fence when there was one).
        "hd15iqr": max(v for v in x if v <= hi_fence),
        "ops": n / total,
        "total": total,
        "iterations": 1,
    }
