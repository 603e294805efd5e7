"""A cell's whole process tree ends with the cell: a grandchild that left the cell's process group (a new
session, as a daemon or a badly behaved tool does) is killed when its cell ends, fails or times out, under
both isolation modes; the launcher's scratch directory is gone on every way out; and a failed cell's
process is described in one wording whichever isolation ran it."""

from __future__ import annotations

import os
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from hpubench.plan.cell import Cell, PlannedCell
from hpubench.run.launch import Event, Launcher
from hpubench.store.rundir import ResultStore

PLUGIN = str(Path(__file__).resolve().parents[1] / "plugins" / "escapers.py")


def _cell(workload: str, batch_size: int | None = None) -> PlannedCell:
    return PlannedCell(Cell(workload, warmup_steps=1, steps=3, batch_size=batch_size))


def _pids(pidfile: Path) -> list[int]:
    return [int(x) for x in pidfile.read_text().split()] if pidfile.exists() else []


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private temporary directory for the launcher, so its leftovers can be counted."""
    d = tmp_path / "tmp"
    d.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    return d


@pytest.fixture
def pidfile(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "grandchildren.pids"
    yield path
    for pid in _pids(path):  # whatever the outcome, leave no sleep behind
        if _alive(pid):
            psutil.Process(pid).kill()


@pytest.mark.slow
@pytest.mark.parametrize("isolation", ["fork", "spawn"])
@pytest.mark.serial
def test_a_grandchild_in_a_new_session_dies_with_its_cell(
    tmp_path: Path, scratch: Path, pidfile: Path, isolation: str
) -> None:
    plan = [_cell("escape_ok"), _cell("escape_fail"), _cell("escape_hang"), _cell("escape_ok", batch_size=2)]
    alive_after: dict[str, list[int]] = {}

    def on_event(e: Event) -> None:
        if e.kind == "finished":  # the cell's record is stored: nothing of it may run any more
            alive_after[e.key] = [p for p in _pids(pidfile) if _alive(p)]

    env = {**os.environ, "HPUBENCH_TEST_PIDFILE": str(pidfile)}
    with Launcher([PLUGIN], isolation=isolation, base_env=env) as launcher:
        results = launcher.run(plan, ResultStore(tmp_path / "run"), timeout_s=4, on_event=on_event)

    assert [r.status for r in results] == ["ok", "failed", "failed", "ok"], [r.reason for r in results]
    assert results[2].reason is not None and results[2].reason.startswith("timed out")
    assert len(_pids(pidfile)) == 4  # each cell did start its grandchild
    assert alive_after == {pc.cell.key: [] for pc in plan}
    assert list(scratch.glob("hpubench-launch-*")) == []


@pytest.mark.slow
def test_the_scratch_directory_goes_when_the_run_raises(tmp_path: Path, scratch: Path, pidfile: Path) -> None:
    plan = [PlannedCell(Cell("escape_slow", warmup_steps=1, steps=100)), _cell("escape_ok")]

    def fail(signum: int, frame: object) -> None:
        raise RuntimeError("the caller failed while a cell ran")

    def on_event(e: Event) -> None:
        # (from the launcher's watch thread, about once a second) once the grandchild exists, a real
        # signal whose handler raises in the main thread, which is waiting for the cell (20 s of steps)
        if e.kind == "progress" and _pids(pidfile):
            signal.setitimer(signal.ITIMER_REAL, 0.01)

    env = {**os.environ, "HPUBENCH_TEST_PIDFILE": str(pidfile)}
    previous = signal.signal(signal.SIGALRM, fail)
    try:
        with pytest.raises(RuntimeError), Launcher([PLUGIN], base_env=env) as launcher:
            launcher.run(plan, ResultStore(tmp_path / "run"), timeout_s=60, on_event=on_event)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert len(_pids(pidfile)) == 1
    assert [p for p in _pids(pidfile) if _alive(p)] == []
    assert list(scratch.glob("hpubench-launch-*")) == []


@pytest.mark.slow
def test_a_failed_cells_process_is_described_in_one_wording(tmp_path: Path, pidfile: Path) -> None:
    plan = [_cell("die_sigkill"), _cell("die_exit3")]
    reasons = {}
    for isolation in ("fork", "spawn"):
        with Launcher([PLUGIN], isolation=isolation) as launcher:
            results = launcher.run(plan, ResultStore(tmp_path / isolation), timeout_s=60)
        reasons[isolation] = [r.reason for r in results]
    # a SIGKILL is a kill, not a crash; nothing here says memory (a few MiB of a machine's worth)
    assert reasons["fork"] == ["killed by SIGKILL", "worker exited with code 3 without writing a result"]
    assert reasons["spawn"] == reasons["fork"]
