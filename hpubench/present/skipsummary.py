"""Skipped cells summed up by reason: "177 skipped" says nothing, "96: lazy mode exists only on HPU" does.

Pure. ``--matrix full`` on a CPU machine plans 240 cells and skips 177; listing all 177 buries the 63
that run. Reasons that differ only in their figures (a memory estimate per cell) count as one reason,
shown by its first instance with "e.g.".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_FIGURES = re.compile(r"\d+(?:[.,]\d+)*")


@dataclass(frozen=True)
class SkipGroup:
    count: int
    reason: str  # the first instance's text
    varies: bool  # the group's reasons differ in their figures


def group_skips(reasons: Sequence[str]) -> list[SkipGroup]:
    """Reasons grouped with digits masked, the largest group first (ties: first seen first)."""
    order: dict[str, list[str]] = {}
    for r in reasons:
        order.setdefault(_FIGURES.sub("#", r), []).append(r)
    groups = [SkipGroup(len(rs), rs[0], len(set(rs)) > 1) for rs in order.values()]
    return sorted(groups, key=lambda g: -g.count)


def summary_lines(reasons: Sequence[str]) -> list[str]:
    """One line per reason, "  96 skipped: <reason>"; nothing when nothing is skipped."""
    width = len(str(max((g.count for g in group_skips(reasons)), default=0)))
    return [
        f"{g.count:>{width}} skipped: {'e.g. ' if g.varies else ''}{g.reason}" for g in group_skips(reasons)
    ]
