"""The run loop: the plan's cells in order, each to its executor under its timeout, every record stored the
moment it exists, events for whoever watches.

Order. With ``repeat`` N > 1 the whole plan runs N times, one pass after another, and each record carries
its pass as ``CellResult.repeat``: interleaving the passes (rather than running one cell N times back to
back) spreads slow drift of the machine over every cell evenly, so repetitions measure between-run
variance instead of one moment of it. Skipped cells are recorded once.

Resume. A (cell, repeat) that already has an ok or failed record is not run again (its record is kept
as is); skipped cells are always re-derived from the plan. The store only ever holds complete records,
so a run killed at any point resumes with exactly the missing cells.

Timeouts. Every cell gets the run's timeout, or less where ``adjust`` (``hpubench.run.preflight.BudgetRun``)
says so; the executor enforces it on the cell's processes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from hpubench.analysis.numerics import judged_failure
from hpubench.errors import UsageError
from hpubench.measure.profile import trace_relpath
from hpubench.plan.cell import Cell, PlannedCell
from hpubench.plan.runoptions import RunOptions
from hpubench.run.cellwatch import CellWatch
from hpubench.run.cluster import ClusterEnv
from hpubench.run.eta import StepProgress
from hpubench.run.events import Event
from hpubench.run.executors.base import CellRequest, Executor
from hpubench.run.hostcondition import needs_fresh_process
from hpubench.run.logcap import cap_log
from hpubench.run.stepfeed import feed_path
from hpubench.store.record import STATUS_FAILED, STATUS_OK, STATUS_SKIPPED, CellResult
from hpubench.store.rundir import ResultStore

Adjust = Callable[[int, int, PlannedCell], tuple[PlannedCell, float]]


def cell_options(options: RunOptions | None, key: str, repeat: int) -> RunOptions | None:
    """The run's options for one cell: its own trace file, so repetitions do not overwrite each other."""
    if options is None or options.profile is None:
        return options
    rel = trace_relpath(key)
    if repeat:
        rel = rel[: -len(".json")] + f".r{repeat}.json"
    return replace(options, trace_relpath=rel)


def check_run_args(timeout_s: float, repeat: int) -> None:
    if timeout_s <= 0:
        raise UsageError(f"timeout must be positive, got {timeout_s}")
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise UsageError(f"repeat must be a whole number >= 1, got {repeat!r}")


@dataclass(frozen=True)
class Turn:
    """One turn of the run: plan position (0-based), pass, and 1-based index among all steps."""

    position: int
    repeat: int
    index: int


def order(count: int, repeat: int) -> Iterator[Turn]:
    """The whole plan once per pass, passes one after another."""
    for rep in range(repeat):
        for i in range(count):
            yield Turn(i, rep, rep * count + i + 1)


@dataclass(frozen=True)
class _Running:
    """One turn of the run under way, with where its record and its events go."""

    turn: Turn
    total: int
    pc: PlannedCell
    previous: CellResult | None  # its record from an earlier run (resume), if any
    store: ResultStore
    emit: Callable[[Event], None]

    def emit_as(
        self,
        kind: str,
        status: str | None = None,
        wall_s: float | None = None,
        reason: str | None = None,
        dispatch_s: float | None = None,
    ) -> None:
        self.emit(
            Event(kind, self.turn.index, self.total, self.pc.cell.key, status, wall_s, reason, dispatch_s)
        )

    def on_progress(self, progress: StepProgress) -> None:
        self.emit(Event("progress", self.turn.index, self.total, self.pc.cell.key, progress=progress))

    def record(self, result: CellResult) -> None:
        if result != self.previous:
            self.store.append(result)


