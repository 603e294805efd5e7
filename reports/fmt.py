"""Number formatting for the HTML: the page forms of :mod:`hpubench.numfmt` (the one formatter
family of every rendering), and the jinja2 filters that name them.

Every formatter maps a missing value (None, NaN) to an en dash, so "not measured" and "zero" can never
be confused.
"""

from __future__ import annotations

from hpubench.numfmt import MISSING, ci, duration, mib, missing, money, ms, num, pct, rank_mib, ratio

__all__ = [
    "FILTERS",
    "MISSING",
    "ci",
    "duration",
    "mib",
    "missing",
    "money",
    "ms",
    "num",
    "pct",
    "rank_mib",
    "ratio",
]

FILTERS = {
    "num": num,
    "ci": ci,
    "money": money,
    "pct": pct,
    "ratio": ratio,
    "mib": mib,
    "ms": ms,
    "duration": duration,
}
