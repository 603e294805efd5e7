"""The run's live display: a progress bar on a terminal, plain lines in a log; never a busy parent.

Rich's default progress refreshes from its own thread ten times a second. On a small machine that thread
competes with the cell being measured, so here nothing refreshes on its own: the bar is redrawn on the
launcher's events only, which come about once a second while a cell runs (``hpubench.run.cellwatch``) and at
each cell's start and end. When the console is not a terminal (CI logs, files) rich draws nothing until
the end, so a plain line says where the running cell is, at most once per ``plain_every_s``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import TracebackType

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from hpubench import numfmt
from hpubench.run.eta import (
    PHASE_MEASURED,
    PHASE_WARMUP,
    PLAIN_EVERY_S,
    RunEstimate,
    StepProgress,
    Throttle,
    run_left_s,
)
from hpubench.run.events import Event


def format_duration(seconds: float) -> str:
    """A rounded duration for people: "8 s", "3 min 20 s", "2 h 05 min"."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        m, r = divmod(s, 60)
        return f"{m} min {r:02d} s" if m < 10 else f"{m} min"
    h, r = divmod(s, 3600)
    return f"{h} h {r // 60:02d} min"


def describe(progress: StepProgress, run_left: float | None = None) -> str:
    """One line: "step 12/40, 812 samples/s, cell ~3 s left, run ~4 min left (estimate)"."""
    p = progress
    if p.detail:
        head = p.detail
    elif p.phase == PHASE_MEASURED:
        head = f"step {p.done}/{p.planned}" if p.planned is not None else f"step {p.done}"
    elif p.phase == PHASE_WARMUP:
        head = f"warm-up step {p.done}/{p.planned}"
    else:
        head = f"setting up ({format_duration(p.elapsed_s)})"
    parts = [head]
    if p.samples_per_s is not None:
        parts.append(f"{numfmt.count(p.samples_per_s)} samples/s")
    if p.cell_left_s is not None:
        parts.append(f"cell ~{format_duration(p.cell_left_s)} left")
    if run_left is not None:
        parts.append(f"run ~{format_duration(run_left)} left (estimate)")
    return ", ".join(parts)


class LiveView:
    """``on_event`` is the launcher's callback. ``to_run`` is how many cells will run (not skipped), for
    the run's time left; ``estimate``, the cells' pre-flight estimates, makes that figure far better
    than the mean of the finished cells; ``plain_every_s`` spaces the plain lines (tests shorten it)."""

    def __init__(
        self,
        console: Console,
        total: int,
        to_run: int,
        plain_every_s: float = PLAIN_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
        estimate: RunEstimate | None = None,
        deadline_clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.console = console
        self.estimate = estimate
        self.deadline_clock = deadline_clock  # the clock of estimate.deadline
        self._index = 0  # the plan position of the latest event
        self.total = total
        self.to_run = to_run
        self.clock = clock
        self.throttle = Throttle(plain_every_s)
        self.finished_wall_s: list[float] = []  # each cell's start to end as the parent saw it
        self._cell_t0: float | None = None
        self.ran = 0  # cells that ran or were kept from an earlier run
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=False,
            auto_refresh=False,  # redrawn on events only: see the module's docstring
        )
        self.task = self.progress.add_task("starting", total=total)

    def __enter__(self) -> LiveView:
        self.progress.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.progress.stop()

    def run_left_s(self, progress: StepProgress | None = None) -> float | None:
        """The run's time left, estimated; ``progress`` is the running cell's, if one runs."""
        running = progress is not None
        if self.estimate is not None:
            now = self.deadline_clock()
            if progress is None:
                return self.estimate.left_s(self._index, running=False, now=now)
            return self.estimate.left_s(self._index, True, progress.elapsed_s, progress.cell_left_s, now)
        after = max(0, self.to_run - self.ran - (1 if running else 0))
        if progress is None:
            return run_left_s(after, self.finished_wall_s)
        return run_left_s(after, self.finished_wall_s, progress.elapsed_s, progress.cell_left_s)

    def on_event(self, ev: Event) -> None:
        self._index = ev.index
        if ev.kind == "started":
            self._cell_t0 = self.clock()
            self.throttle.restart(self._cell_t0)
            text = f"running {ev.key}"
            self.progress.update(self.task, description=escape(text))
        elif ev.kind == "progress" and ev.progress is not None:
            text = f"{ev.key}: {describe(ev.progress, self.run_left_s(ev.progress))}"
            self.progress.update(self.task, description=escape(text))
            if not self.console.is_terminal and self.throttle.ready(self.clock()):
                self.console.print(f"[{ev.index}/{ev.total}] {escape(text)}", highlight=False)
        else:
            if ev.kind in ("finished", "kept"):
                self.ran += 1
            if ev.kind == "finished" and self._cell_t0 is not None:
                self.finished_wall_s.append(self.clock() - self._cell_t0)
                if self.estimate is not None:
                    self.estimate.finished(ev.index, self.finished_wall_s[-1])
                self._cell_t0 = None
            text = f"{ev.kind} {ev.key}"
            left = self.run_left_s()
            if left is not None and self.ran < self.to_run:
                text += f", run ~{format_duration(left)} left (estimate)"
            self.progress.update(self.task, advance=1, description=escape(text))
        self.progress.refresh()
