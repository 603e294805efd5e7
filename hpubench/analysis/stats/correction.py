"""Multiple-comparison corrections of p-values (Holm, Benjamini-Hochberg), for a gate over many cells.

One job, apart from the tests that make the p-values: a correction sees only the family of p-values.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

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
