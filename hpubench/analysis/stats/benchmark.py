"""pytest-benchmark's ``stats`` block computed from step times, for the pytest-benchmark JSON export.

Separate from :mod:`hpubench.analysis.stats.summary`: these are pytest-benchmark's definitions (its
quartiles, its outlier counts), taken from pytest-benchmark's own :class:`pytest_benchmark.stats.Stats`
so exported figures read the same in its tools, not ours. Where ``Stats``' arithmetic or definition has
changed between the pytest-benchmark versions this project accepts, or would change figures this project
has always exported, the field is computed here instead (see :func:`pytest_benchmark_stats`).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence

import numpy as np

# pytest_benchmark.stats imports pytest_benchmark.utils (stdlib only) but neither pytest nor pluggy, so it
# is imported here, not deferred: only the export (itself deferred by the CLI) imports this module.
from pytest_benchmark.stats import Stats

from hpubench.analysis.stats.summary import as_samples


def pytest_benchmark_stats(times_s: Sequence[float] | np.ndarray) -> dict[str, float | int | str]:
    """The ``stats`` block of a pytest-benchmark JSON benchmark, computed from step times (one round each).

    Field meanings follow pytest-benchmark: ``ld15iqr`` is the lowest value within 1.5 IQR below Q1,
    ``hd15iqr`` its upper counterpart, ``outliers`` is "<beyond 1 std>;<beyond 1.5 IQR>", ``ops`` is rounds
    per second of total time.

    From ``Stats``: min, max, rounds, median, q1, q3, iqr, iqr_outliers, ld15iqr (the same arithmetic in
    every pytest-benchmark from 4.0 on). Here: total as an exactly rounded sum (``math.fsum``; ``Stats``
    sums in step order) and ops from it; mean and stddev from that exact sum (``Stats`` uses
    ``statistics.mean`` / ``statistics.stdev``, which can differ in the last digit), and the stddev
    outliers from those; hd15iqr with its documented meaning (see below).
    """
    stats = Stats()
    for v in as_samples(times_s).tolist():  # Python floats: the JSON export writes them with repr
        stats.update(v)
    x = stats.sorted_data
    n = stats.rounds
    total = math.fsum(x)
    mean = total / n
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in x) / (n - 1))
    std_out = sum(v < mean - std or v > mean + std for v in x)
    iqr_out = stats.iqr_outliers
    return {
        "min": stats.min,
        "max": stats.max,
        "mean": mean,
        "stddev": std,
        "rounds": n,
        "median": stats.median,
        "iqr": stats.iqr,
        "q1": stats.q1,
        "q3": stats.q3,
        "iqr_outliers": iqr_out,
        "stddev_outliers": std_out,
        "outliers": f"{std_out};{iqr_out}",
        "ld15iqr": stats.ld15iqr,
        # The documented meaning, "highest datum within 1.5 IQR of Q3", which Stats computes from
        # pytest-benchmark 5.3 on (up to 5.2 it returned the first value above the fence when there was one).
        "hd15iqr": x[bisect_right(x, stats.q3 + 1.5 * stats.iqr) - 1],
        "ops": n / total,
        "total": total,
        "iterations": 1,  # one step per round (pytest-benchmark's Metadata adds it beside Stats' fields)
    }
