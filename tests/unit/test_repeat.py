"""Repetitions (`hpubench run --repeat N`): record identity, store dedupe, interleaved passes, resume
(the real scheduler, hpubench.run.scheduler, with an executor that runs no process)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hpubench.analysis.frame import to_dataframe
from hpubench.errors import UsageError
from hpubench.plan.cell import Cell, PlannedCell
from hpubench.run.executors.base import CellOutcome, CellRequest, Executor
from hpubench.run.scheduler import Scheduler
from hpubench.store.readback import load_results
from hpubench.store.record import CellResult
from hpubench.store.rundir import ResultStore


def _ok(cell: Cell, repeat: int = 0, wall: float = 1.0) -> CellResult:
    return CellResult(cell, "ok", step_times_s=(0.1, 0.1), wall_s=wall, repeat=repeat)


def test_repeat_is_part_of_the_record_not_the_cell() -> None:
    a, b = _ok(Cell("mlp"), 0), _ok(Cell("mlp"), 3)
    assert a.key == b.key and a.run_id != b.run_id
    assert CellResult.from_dict(b.to_dict()).repeat == 3
    old = a.to_dict()
    del old["repeat"]  # a record written before repetitions existed
    assert CellResult.from_dict(old).repeat == 0
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="repeat"):
            CellResult(Cell("mlp"), "ok", repeat=bad)  # type: ignore[arg-type]


def test_store_keeps_every_repetition_and_the_latest_of_each(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    cell = Cell("mlp")
    store.append(_ok(cell, 0, wall=1.0))
    store.append(_ok(cell, 1, wall=2.0))
    store.append(_ok(cell, 0, wall=3.0))  # a re-run of repetition 0 replaces it
    store.append(CellResult(Cell("gpt"), "failed", reason="x", repeat=1))
    loaded = store.load()
    assert [(r.key, r.repeat, r.wall_s) for r in loaded] == [
        (cell.key, 0, 3.0),
        (cell.key, 1, 2.0),
        (Cell("gpt").key, 1, None),
    ]
    assert store.done_runs() == {(cell.key, 0), (cell.key, 1), (Cell("gpt").key, 1)}
    assert store.done_keys() == {cell.key, Cell("gpt").key}
    assert len(load_results([str(tmp_path)])) == 3
    assert list(to_dataframe(loaded)["repeat"]) == [0, 1, 1]
    assert store.log_path(cell.key, 2).name.endswith(".r2.log")
    assert store.log_path(cell.key) != store.log_path(cell.key, 1)


class _FakeExecutor(Executor):
    """Each cell 'runs' by returning a canned record (no processes)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def run(self, request: CellRequest) -> CellOutcome:
        self.calls.append(f"{request.cell.workload}:{request.log.name}")
        return CellOutcome(_ok(request.cell), 0.0)


def _scheduler() -> tuple[Scheduler, list[str]]:
    """The real run loop, with the fake executor for every cell; and the calls it gets."""
    executor = _FakeExecutor()
    return Scheduler(executor, executor), executor.calls


def test_passes_are_interleaved_and_skips_recorded_once(tmp_path: Path) -> None:
    plan = [PlannedCell(Cell("mlp")), PlannedCell(Cell("gpt")), PlannedCell(Cell("bert"), "no such device")]
    events = []
    scheduler, calls = _scheduler()
    results = scheduler.run(plan, ResultStore(tmp_path), 60.0, on_event=events.append, repeat=3)
    assert [c.split(":")[0] for c in calls] == ["mlp", "gpt"] * 3  # whole matrix, then again
    assert [r.repeat for r in results if r.status == "ok"] == [0, 0, 1, 1, 2, 2]
    assert [r.status for r in results].count("skipped") == 1
    assert calls[2].endswith(".r1.log") and not calls[0].endswith(".r0.log")
    assert events[-1].index == events[-1].total == 9
    on_disk = [json.loads(line) for line in (tmp_path / "cells.jsonl").read_text().splitlines()]
    assert len(on_disk) == 7 and sum(r["status"] == "skipped" for r in on_disk) == 1


def test_resume_runs_only_the_missing_repetitions(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.append(_ok(Cell("mlp"), 0))
    store.append(_ok(Cell("gpt"), 0))
    store.append(_ok(Cell("mlp"), 1))  # killed here
    scheduler, calls = _scheduler()
    results = scheduler.run(
        [PlannedCell(Cell("mlp")), PlannedCell(Cell("gpt"))], store, 60.0, resume=True, repeat=2
    )
    assert calls == ["gpt:gpt__tiny__cpu__1x1__32-true__eager__nographs__bsdefault.r1.log"]
    assert sorted((r.cell.workload, r.repeat) for r in results) == [
        ("gpt", 0),
        ("gpt", 1),
        ("mlp", 0),
        ("mlp", 1),
    ]


def test_repeat_must_be_positive(tmp_path: Path) -> None:
    scheduler, _ = _scheduler()
    with pytest.raises(UsageError, match="repeat"):
        scheduler.run([PlannedCell(Cell("mlp"))], ResultStore(tmp_path), 60.0, repeat=0)
