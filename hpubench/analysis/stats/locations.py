"""Run locations for regression gating: a run's typical step time on the log scale, with its standard error.

A gate needs p-values that stay meaningful far out in the tail (a 200-cell matrix under Holm tests each
cell at alpha / 200) and that respect how step times really behave: autocorrelated within a run (a
stretch of slow steps when the machine is busy) and drifting between runs. So a run's typical step
time comes from *batch means* (contiguous batches are close to independent even when single steps are
not), several runs combine through their between-run spread, and two sides are compared on the log scale
(ratios become differences; a 10% slowdown is the same distance at any speed) by :mod:`ratiotests`.

Separate from :mod:`hpubench.analysis.stats.summary` (summaries and throughput of one record): these
figures exist
only to be compared. Pure: no torch, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hpubench.analysis.stats.summary import as_samples

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
