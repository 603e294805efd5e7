"""The gate's vocabulary and records: the decisions on a metric, the outcomes of a cell, and the frozen
verdicts (per metric, per cell, for the whole gate) that every output of ``hpubench gate`` renders.

Separate from the logic that reaches them (:mod:`hpubench.analysis.gate.decide` and its helpers), so a
renderer
(``hpubench.present.gate_report``, ``reports.history``) depends on the records, not on how they are
made. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hpubench.analysis.gate.rules import GateSettings
from hpubench.plan.cell import Cell

THROUGHPUT = "throughput"
MEMORY = "peak_memory"
METRICS: tuple[str, ...] = (THROUGHPUT, MEMORY)

# Decisions on one metric of one cell.
REGRESSION = "regression"
IMPROVEMENT = "improvement"
NO_CHANGE = "no change"
NOISY = "noisy"  # the estimate is past the threshold but not significant: neither pass nor fail proven
NOT_TESTED = "not tested"
INSUFFICIENT = "insufficient evidence"  # the runs cannot show significance (one run a side): never fails
NOT_COMPARABLE = "not comparable"  # a side's runs are interfered, recompiled or partial: fails if strict

# Outcomes of a cell (a metric decision, or what happened to the cell itself).
NUMERICS_REGRESSION = "numerics regression"  # numerics ok in baseline, drift or diverged now: fails the gate
FAILED = "failed"  # failed in current, not in baseline: fails the gate
STILL_FAILING = "still failing"  # failed in both: reported, does not fail the gate
FIXED = "fixed"  # failed in baseline, measured in current
MISSING = "missing"  # in baseline, absent or skipped in current
NEW = "new"  # only in current (or measured now, skipped before)
SKIPPED = "skipped"  # skipped on both sides
OUTCOMES: tuple[str, ...] = (
    NUMERICS_REGRESSION,
    REGRESSION,
    FAILED,
    MISSING,
    NOT_COMPARABLE,
    INSUFFICIENT,
    NOISY,
    IMPROVEMENT,
    NO_CHANGE,
    FIXED,
    STILL_FAILING,
    NEW,
    SKIPPED,
)


@dataclass(frozen=True)
class MetricVerdict:
    """One metric of one cell. ``change`` is current / baseline - 1 (throughput: > 0 is faster; memory:
    > 0 is more memory); ``interval`` is its two-sided interval at the settings' confidence, unadjusted."""

    metric: str
    decision: str
    baseline: float | None  # samples/s, or bytes
    current: float | None
    change: float | None
    interval: tuple[float, float] | None
    p_value: float | None  # one-sided, in the direction of the change
    p_adjusted: float | None  # the same after the multiple-comparison correction
    threshold: float
    detail: str
    evidence: str | None = (
        None  # throughput: runs, modelled or insufficient (hpubench.analysis.stats.estimator)
    )
    mde: float | None = None  # throughput: smallest drop this cell could show (fraction), inf if none
    mde_text: str | None = None


@dataclass(frozen=True)
class CellVerdict:
    key: str  # the match key cells were matched on
    cell: Cell  # the baseline's cell where there is one, else the current one
    outcome: str
    fails: bool
    reason: str  # one line, for tables, Markdown and JUnit
    throughput: MetricVerdict | None = None
    memory: MetricVerdict | None = None
    baseline_runs: int = 0  # measured repetitions on each side
    current_runs: int = 0
    baseline_quality: str | None = None  # the worst quality verdict of each side's runs (None: unknown)
    current_quality: str | None = None
    baseline_numerics: str | None = None  # the worst numerics verdict of each side's runs (None: unknown)
    current_numerics: str | None = None


@dataclass(frozen=True)
class GateResult:
    settings: GateSettings
    cells: tuple[CellVerdict, ...]
    notes: tuple[str, ...] = field(default=())  # things a reader must know to trust the verdict

    @property
    def passed(self) -> bool:
        return not any(c.fails for c in self.cells)

    @property
    def exit_code(self) -> int:
        """0: passed; 1: a regression (of throughput, memory or numerics), a new failure or (by policy) a
        missing cell."""
        return 0 if self.passed else 1

    @property
    def failures(self) -> tuple[CellVerdict, ...]:
        return tuple(c for c in self.cells if c.fails)

    def counts(self) -> dict[str, int]:
        """Cells per outcome, in a fixed order (zero counts left out)."""
        out = {o: sum(c.outcome == o for c in self.cells) for o in OUTCOMES}
        return {k: v for k, v in out.items() if v}

    def summary(self) -> str:
        """One line: the verdict and the counts."""
        parts = ", ".join(f"{n} {o}" for o, n in self.counts().items())
        return f"{'PASSED' if self.passed else 'FAILED'}: {len(self.cells)} cells ({parts})"
