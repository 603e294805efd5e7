"""Energy over a window from a cumulative counter that advances in steps, and how far to trust it.

A device's energy counter need not advance continuously: on an H100 (measured on 2026-11-26, README) the
NVML total-energy counter advanced every 100 ms (94.5-105.3 ms) by ~53 J under load. Read at the window's
two edges, such a counter is wrong by up to one step at each end: over a 1.2 s window, simulated from
2 ms polls of that board, the edge difference was off by -10% to +9%.

Where the polls resolve the steps (some polls between two steps see no change), the figure is taken
between the first and the last step seen inside the window, whose times are known to within one poll:
over the same 1.2 s windows, polled every 20 ms, off by -3.7% to +3.2%. Where they do not (every poll saw
a change), the edge difference is kept and the bound says the counter may step as coarsely as the polls.

Pure: no device library, no I/O.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class CounterWindow:
    """The counter's energy over a window, scaled to the whole window when taken between two steps."""

    energy_j: float
    resolution_pct: float  # the error the counter's steps and the polling allow, in % of the figure
    steps_resolved: bool  # True: taken between two of the counter's steps (the polls saw them)
    step_period_s: float | None  # median time between the counter's steps, where resolved


def _changes(points: Sequence[tuple[float, float]]) -> list[int]:
    return [i for i in range(1, len(points)) if points[i][1] > points[i - 1][1]]


def counter_window(points: Sequence[tuple[float, float]]) -> CounterWindow | None:
    """``points``: (time s, counter J) in time order, the first and last at the window's edges.

    None when the counter did not advance over the window.
    """
    if len(points) < 2:
        return None
    (t_first, e_first), (t_last, e_last) = points[0], points[-1]
    duration = t_last - t_first
    if duration <= 0 or e_last <= e_first:
        return None
    changes = _changes(points)
    a, b = changes[0], changes[-1]
    quiet_polls = (b - a) - (len(changes) - 1)  # polls between the first and last step that saw none
    if len(changes) >= 3 and quiet_polls > 0:
        span = points[b][0] - points[a][0]
        rate = (points[b][1] - points[a][1]) / span
        # Each step happened within the poll gap before the poll that saw it.
        slack = max(points[a][0] - points[a - 1][0], points[b][0] - points[b - 1][0])
        times = [points[i][0] for i in changes]
        period = statistics.median(t1 - t0 for t0, t1 in itertools.pairwise(times))
        return CounterWindow(rate * duration, 100.0 * slack / span, True, period)
    # Steps not resolved: each edge may be off by up to one step, which may be as long as a poll gap.
    gap = max(t1 - t0 for (t0, _), (t1, _) in itertools.pairwise(points))
    return CounterWindow(e_last - e_first, 100.0 * gap / duration, False, None)
