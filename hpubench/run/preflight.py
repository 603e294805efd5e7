"""What a planned run will cost, before it runs, and keeping a budgeted run within its budget.

The glue between the pure estimator (``hpubench.plan.cost``), the pure budget planner
(``hpubench.plan.budget``) and the world: it runs the probe child (``hpubench.run.probe``: models counted
on meta, the device's matmul rate), reads earlier results, turns cells that cannot fit in memory into skipped
cells with the estimate in their reason, and (``BudgetRun``) re-plans the remaining cells before each one with
the time the run has really taken, so a run that goes slower than estimated gives later cells fewer steps or
skips them instead of overrunning.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hpubench.analysis import numerics, peaks
from hpubench.errors import ProbeFailed, UsageError, os_error_text
from hpubench.plan.autosteps import AutoSteps
from hpubench.plan.budget import MIN_WARMUP, BudgetItem, BudgetPlan, plan
from hpubench.plan.cell import Cell, PlannedCell, flops_key, parse_flops_key
from hpubench.plan.cost import (
    Calibration,
    Estimate,
    Measured,
    ModelFacts,
    estimate_cell,
    measured_from_times,
    memory_skip_reason,
    rate_dtype,
    reference_s,
    warmup_steps_expected,
)
from hpubench.plan.inventory import Inventory
from hpubench.run.events import Event
from hpubench.run.executors.result import probe_usage
from hpubench.run.hostcondition import needs_fresh_process
from hpubench.run.sourceroot import with_source_root
from hpubench.store.leftovers import Scratch
from hpubench.store.readback import load_results
from hpubench.store.record import CellResult
from hpubench.store.rundir import ResultStore, write_json_atomic
from hpubench.strategy.spec import shards_state

PROBE_TIMEOUT_S = 300.0
PROBE_SCRATCH_PREFIX = "hpubench-probe-"
OVERRUN = 0.10  # a budgeted run may end at most this fraction past its budget
END_RESERVE_S = 3.0  # printing the results table after the last cell
# A cell may run this many times its (slowdown-scaled) estimate, plus CELL_SLACK_S, before its timeout:
# one cell far slower than estimated (a long compile) must not eat the budget of every cell after it.
CELL_OVERRUN = 3.0
CELL_SLACK_S = 30.0
WORKER_START_S = 5.0  # the first cell also starts the pre-warmed worker (import torch): 3-8 s here
ESTIMATES_FILE = "estimates.json"


@dataclass(frozen=True)
class Preflight:
    """Every planned cell with its estimate (None for cells the rules skipped), and what they rest on."""

    cells: list[PlannedCell]
    estimates: list[Estimate | None]
    calibrations: dict[str, Calibration] = field(default_factory=dict)
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)
    problem: str | None = None  # why there are no model facts, when the probe failed

    def total_s(self) -> tuple[float, int]:
        """Estimated seconds of the runnable cells at their step counts, and how many have no estimate."""
        total, unknown = 0.0, 0
        for pc, est in zip(self.cells, self.estimates, strict=True):
            if not pc.runnable or est is None:
                continue
            s = est.cell_time_s(pc.cell)
            if s is None:
                unknown += 1
            else:
                total += s
        return total, unknown

    def to_dict(self) -> dict[str, Any]:
        return {
            "calibration": {
                k: {
                    "tflops": dict(c.tflops),
                    "conv_tflops": dict(c.conv_tflops),
                    "per_op_s": c.per_op_s,
                    "source": c.source,
                    "rank_threads": list(c.rank_threads),
                    "heap": dict(c.heap),
                }
                for k, c in self.calibrations.items()
            },
            "facts": self.facts,
            "problem": self.problem,
            "cells": [
                {"key": pc.cell.key, "skip_reason": pc.skip_reason, **(vars(e) if e is not None else {})}
                for pc, e in zip(self.cells, self.estimates, strict=True)
            ],
        }


def _cache_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hpubench" / "model-facts.json"


def facts_key(pc: PlannedCell) -> str:
    """Where a cell's model facts are kept: workload, size, batch (0: the size's default) and the
    options that change the model (hpubench.plan.cell.flops_key)."""
    return flops_key(pc.cell.workload, pc.cell.size, pc.cell.batch_size or 0, pc.cell.options)


def _default_batch_key(key: str) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    """A facts key without its batch: the probe answers batch 0 (the size's default) under the real one."""
    workload, size, _batch, options = parse_flops_key(key)
    return workload, size, tuple(sorted(options.items()))


# argv for hpubench.run.probe.main (without --out), a timeout in seconds -> the probe's JSON result.
ProbeRunner = Callable[[list[str], float], dict[str, Any]]


def _probe_subprocess(
    args: list[str], python: str, workload_files: Sequence[str], env: dict[str, str]
) -> dict[str, Any]:
    scratch = Scratch(PROBE_SCRATCH_PREFIX)  # a killed run's is removed by the next probe
    out = scratch.path / "probe.json"
    argv = [python, "-m", "hpubench.run.probe", "--out", str(out), *args]
    for f in workload_files:
        argv += ["--workloads-from", f]
    child_env = with_source_root(env)
    try:
        proc = subprocess.run(argv, env=child_env, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
        data = json.loads(out.read_text()) if proc.returncode == 0 else None
    except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
        raise ProbeFailed(type(exc).__name__) from None
    finally:
        scratch.remove()
    if data is None:
        usage = probe_usage(proc.stderr)
        if usage is not None:
            raise UsageError(usage)
        raise ProbeFailed((proc.stderr.strip().splitlines() or ["no output"])[-1])
    return data


def run_probe(
    cells: Sequence[PlannedCell],
    *,
    python: str,
    workload_files: Sequence[str],
    env: dict[str, str],
    calibrate: bool = True,
    host_accelerators: Sequence[str] = (),
    runner: ProbeRunner | None = None,
) -> tuple[dict[str, dict[str, Any]], dict[str, Calibration], str | None]:
    """Model facts per ``workload|size|batch`` (batch 0: the size's default) and each accelerator's
    calibration, from ``hpubench.run.probe``; a failed probe gives nothing and says why.

    ``runner(argv, timeout_s)`` runs the probe in a child that already imported torch and the workload
    files (the launcher's pre-warmed fork server: ``Launcher.probe``) and returns its JSON, or raises
    ``ProbeFailed``; without one, a ``python -m hpubench.run.probe`` interpreter pays ``import torch``
    again.
    """
    runnable = [pc for pc in cells if pc.runnable]
    if not runnable:
        return {}, {}, None
    args = ["--cache", str(_cache_path())]
    for key in dict.fromkeys(facts_key(pc) for pc in runnable):
        args += ["--cell", key]
    if calibrate:
        for acc in dict.fromkeys(pc.cell.accelerator for pc in runnable):
            args += ["--calibrate", f"{acc}:host" if acc in host_accelerators else acc]
        for dtype in dict.fromkeys(rate_dtype(pc.cell.precision) for pc in runnable):
            args += ["--dtype", dtype]
    try:
        if runner is not None:
            data = runner(args, PROBE_TIMEOUT_S)
        else:
            data = _probe_subprocess(args, python, workload_files, env)
    except ProbeFailed as exc:
        return {}, {}, f"the estimate probe failed: {exc}"
    facts_out: dict[str, dict[str, Any]] = {}
    by_default = {_default_batch_key(k): v for k, v in data["facts"].items()}
    for pc in runnable:
        key = facts_key(pc)
        hit = data["facts"].get(key) if pc.cell.batch_size else by_default.get(_default_batch_key(key))
        if hit is not None:
            facts_out[key] = hit
    cals = {}
    for acc, c in (data.get("calibration") or {}).items():
        rank_threads = tuple(float(t) for t in c.get("rank_threads") or ())
        how = "per thread x the threads a rank gets" if rank_threads else "device 0"
        cals[acc] = Calibration(
            tflops=c["tflops"],
            per_op_s=float(c["per_op_s"]),
            source=f"FLOPs / {acc} linear-layer rate calibrated here ({how})",
            conv_tflops=c.get("conv_tflops") or {},
            rank_threads=rank_threads,
            heap=c.get("heap") or {},
        )
    return facts_out, cals, None


def load_measured(paths: Iterable[str]) -> dict[str, Measured]:
    """Earlier records by cell key (the last repetition with measured steps wins)."""
    out: dict[str, Measured] = {}
    for path in paths:
        for r in load_results([path]):
            peak = r.memory.peak_allocated_bytes if r.memory is not None else None
            m = measured_from_times(r.step_times_s, r.warmup_times_s, r.wall_s, peak, f"from results {path}")
            if m is not None:
                out[r.cell.key] = m
    return out


def model_facts(entry: dict[str, Any] | None) -> ModelFacts | None:
    """The probe's entry for one ``facts_key`` as ModelFacts; None where the probe could not count it."""
    if not entry or "error" in entry:
        return None
    return ModelFacts(
        params=int(entry["params"]),
        flops=int(entry["flops"]),
        ops=int(entry["ops"]),
        activation_bytes_fp32=int(entry["activation_bytes_fp32"]),
        batch_bytes_fp32=int(entry["batch_bytes_fp32"]),
        optimizer=str(entry.get("optimizer", "adamw")),
        conv_flops=int(entry.get("conv_flops", 0)),
    )


def estimate_plan(
    cells: Sequence[PlannedCell],
    inventory: Inventory,
    facts: dict[str, dict[str, Any]],
    calibrations: dict[str, Calibration],
    measured: dict[str, Measured],
) -> tuple[list[PlannedCell], list[Estimate | None]]:
    """Each runnable cell's estimate; a cell whose memory estimate exceeds what a device has here becomes
    a skipped cell with the estimate in its reason (instead of running into an out-of-memory crash)."""
    out_cells: list[PlannedCell] = []
    out_est: list[Estimate | None] = []
    # One cell per numerics reference computes it (hpubench.analysis.numerics): its estimate pays for it.
    runnable = [pc.cell for pc in cells if pc.runnable]
    reference_steps = iter(numerics.reference_steps_planned(runnable))  # one per runnable cell, in order
    for pc in cells:
        if not pc.runnable:
            out_cells.append(pc)
            out_est.append(None)
            continue
        c = pc.cell
        shared = inventory.shares_memory(c.accelerator)
        peak = peaks.peak_for(c.accelerator, inventory.device_name(c.accelerator), c.precision)
        est = estimate_cell(
            precision=c.precision,
            mode=c.mode,
            world_size=c.world_size,
            ranks_sharing=c.devices if shared else 1,
            facts=model_facts(facts.get(facts_key(pc))),
            calibration=calibrations.get(c.accelerator),
            peak_tflops=peak.tflops if peak is not None else None,
            measured=measured.get(c.key),
            sharded=shards_state(c),
            fresh_process=needs_fresh_process(c),
        )
        model = model_facts(facts.get(facts_key(pc)))
        cal = calibrations.get(c.accelerator)
        ref_s = reference_s(model, cal, peak.tflops if peak is not None else None, next(reference_steps))
        est = replace(est, reference_s=ref_s) if ref_s else est
        available = inventory.memory_per_device(c.accelerator, c.devices)
        reason = memory_skip_reason(est.memory_bytes, available, shards_state(c))
        out_cells.append(PlannedCell(c, reason) if reason else pc)
        out_est.append(est)
    return out_cells, out_est


def fit_memory(
    cells: Sequence[PlannedCell],
    inventory: Inventory,
    *,
    python: str,
    workload_files: Sequence[str],
    env: dict[str, str],
    runner: ProbeRunner | None = None,
) -> tuple[list[PlannedCell], str | None]:
    """``cells`` with those that cannot fit in memory skipped, the estimate in their reason, as
    :func:`preflight` skips them, from the models counted on meta alone (no rate calibration: the
    memory estimate does not need it); and why nothing was checked when the probe failed."""
    host = [d.accelerator for d in inventory.devices if inventory.shares_memory(d.accelerator)]
    facts, _cals, problem = run_probe(
        cells,
        python=python,
        workload_files=workload_files,
        env=env,
        calibrate=False,
        host_accelerators=host,
        runner=runner,
    )
    fitted, _estimates = estimate_plan(cells, inventory, facts, {}, {})
    return fitted, problem


def preflight(
    cells: Sequence[PlannedCell],
    inventory: Inventory,
    *,
    python: str,
    workload_files: Sequence[str],
    env: dict[str, str],
    estimates_from: Sequence[str] = (),
    runner: ProbeRunner | None = None,
) -> Preflight:
    """Estimates for a planned matrix: earlier results where given, else the probe's counts and rates
    (``runner``: where the probe runs, see :func:`run_probe`)."""
    for p in estimates_from:
        if not Path(p).exists():
            raise UsageError(f"--estimates-from {p}: no such results directory; give a run directory")
    measured = load_measured(estimates_from)
    host = [d.accelerator for d in inventory.devices if inventory.shares_memory(d.accelerator)]
    facts, cals, problem = run_probe(
        cells, python=python, workload_files=workload_files, env=env, host_accelerators=host, runner=runner
    )
    new_cells, estimates = estimate_plan(cells, inventory, facts, cals, measured)
    return Preflight(new_cells, estimates, cals, facts, problem)


# ---- a budgeted run --------------------------------------------------------------------------------


def _group(cell: Cell) -> str:
    """Cells whose steps are alike: one workload at one size."""
    return f"{cell.workload}|{cell.size}"


def _factor(estimated_s: float, actual_s: float) -> float:
    """Actual over estimated time as a factor on later estimates, kept within [1, 20] (see BudgetRun)."""
    return 1.0 if estimated_s <= 0 else min(20.0, max(1.0, actual_s / estimated_s))


def _item(key: str, pc: PlannedCell, est: Estimate | None, slowdown: float = 1.0) -> BudgetItem:
    c = pc.cell
    if est is None or est.step_s is None or est.first_step_s is None:
        steps = c.steps if c.steps is not None else (c.auto_steps or AutoSteps()).min_steps
        return BudgetItem(key, c.warmup_steps, steps, None, None, None)
    s = slowdown
    steps = est.steps_for(c)
    floor = warmup_steps_expected(c, MIN_WARMUP)  # a compiling cell warms up until a step compiles nothing
    return BudgetItem(
        key, c.warmup_steps, steps, est.fixed_s * s, est.first_step_s * s, est.step_s * s, floor
    )


class BudgetRun:
    """Steps per cell under ``--budget``, re-planned before each cell from the time really spent.

    ``adjust`` is the launcher's per-cell hook: it re-plans every cell still to run with the budget that
    is left and the estimates scaled by how much slower (or faster) the cells so far ran than estimated,
    and gives the next cell its steps and a timeout that ends the run by budget x (1 + OVERRUN) at the
    latest. ``notes`` holds what the budget did to each (key, repeat), for its record.
    """

    def __init__(
        self,
        pre: Preflight,
        budget_s: float,
        *,
        repeat: int = 1,
        started: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.pre = pre
        self.budget_s = budget_s
        self.repeat = repeat
        self.clock = clock
        self.started = clock() if started is None else started
        self.notes: dict[tuple[str, int], dict[str, Any]] = {}
        # Estimated and actual seconds of the finished cells, per workload and size (their steps are alike
        # whatever the precision or mode); the run-wide figures are their sums.
        self._by_group: dict[str, tuple[float, float]] = {}
        self._current: tuple[str, float, float, str] | None = None  # key, estimate, start, group
        self._started_one = False

    def _order(self) -> list[tuple[int, int]]:
        return [(rep, i) for rep in range(self.repeat) for i in range(len(self.pre.cells))]

    def slowdown(self) -> float:
        """How much slower than estimated the finished cells ran, as a factor on later estimates; never
        below 1. A cell that ran faster than estimated (often a tiny one whose estimate is mostly its
        fixed cost) says little about a big one, and scaling estimates down could start a cell the
        budget cannot afford, one the plan had already refused up front; the time a fast cell saved is
        handed on anyway, since every re-plan shares out the time really left."""
        done = self._by_group.values()
        return _factor(sum(est for est, _ in done), sum(actual for _, actual in done))

    def slowdown_for(self, cell: Cell) -> float:
        """The factor for ``cell``: its own workload and size's, once one of their cells has finished (the
        run-wide factor is diluted by other workloads: resnet standard ran 2.95x its estimate while it stood
        at 1.00-1.06), else the run-wide one. Never below 1, for the reason :meth:`slowdown` gives."""
        done = self._by_group.get(_group(cell))
        return self.slowdown() if done is None else _factor(*done)

    def plan_from(self, rep: int, position: int) -> BudgetPlan:
        """The plan of the cells from (rep, position) on, with the budget left now."""
        order = [(r, i) for r, i in self._order() if (r, i) >= (rep, position) and self.pre.cells[i].runnable]
        cells, ests = self.pre.cells, self.pre.estimates
        items = [_item(f"{r}:{i}", cells[i], ests[i], self.slowdown_for(cells[i].cell)) for r, i in order]
        left = self.budget_s - (self.clock() - self.started) - END_RESERVE_S
        if not self._started_one:
            left -= WORKER_START_S  # paid once, by whichever cell runs first
        return plan(items, left)

    def adjust(self, position: int, rep: int, pc: PlannedCell) -> tuple[PlannedCell, float]:
        hard_left = self.budget_s * (1 + OVERRUN) - (self.clock() - self.started) - END_RESERVE_S
        if not pc.runnable:
            return pc, max(1.0, hard_left)
        allot = self.plan_from(rep, position).allotments[0]
        c = pc.cell
        note: dict[str, Any] = {
            "budget_s": self.budget_s,
            "left_s": round(self.budget_s - (self.clock() - self.started), 1),
            "asked": [c.warmup_steps, c.steps if c.steps is not None else "auto"],
            "given": [allot.warmup_steps, allot.steps],
            "estimate_s": allot.estimate_s,
            "slowdown": round(self.slowdown_for(c), 3),
            "action": allot.note,
        }
        reason = allot.skip_reason
        if reason is None and hard_left <= 1.0:
            reason = "budget: spent before this cell could start"
        if reason is not None:
            note["given"] = None
            self.notes[(c.key, rep)] = note
            self._current = None
            return PlannedCell(c, reason), 1.0
        self.notes[(c.key, rep)] = note
        # The worker start is part of the first cell's wall time, not of its estimate's error.
        start_cost = 0.0 if self._started_one else WORKER_START_S
        self._started_one = True
        self._current = (c.key, (allot.estimate_s or 0.0) + start_cost, self.clock(), _group(c))
        limit = hard_left
        if allot.estimate_s is not None:
            limit = min(limit, CELL_OVERRUN * (allot.estimate_s + start_cost) + CELL_SLACK_S)
        note["timeout_s"] = round(limit, 1)
        asked = _item(c.key, pc, self.pre.estimates[position]).steps
        if c.steps is None and (allot.warmup_steps, allot.steps) == (c.warmup_steps, asked):
            return pc, limit  # an auto cell the budget leaves whole keeps its own stopping rule
        return PlannedCell(replace(c, warmup_steps=allot.warmup_steps, steps=allot.steps)), limit

    def on_event(self, ev: Event) -> None:
        """Learn how long the cell that just finished really took (the launcher's events)."""
        cur = self._current
        if cur is None or ev.key != cur[0] or ev.kind not in ("finished", "kept", "skipped"):
            return
        self._current = None
        if ev.kind == "finished" and cur[1] > 0:
            est, actual = self._by_group.get(cur[3], (0.0, 0.0))
            self._by_group[cur[3]] = (est + cur[1], actual + self.clock() - cur[2])


class BudgetedStore(ResultStore):
    """The run's store, adding what the budget did to each cell to its record (``runtime["budget"]``)."""

    def __init__(self, path: str | os.PathLike[str], budget: BudgetRun) -> None:
        super().__init__(path)
        self.budget = budget

    def append(self, result: CellResult) -> None:
        note = self.budget.notes.get(result.run_id)
        if note is not None:
            result = replace(result, runtime={**result.runtime, "budget": note})
        super().append(result)


def write_estimates(run_dir: Path, pre: Preflight, budget_plan: BudgetPlan | None) -> None:
    """The estimates and the calibration they used, beside the records (``estimates.json``)."""
    data = pre.to_dict()
    if budget_plan is not None:
        allotments = [vars(a) for a in budget_plan.allotments]
        data["budget"] = {"budget_s": budget_plan.budget_s, "allotments": allotments}
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(run_dir / ESTIMATES_FILE, data)
    except OSError as e:
        raise UsageError(
            f"cannot write {run_dir / ESTIMATES_FILE}: {os_error_text(e)}; "
            "fix: free space or give another --out"
        ) from None
