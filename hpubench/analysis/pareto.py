"""The Pareto front of cost against throughput: the configurations worth buying.

Its own module because it is plain geometry on (cost, throughput) points, used by the report's charts and
tables whatever the prices came from. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats on both cost (lower) and throughput (higher).

    These are the only configurations worth buying: anything off the front is both slower and dearer
    than something on it. Returned in order of increasing cost; exact duplicates are all kept.
    """
    order = sorted(range(len(points)), key=lambda i: (points[i][0], -points[i][1]))
    front: list[int] = []
    best = -math.inf
    last: tuple[float, float] | None = None
    for i in order:
        thr = points[i][1]
        if thr > best or points[i] == last:
            front.append(i)
            best = max(best, thr)
            last = points[i]
    return front
