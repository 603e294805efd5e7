"""pytest-benchmark's ``stats`` block computed from step times, for the pytest-benchmark JSON export.

Separate from :mod:`hpubench.analysis.stats.summary`: these are pytest-benchmark's definitions (its
quartiles, its
outlier counts), kept word for word so exported figures read the same in its tools, not ours.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

import numpy as np

from hpubench.analysis.stats.summary import as_samples


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
