"""Each cell's throughput across saved baselines, in commit or date order, with the gate's verdict between
each two consecutive baselines (``hpubench history``), the way asv draws a benchmark over commits.

Pure: baselines' records and facts in, the ordered series and verdicts out (``hpubench.api.load_points``
reads the baselines; ``reports.history`` draws them).

Order. ``commit`` (the default): by the time of each baseline's git commit where it is known (the caller
asks git), those without one after them by date; ``date``: by when the baseline's run started (else when
it was saved); ``given``: as listed. Ties fall to the run's start, then the name, so the order never
depends on the input order.

Verdicts. Between two consecutive baselines the verdict is exactly ``hpubench gate --baseline OLDER
--current NEWER`` with the same settings and the older baseline's stored run-to-run spreads: what a CI
gate at that commit would have said. The points show each baseline's mean throughput over its runs with
the interval ``compare`` shows (a bootstrap over steps, or over repetitions), so a reader sees the size of
a change next to whether it is significant.

Change points. Over the whole series, each cell's steps in level are found by
:mod:`hpubench.analysis.changepoints` (binary segmentation, each split a permutation test over whole
baselines), at the gate's alpha and shown past its threshold: a regression that came in steps too small for
any neighbouring pair shows there, with its size and interval. Each baseline's value for it is the mean
over its comparable runs of the gate's per-run statistic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from hpubench.analysis.changepoints import Detection, detect, min_baselines
from hpubench.analysis.compare import group_runs
from hpubench.analysis.gate.decide import gate
from hpubench.analysis.gate.inputs import comparable_runs
from hpubench.analysis.gate.outcomes import IMPROVEMENT, REGRESSION
from hpubench.analysis.gate.rules import GateSettings
from hpubench.analysis.runspread import stored_spreads
from hpubench.analysis.stats.locations import run_value
from hpubench.errors import UsageError
from hpubench.store.record import CellResult

ORDERS = ("commit", "date", "given")


@dataclass(frozen=True)
class Point:
    """One saved baseline: its name, where its code came from and when, and its records."""

    name: str
    records: tuple[CellResult, ...]
    commit: str | None = None
    dirty: bool | None = None
    commit_time: int | None = None  # seconds since the epoch, where git knows the commit
    started_at: str | None = None  # ISO 8601, UTC (the run's start)
    saved_at: str | None = None
    spreads: Mapping[str, Mapping[str, float]] = field(default_factory=dict)  # meta.json run_to_run

    @property
    def label(self) -> str:
        code = f" @ {self.commit[:10]}{'+dirty' if self.dirty else ''}" if self.commit else ""
        return f"{self.name}{code}"


@dataclass(frozen=True)
class Throughput:
    """A cell's samples/s in one baseline: the mean over its runs and the interval; runs measured."""

    value: float
    lo: float
    hi: float
    runs: int


@dataclass(frozen=True)
class Step:
    """The gate's verdict on one cell from the previous baseline to this one."""

    outcome: str
    fails: bool
    reason: str
    change: float | None  # relative throughput change (the gate's statistic), where tested


@dataclass(frozen=True)
class CellHistory:
    key: str  # the match key (cells match across baselines as the gate matches them)
    points: tuple[Throughput | None, ...]  # one per baseline; None where not measured there
    statuses: tuple[str, ...]  # per baseline: ok, failed, skipped or absent
    steps: tuple[Step | None, ...]  # one per consecutive pair; None where the gate said nothing
    changes: Detection  # steps in level over the whole series (indices into the points)


@dataclass(frozen=True)
class History:
    points: tuple[Point, ...]  # in order
    cells: tuple[CellHistory, ...]
    notes: tuple[str, ...]
    settings: GateSettings


def _date(p: Point) -> str:
    return p.started_at or p.saved_at or ""


