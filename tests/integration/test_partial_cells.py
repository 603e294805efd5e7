"""Nothing thrown away: real cells stopped by their timeout or a crash part way through their measured
steps keep the steps they finished, as a failed record with figures built from them, under both
isolation modes; and the steps reach the launcher while the cell still runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hpubench.plan.autosteps import LEAD_IN_STEPS
from hpubench.plan.cell import Cell, PlannedCell
from hpubench.run.launch import Event, Launcher
from hpubench.run.stepfeed import feed_path
from hpubench.store.record import CellResult
from hpubench.store.rundir import ResultStore

PLUGIN = str(Path(__file__).resolve().parents[1] / "plugins" / "slow_steps.py")
STEP_S = 0.1  # every step of these workloads sleeps this long
BATCH = 8
DIES_DURING = 8 - LEAD_IN_STEPS  # the crashing workloads die during their 11th step: 2 warm-up, the lead-in
TIMEOUT_S = 4.0


def _cell(workload: str, steps: int, batch_size: int | None = None) -> PlannedCell:
    return PlannedCell(Cell(workload, steps=steps, warmup_steps=2, batch_size=batch_size))


def _assert_partial(r: CellResult, reason_start: str) -> int:
    """A partial record per the contract; returns its number of steps."""
    assert r.status == "failed" and r.reason is not None and r.reason.startswith(reason_start), r.reason
    n = len(r.step_times_s)
    assert r.runtime["partial"]["steps_done"] == n and r.runtime["partial"]["reason"] == r.reason
    assert all(t >= STEP_S for t in r.step_times_s)  # the steps' own times, each slept STEP_S
    assert len(r.warmup_times_s) == 2 + LEAD_IN_STEPS  # and the lead-in
    m = r.metrics
    assert m is not None and m.measured_steps == n and m.warmup_steps == 2 + LEAD_IN_STEPS
    batch = r.cell.batch_size or BATCH
    assert m.samples_per_s == pytest.approx(batch * n / sum(r.step_times_s))
    assert r.runtime["batch_size"] == batch and r.runtime["device_name"]  # facts the child sent early
    # the launcher wrote this record: its numerics were never compared, and it says so (issue 33)
    assert r.numerics == "unchecked" and r.reason in r.numerics_reasons[0]
    return n


@pytest.mark.slow
@pytest.mark.parametrize("isolation", ["fork", "spawn"])
@pytest.mark.serial
def test_timed_out_and_crashed_cells_keep_their_finished_steps(tmp_path: Path, isolation: str) -> None:
    store = ResultStore(tmp_path / "run")
    plan = [
        _cell("sleepy", steps=500, batch_size=4),  # 50 s of steps: stopped by the timeout
        _cell("segv_at_step", steps=20),
        _cell("exit_at_step", steps=20),
        _cell("sleepy", steps=5),
    ]
    if isolation == "spawn":  # a fresh interpreter per cell is slow here: the two ways to die suffice
        plan = plan[:2]
    events: list[Event] = []
    with Launcher([PLUGIN], isolation=isolation) as launcher:
        results = launcher.run(plan, store, timeout_s=TIMEOUT_S, on_event=events.append)

    timed_out = results[0]
    n = _assert_partial(timed_out, f"timed out after {TIMEOUT_S:g} s")
    assert timed_out.runtime["partial"]["steps_planned"] == 500
    assert 2 <= n < TIMEOUT_S / STEP_S

    # The feed is written at most every 0.5 s, so the steps of the last half second may be lost; with
    # steps of >= 0.1 s at most the last 3 of the finished ones were not written.
    crashes = zip(results[1:3], ("crashed with signal SIGSEGV", "worker exited with code 1"), strict=False)
    for r, why in crashes:
        assert DIES_DURING - 3 <= _assert_partial(r, why) <= DIES_DURING

    if isolation == "fork":
        ok = results[3]
        assert ok.status == "ok" and "partial" not in ok.runtime
        # the feed holds exactly the record's step times (the same floats, not a re-measurement)
        lines = [json.loads(x) for x in feed_path(store.log_path(ok.key)).read_text().splitlines()]
        streamed = [t for x in lines if x.get("phase") == "measured" for t in x["times"]]
        assert tuple(streamed) == ok.step_times_s

    assert store.load() == results  # the partial records are what the store holds

    # the steps reached the launcher while the long cell ran: progress events, counting up
    seen = [e.progress for e in events if e.kind == "progress" and e.index == 1 and e.progress]
    measured = [p for p in seen if p.phase == "measured"]
    assert measured and all(p.planned == 500 for p in measured)
    assert [p.done for p in measured] == sorted(p.done for p in measured) and measured[-1].done >= 2
    assert measured[-1].samples_per_s == pytest.approx(4 / STEP_S, rel=0.5)
