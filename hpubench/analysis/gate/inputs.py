"""Each side's runs as the gate reads them (failed, comparable, left out and why), and the verdicts those
records settle on their own: failed, still failing, fixed, missing, new, skipped, not comparable.

Separate from :mod:`hpubench.analysis.gate.verdicts`: nothing here needs a statistic, so a cell settled here
never enters the multiple-comparison family. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

from hpubench.analysis.compare import QUALITY_SEVERITY, UNCOMPARABLE_QUALITIES, CellRuns, check_same_workload
from hpubench.analysis.gate.outcomes import (
    FAILED,
    FIXED,
    MISSING,
    NEW,
    NOT_COMPARABLE,
    SKIPPED,
    STILL_FAILING,
    CellVerdict,
)
from hpubench.analysis.gate.rules import GateSettings
from hpubench.store.record import STATUS_FAILED, STATUS_SKIPPED, CellResult


def _failed_runs(runs: CellRuns) -> list[CellResult]:
    """The records of ``runs`` that failed."""
    return [r for r in runs.records if r.status == STATUS_FAILED]


def comparable_runs(runs: CellRuns) -> list[CellResult]:
    """The measured runs that measured the cell: interfered, recompiled or partial runs are left out."""
    return [r for r in runs.measured if r.quality not in UNCOMPARABLE_QUALITIES]


def _uncomparable_reason(runs: CellRuns, side: str) -> str:
    """Why ``side``'s runs were left out: the qualities, how many runs, the first reason recorded."""
    bad = [r for r in runs.measured if r.quality in UNCOMPARABLE_QUALITIES]
    kinds = sorted({r.quality for r in bad}, key=lambda q: QUALITY_SEVERITY.get(q, 9))  # type: ignore[arg-type]
    why = next((q for r in bad for q in r.quality_reasons), "")
    return f"{side} {', '.join(kinds)} ({len(bad)} of {len(runs.measured)} run(s))" + (
        f": {why}" if why else ""
    )


def left_out_reasons(b: CellRuns, c: CellRuns) -> list[str]:
    """Why runs of either side were left out, one phrase per side that lost any."""
    return [
        _uncomparable_reason(x, side)
        for x, side in ((b, "baseline"), (c, "current"))
        if len(comparable_runs(x)) < len(x.measured)
    ]


def _first_reason(records: Sequence[CellResult]) -> str:
    """The first reason the records give, for a one-line verdict."""
    return next((r.reason for r in records if r.reason), None) or "no reason recorded"


def _settled(key: str, b: CellRuns, c: CellRuns, outcome: str, fails: bool, reason: str) -> CellVerdict:
    return CellVerdict(
        key,
        b.cell,
        outcome,
        fails,
        reason,
        baseline_runs=len(b.measured),
        current_runs=len(c.measured),
        baseline_quality=b.quality,
        current_quality=c.quality,
    )


def settle(key: str, b: CellRuns, c: CellRuns, s: GateSettings) -> CellVerdict | None:
    """The verdict on a cell in both sides that its records alone decide (a failure, a skip, a side with no
    measured run, runs too disturbed to compare); None for a cell whose throughput must be tested."""
    b_failed, c_failed = _failed_runs(b), _failed_runs(c)
    if c_failed and not b_failed and not b.measured:
        return _settled(key, b, c, NEW, False, f"failed now, skipped in baseline: {_first_reason(c_failed)}")
    if c_failed and not b_failed:
        reps = f" in {len(c_failed)} of {len(c.records)} repetitions" if len(c.records) > 1 else ""
        return _settled(key, b, c, FAILED, True, f"failed{reps}: {_first_reason(c_failed)}")
    if c_failed:
        return _settled(key, b, c, STILL_FAILING, False, f"failed on both sides: {_first_reason(c_failed)}")
    if b_failed and c.measured:
        return _settled(key, b, c, FIXED, False, f"measured now; baseline failed: {_first_reason(b_failed)}")
    if not c.measured and b.measured:
        skipped = [r for r in c.records if r.status == STATUS_SKIPPED]
        return CellVerdict(
            key,
            b.cell,
            MISSING,
            s.missing == "fail",
            f"skipped in current: {_first_reason(skipped)}",
            baseline_runs=len(b.measured),
            current_runs=len(c.measured),
        )
    if not c.measured and not b.measured:
        return _settled(key, b, c, SKIPPED, False, f"skipped: {_first_reason(c.records)}")
    if not b.measured:
        return _settled(key, b, c, NEW, False, f"measured now; baseline: {_first_reason(b.records)}")
    check_same_workload(key, b, c, flops=s.same_flops)
    if not comparable_runs(b) or not comparable_runs(c):
        why = "; ".join(left_out_reasons(b, c))
        return _settled(key, b, c, NOT_COMPARABLE, s.strict_quality, f"not comparable: {why}")
    return None


def missing_from_current(key: str, b: CellRuns, s: GateSettings) -> CellVerdict:
    """A baseline cell the current results do not hold at all."""
    return CellVerdict(
        key,
        b.cell,
        MISSING,
        s.missing == "fail",
        "not in the current results",
        baseline_runs=len(b.measured),
        baseline_quality=b.quality,
    )


def new_in_current(key: str, c: CellRuns) -> CellVerdict:
    """A current cell the baseline does not hold: never a failure."""
    return CellVerdict(
        key,
        c.cell,
        NEW,
        False,
        "not in the baseline",
        current_runs=len(c.measured),
        current_quality=c.quality,
    )
