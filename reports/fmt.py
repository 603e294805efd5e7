"""Number formatting for the HTML: enough digits to read, never so many that noise looks like signal.

Every formatter maps a missing value (None, NaN) to an en dash, so "not measured" and "zero" can never
be confused.
"""

from __future__ import annotations

import math
from typing import Any

MISSING = "–"


def missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def num(x: Any) -> str:
    """Three significant figures at most for small values, whole numbers with separators for large."""
    if missing(x):
        return MISSING
    x = float(x)
    a = abs(x)
    if a >= 1000:
        return f"{x:,.0f}"
    if a >= 100:
        return f"{x:.1f}"
    if a >= 1:
        return f"{x:.2f}"
    if a == 0:
        return "0"
    return f"{x:.3g}"


def ci(lo: Any, hi: Any) -> str:
    return "" if missing(lo) or missing(hi) else f"[{num(lo)}, {num(hi)}]"


def money(x: Any) -> str:
    if missing(x):
        return MISSING
    return f"${x:,.2f}" if abs(float(x)) >= 0.1 else f"${num(x)}"


def pct(x: Any, digits: int = 1) -> str:
    return MISSING if missing(x) else f"{float(x) * 100:.{digits}f}%"


def ratio(x: Any) -> str:
    return MISSING if missing(x) else f"{float(x):.3g}×"


def mib(n: Any) -> str:
    return MISSING if missing(n) else f"{float(n) / 2**20:,.0f}"


def rank_mib(peaks: Any) -> str:
    """Each rank's peak memory in MiB ("per rank: 120 / 118"), or "" for a one-process cell."""
    if not isinstance(peaks, (list, tuple)) or len(peaks) < 2:
        return ""
    return "per rank: " + " / ".join(mib(p) for p in peaks)


def ms(seconds: Any) -> str:
    return MISSING if missing(seconds) else num(float(seconds) * 1e3)


def duration(seconds: Any) -> str:
    """Human units for a time to process a workload: 41 s, 12.5 min, 3.2 h, 4.1 days."""
    if missing(seconds):
        return MISSING
    s = float(seconds)
    if s < 60:
        return f"{num(s)} s"
    if s < 3600:
        return f"{s / 60:.1f} min"
    if s < 86400 * 2:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.1f} days"


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
