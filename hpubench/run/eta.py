"""Progress inside a running cell and the time left, as the live display states them. Pure: no I/O.

Every figure here is an estimate from what has run so far, and the text says so: a cell's time left is
its measured steps left times its mean step time (the passes after the measured steps, loader and
profile, are not in it). The run's comes from the pre-flight estimates of the cells still to run, scaled
by how the finished cells ran against theirs (:class:`RunEstimate`): cells differ by orders of magnitude,
so the mean of the finished ones says little about the rest. Without estimates it falls back to the cells
still to run times the mean wall time of the finished ones (:func:`run_left_s`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hpubench.run.stepfeed import PHASE_MEASURED, PHASE_WARMUP, FeedState

RECENT_STEPS = 20  # "current" throughput: over the last this many measured steps
PLAIN_EVERY_S = 10.0  # without a terminal, a line about the running cell at most this often


@dataclass(frozen=True)
class StepProgress:
    """Where a running cell is. ``done``/``planned`` count steps of ``phase`` ("starting" before any)."""

    phase: str
    done: int
    planned: int | None
    samples_per_s: float | None  # over the last RECENT_STEPS measured steps (rank 0's, global samples)
    cell_left_s: float | None  # measured steps left x mean measured step time
    elapsed_s: float  # since the launcher started the cell
    detail: str | None = None  # shown instead of "step n/N" (adaptive steps: the interval's width)


def step_progress(feed: FeedState, elapsed_s: float, recent: int = RECENT_STEPS) -> StepProgress:
    """The running cell's progress from what its step feed holds so far."""
    header = feed.header
    if feed.measured_s and header is not None:
        times = feed.measured_s
        last = times[-recent:]
        rate = header.samples_per_step * len(last) / sum(last) if sum(last) > 0 else None
        planned = header.steps
        left = None
        if planned is not None:
            left = max(0, planned - len(times)) * (sum(times) / len(times))
        return StepProgress(PHASE_MEASURED, len(times), planned, rate, left, elapsed_s, feed.detail)
    if feed.warmup_s and header is not None:
        return StepProgress(
            PHASE_WARMUP, len(feed.warmup_s), header.warmup_steps, None, None, elapsed_s, feed.detail
        )
    return StepProgress("starting", 0, None, None, None, elapsed_s, feed.detail)


def run_left_s(
    cells_after: int,
    finished_wall_s: Sequence[float],
    cell_elapsed_s: float | None = None,
    cell_left_s: float | None = None,
) -> float | None:
    """Cells still to run after the current one x the mean wall time of finished cells, plus the current
    cell's time left. Before any cell finished, the current cell's projected wall time stands in for
    the mean; None when nothing is known yet."""
    if cells_after < 0:
        raise ValueError(f"cells_after must be >= 0, got {cells_after}")
    projected = None
    if cell_elapsed_s is not None and cell_left_s is not None:
        projected = cell_elapsed_s + cell_left_s
    mean = sum(finished_wall_s) / len(finished_wall_s) if finished_wall_s else projected
    if mean is None:
        return None
    if cell_left_s is not None:
        current = cell_left_s
    elif cell_elapsed_s is not None:
        current = max(0.0, mean - cell_elapsed_s)
    else:
        current = 0.0
    return current + cells_after * mean


# How far the finished cells' actual/estimated ratio may scale the rest (as the budget's re-planning).
SCALE_BOUNDS = (0.25, 20.0)


class RunEstimate:
    """The run's time left from per-cell estimates. ``per_index[i]`` is the estimated wall time of the
    cell at plan position ``i + 1`` (the launcher's 1-based ``Event.index``, repeats included), None
    for a skipped cell or one without an estimate."""

    def __init__(self, per_index: Sequence[float | None], deadline: float | None = None) -> None:
        self.per_index = list(per_index)
        self.deadline = deadline  # a time the run ends by (a budget), on the caller's clock; None: none
        self._est_done = 0.0
        self._actual_done = 0.0

    def finished(self, index: int, wall_s: float) -> None:
        """The cell at ``index`` ran in ``wall_s``: later figures scale by actual / estimated."""
        est = self._at(index)
        if est is not None and est > 0:
            self._est_done += est
            self._actual_done += wall_s

    def scale(self) -> float:
        if self._est_done <= 0:
            return 1.0
        lo, hi = SCALE_BOUNDS
        return min(hi, max(lo, self._actual_done / self._est_done))

    def left_s(
        self,
        index: int,
        running: bool,
        cell_elapsed_s: float | None = None,
        cell_left_s: float | None = None,
        now: float | None = None,
    ) -> float:
        """Time left after (``running`` False) or including (True) the cell at ``index``; never past the
        deadline when there is one (``now`` on its clock)."""
        s = self.scale()
        after = sum(e for e in self.per_index[index:] if e is not None) * s
        if not running:
            left = after
        elif cell_left_s is not None:
            left = cell_left_s + after
        else:
            est = self._at(index)
            left = (max(0.0, est * s - (cell_elapsed_s or 0.0)) if est is not None else 0.0) + after
        if self.deadline is not None and now is not None:
            left = min(left, max(0.0, self.deadline - now))
        return left

    def _at(self, index: int) -> float | None:
        return self.per_index[index - 1] if 1 <= index <= len(self.per_index) else None


class Throttle:
    """Lets something through at most once per ``every_s`` of the given clock; ``restart`` makes the next
    one wait a full interval (a new cell prints its first line after ``every_s``, not at once)."""

    def __init__(self, every_s: float) -> None:
        if every_s <= 0:
            raise ValueError(f"every_s must be positive, got {every_s}")
        self.every_s = every_s
        self._last: float | None = None

    def restart(self, now: float) -> None:
        self._last = now

    def ready(self, now: float) -> bool:
        if self._last is not None and now - self._last < self.every_s:
            return False
        self._last = now
        return True