def order_points(points: Sequence[Point], by: str = "commit") -> tuple[list[Point], list[str]]:
    """``points`` in ``by`` order (see the module docstring), and notes on what could not be ordered so."""
    if by not in ORDERS:
        raise UsageError(f"--order must be one of {', '.join(ORDERS)}, got {by!r}")
    if by == "given":
        return list(points), []
    if by == "date":
        return sorted(points, key=lambda p: (_date(p), p.name)), []
    unknown = [p.name for p in points if p.commit_time is None]
    notes = []
    if unknown and len(unknown) < len(points):
        notes.append(f"no commit time for {', '.join(unknown)}: placed after the others, by date")
    elif unknown:
        notes.append("no baseline's commit is known to git here: ordered by date")
    ordered = sorted(points, key=lambda p: (p.commit_time is None, p.commit_time or 0, _date(p), p.name))
    return ordered, notes


def _status(records: Sequence[CellResult]) -> str:
    if any(r.status == "ok" for r in records):
        return "ok"
    return "failed" if any(r.status == "failed" for r in records) else "skipped"


def _series(point: Point, statistic: str) -> dict[str, tuple[Throughput | None, str, float | None]]:
    """Per cell: its throughput (for the chart), its status, and its level for change points."""
    out: dict[str, tuple[Throughput | None, str, float | None]] = {}
    for runs in group_runs(point.records):
        est = runs.samples_per_s
        t = None if est is None else Throughput(est.value, est.lo, est.hi, len(runs.measured))
        good = comparable_runs(runs)
        values = [run_value(r.step_times_s, statistic, r.metrics.samples_per_step) for r in good if r.metrics]
        level = sum(values) / len(values) if values else None
        out[runs.cell.match_key] = (t, _status(runs.records), level)
    return out


def _steps(older: Point, newer: Point, settings: GateSettings) -> tuple[dict[str, Step], str | None]:
    spreads = stored_spreads(older.spreads, settings.statistic, older.name)
    try:
        result = gate(older.records, newer.records, settings, run_to_run=spreads)
    except UsageError as exc:
        return {}, f"{older.name} -> {newer.name}: no verdicts ({exc})"
    steps = {}
    for v in result.cells:
        change = v.throughput.change if v.throughput is not None else None
        steps[v.key] = Step(v.outcome, v.fails, v.reason, change)
    return steps, None


def build(points: Sequence[Point], settings: GateSettings | None = None, by: str = "commit") -> History:
    """Every cell's series over the ordered baselines and the gate's verdicts between neighbours."""
    s = settings or GateSettings()
    if len(points) < 2:
        raise UsageError(
            f"a history needs at least 2 saved baselines, got {len(points)}; save more with "
            "'hpubench baseline save RUN --name NAME'"
        )
    ordered, notes = order_points(points, by)
    series = [_series(p, s.statistic) for p in ordered]
    steps: list[dict[str, Step]] = []
    for older, newer in pairwise(ordered):
        found, note = _steps(older, newer, s)
        steps.append(found)
        if note:
            notes.append(note)
    need = min_baselines(s.alpha)
    if len(ordered) < need:
        notes.append(
            f"change points: {len(ordered)} baselines; a permutation test over baselines can show a step "
            f"at alpha {s.alpha:g} from {need}"
        )
    keys = list(dict.fromkeys(k for one in series for k in one))
    cells = []
    for key in keys:
        found = [one.get(key) for one in series]
        levels = [f[2] if f else None for f in found]
        cells.append(
            CellHistory(
                key,
                tuple(f[0] if f else None for f in found),
                tuple(f[1] if f else "absent" for f in found),
                tuple(st.get(key) for st in steps),
                detect(levels, s.alpha, s.throughput_threshold, s.confidence),
            )
        )
    return History(tuple(ordered), tuple(cells), tuple(notes), s)


def summary(h: History) -> dict[str, Any]:
    """Counts for the terminal: regressions and improvements over the whole history."""
    outcomes = [st.outcome for c in h.cells for st in c.steps if st is not None]
    return {
        "baselines": len(h.points),
        "cells": len(h.cells),
        "regressions": outcomes.count(REGRESSION),
        "improvements": outcomes.count(IMPROVEMENT),
        "failing_steps": sum(st.fails for c in h.cells for st in c.steps if st is not None),
        "change_points": sum(len(c.changes.shown) for c in h.cells),
        "cells_with_change_points": sum(bool(c.changes.shown) for c in h.cells),
    }
