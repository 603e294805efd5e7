"""hpubench.run.preflight without the probe: memory skips, and a budgeted run re-planned with a fake
clock."""

from __future__ import annotations

import pytest

from hpubench.plan.autosteps import LEAD_IN_STEPS
from hpubench.plan.cell import Cell, PlannedCell
from hpubench.plan.cost import GIB, PHASE_EXTRA_STEPS, Estimate, Measured
from hpubench.plan.inventory import DeviceInfo, Inventory
from hpubench.run.events import Event
from hpubench.run.preflight import (
    CELL_OVERRUN,
    CELL_SLACK_S,
    OVERRUN,
    WORKER_START_S,
    BudgetedStore,
    BudgetRun,
    Preflight,
    estimate_plan,
)

CPU_16G = Inventory((DeviceInfo("cpu", 2, "AMD EPYC", memory_bytes=16 * GIB, memory_shared=True),))
FACTS = {
    # 1e9 parameters with AdamW at fp32: 20 GB before activations, more than 16 GiB
    "big|tiny|0": {
        "params": 1_000_000_000,
        "flops": 10**12,
        "ops": 100,
        "activation_bytes_fp32": 0,
        "batch_bytes_fp32": 0,
        "optimizer": "adamw",
    },
    # 100M parameters: 2 GB + baseline; fits one rank of 16 GiB, and two ranks sharing it
    "mid|tiny|0": {
        "params": 100_000_000,
        "flops": 10**12,
        "ops": 100,
        "activation_bytes_fp32": 4 * GIB,
        "batch_bytes_fp32": 0,
        "optimizer": "adamw",
    },
}


def test_a_cell_that_cannot_fit_is_skipped_with_its_estimate_and_shared_memory_is_divided_among_ranks():
    cells = [
        PlannedCell(Cell("big")),
        PlannedCell(Cell("mid")),
        PlannedCell(Cell("mid", devices=2)),
        PlannedCell(Cell("mid", mode="lazy"), "lazy mode exists only on HPU, not on cpu"),
    ]
    out, est = estimate_plan(cells, CPU_16G, FACTS, {}, {})
    assert out[0].skip_reason is not None
    assert "needs ~" in out[0].skip_reason and "GiB per device, 16.0 GiB available" in out[0].skip_reason
    assert out[1].runnable
    # Two CPU ranks share the host's 16 GiB: 8 GiB each, and the ~6.9 GiB this cell needs fits with
    # its margin for error.
    assert est[2].memory_bytes is not None and est[2].memory_bytes < 7 * GIB and out[2].runnable
    assert out[3].skip_reason == "lazy mode exists only on HPU, not on cpu" and est[3] is None
    # Without a calibration or peak there is no time, but memory is still estimated.
    assert est[1].step_s is None and est[1].memory_bytes is not None


def test_two_ranks_on_shared_memory_are_skipped_where_one_fits():
    facts = {"mid|tiny|0": {**FACTS["mid|tiny|0"], "activation_bytes_fp32": 9 * GIB}}
    cells = [PlannedCell(Cell("mid")), PlannedCell(Cell("mid", devices=2))]
    out, _ = estimate_plan(cells, CPU_16G, facts, {}, {})
    assert out[0].runnable
    assert out[1].skip_reason is not None and "8.0 GiB available" in out[1].skip_reason


def test_memory_of_an_earlier_record_is_used_when_it_has_one():
    m = Measured(1.0, 2.0, 0.5, 20 * GIB, "from results old")
    out, est = estimate_plan([PlannedCell(Cell("mid"))], CPU_16G, FACTS, {}, {Cell("mid").key: m})
    assert est[0].memory_source == "from results old"
    assert out[0].skip_reason is not None and "20.0 GiB" in out[0].skip_reason


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _pre(n: int, step_s: float = 10.0) -> Preflight:
    cells = [PlannedCell(Cell(f"w{i}", warmup_steps=5, steps=50)) for i in range(n)]
    ests: list[Estimate | None] = [Estimate(step_s, 2 * step_s, 1.0, GIB, "t", "m") for _ in range(n)]
    return Preflight(cells, ests)


def test_budget_run_reduces_steps_records_what_it_did_and_caps_the_timeout_at_the_overrun():
    clock = Clock()
    pre = _pre(3)
    run = BudgetRun(pre, 600.0, clock=clock)
    pc, timeout = run.adjust(0, 0, pre.cells[0])
    assert pc.runnable and 2 <= pc.cell.steps < 50 and pc.cell.warmup_steps >= 1
    note = run.notes[(pc.cell.key, 0)]
    # Capped by the run's end (budget + 10%) and by a multiple of the cell's own estimate.
    own = CELL_OVERRUN * (note["estimate_s"] + WORKER_START_S) + CELL_SLACK_S
    assert timeout == pytest.approx(min(600.0 * (1 + OVERRUN) - 3.0, own))
    assert note["timeout_s"] == pytest.approx(timeout, abs=0.1)
    assert note["asked"] == [5, 50] and note["given"] == [pc.cell.warmup_steps, pc.cell.steps]
    assert "reduced to" in note["action"] and note["budget_s"] == 600.0


def test_one_cheap_cell_cannot_take_the_whole_budget_as_its_timeout():
    clock = Clock()
    pre = _pre(1, step_s=0.01)
    run = BudgetRun(pre, 3600.0, clock=clock)
    _, timeout = run.adjust(0, 0, pre.cells[0])
    assert timeout < 60 and timeout == pytest.approx(
        run.notes[(pre.cells[0].cell.key, 0)]["timeout_s"], abs=0.1
    )


