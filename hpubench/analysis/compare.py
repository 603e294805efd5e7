"""Base-vs-candidate comparison (Gaudi vs Gaudi2, baseline vs current): matching, ratios, geometric means.

Cells are matched by :attr:`Cell.match_key` (the key without the hardware), so the same workload, size,
device count, precision, mode, graphs and batch meet across hardware kinds. A ratio is only meaningful
when both sides ran the same thing, so result sets whose records disagree on schema, or whose matched
cells disagree on what a step is (samples, tokens or FLOPs per step: a changed model or batch), are
refused outright rather than compared.

A cell run several times (``--repeat``) is one cell with several repetitions. Each cell's ratio and
its significance come from :func:`hpubench.analysis.stats.estimator.estimate_change`, the estimator ``hpubench
gate`` uses too, so the two never disagree on the same runs and statistic; compare summarises each run by its
mean step time by default (what training delivers, what prices apply to), the gate by its fastest step
(steadiest on a shared machine), and each output names its choice. Run-to-run variation is in every
interval where the runs can show it; with one run a side it cannot, and the verdict says so. Every ratio
reads "candidate over base" where more is better (throughput, samples per dollar), so > 1 always means
the candidate wins; memory is the plain ratio of peaks (> 1: candidate needs more). A side whose quality
verdict is not ok is shown but never called faster or slower, and a side whose numerics verdict is not ok
(drift, diverged, unchecked, or not recorded) is never the one that wins: where it is the faster one the
verdict reads "not a win: candidate numerics drift".
Pure: no torch, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from hpubench.analysis import quality
from hpubench.analysis.economics import CellEconomics, economics
from hpubench.analysis.numerics import OK as NUMERICS_OK
from hpubench.analysis.numerics import worst as worst_numerics
from hpubench.analysis.prices import Tables
from hpubench.analysis.stats.estimator import Change, estimate_change, estimator_name, geomean_change
from hpubench.analysis.stats.summary import DEFAULT_CONFIDENCE, Estimate, bootstrap_repeats_throughput
from hpubench.errors import UsageError
from hpubench.plan.cell import Cell
from hpubench.store.record import STATUS_OK, CellResult

# compare's default per-run summary; the gate's is "min" (see hpubench.analysis.stats.estimator)
COMPARE_STATISTIC = "mean"


# Quality verdicts (hpubench.analysis.quality, on every record) from best to worst. Runs that are interfered,
# recompiled or partial measured something other than the cell: they are never compared.
QUALITY_SEVERITY = {q: i for i, q in enumerate(reversed(quality.PRECEDENCE))}
UNCOMPARABLE_QUALITIES: tuple[str, ...] = quality.UNCOMPARABLE

NOT_RECORDED = "not recorded"  # how a sentence names a None numerics verdict (before numerics); tables: "-"


def numerics_word(verdict: str | None) -> str:
    """A numerics verdict as a sentence says it."""
    return verdict or NOT_RECORDED


@dataclass(frozen=True)
class CellRuns:
    """Every record of one cell in one result set: its repetitions, in the order they were stored."""

    records: tuple[CellResult, ...]

    @property
    def cell(self) -> Cell:
        return self.records[0].cell

    @property
    def measured(self) -> tuple[CellResult, ...]:
        """The repetitions with a measurement; a failed repetition is listed, never averaged in."""
        return tuple(
            r for r in self.records if r.status == STATUS_OK and r.metrics and len(r.step_times_s) > 1
        )

    @property
    def record(self) -> CellResult:
        """The record that speaks for the cell: its first measured repetition, else its first record."""
        return (self.measured or self.records)[0]

    @property
    def quality(self) -> str | None:
        """The worst quality verdict among the measured repetitions; None where none has one (records
        written before the verdict existed), "ok" only where every repetition that has one is ok."""
        found = [r.quality for r in self.measured if r.quality]
        return max(found, key=lambda q: QUALITY_SEVERITY.get(q, len(QUALITY_SEVERITY))) if found else None

    @property
    def quality_reasons(self) -> tuple[str, ...]:
        """Every repetition's reasons, each once, in the order first seen."""
        return tuple(dict.fromkeys(q for r in self.measured for q in r.quality_reasons))

    @property
    def numerics(self) -> str | None:
        """The worst numerics verdict of every repetition (a failed one too: a diverged loss fails the cell);
        None where none has one (records written before numerics were checked)."""
        return worst_numerics(r.numerics for r in self.records)

    @property
    def numerics_reasons(self) -> tuple[str, ...]:
        """Every repetition's numerics reasons, each once, in the order first seen."""
        return tuple(dict.fromkeys(q for r in self.records for q in r.numerics_reasons))

    @property
    def step_times(self) -> list[tuple[float, ...]]:
        return [r.step_times_s for r in self.measured]

    @cached_property
    def samples_per_s(self) -> Estimate | None:
        """Throughput over all measured repetitions; for one repetition, exactly its record's figure."""
        if not self.measured:
            return None
        return bootstrap_repeats_throughput(self.step_times, self.record.metrics.samples_per_step)  # type: ignore[union-attr]

    def economics(self, tables: Tables, workload_samples: int | None = None) -> CellEconomics | None:
        if self.samples_per_s is None:
            return None
        return economics(self.record, tables, workload_samples, samples_per_s=self.samples_per_s)


