"""Fitting a run into a time budget (``hpubench run --budget 60m``): how many steps each cell gets.

Pure: no torch, no I/O, no clock. The caller gives each cell's estimated costs (``hpubench.plan.cost``)
and the seconds left; ``plan`` answers with step counts per cell, by construction within the budget:

1. Every cell first gets its minimum: 1 warm-up step (the first step is never measured) and 2 measured
   steps (a spread needs two). Minimums are granted cheapest first, so when they cannot all fit, the
   cells left out are the most expensive ones and as many cells as possible are measured; each cell left
   out is skipped with its cost and the budget that was left.
2. What remains is shared by water-filling in time: every cell's extension (from its minimum towards
   the step counts it asked for) is capped at one common level, the highest level that fits. Cheap
   cells get all they asked for; expensive ones share the rest equally.
3. A cell's extension becomes steps in proportion: the same fraction of its extra warm-up and of its
   extra measured steps, rounded down (so the rounded plan is still within the budget).

A cell without a time estimate keeps its minimum and is not counted (it says so in its note); the run's
re-check with measured times (``hpubench.run.preflight``) then accounts for what it really took.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hpubench.plan.cost import cell_wall_s, format_duration

MIN_WARMUP = 1
MIN_STEPS = 2


@dataclass(frozen=True)
class BudgetItem:
    """One cell (one repetition of it) to fit: the steps it asks for and its estimated costs."""

    key: str
    warmup_steps: int
    steps: int
    fixed_s: float | None  # None: no time estimate
    first_step_s: float | None
    step_s: float | None
    # Warm-up steps the cell runs whatever it is given: 2 where its first step compiles, since the warm-up
    # goes on until a step compiles nothing (hpubench.plan.cost.warmup_steps_expected).
    warmup_floor: int = MIN_WARMUP

    @property
    def known(self) -> bool:
        return self.fixed_s is not None and self.first_step_s is not None and self.step_s is not None

    def cost(self, warmup_steps: int, steps: int) -> float:
        """Estimated wall time with these step counts (the first warm-up step costs ``first_step_s``), the
        warm-up's lead-in step, and the phase split's steps after the measured ones."""
        assert self.fixed_s is not None and self.first_step_s is not None and self.step_s is not None
        warmup_steps = max(warmup_steps, self.warmup_floor)
        return cell_wall_s(self.fixed_s, self.first_step_s, self.step_s, warmup_steps, steps)


@dataclass(frozen=True)
class Allotment:
    """What the budget gives one cell: step counts, or a skip with the reason."""

    key: str
    warmup_steps: int
    steps: int
    estimate_s: float | None
    skip_reason: str | None
    note: str  # what the budget did, one line, recorded in the cell's record

    @property
    def runs(self) -> bool:
        return self.skip_reason is None


@dataclass(frozen=True)
class BudgetPlan:
    budget_s: float
    allotments: tuple[Allotment, ...]

    @property
    def total_s(self) -> float:
        return sum(a.estimate_s or 0.0 for a in self.allotments if a.runs)

    @property
    def skipped(self) -> int:
        return sum(not a.runs for a in self.allotments)


def _level(wants: Sequence[float], extra: float) -> float:
    """The highest cap L with sum(min(w, L)) <= extra (water-filling)."""
    if sum(wants) <= extra:
        return max(wants, default=0.0)
    remaining, n = extra, len(wants)
    for i, w in enumerate(sorted(wants)):
        share = remaining / (n - i)
        if w >= share:
            return share
        remaining -= w
    return max(wants, default=0.0)  # pragma: no cover - the first branch covers sum <= extra


def _steps_for(item: BudgetItem, extra_s: float) -> tuple[int, int]:
    """Warm-up and measured steps an extension of ``extra_s`` seconds over the minimum buys."""
    full = item.cost(item.warmup_steps, item.steps) - item.cost(MIN_WARMUP, MIN_STEPS)
    if full <= 0:
        return item.warmup_steps, item.steps
    frac = min(1.0, max(0.0, extra_s / full))
    if frac >= 1.0 - 1e-9:
        return item.warmup_steps, item.steps
    warm = MIN_WARMUP + int(frac * (item.warmup_steps - MIN_WARMUP))
    steps = MIN_STEPS + int(frac * (item.steps - MIN_STEPS))
    return warm, steps


def _note(item: BudgetItem, warm: int, steps: int) -> str:
    if (warm, steps) == (item.warmup_steps, item.steps):
        return f"fits: {warm} warm-up + {steps} steps as asked"
    return f"reduced to {warm} warm-up + {steps} steps (asked {item.warmup_steps} + {item.steps}) to fit"


def plan(items: Sequence[BudgetItem], budget_s: float) -> BudgetPlan:
    """Step counts for every item within ``budget_s`` seconds (the rules in the module docstring)."""
    if budget_s < 0:
        budget_s = 0.0
    known = [i for i, it in enumerate(items) if it.known]
    mins = {i: items[i].cost(MIN_WARMUP, MIN_STEPS) for i in known}
    granted: list[int] = []
    used = 0.0
    too_big: dict[int, float] = {}
    for i in sorted(known, key=lambda i: (mins[i], i)):
        if used + mins[i] <= budget_s:
            granted.append(i)
            used += mins[i]
        else:
            too_big[i] = budget_s - used
    wants = {i: items[i].cost(items[i].warmup_steps, items[i].steps) - mins[i] for i in granted}
    level = _level([wants[i] for i in granted], budget_s - used)

    out: list[Allotment] = []
    for i, it in enumerate(items):
        if not it.known:
            out.append(
                Allotment(
                    it.key,
                    MIN_WARMUP,
                    MIN_STEPS,
                    None,
                    None,
                    f"no time estimate: the minimum {MIN_WARMUP} warm-up + {MIN_STEPS} steps, not counted",
                )
            )
        elif i in too_big:
            left = max(0.0, too_big[i])
            reason = (
                f"budget: needs ~{format_duration(mins[i])} at the minimum of {MIN_WARMUP} warm-up + "
                f"{MIN_STEPS} steps; budget left {format_duration(left)}"
            )
            out.append(Allotment(it.key, MIN_WARMUP, MIN_STEPS, mins[i], reason, reason))
        else:
            warm, steps = _steps_for(it, min(wants[i], level))
            out.append(Allotment(it.key, warm, steps, it.cost(warm, steps), None, _note(it, warm, steps)))
    return BudgetPlan(budget_s, tuple(out))
