"""Per-metric verdicts of one measured cell: throughput (from the change the estimator measured, and the
corrected p-values), peak memory (a rule, no test), and the cell's outcome from the two.

Separate from :mod:`hpubench.analysis.gate.decide`, which decides which cells reach here and corrects over
them;
these functions judge one cell at a time. Pure.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import replace

from hpubench.analysis.compare import CellRuns
from hpubench.analysis.gate.inputs import comparable_runs, left_out_reasons
from hpubench.analysis.gate.outcomes import (
    FAILED,
    IMPROVEMENT,
    INSUFFICIENT,
    MEMORY,
    NO_CHANGE,
    NOISY,
    NOT_TESTED,
    NUMERICS_REGRESSION,
    REGRESSION,
    THROUGHPUT,
    CellVerdict,
    MetricVerdict,
)
from hpubench.analysis.gate.rules import MIN_RSS_RUNS, GateSettings
from hpubench.analysis.numerics import DIVERGED, DRIFT
from hpubench.analysis.numerics import OK as NUMERICS_OK
from hpubench.analysis.stats.estimator import INSUFFICIENT_ADVICE, Change, RunSpread, estimate_change
from hpubench.store.record import CellResult


def throughput_change(
    b: list[CellResult], c: list[CellResult], s: GateSettings, tests: int, spread: RunSpread | None
) -> Change:
    """The estimator's change for one cell's comparable runs, at alpha split over ``tests`` cells."""
    return estimate_change(
        [r.step_times_s for r in b],
        [r.step_times_s for r in c],
        units_per_step=b[0].metrics.samples_per_step,  # type: ignore[union-attr]
        statistic=s.statistic,
        test=s.test,
        alpha_per_test=s.alpha / max(1, tests),
        confidence=s.confidence,
        stored_spread=spread,
    )


def _throughput_verdict(t: Change, p_slow_adj: float, p_fast_adj: float, s: GateSettings) -> MetricVerdict:
    """The throughput verdict: past the threshold and significant after the correction, or why not."""
    # Locations are log seconds per sample, so throughput = exp(-location) and its ratio exp(-d).
    change = t.throughput_ratio - 1
    lo, hi = t.throughput_interval
    slower = change < 0
    p = t.p_increase if slower else t.p_decrease
    p_adj = p_slow_adj if slower else p_fast_adj
    # A drop past the threshold, or the mirror-image gain (1/(1-t) - 1): swapping baseline and current
    # then swaps regression and improvement exactly.
    past = -change > s.throughput_threshold if slower else change > 1 / (1 - s.throughput_threshold) - 1
    significant = p_adj <= s.alpha
    if not t.testable:
        decision = INSUFFICIENT
    elif past and significant:
        decision = REGRESSION if slower else IMPROVEMENT
    elif past:
        decision = NOISY
    else:
        decision = NO_CHANGE
    return MetricVerdict(
        metric=THROUGHPUT,
        decision=decision,
        baseline=math.exp(-t.base_value),
        current=math.exp(-t.cur_value),
        change=change,
        interval=(lo - 1, hi - 1),
        p_value=p if t.testable else None,
        p_adjusted=p_adj if t.testable else None,
        threshold=s.throughput_threshold,
        detail=t.method,
        evidence=t.evidence,
        mde=t.mde,
        mde_text=t.mde_text(),
    )


def _memory_verdict(b: CellRuns, c: CellRuns, s: GateSettings) -> MetricVerdict:
    """The peak-memory verdict: a rule on growth past threshold and floor (no test; see the gate docs)."""
    bv, bsrc = _peaks(b)
    cv, csrc = _peaks(c)

    def not_tested(why: str) -> MetricVerdict:
        return MetricVerdict(MEMORY, NOT_TESTED, None, None, None, None, None, None, s.memory_threshold, why)

    if not bv or not cv:
        return not_tested(
            "no peak memory recorded on "
            + ("either side" if not bv and not cv else "the baseline" if not bv else "the current side")
        )
    if bsrc != csrc:
        return not_tested(f"memory sources differ ({', '.join(sorted(bsrc | csrc))}): not comparable")
    base, cur = float(statistics.median(bv)), float(statistics.median(cv))
    if base <= 0:
        return not_tested("baseline peak memory is zero")
    change = cur / base - 1
    diff = cur - base
    repeated = len(bv) > 1 and len(cv) > 1
    # A process's resident set is not deterministic: identical mlp tiny runs here peaked anywhere from 280
    # to 355 MiB. So it regresses only with MIN_RSS_RUNS runs a side, every current one above every
    # baseline one (by chance at most 1 / C(6, 3) = 5% when nothing changed); device allocator peaks
    # repeat exactly and are judged on one run.
    rss = any(src.startswith("process") for src in bsrc)
    enough = min(len(bv), len(cv)) >= MIN_RSS_RUNS if rss else True
    decision = NO_CHANGE
    grew = change > s.memory_threshold and diff > s.memory_floor_bytes
    shrank = cur / base < 1 / (1 + s.memory_threshold) and -diff > s.memory_floor_bytes  # the mirror image
    if grew and enough and (not repeated or min(cv) > max(bv)):
        decision = REGRESSION
    elif shrank and enough and (not repeated or max(cv) < min(bv)):
        decision = IMPROVEMENT
    elif grew or shrank:
        decision = NOISY  # runs that overlap, or a process RSS with too few runs to tell from its noise
    detail = (
        f"median peak of {len(bv)} vs {len(cv)} run(s), {diff / 2**20:+.1f} MiB; "
        f"regresses beyond {s.memory_threshold:.0%} and {s.memory_floor_bytes / 2**20:g} MiB"
        + ("" if enough else f"; process RSS varies between runs: {MIN_RSS_RUNS} or more runs a side needed")
    )
    return MetricVerdict(
        metric=MEMORY,
        decision=decision,
        baseline=base,
        current=cur,
        change=change,
        interval=(min(cv) / max(bv) - 1, max(cv) / min(bv) - 1) if repeated else None,
        p_value=None,
        p_adjusted=None,
        threshold=s.memory_threshold,
        detail=detail,
    )


def _measured_outcome(thr: MetricVerdict, mem: MetricVerdict) -> tuple[str, bool, str]:
    """The outcome of a measured cell from its two metric verdicts: (outcome, fails, one-line reason)."""
    decisions = (thr.decision, mem.decision)
    parts = []
    for v, name in ((thr, "throughput"), (mem, "peak memory")):
        if v.decision in (REGRESSION, IMPROVEMENT, NOISY) and v.change is not None:
            extra = f", p_adj {v.p_adjusted:.2g}" if v.p_adjusted is not None else ""
            label = "past the threshold but not significant" if v.decision == NOISY else v.decision
            parts.append(f"{name} {_pct(v.change)} ({label}{extra})")
    if thr.decision == INSUFFICIENT and thr.change is not None:
        parts.append(
            f"throughput {_pct(thr.change)}: insufficient evidence ({thr.detail}): {INSUFFICIENT_ADVICE}"
        )
    if REGRESSION in decisions:
        return REGRESSION, True, "; ".join(parts)
    if INSUFFICIENT in decisions:
        return INSUFFICIENT, False, "; ".join(parts)
    if NOISY in decisions:
        return NOISY, False, "; ".join(parts)
    if IMPROVEMENT in decisions:
        return IMPROVEMENT, False, "; ".join(parts)
    change = f"throughput {_pct(thr.change)}" if thr.change is not None else "throughput not tested"
    return NO_CHANGE, False, f"{change}, within {thr.threshold:.0%} or not significant"


def _peaks(runs: CellRuns) -> tuple[list[int], set[str]]:
    values, sources = [], set()
    for r in runs.measured:
        if r.memory is not None and r.memory.peak_allocated_bytes is not None:
            values.append(int(r.memory.peak_allocated_bytes))
            sources.add(r.memory.source)
    return values, sources


def _pct(x: float) -> str:
    return f"{x:+.1%}"


def measured_verdict(
    key: str, b: CellRuns, c: CellRuns, change: Change, p_slow_adj: float, p_fast_adj: float, s: GateSettings
) -> CellVerdict:
    """The verdict on a cell measured on both sides: its throughput and memory verdicts, and its outcome."""
    thr = _throughput_verdict(change, p_slow_adj, p_fast_adj, s)
    mem = _memory_verdict(b, c, s)
    outcome, fails, reason = _measured_outcome(thr, mem)
    left_out = left_out_reasons(b, c)
    if left_out:
        reason += f"; left out: {'; '.join(left_out)}"
    return CellVerdict(
        key,
        b.cell,
        outcome,
        fails,
        reason,
        thr,
        mem,
        len(comparable_runs(b)),
        len(comparable_runs(c)),
        b.quality,
        c.quality,
    )


def numerics_regressed(baseline: str | None, current: str | None) -> bool:
    """ok in the baseline, drift or diverged now. A baseline without a verdict (saved before numerics were
    checked) or unchecked is no evidence of what the cell trained like, so it never makes a regression."""
    return baseline == NUMERICS_OK and current in (DRIFT, DIVERGED)


def with_numerics(v: CellVerdict, b: CellRuns | None, c: CellRuns | None) -> CellVerdict:
    """``v`` with each side's worst numerics verdict, and failing as a numerics regression where they
    regressed: an outcome of its own, whatever throughput and memory decided, since a faster step that no
    longer trains is no improvement. A cell that fails already keeps its outcome, the numerics added to its
    reason."""
    bn = None if b is None else b.numerics
    cn = None if c is None else c.numerics
    v = replace(v, baseline_numerics=bn, current_numerics=cn)
    if c is None or not numerics_regressed(bn, cn):
        return v
    why = f"numerics {bn} -> {cn}" + (f": {c.numerics_reasons[0]}" if c.numerics_reasons else "")
    if v.outcome == FAILED:
        return replace(v, reason=f"{v.reason}; {why}")
    return replace(v, outcome=NUMERICS_REGRESSION, fails=True, reason=f"{why}; {v.reason}")
