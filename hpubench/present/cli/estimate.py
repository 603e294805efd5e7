"""The command line's view of estimates and budgets: the table ``list cells`` and ``run`` print before
anything runs, and the ``--budget`` value. Shared by ``run`` (runcmd) and ``list cells`` (listing); no logic
here beyond formatting: the figures come from ``hpubench.run.preflight``."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.table import Table

from hpubench.errors import UsageError
from hpubench.plan.budget import BudgetPlan
from hpubench.plan.cost import format_bytes, format_duration, parse_duration
from hpubench.present.skipsummary import summary_lines
from hpubench.run.eta import RunEstimate
from hpubench.run.preflight import BudgetRun, Preflight, preflight, write_estimates


def parse_budget(text: str | None) -> float | None:
    """Seconds of ``--budget``; a bad value is one UsageError line naming the fix."""
    if text is None:
        return None
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise UsageError(f"--budget {exc}") from None


def estimate(plan: Any, launcher: Any, estimates_from: Sequence[Path] | None) -> tuple[Any, Preflight]:
    """The plan with cells that cannot fit in memory skipped, and every cell's estimate."""
    pre = preflight(
        plan.cells,
        plan.inventory,
        python=launcher.python,
        workload_files=launcher.workload_files,
        env=launcher.base_env,
        estimates_from=[str(p) for p in estimates_from or []],
        runner=launcher.probe if launcher.isolation == "fork" else None,
    )
    return replace(plan, cells=pre.cells), pre


def run_estimate(
    pre: Preflight, budget: BudgetPlan | None, repeat: int, deadline: float | None
) -> RunEstimate:
    """Each plan position's estimated wall time at the steps it asks for, for the run's time left; a cell
    the budget skips up front counts nothing. Under ``--budget`` the budget re-plans every cell to fill
    the time left, so the run's time left is also capped by ``deadline`` (when the budget is spent, on
    :func:`now`'s clock)."""
    by_key = {a.key: a for a in budget.allotments} if budget is not None else {}
    per_index: list[float | None] = []
    for rep in range(repeat):
        for i, (pc, est) in enumerate(zip(pre.cells, pre.estimates, strict=True)):
            t = None
            skipped = budget is not None and not getattr(by_key.get(f"{rep}:{i}"), "runs", False)
            if pc.runnable and est is not None and not skipped:
                t = est.cell_time_s(pc.cell)
            per_index.append(t)
    return RunEstimate(per_index, deadline=deadline)


def start_budget(pre: Preflight, budget_s: float, repeat: int, started: float) -> BudgetRun:
    return BudgetRun(pre, budget_s, repeat=repeat, started=started)


def estimate_table(
    pre: Preflight,
    title: str,
    budget: BudgetPlan | None = None,
    repeat: int = 1,
    budget_s: float | None = None,
    show_skipped: bool = False,
) -> tuple[Table, list[str]]:
    """One row per cell (estimated time at its steps, memory per device, source), and the lines under
    it: each source in full, the skipped cells counted by reason, the total, and what the budget does.
    Skipped cells get rows of their own only with ``show_skipped``; their numbers stay, so the rows shown
    keep the numbers ``--skipped`` gives them."""
    table = Table(title=title)
    table.add_column("#", justify="right")
    table.add_column("cell")
    table.add_column("status")
    table.add_column("est. time", justify="right")
    table.add_column("memory/device", justify="right")
    table.add_column("src")
    if budget is not None:
        table.add_column("budget")
    sources: dict[str, int] = {}
    by_key = {a.key: a for a in budget.allotments} if budget is not None else {}

    def mark(text: str) -> str:
        return f"[{sources.setdefault(text, len(sources) + 1)}]"

    for i, (pc, est) in enumerate(zip(pre.cells, pre.estimates, strict=True), 1):
        if not pc.runnable and not show_skipped:
            continue
        status = "run" if pc.runnable else f"skip: {pc.skip_reason}"
        row = [str(i), pc.cell.key, status]
        if est is None:
            row += ["", "", ""]
        else:
            t = est.cell_time_s(pc.cell)
            src = mark(est.time_source)
            if est.memory_source != est.time_source:
                src += mark(est.memory_source)
            row += [format_duration(t), format_bytes(est.memory_bytes), src]
        if budget is not None:
            a = by_key.get(f"0:{i - 1}") if pc.runnable else None
            if a is None:
                row.append("")
            elif a.runs:
                row.append(f"{a.warmup_steps}+{a.steps} ~{format_duration(a.estimate_s)}")
            else:
                row.append("skip: too big")
        table.add_row(*row, style=None if pc.runnable else "dim")
    lines = [f"  [{n}] {text}" for text, n in sources.items()]
    total, unknown = pre.total_s()
    runnable = sum(pc.runnable for pc in pre.cells)
    skips = summary_lines([pc.skip_reason or "" for pc in pre.cells if not pc.runnable])
    lines += skips
    if skips and not show_skipped:
        lines.append("(each skipped cell: hpubench list cells --skipped)")
    lines.append(
        f"{runnable} to run, {len(pre.cells) - runnable} skipped; "
        f"estimated total ~{format_duration(total * repeat)}"
        + (f" (x{repeat} repeats)" if repeat > 1 else "")
        + (f", {unknown} cell(s) without a time estimate" if unknown else "")
    )
    if pre.problem:
        lines.append(f"no model estimates: {pre.problem}")
    if budget is not None:
        total_budget = budget.budget_s if budget_s is None else budget_s
        lines.append(
            f"budget {format_duration(total_budget)} ({format_duration(budget.budget_s)} left after "
            f"detection and estimates): planned ~{format_duration(budget.total_s)}, "
            f"{budget.skipped} cell(s) skipped as too big; steps are re-planned before each cell with the "
            "time really spent"
        )
        for a in budget.allotments:
            if not a.runs:
                lines.append(f"  cannot fit: {pre.cells[int(a.key.split(':')[1])].cell.key}: {a.skip_reason}")
    return table, lines


__all__ = ["estimate", "estimate_table", "now", "parse_budget", "start_budget", "write_estimates"]


def now() -> float:
    """The clock a budget counts from (the start of the command)."""
    return time.monotonic()