def test_cells_that_ran_slower_than_estimated_shrink_or_skip_the_later_ones():
    clock = Clock()
    pre = _pre(3)
    steady = BudgetRun(pre, 600.0, clock=clock)
    first, _ = steady.adjust(0, 0, pre.cells[0])
    planned_second = steady.plan_from(0, 1).allotments[0]
    # The first cell (which also starts the worker) takes three times its estimate: the rest is re-planned
    # with that slowdown.
    clock.t += 3 * (steady.notes[(first.cell.key, 0)]["estimate_s"] + WORKER_START_S)
    steady.on_event(Event("finished", 1, 3, first.cell.key, "ok"))
    assert steady.slowdown() == pytest.approx(3.0)
    second, _ = steady.adjust(1, 0, pre.cells[1])
    assert not second.runnable or second.cell.steps < planned_second.steps


def test_cells_faster_than_estimated_never_shrink_the_estimates_of_later_ones():
    # A tiny first cell far under its estimate must not make a cell the plan refused up front look
    # affordable: the factor stays 1, and the saved time reaches the later cells through the re-plan.
    clock = Clock()
    pre = _pre(3)
    run = BudgetRun(pre, 600.0, clock=clock)
    first, _ = run.adjust(0, 0, pre.cells[0])
    clock.t += 0.1 * (run.notes[(first.cell.key, 0)]["estimate_s"] + WORKER_START_S)
    run.on_event(Event("finished", 1, 3, first.cell.key, "ok"))
    assert run.slowdown() == 1.0


def test_a_workload_slower_than_estimated_scales_its_own_later_cells_though_others_ran_fast():
    # full --budget 60m here: resnet standard ran 2.95x its estimate while the run-wide factor stood at
    # 1.00-1.06 (diluted by the many cells faster than theirs), so its 16-mixed cells got timeouts of 3x a
    # far-too-low estimate and were killed before a measured step.
    clock = Clock()
    cells = [
        PlannedCell(Cell("fast", warmup_steps=1, steps=2)),
        PlannedCell(Cell("slow", warmup_steps=1, steps=2)),
        PlannedCell(Cell("slow", precision="16-mixed", warmup_steps=1, steps=2)),
        PlannedCell(Cell("other", warmup_steps=1, steps=2)),
    ]
    step = [100.0, 10.0, 10.0, 10.0]
    pre = Preflight(cells, [Estimate(s, 2 * s, 1.0, GIB, "t", "m") for s in step])
    run = BudgetRun(pre, 3600.0, clock=clock)
    for i, factor in ((0, 0.3), (1, 3.0)):
        pc, _ = run.adjust(i, 0, pre.cells[i])
        spent = run.notes[(pc.cell.key, 0)]["estimate_s"] + (WORKER_START_S if i == 0 else 0.0)
        clock.t += factor * spent
        run.on_event(Event("finished", i + 1, 4, pc.cell.key, "ok"))
    assert run.slowdown() == 1.0  # run-wide: 0.3 x a big estimate + 3 x a small one
    pc, timeout = run.adjust(2, 0, pre.cells[2])
    note = run.notes[(pc.cell.key, 0)]
    assert note["slowdown"] == pytest.approx(3.0)
    assert timeout == pytest.approx(CELL_OVERRUN * note["estimate_s"] + CELL_SLACK_S)
    # fixed + first step + the lead-in + 2 measured steps + the phase split's steps
    assert note["estimate_s"] == pytest.approx(
        3.0 * (1.0 + 2 * 10.0 + (LEAD_IN_STEPS + 2 + PHASE_EXTRA_STEPS) * 10.0), rel=0.05
    )
    # A workload with no finished cell of its own keeps the run-wide factor.
    clock.t += 60.0
    run.on_event(Event("finished", 3, 4, pc.cell.key, "ok"))
    other, _ = run.adjust(3, 0, pre.cells[3])
    assert run.notes[(other.cell.key, 0)]["slowdown"] == pytest.approx(run.slowdown())


def test_a_spent_budget_skips_the_remaining_cells_with_a_reason():
    clock = Clock()
    pre = _pre(2)
    run = BudgetRun(pre, 100.0, clock=clock)
    clock.t += 111.0  # past budget + 10 %
    pc, _ = run.adjust(0, 0, pre.cells[0])
    assert not pc.runnable and pc.skip_reason is not None and pc.skip_reason.startswith("budget")
    assert run.notes[(pc.cell.key, 0)]["given"] is None


def test_the_budget_note_reaches_the_stored_record(tmp_path):
    from hpubench.store.record import STATUS_SKIPPED, CellResult

    clock = Clock()
    pre = _pre(1, step_s=1000.0)
    run = BudgetRun(pre, 60.0, clock=clock)
    pc, _ = run.adjust(0, 0, pre.cells[0])
    assert not pc.runnable and "needs ~" in (pc.skip_reason or "")
    store = BudgetedStore(tmp_path, run)
    store.append(CellResult(pc.cell, STATUS_SKIPPED, reason=pc.skip_reason))
    (loaded,) = store.load()
    assert loaded.runtime["budget"]["budget_s"] == 60.0 and loaded.reason == pc.skip_reason
