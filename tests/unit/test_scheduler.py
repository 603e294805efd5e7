"""The scheduler (hpubench.run.scheduler) with executors that run no process: which executor gets which cell,
timeouts, skips an executor reports, records before events, and every executor aborted on an interrupt."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from hpubench.plan.cell import Cell, PlannedCell
from hpubench.run.events import Event
from hpubench.run.executors.base import CellOutcome, CellRequest, Executor
from hpubench.run.scheduler import Scheduler
from hpubench.store.record import CellResult
from hpubench.store.rundir import ResultStore


class _Canned(Executor):
    """Answers each cell with an ok record (or ``outcome`` when given); remembers what it was asked."""

    def __init__(self, outcome: CellOutcome | None = None, raise_on: str | None = None) -> None:
        self.requests: list[CellRequest] = []
        self.prepared: list[tuple[int, int]] = []
        self.aborted = 0
        self.outcome = outcome
        self.raise_on = raise_on

    def prepare(self, planned: Sequence[PlannedCell], repeat: int) -> None:
        self.prepared.append((len(planned), repeat))

    def run(self, request: CellRequest) -> CellOutcome:
        self.requests.append(request)
        if request.cell.workload == self.raise_on:
            raise KeyboardInterrupt
        if self.outcome is not None:
            return self.outcome
        return CellOutcome(CellResult(request.cell, "ok", step_times_s=(0.1,), wall_s=1.0), 0.01)

    def abort(self) -> None:
        self.aborted += 1


def test_cells_of_several_processes_go_to_the_distributed_executor(tmp_path: Path) -> None:
    local, dist = _Canned(), _Canned()
    plan = [PlannedCell(Cell("mlp")), PlannedCell(Cell("gpt", devices=2)), PlannedCell(Cell("bert"))]
    Scheduler(local, dist).run(plan, ResultStore(tmp_path), 60.0, repeat=2)
    assert [r.cell.workload for r in local.requests] == ["mlp", "bert", "mlp", "bert"]
    assert [(r.cell.workload, r.repeat, r.position) for r in dist.requests] == [("gpt", 0, 1), ("gpt", 1, 1)]
    assert local.prepared == dist.prepared == [(3, 2)]


def test_adjust_shortens_the_timeout_and_never_lengthens_it(tmp_path: Path) -> None:
    local = _Canned()
    limits = {0: 5.0, 1: 500.0}

    def adjust(position: int, rep: int, pc: PlannedCell) -> tuple[PlannedCell, float]:
        return pc, limits[position]

    plan = [PlannedCell(Cell("mlp")), PlannedCell(Cell("gpt"))]
    Scheduler(local, _Canned()).run(plan, ResultStore(tmp_path), 60.0, adjust=adjust)
    assert [r.timeout_s for r in local.requests] == [5.0, 60.0]


def test_an_executors_skip_is_reported_as_one_and_recorded_on_the_first_pass_only(tmp_path: Path) -> None:
    cell = Cell("gpt", devices=2)
    skip = CellOutcome(CellResult(cell, "skipped", reason="node 0 moved on"), as_skip=True)
    events: list[Event] = []
    store = ResultStore(tmp_path)
    results = Scheduler(_Canned(), _Canned(skip)).run(
        [PlannedCell(cell)], store, 60.0, on_event=events.append, repeat=3
    )
    assert [e.kind for e in events] == ["started", "skipped"] * 3
    assert [(r.status, r.repeat) for r in results] == [("skipped", 0)]
    assert [(r.status, r.repeat) for r in store.load()] == [("skipped", 0)]


def test_a_record_is_stored_before_its_finished_event(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    seen: list[int] = []

    def on_event(ev: Event) -> None:
        if ev.kind == "finished":
            seen.append(len(store.load()))

    Scheduler(_Canned(), _Canned()).run(
        [PlannedCell(Cell("mlp")), PlannedCell(Cell("gpt"))], store, 60.0, on_event=on_event
    )
    assert seen == [1, 2]


def test_an_interrupt_aborts_every_executor_and_keeps_the_records_so_far(tmp_path: Path) -> None:
    local, dist = _Canned(raise_on="gpt"), _Canned()
    store = ResultStore(tmp_path)
    plan = [PlannedCell(Cell("mlp")), PlannedCell(Cell("gpt")), PlannedCell(Cell("bert"))]
    with pytest.raises(KeyboardInterrupt):
        Scheduler(local, dist).run(plan, store, 60.0)
    assert (local.aborted, dist.aborted) == (1, 1)
    assert [r.cell.workload for r in store.load()] == ["mlp"]
    assert [r.cell.workload for r in local.requests] == ["mlp", "gpt"]