def group_runs(results: Sequence[CellResult]) -> list[CellRuns]:
    """Records grouped by cell key, in the order each key first appears (matrix order)."""
    groups: dict[str, list[CellResult]] = {}
    for r in results:
        groups.setdefault(r.key, []).append(r)
    return [CellRuns(tuple(rs)) for rs in groups.values()]


@dataclass(frozen=True)
class CellComparison:
    """One matched cell measured on both sides."""

    match_key: str
    base: CellRuns
    candidate: CellRuns
    base_economics: CellEconomics
    candidate_economics: CellEconomics
    throughput_ratio: Estimate  # candidate samples/s over base samples/s, from ``change``
    memory_ratio: float | None  # candidate peak over base peak
    perf_per_usd_ratio: Estimate | None  # candidate samples per $ over base samples per $
    change: Change  # the shared estimator's result (candidate as "current")

    @property
    def workload(self) -> str:
        return self.base.cell.workload

    @property
    def memory_sources_differ(self) -> bool:
        """Process RSS and device HBM are different quantities: their ratio is shown, but flagged."""
        b, c = self.base.record.memory, self.candidate.record.memory
        return b is not None and c is not None and b.source != c.source

    @property
    def verdict(self) -> str:
        """faster / slower only where both sides are ok, the ratio's interval excludes 1 and the test is
        significant at the same level, and the winning side's numerics are ok; "no significant difference"
        is a result, too. With one run a side the interval cannot hold run-to-run drift, and the verdict
        says so."""
        bad = {q for q in (self.base.quality, self.candidate.quality) if q and q != "ok"}
        if bad:
            return "not comparable: " + ", ".join(sorted(bad, key=lambda q: QUALITY_SEVERITY.get(q, 9)))
        e, ch = self.throughput_ratio, self.change
        level = (1 - e.confidence) / 2
        if e.lo > 1 and ch.p_decrease <= level:
            word = "faster"
        elif e.hi < 1 and ch.p_increase <= level:
            word = "slower"
        else:
            return "no significant difference"
        winner, side = (self.candidate, "candidate") if word == "faster" else (self.base, "base")
        if winner.numerics != NUMERICS_OK:
            # Never a win for a side whose loss was not shown to match the reference (issue 33).
            return f"not a win: {side} numerics {numerics_word(winner.numerics)}"
        return word if ch.testable else f"{word} (within-run only)"


@dataclass(frozen=True)
class NotComparable:
    """A cell both sides have, but at least one side has no measurement of (skipped or failed)."""

    match_key: str
    base: CellRuns
    candidate: CellRuns

    @property
    def why(self) -> str:
        parts = []
        for side, runs in (("base", self.base), ("candidate", self.candidate)):
            if not runs.measured:
                r = runs.record
                parts.append(f"{r.status} on {side}: {r.reason or 'no reason recorded'}")
        return "; ".join(parts)


