"""Base-vs-candidate comparison (Gaudi vs Gaudi2, baseline vs current): matching, ratios, geometric means.

Cells are matched by :attr:`Cell.match_key` (the key without the hardware), so the same workload, size,
device count, precision, mode, graphs and batch meet across hardware kinds. A ratio is only meaningful
when both sides ran the same thing, so result sets whose records disagree on schema, or whose matched
cells disagree on what a step is (samples, tokens or FLOPs per step: a changed model or batch), are
refused outright rather than compared.

A cell run several times (``--repeat``) is one cell with several repetitions: its throughput and every
ratio come from a two-level bootstrap (repetitions, then steps), so run-to-run variation is in the
interval. Every ratio reads "candidate over base" where more is better (throughput, samples per dollar),
so > 1 always means the candidate wins; memory is the plain ratio of peaks (> 1: candidate needs more).
Pure: no torch, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from hpubench.cell import Cell
from hpubench.errors import UsageError
from hpubench.pricing import CellEconomics, Tables, economics
from hpubench.record import STATUS_OK, CellResult
from hpubench.stats import (
    DEFAULT_CONFIDENCE,
    Estimate,
    bootstrap_geomean_ratio_ci,
    bootstrap_repeats_ratio_ci,
    bootstrap_repeats_throughput,
)


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
    throughput_ratio: Estimate  # candidate samples/s over base samples/s
    memory_ratio: float | None  # candidate peak over base peak
    perf_per_usd_ratio: Estimate | None  # candidate samples per $ over base samples per $

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
        """Only an interval that excludes 1 says anything; "no clear difference" is a result, too."""
        if self.throughput_ratio.lo > 1:
            return "faster"
        if self.throughput_ratio.hi < 1:
            return "slower"
        return "no clear difference"


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


def _by_match_key(results: Sequence[CellResult], side: str) -> dict[str, CellRuns]:
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


def _check_schema(base: Sequence[CellResult], candidate: Sequence[CellResult]) -> None:
    b, c = sorted({r.schema for r in base}), sorted({r.schema for r in candidate})
    if len(set(b) | set(c)) > 1:
        raise UsageError(
            f"cannot compare result sets of different record schema versions (base {b}, candidate {c}); "
            "fix: re-run one side with the same hpubench version"
        )


def _check_same_workload(key: str, base: CellRuns, cand: CellRuns) -> None:
    """A cell whose step means different work on each side would make any ratio meaningless."""
    steps = {
        (r.metrics.samples_per_step, r.metrics.tokens_per_step, r.metrics.flops_per_step)
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


def _group(name: str, cells: Sequence[CellComparison], seed: int) -> GroupSpeedup:
    def geomean_ratio(group: Sequence[CellComparison]) -> Estimate:
        # Step times: candidate as a, base as b, so mean(b)/mean(a) is candidate throughput over base.
        pairs = [(c.candidate.step_times, c.base.step_times) for c in group]
        return bootstrap_geomean_ratio_ci(pairs, confidence=DEFAULT_CONFIDENCE, seed=seed)

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
    seed: int = 0,
) -> Comparison:
    """Match the two result sets and compute every ratio; refuses (UsageError) what cannot be compared."""
    _check_schema(base, candidate)
    b_map, c_map = _by_match_key(base, "base"), _by_match_key(candidate, "candidate")
    cells: list[CellComparison] = []
    not_comparable: list[NotComparable] = []
    for key, b in b_map.items():
        c = c_map.get(key)
        if c is None:
            continue
        _check_same_workload(key, b, c)
        be, ce = b.economics(tables), c.economics(tables)
        if be is None or ce is None:
            not_comparable.append(NotComparable(key, b, c))
            continue
        ratio = bootstrap_repeats_ratio_ci(
            c.step_times, b.step_times, confidence=DEFAULT_CONFIDENCE, seed=seed
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
        per_workload=tuple(_group(w, [c for c in cells if c.workload == w], seed) for w in workloads),
        overall=_group("all workloads", cells, seed),
        not_comparable=tuple(not_comparable),
        only_base=only_base,
        only_candidate=only_candidate,
    )
