"""Regression gating: one trustworthy pass/fail for a whole matrix, baseline against current.

Pure: lists of CellResults in, frozen verdicts out; no I/O, no torch. Cells are matched exactly as
``hpubench compare`` matches them (``hpubench.analysis.compare``: by ``Cell.match_key``, repetitions grouped).

Throughput: when does a cell regress?
    A cell regresses when its throughput drop is larger than the threshold (``--max-regression``,
    5% by default) AND the drop is statistically significant after a multiple-comparison correction
    over every cell tested (Holm by default, at ``alpha`` = 0.01).

    Why both. A fixed threshold alone (TorchBench's 7%, pytest-benchmark's ``--benchmark-compare-fail``)
    fails noisy cells by chance and cannot tell a real 6% from noise; significance alone fails a build for
    a real but irrelevant 0.3% on a quiet machine. Requiring both is asv's rule, and the two parts do
    different jobs: significance bounds the false alarms, the threshold says what is worth failing for.

    Why not "the whole confidence interval lies beyond the threshold" (a test of "drop <= threshold").
    That rule flags only changes shown to be *larger* than the threshold: a true 10% slowdown against a
    5% threshold would need the noise to be under about 2% per side, which repeated CPU runs rarely give,
    and the gate would miss most 10% slowdowns. With ours, the chance of failing when nothing changed is
    still at most ``alpha`` (significance alone guarantees it; the threshold only removes more), and a
    slowdown twice the threshold is caught as soon as it is measured precisely enough to be told from
    zero. The price: a real change close to the threshold is flagged about half of the time, because the
    threshold is where we stop caring, not a guarantee. Improvements mirror regressions on the log scale
    (a gain past 1/(1 - threshold) - 1, significant), so swapping the two sides swaps the two verdicts.

    Why Holm, over all tested cells. Any single false alarm fails the build, so the error rate a team
    feels is the family-wise one (the chance of any false alarm), which Holm controls and is never less
    powerful than Bonferroni. ``correction="bh"`` (Benjamini-Hochberg) is offered for big matrices where
    many cells move together: under "nothing changed" it has the same false-alarm rate, and it finds more
    when much changed. The family is every cell with a throughput test, not only those past the
    threshold: correcting over cells selected by their estimate would understate the multiplicity.

    What is compared (``statistic``): each run is summarised by one figure, by default its fastest step
    ("min"). On a shared machine the speed the host gives a VM changes for seconds at a time (measured on
    this project's 2-core VM: stretches 20-50% slower, whole 3-second runs inside one), so a run's mean or
    median moves by 5-15% between identical runs, while its fastest step, taken from whichever stretch
    ran at full speed, moves by 1-2%. A change that slows every step moves the fastest step as much as the
    mean; a change that only adds occasional stalls does not, and for that ``statistic="mean"`` (what
    training delivers) is there, for quiet dedicated runners.

    The test (``hpubench.analysis.stats``). With enough repetitions on both sides (``hpubench run --repeat
    N``): a permutation test on the runs' log values, comparing the mean of the fastest half of each side's
    runs; the change shown is that shift. Runs, not steps, are the samples, so run-to-run drift is part of
    the noise. The fastest half, because the machine only ever slows a run down: a run slowed as a whole
    would swell a t test's variance, and a rank test would count it as slower than every run of the other
    side; either way a real change can be missed (on the project VM's runs, a t test on fastest steps
    caught 18 of 20 planted 10% slowdowns where this test caught 20; in a simulation of its speed
    regimes a Mann-Whitney test on 8 runs caught 16 of 20, this test 20). The permutation test makes no
    assumption about how runs vary, so such runs cost power, never false alarms. "Enough" is what the
    correction needs: R against R runs cannot give a p-value below 1 / C(2R, R) (0.05 at 3 runs a side),
    so ``test="auto"`` uses it only where that smallest p-value passes alpha / (cells tested): 5 runs a
    side for 2 cells at alpha 0.01, 6 for 3 to 7 cells, 9 for 200 cells; a few more than that let a slow
    run or two through.
    With fewer runs (2 or more a side): a Welch t test on the runs' log values (the heavy tails of a t with
    R - 1 degrees of freedom keep three repeats honest). The whole per-cell computation is
    :func:`hpubench.analysis.estimator.estimate_change`, which ``hpubench compare`` calls too.

One run on a side. Its steps say nothing about how much runs drift (measured here: run-to-run CV 3.7-11%
against one run's interval of often under 1%; judged on its steps, one run against one failed 4 of 5 A/A
gates). So its spread is modelled, from the other side's 3 or more runs or from the figure ``baseline
save`` stored for the cell (``run_to_run``), and the t test takes that spread's degrees of freedom; without
either the cell is INSUFFICIENT ("insufficient evidence: run with --repeat 3 or more"): never a failure,
never part of the correction's family, counted in the summary. Every tested cell also carries the smallest
drop it could detect (80% power at alpha over the cells tested), so a pass says what it could have seen.
Simulated A/A gates with runs drifting by 4-10% stay at or under alpha at 1, 3 and 8 runs a side
(tests/unit/test_gate_false_alarms.py).

Quality. Runs whose record is interfered, recompiled or partial measured something other than the cell:
they are left out, and a cell left with no run on a side is NOT_COMPARABLE (counted, never a failure
unless ``strict_quality``). Noisy and unstable runs are tested: their noise is in the run-to-run error.
Each side's worst quality is shown.

Peak memory: device allocator peaks are nearly deterministic, so no test: memory regresses when it grows
by more than its threshold (5% by default) AND by more than an absolute floor (1 MiB by default), and,
when both sides have repetitions, every current repetition is above every baseline one. A CPU process's
resident set is not deterministic (identical runs here: 280-355 MiB), so for it the same rule needs 3 or
more runs a side; with fewer, growth past the threshold is "noisy", never a failure. Process RSS and
device memory are different quantities and are never compared.

Failures: a cell that failed (in any repetition) in current and in none in baseline fails the gate. A cell
in baseline that current lacks, or that current skipped, is "missing": whether that fails the gate is
``missing="fail"`` (default: a run cut short must not pass) or ``"ignore"``. New cells never fail.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone

from hpubench.analysis.compare import (
    QUALITY_SEVERITY,
    UNCOMPARABLE_QUALITIES,
    CellRuns,
    by_match_key,
    check_same_workload,
    check_schema,
)
from hpubench.analysis.correction import CORRECTIONS, adjust_pvalues
from hpubench.analysis.estimator import (
    INSUFFICIENT_ADVICE,
    TESTS,
    Change,
    RunSpread,
    estimate_change,
    estimator_name,
)
from hpubench.analysis.locations import LOCATIONS
from hpubench.analysis.ratiotests import smallest_permutation_pvalue
from hpubench.errors import UsageError
from hpubench.plan.cell import Cell
from hpubench.store.record import STATUS_FAILED, STATUS_SKIPPED, CellResult

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
FAILED = "failed"  # failed in current, not in baseline: fails the gate
STILL_FAILING = "still failing"  # failed in both: reported, does not fail the gate
FIXED = "fixed"  # failed in baseline, measured in current
MISSING = "missing"  # in baseline, absent or skipped in current
NEW = "new"  # only in current (or measured now, skipped before)
SKIPPED = "skipped"  # skipped on both sides
OUTCOMES: tuple[str, ...] = (
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

MISSING_POLICIES: tuple[str, ...] = ("fail", "ignore")
DEFAULT_THRESHOLD = 0.05
DEFAULT_ALPHA = 0.01
DEFAULT_MEMORY_FLOOR_BYTES = 1 << 20
MIN_RSS_RUNS = 3  # runs a side before a process RSS growth can fail (see _memory_verdict)


@dataclass(frozen=True)
class GateSettings:
    """How strict the gate is; every field is a command-line option of ``hpubench gate``."""

    throughput_threshold: float = DEFAULT_THRESHOLD  # fail beyond this relative throughput drop ...
    memory_threshold: float = DEFAULT_THRESHOLD  # ... or this relative peak-memory growth
    memory_floor_bytes: int = DEFAULT_MEMORY_FLOOR_BYTES  # and memory growth beyond this many bytes
    alpha: float = DEFAULT_ALPHA  # family-wise (holm) or false-discovery (bh) error rate
    correction: str = "holm"
    missing: str = "fail"
    statistic: str = "min"  # per run: "min" (fastest step: steadiest on shared machines), "mean" or "median"
    test: str = "auto"  # "permutation" (fastest half of the runs), "welch" (t on log values), "auto"
    confidence: float = 0.95  # of the intervals shown (the decision uses alpha and the correction)
    strict_quality: bool = False  # fail cells whose runs are interfered, recompiled or partial

    @property
    def estimator(self) -> str:
        """The estimator in one line, as every output of the gate names it."""
        return estimator_name(self.statistic, self.test)

    def __post_init__(self) -> None:
        for name in ("throughput_threshold", "memory_threshold"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and 0 <= v < 1):
                raise UsageError(f"{name.replace('_', ' ')} must be a fraction in [0, 1), e.g. 0.05, got {v}")
        if not (isinstance(self.memory_floor_bytes, int) and self.memory_floor_bytes >= 0):
            raise UsageError(
                f"memory floor must be a whole number of bytes >= 0, got {self.memory_floor_bytes}"
            )
        if not 0 < self.alpha < 1:
            raise UsageError(f"alpha must be strictly between 0 and 1, e.g. 0.01, got {self.alpha}")
        if not 0 < self.confidence < 1:
            raise UsageError(f"confidence must be strictly between 0 and 1, got {self.confidence}")
        if self.correction not in CORRECTIONS:
            raise UsageError(f"correction must be one of {', '.join(CORRECTIONS)}, got {self.correction!r}")
        if self.missing not in MISSING_POLICIES:
            raise UsageError(f"missing must be one of {', '.join(MISSING_POLICIES)}, got {self.missing!r}")
        if self.statistic not in LOCATIONS:
            raise UsageError(f"statistic must be one of {', '.join(LOCATIONS)}, got {self.statistic!r}")
        if self.test not in TESTS:
            raise UsageError(f"test must be one of {', '.join(TESTS)}, got {self.test!r}")


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
    evidence: str | None = None  # throughput: runs, modelled or insufficient (hpubench.analysis.estimator)
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
        """0: passed; 1: a regression, a new failure or (by policy) a missing cell."""
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


# ---- per-side measurements ------------------------------------------------------------------------------


def _failed(runs: CellRuns) -> list[CellResult]:
    return [r for r in runs.records if r.status == STATUS_FAILED]


def _comparable(runs: CellRuns) -> list[CellResult]:
    """The measured runs that measured the cell: interfered, recompiled or partial runs are left out."""
    return [r for r in runs.measured if r.quality not in UNCOMPARABLE_QUALITIES]


def _uncomparable_reason(runs: CellRuns, side: str) -> str:
    bad = [r for r in runs.measured if r.quality in UNCOMPARABLE_QUALITIES]
    kinds = sorted({r.quality for r in bad}, key=lambda q: QUALITY_SEVERITY.get(q, 9))  # type: ignore[arg-type]
    why = next((q for r in bad for q in r.quality_reasons), "")
    return f"{side} {', '.join(kinds)} ({len(bad)} of {len(runs.measured)} run(s))" + (
        f": {why}" if why else ""
    )


def _left_out(b: CellRuns, c: CellRuns) -> list[str]:
    """Why runs of either side were left out, one phrase per side that lost any."""
    return [
        _uncomparable_reason(x, side)
        for x, side in ((b, "baseline"), (c, "current"))
        if len(_comparable(x)) < len(x.measured)
    ]


def _peaks(runs: CellRuns) -> tuple[list[int], set[str]]:
    values, sources = [], set()
    for r in runs.measured:
        if r.memory is not None and r.memory.peak_allocated_bytes is not None:
            values.append(int(r.memory.peak_allocated_bytes))
            sources.add(r.memory.source)
    return values, sources


def _pct(x: float) -> str:
    return f"{x:+.1%}"


# ---- decisions ------------------------------------------------------------------------------------------


def permutation_test_can_decide(n_base: int, n_cur: int, alpha: float, tests: int) -> bool:
    """Whether a permutation test of these runs can pass the strictest step of the correction (alpha /
    tests). It gives no p-value below 1 / C(n_base + n_cur, n_cur); with too few runs it could never flag
    anything, and a gate that cannot fail is worse than a weaker test that can."""
    return smallest_permutation_pvalue(n_base, n_cur) <= alpha / max(1, tests)


def runs_needed_for_permutation_test(alpha: float, tests: int) -> int:
    """The fewest runs per side (the same on both) with which the permutation test can decide."""
    r = 2
    while not permutation_test_can_decide(r, r, alpha, tests):
        r += 1
    return r


def _throughput_change(
    b: list[CellResult], c: list[CellResult], s: GateSettings, tests: int, spread: RunSpread | None
) -> Change:
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


def _first_reason(records: Sequence[CellResult]) -> str:
    return next((r.reason for r in records if r.reason), None) or "no reason recorded"


def gate(
    baseline: Sequence[CellResult],
    current: Sequence[CellResult],
    settings: GateSettings | None = None,
    run_to_run: Mapping[str, RunSpread] | None = None,
) -> GateResult:
    """Judge ``current`` against ``baseline``; raises UsageError for inputs that cannot be judged.

    ``run_to_run``: per match key, a run-to-run spread stored with the baseline (``baseline save``) for
    the settings' statistic; it lets a side that ran once be tested where the other side cannot say
    how much runs drift."""
    s = settings or GateSettings()
    if not baseline:
        raise UsageError("the baseline holds no result records; fix: point --baseline at a saved run")
    if not current:
        raise UsageError("the current results hold no records; fix: point --current at a finished run")
    check_schema(baseline, current)
    b_map, c_map = by_match_key(baseline, "baseline"), by_match_key(current, "current")
    matched = [k for k in b_map if k in c_map]
    if not matched:
        raise UsageError(
            f"nothing matched: none of the {len(c_map)} current cell(s) is among the {len(b_map)} baseline "
            "cell(s); fix: gate runs of the same matrix (cells match on their key without the accelerator)"
        )

    # First pass: settle every cell that needs no statistics, find those to test.
    settled: dict[str, CellVerdict] = {}
    to_test: list[str] = []
    for key in matched:
        b, c = b_map[key], c_map[key]
        cell = b.cell
        runs = {"baseline_runs": len(b.measured), "current_runs": len(c.measured)}
        quality = {"baseline_quality": b.quality, "current_quality": c.quality}
        b_failed, c_failed = _failed(b), _failed(c)
        if c_failed and not b_failed and not b.measured:
            settled[key] = CellVerdict(
                key,
                cell,
                NEW,
                False,
                f"failed now, skipped in baseline: {_first_reason(c_failed)}",
                **runs,
                **quality,
            )
        elif c_failed and not b_failed:
            reps = f" in {len(c_failed)} of {len(c.records)} repetitions" if len(c.records) > 1 else ""
            settled[key] = CellVerdict(
                key, cell, FAILED, True, f"failed{reps}: {_first_reason(c_failed)}", **runs, **quality
            )
        elif c_failed:
            settled[key] = CellVerdict(
                key,
                cell,
                STILL_FAILING,
                False,
                f"failed on both sides: {_first_reason(c_failed)}",
                **runs,
                **quality,
            )
        elif b_failed and c.measured:
            settled[key] = CellVerdict(
                key,
                cell,
                FIXED,
                False,
                f"measured now; baseline failed: {_first_reason(b_failed)}",
                **runs,
                **quality,
            )
        elif not c.measured and b.measured:
            skipped = [r for r in c.records if r.status == STATUS_SKIPPED]
            settled[key] = CellVerdict(
                key,
                cell,
                MISSING,
                s.missing == "fail",
                f"skipped in current: {_first_reason(skipped)}",
                **runs,
            )
        elif not c.measured and not b.measured:
            settled[key] = CellVerdict(
                key, cell, SKIPPED, False, f"skipped: {_first_reason(c.records)}", **runs, **quality
            )
        elif not b.measured:
            settled[key] = CellVerdict(
                key,
                cell,
                NEW,
                False,
                f"measured now; baseline: {_first_reason(b.records)}",
                **runs,
                **quality,
            )
        else:
            check_same_workload(key, b, c)
            if not _comparable(b) or not _comparable(c):
                why = "; ".join(_left_out(b, c))
                settled[key] = CellVerdict(
                    key, cell, NOT_COMPARABLE, s.strict_quality, f"not comparable: {why}", **runs, **quality
                )
            else:
                to_test.append(key)
    # The family size is known only now, and whether a permutation test can decide depends on it. Cells
    # whose runs cannot show significance are not tested, so they do not dilute the correction.
    spreads = run_to_run or {}
    changes = {
        k: _throughput_change(_comparable(b_map[k]), _comparable(c_map[k]), s, len(to_test), spreads.get(k))
        for k in to_test
    }
    tested = [k for k in to_test if changes[k].testable]
    if len(tested) < len(to_test):  # a smaller family: the tests' level and choice can change
        changes.update(
            {
                k: _throughput_change(
                    _comparable(b_map[k]), _comparable(c_map[k]), s, len(tested), spreads.get(k)
                )
                for k in tested
            }
        )

    # Second pass: the correction over every tested cell, then the decisions.
    p_slow = adjust_pvalues([changes[k].p_increase for k in tested], s.correction)
    p_fast = adjust_pvalues([changes[k].p_decrease for k in tested], s.correction)
    adjusted = {k: (ps, pf) for k, ps, pf in zip(tested, p_slow, p_fast, strict=True)}

    verdicts: list[CellVerdict] = []
    for key in b_map:
        if key in settled:
            verdicts.append(settled[key])
        elif key in changes:
            b, c = b_map[key], c_map[key]
            thr = _throughput_verdict(changes[key], *adjusted.get(key, (1.0, 1.0)), s)
            mem = _memory_verdict(b, c, s)
            outcome, fails, reason = _measured_outcome(thr, mem)
            left_out = _left_out(b, c)
            if left_out:
                reason += f"; left out: {'; '.join(left_out)}"
            verdicts.append(
                CellVerdict(
                    key,
                    b.cell,
                    outcome,
                    fails,
                    reason,
                    thr,
                    mem,
                    len(_comparable(b)),
                    len(_comparable(c)),
                    b.quality,
                    c.quality,
                )
            )
        else:
            b = b_map[key]
            verdicts.append(
                CellVerdict(
                    key,
                    b.cell,
                    MISSING,
                    s.missing == "fail",
                    "not in the current results",
                    baseline_runs=len(b.measured),
                    baseline_quality=b.quality,
                )
            )
    for key, c in c_map.items():
        if key not in b_map:
            verdicts.append(
                CellVerdict(
                    key,
                    c.cell,
                    NEW,
                    False,
                    "not in the baseline",
                    current_runs=len(c.measured),
                    current_quality=c.quality,
                )
            )
    if not changes and not any(v.outcome in (FAILED, STILL_FAILING, FIXED, NOT_COMPARABLE) for v in verdicts):
        raise UsageError(
            f"nothing to gate: {len(matched)} cell(s) matched but none was measured on both sides; "
            "fix: gate runs where the cells ran (see 'hpubench results')"
        )
    return GateResult(s, tuple(verdicts), _notes(changes, b_map, c_map, matched, s))


def _device(runs: CellRuns) -> str | None:
    return runs.record.runtime.device_name if runs.measured else None


def _span(groups: Sequence[CellRuns]) -> tuple[datetime, datetime] | None:
    """First and last start time of the measured runs (unreadable or absent stamps left out)."""
    times = []
    for g in groups:
        for r in g.measured:
            if not r.started_at:
                continue
            try:
                t = datetime.fromisoformat(r.started_at)
            except ValueError:
                continue
            times.append(t if t.tzinfo else t.replace(tzinfo=timezone.utc))
    return (min(times), max(times)) if times else None


def _measured_apart(base: Sequence[CellRuns], cur: Sequence[CellRuns]) -> str | None:
    """A note when one side was measured wholly before the other: then a change of the machine between
    the two (another tenant, a host update) is indistinguishable from a change of the code."""
    b, c = _span(base), _span(cur)
    if b is None or c is None or not (b[1] < c[0] or c[1] < b[0]):
        return None
    first, second = ("baseline", "current") if b[1] < c[0] else ("current", "baseline")
    gap = abs((c[0] - b[1]) if first == "baseline" else (b[0] - c[1]))
    hours = gap.total_seconds() / 3600
    when = f"{hours:.1f} h" if hours < 36 else f"{hours / 24:.0f} days"
    return (
        f"{first} was measured wholly before {second} ({when} apart), so anything that changed on the "
        "machine in between counts as a change; interleave the two (README: Repetitions) to rule that out"
    )


def _notes(
    changes: dict[str, Change],
    b_map: dict[str, CellRuns],
    c_map: dict[str, CellRuns],
    matched: list[str],
    s: GateSettings,
) -> tuple[str, ...]:
    notes = []
    tested = {k: t for k, t in changes.items() if t.testable}
    need = runs_needed_for_permutation_test(s.alpha, max(1, len(tested)))
    insufficient = len(changes) - len(tested)
    if insufficient:
        notes.append(
            f"insufficient evidence for {insufficient} of {len(changes)} cell(s): with one run on a side and "
            "no run-to-run spread (from 3 or more runs of the other side, or stored with the baseline by "
            f"'hpubench baseline save') the runs cannot show significance, so they pass untested; "
            f"{INSUFFICIENT_ADVICE}"
        )
    modelled = sum(t.evidence == "modelled" for t in tested.values())
    if modelled:
        notes.append(
            f"{modelled} cell(s) ran once on a side: their run-to-run spread was modelled (from the other "
            "side's runs or the baseline's stored figure), which assumes this run drifts as those did"
        )
    few = sum(
        "Welch" in t.method and t.evidence == "runs" and max(t.base_runs, t.cur_runs) > 1
        for t in tested.values()
    )
    if few and s.test == "auto":
        notes.append(
            f"{few} of {len(tested)} tested cell(s) had too few runs for the permutation test ({need} per "
            f"side needed for {len(tested)} cell(s) at alpha {s.alpha:g}), so a Welch t test was used, which "
            f"one run slowed as a whole can blind; run with --repeat {need} or more"
        )
    weak = sum(
        "permutation" in t.method
        and not permutation_test_can_decide(t.base_runs, t.cur_runs, s.alpha, len(tested))
        for t in tested.values()
    )
    if weak:
        notes.append(
            f"{weak} cell(s) were permutation-tested with too few runs to ever reach significance ({need} "
            f"per side needed): they cannot fail the gate on throughput; run with --repeat {need} or more"
        )
    apart = _measured_apart([b_map[k] for k in changes], [c_map[k] for k in changes])
    if apart:
        notes.append(apart)
    pairs = {(_device(b_map[k]), _device(c_map[k])) for k in matched}
    changed = sorted({f"{b} -> {c}" for b, c in pairs if b and c and b != c})
    if changed:
        notes.append(f"the device changed between baseline and current ({'; '.join(changed)})")
    return tuple(notes)