@dataclass(frozen=True)
class GroupSpeedup:
    """Geometric-mean ratio over a group of cells (one workload, or all of them)."""

    name: str
    cells: int
    throughput: Estimate
    perf_per_usd: Estimate | None  # over the cells priced on both sides
    priced_cells: int


@dataclass(frozen=True)
class Comparison:
    base_label: str
    candidate_label: str
    cells: tuple[CellComparison, ...]
    per_workload: tuple[GroupSpeedup, ...]
    overall: GroupSpeedup
    not_comparable: tuple[NotComparable, ...]
    only_base: tuple[CellRuns, ...]
    only_candidate: tuple[CellRuns, ...]
    statistic: str = COMPARE_STATISTIC
    test: str = "auto"

    @property
    def estimator(self) -> str:
        """The estimator in one line, as every output of compare names it."""
        return estimator_name(self.statistic, self.test)

    @property
    def numerics_not_ok(self) -> tuple[CellComparison, ...]:
        """Matched cells with a side whose numerics are not ok: their ratios are figures, never wins."""
        return tuple(
            x for x in self.cells if x.base.numerics != NUMERICS_OK or x.candidate.numerics != NUMERICS_OK
        )


def by_match_key(results: Sequence[CellResult], side: str) -> dict[str, CellRuns]:
    out: dict[str, CellRuns] = {}
    for runs in group_runs(results):
        other = out.get(runs.cell.match_key)
        if other is not None:
            raise UsageError(
                f"{side} holds two hardware kinds for {runs.cell.match_key} ({other.cell.key} and "
                f"{runs.cell.key}), so matching would be a guess; fix: keep one accelerator per side "
                f"with --{side}-accelerator"
            )
        out[runs.cell.match_key] = runs
    return out


def check_schema(base: Sequence[CellResult], candidate: Sequence[CellResult]) -> None:
    b, c = sorted({r.schema for r in base}), sorted({r.schema for r in candidate})
    if len(set(b) | set(c)) > 1:
        raise UsageError(
            f"cannot compare result sets of different record schema versions (base {b}, candidate {c}); "
            "fix: re-run one side with the same hpubench version"
        )


def check_same_workload(key: str, base: CellRuns, cand: CellRuns, flops: bool = True) -> None:
    """A cell whose step means different work on each side would make any ratio meaningless.

    ``flops=False``: the model's arithmetic may differ (a commit that changed the model, which is what the
    gate's ``--allow-flops-change`` and ``bisect`` compare); samples and tokens per step must agree, since
    the ratio is one of samples/s."""
    steps = {
        (r.metrics.samples_per_step, r.metrics.tokens_per_step, r.metrics.flops_per_step if flops else None)
        for r in (*base.measured, *cand.measured)
        if r.metrics is not None
    }
    if len(steps) > 1:
        shown = " vs ".join(
            f"samples {s}, tokens {t}, FLOPs {f} per step" for s, t, f in sorted(steps, key=str)
        )
        raise UsageError(
            f"cannot compare {key}: the workload definition differs between the result sets ({shown}); "
            "fix: compare results made with the same workload version and batch size"
        )


def _price_factor(b: CellEconomics, c: CellEconomics) -> float | None:
    """Base cost over candidate cost per hour: turns a throughput ratio into a samples-per-dollar ratio."""
    if b.usd_per_hour is None or c.usd_per_hour is None:
        return None
    return b.usd_per_hour / c.usd_per_hour


def _scaled(e: Estimate, f: float) -> Estimate:
    """Prices carry no measurement noise, so scaling by a price factor scales the interval with it."""
    return Estimate(e.value * f, e.lo * f, e.hi * f, e.confidence, e.method)


