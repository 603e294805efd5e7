"""What a run tells its watchers (progress bar, budget, ETA) while it goes: one ``Event`` per step of the
plan, from ``hpubench.run.scheduler``."""

from __future__ import annotations

from dataclasses import dataclass

from hpubench.run.eta import StepProgress


@dataclass(frozen=True)
class Event:
    """Progress of a run, for a progress bar: ``index`` is the 1-based position in the plan.

    "progress" events come about once a second while a cell runs (from another thread than the
    others: ``hpubench.run.cellwatch``), with where the cell is in ``progress``.
    """

    kind: str  # "started" | "progress" | "finished" | "skipped" | "kept" (resumed: earlier record kept)
    index: int
    total: int
    key: str
    status: str | None = None
    wall_s: float | None = None
    reason: str | None = None
    dispatch_s: float | None = None  # request sent -> run_cell entered in the child: our fixed cost
    progress: StepProgress | None = None