class Scheduler:
    """Runs a plan through two executors: ``local`` for single-process cells, ``dist`` for the others.

    In a multi-node run (``cluster``) a node other than 0 runs only the cells spanning it, and records
    nothing of the others (node 0 keeps the records).
    """

    def __init__(
        self,
        local: Executor,
        dist: Executor,
        cluster: ClusterEnv | None = None,
        fresh: Executor | None = None,
    ) -> None:
        self.local = local
        self.dist = dist
        self.cluster = cluster
        self.fresh = fresh or local  # single-process cells that need a fresh interpreter (plain condition)

    def run(
        self,
        planned: list[PlannedCell],
        store: ResultStore,
        timeout_s: float,
        resume: bool = False,
        on_event: Callable[[Event], None] | None = None,
        repeat: int = 1,
        options: RunOptions | None = None,
        adjust: Adjust | None = None,
    ) -> list[CellResult]:
        """Run the plan in order, appending each record to ``store`` as soon as it exists.

        ``adjust(position, repeat, planned)``, when given, is asked just before each cell and may change
        its step counts or skip it, and shorten its timeout. ``options`` (profile, telemetry, memory
        timeline, loader pass) go to every worker unchanged, except that each cell gets its own trace
        file name; they never change a cell or its key. On any exception (KeyboardInterrupt included)
        every executor is aborted (the running cell's processes killed) and the exception propagates.
        """
        check_run_args(timeout_s, repeat)
        emit = on_event or (lambda _e: None)
        existing = {r.run_id: r for r in store.load()} if resume else {}
        total = len(planned) * repeat
        results: list[CellResult] = []
        for executor in self._executors():
            executor.prepare(planned, repeat)
        try:
            for turn in order(len(planned), repeat):
                pc, cell_timeout = planned[turn.position], timeout_s
                if adjust is not None:
                    pc, limit = adjust(turn.position, turn.repeat, pc)
                    cell_timeout = min(timeout_s, limit)
                now = _Running(turn, total, pc, existing.get((pc.cell.key, turn.repeat)), store, emit)
                result = self._run_turn(now, cell_timeout, options)
                if result is not None:
                    results.append(result)
        except BaseException:
            for executor in self._executors():
                executor.abort()
            raise
        return results

    def _executors(self) -> list[Executor]:
        return list({id(e): e for e in (self.local, self.fresh, self.dist)}.values())

    def executor_for(self, cell: Cell) -> Executor:
        """Several processes: the distributed executor; a plain-condition cell: a fresh interpreter."""
        if cell.world_size > 1:
            return self.dist
        return self.fresh if needs_fresh_process(cell) else self.local

    def _run_turn(self, now: _Running, timeout_s: float, options: RunOptions | None) -> CellResult | None:
        """One turn of the plan; its record, or None where this pass records nothing for it."""
        cell, rep = now.pc.cell, now.turn.repeat
        if self.cluster is not None and not self.cluster.takes_part(cell):
            # Node > 0 and a cell that does not span it: node 0's alone, nothing to record.
            now.emit_as(
                "skipped", STATUS_SKIPPED, reason=f"node 0 runs it, not node {self.cluster.node_rank}"
            )
            return None
        if not now.pc.runnable:
            result = None
            if rep == 0:
                result = CellResult(cell, STATUS_SKIPPED, reason=now.pc.skip_reason)
                now.record(result)  # a resumed run need not repeat an identical skip
            now.emit_as("skipped", STATUS_SKIPPED, reason=now.pc.skip_reason)
            return result
        previous = now.previous
        if previous is not None and previous.status in (STATUS_OK, STATUS_FAILED):
            now.emit_as("kept", previous.status, previous.wall_s, previous.reason)
            return previous
        now.emit_as("started")
        log = now.store.log_path(cell.key, rep)
        # The step feed is followed on node 0 alone: rank 0 streams the steps, and it runs there.
        node0 = self.cluster is None or self.cluster.node_rank == 0
        executor = self.executor_for(cell)
        with CellWatch(feed_path(log) if node0 else None, now.on_progress) as watch:
            request = CellRequest(
                cell, log, timeout_s, cell_options(options, cell.key, rep), watch.path, rep, now.turn.position
            )
            outcome = executor.run(request)
        result = judged_failure(replace(watch.keep_partial(outcome.result), repeat=rep))
        cap_log(log)  # the cell has ended: its reason already read the tail
        if outcome.as_skip:
            if rep == 0:
                now.record(result)
            now.emit_as("skipped", result.status, result.wall_s, result.reason)
            return result if rep == 0 else None
        now.record(result)  # stored before "finished" is said: the event's wall time includes the append
        now.emit_as("finished", result.status, result.wall_s, result.reason, outcome.dispatch_s)
        return result