def _group(name: str, cells: Sequence[CellComparison]) -> GroupSpeedup:
    def geomean_ratio(group: Sequence[CellComparison]) -> Estimate:
        g = geomean_change([c.change for c in group], DEFAULT_CONFIDENCE)
        within = (
            f"; {g.insufficient} cell(s) ran once a side: too narrow by their drift" if g.insufficient else ""
        )
        how = f"geometric mean over {g.cells} cell(s) of the shared estimator's ratios, t interval{within}"
        return Estimate(g.ratio, g.lo, g.hi, DEFAULT_CONFIDENCE, how)

    thr = geomean_ratio(cells)
    priced = [(c, f) for c in cells if (f := _price_factor(c.base_economics, c.candidate_economics))]
    perf = None
    if priced:
        # geomean(r_i * f_i) = geomean(r_i) * geomean(f_i): the interval is the throughput one, scaled.
        g = thr if len(priced) == len(cells) else geomean_ratio([c for c, _ in priced])
        perf = _scaled(g, math.exp(sum(math.log(f) for _, f in priced) / len(priced)))
    return GroupSpeedup(
        name=name, cells=len(cells), throughput=thr, perf_per_usd=perf, priced_cells=len(priced)
    )


def compare(
    base: Sequence[CellResult],
    candidate: Sequence[CellResult],
    tables: Tables,
    *,
    base_label: str = "base",
    candidate_label: str = "candidate",
    statistic: str = COMPARE_STATISTIC,
    test: str = "auto",
) -> Comparison:
    """Match the two result sets and compute every ratio; refuses (UsageError) what cannot be compared.

    ``statistic`` and ``test`` are those of :func:`hpubench.analysis.stats.estimator.estimate_change`; a
    test must
    be able to reach half of 1 - confidence on each side, the level the 95% interval stands for."""
    check_schema(base, candidate)
    b_map, c_map = by_match_key(base, "base"), by_match_key(candidate, "candidate")
    cells: list[CellComparison] = []
    not_comparable: list[NotComparable] = []
    for key, b in b_map.items():
        c = c_map.get(key)
        if c is None:
            continue
        check_same_workload(key, b, c)
        be, ce = b.economics(tables), c.economics(tables)
        if be is None or ce is None:
            not_comparable.append(NotComparable(key, b, c))
            continue
        change = estimate_change(
            b.step_times,
            c.step_times,
            units_per_step=b.record.metrics.samples_per_step,  # type: ignore[union-attr]
            statistic=statistic,
            test=test,
            alpha_per_test=(1 - DEFAULT_CONFIDENCE) / 2,
            confidence=DEFAULT_CONFIDENCE,
        )
        ratio = Estimate(
            change.throughput_ratio, *change.throughput_interval, DEFAULT_CONFIDENCE, change.method
        )
        factor = _price_factor(be, ce)
        mb = b.record.memory.peak_allocated_bytes if b.record.memory else None
        mc = c.record.memory.peak_allocated_bytes if c.record.memory else None
        cells.append(
            CellComparison(
                match_key=key,
                base=b,
                candidate=c,
                base_economics=be,
                candidate_economics=ce,
                throughput_ratio=ratio,
                memory_ratio=mc / mb if mb and mc is not None else None,
                perf_per_usd_ratio=None if factor is None else _scaled(ratio, factor),
                change=change,
            )
        )
    only_base = tuple(r for k, r in b_map.items() if k not in c_map)
    only_candidate = tuple(r for k, r in c_map.items() if k not in b_map)
    if not cells:
        raise UsageError(
            f"nothing to compare: {len(not_comparable)} cell(s) matched but none was measured on both sides, "
            f"{len(only_base)} only in base, {len(only_candidate)} only in candidate; fix: compare runs of "
            "the same matrix (cells match on their key without the accelerator)"
        )
    workloads = sorted({c.workload for c in cells})
    return Comparison(
        base_label=base_label,
        candidate_label=candidate_label,
        cells=tuple(cells),
        per_workload=tuple(_group(w, [c for c in cells if c.workload == w]) for w in workloads),
        overall=_group("all workloads", cells),
        not_comparable=tuple(not_comparable),
        only_base=only_base,
        only_candidate=only_candidate,
        statistic=statistic,
        test=test,
    )
