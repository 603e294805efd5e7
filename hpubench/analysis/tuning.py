"""The tuned figure beside the plain one: how much the harness's host settings move a configuration's speed,
and how often a plain process lands in each heap mode. Pure: records in, a frozen summary and words out.

Why: the harness measures under settings that keep figures steady run to run (``condition=tuned``), but a
user's own script runs with glibc's own heap and torch's default threads (``condition=plain``). A plain
process either settles its heap or has it trimmed and regrown every step, which its minor page faults per
measured step show; the two modes differ in speed, so each plain process is classed by its faults and the
tip names the setting with the cost measured here.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from hpubench.analysis.compare import group_runs
from hpubench.measure.doctor import OK, WARN, Finding
from hpubench.measure.heap import STEADY_ENV
from hpubench.plan.cell import Cell
from hpubench.plan.dimensions import PLAIN, TUNED
from hpubench.store.record import CellResult

CHURN_FAULTS_PER_STEP = 64.0
"""Minor page faults per measured step above which a process's heap counts as regrown every step: 64 pages
are 256 KiB touched anew each step, far above a settled heap's handful and below the smallest churn seen
(the figures are in docs/measurements.md)."""

HEAP_SETTING = " ".join(f"{name}={value}" for name, value in STEADY_ENV.items())
"""STEADY_ENV (hpubench.measure.heap) as the tip writes it: what users set for their own training."""

SETTLED, CHURNED = "heap settled", "heap regrown every step"
TRAINING = "your training"  # the doctor's section for what the user's own scripts get


@dataclass(frozen=True)
class PlainRun:
    """One plain process: its figure and its heap mode (None: its faults were not recorded)."""

    samples_per_s: float
    faults_per_step: float | None
    threads: int | None

    @property
    def mode(self) -> str | None:
        if self.faults_per_step is None:
            return None
        return CHURNED if self.faults_per_step >= CHURN_FAULTS_PER_STEP else SETTLED


@dataclass(frozen=True)
class Tuning:
    """A configuration measured under both conditions: the tuned figure (median over its runs), each plain
    process, and the ratio of the plain median to the tuned one (below 1: a plain script is slower)."""

    key: str  # the tuned cell's key; the plain cell's adds condition=plain
    tuned_samples_per_s: float
    tuned_threads: int | None
    plain: tuple[PlainRun, ...]

    @property
    def plain_samples_per_s(self) -> float:
        return statistics.median(p.samples_per_s for p in self.plain)

    @property
    def ratio(self) -> float:
        return self.plain_samples_per_s / self.tuned_samples_per_s

    def count(self, mode: str) -> int:
        return sum(1 for p in self.plain if p.mode == mode)

    def modes_text(self) -> str:
        """How many plain processes landed in each heap mode, e.g. "2 of 5 heap regrown every step"."""
        n = len(self.plain)
        churned, settled = self.count(CHURNED), self.count(SETTLED)
        if churned + settled == 0:
            return f"{n} plain process(es), heap mode not recorded"
        return f"{churned} of {n} {CHURNED}, {settled} {SETTLED}"

    def tips(self) -> tuple[str, ...]:
        """The settings a user can act on, each with the cost measured here; none where nothing cost."""
        heap, threads = self.heap_cost(), self.threads_gain(named=True)
        return tuple(([f"{heap}: set {HEAP_SETTING}"] if heap else []) + ([threads] if threads else []))

    def heap_cost(self) -> str | None:
        """The heap's measured cost in words (what :meth:`tips` follows with the setting), or None."""
        churned = [p.samples_per_s for p in self.plain if p.mode == CHURNED]
        settled = [p.samples_per_s for p in self.plain if p.mode == SETTLED]
        if not churned:
            return None
        # Against settled plain processes (same threads) where there are some; else against tuned.
        against, what = (
            (settled, "settled plain processes") if settled else ([self.tuned_samples_per_s], "tuned")
        )
        cost = 1 - statistics.median(churned) / statistics.median(against)
        if cost <= 0:
            return None
        return (
            f"glibc's heap thresholds cost {self.key} {cost:.0%} in {len(churned)} of "
            f"{len(self.plain)} plain processes (against {what})"
        )

    def threads_gain(self, named: bool) -> str | None:
        """Torch's default threads against the harness's, from settled processes, or None; ``named``: say
        which configuration (not where the line already begins with it)."""
        settled = [p.samples_per_s for p in self.plain if p.mode == SETTLED]
        if not settled or self.tuned_threads is None:
            return None
        threads = {p.threads for p in self.plain if p.mode == SETTLED}
        if len(threads) != 1 or None in threads or threads == {self.tuned_threads}:
            return None
        (n,) = threads
        gain = statistics.median(settled) / self.tuned_samples_per_s - 1
        which = f" for {self.key}" if named else ""
        return (
            f"{n} intra-op threads (torch's default) ran {gain:+.0%} against the harness's "
            f"{self.tuned_threads}{which} (settled heaps on both sides; beside a busy neighbour fewer "
            "threads hold up better)"
        )


def tuned_key(cell: Cell) -> str:
    """The key of the cell's tuned twin (the cell's own when it is tuned)."""
    return replace(cell, extra=tuple((k, v) for k, v in cell.extra if k != "condition")).key


def plain_run(record: CellResult) -> PlainRun:
    faults = record.runtime.page_faults_measured or {}
    steps = record.metrics.measured_steps if record.metrics else 0
    minor = faults.get("minor")
    per_step = minor / steps if isinstance(minor, (int, float)) and steps else None
    threads = (record.runtime.threads or {}).get("intra_op")
    return PlainRun(record.metrics.samples_per_s, per_step, threads)  # type: ignore[union-attr]


def tunings(records: Sequence[CellResult]) -> list[Tuning]:
    """Every configuration measured under both conditions in ``records``, in the order first seen."""
    tuned: dict[str, list[CellResult]] = {}
    plain: dict[str, list[CellResult]] = {}
    for group in group_runs(records):
        condition = group.cell.value("condition")
        side = tuned if condition == TUNED else plain if condition == PLAIN else None
        if side is not None and group.measured:
            side.setdefault(tuned_key(group.cell), []).extend(group.measured)
    out = []
    for key, runs in tuned.items():
        if key not in plain:
            continue
        threads = (runs[0].runtime.threads or {}).get("intra_op")
        figure = statistics.median(r.metrics.samples_per_s for r in runs)  # type: ignore[union-attr]
        out.append(Tuning(key, figure, threads, tuple(plain_run(r) for r in plain[key])))
    return out


def summary_lines(found: Sequence[Tuning]) -> list[str]:
    """One line per configuration (tuned vs plain, the plain processes' heap modes), then the tips."""
    lines = [
        f"{t.key}: tuned {t.tuned_samples_per_s:,.1f}, plain {t.plain_samples_per_s:,.1f} samples/s "
        f"(plain/tuned {t.ratio:.2f}; {t.modes_text()})"
        for t in found
    ]
    return lines + [f"tip: {tip}" for t in found for tip in t.tips()]


def doctor_findings(
    found: Sequence[Tuning] | None, environ: Mapping[str, str], run: str | None = None
) -> list[Finding]:
    """The doctor's findings about the user's own training: with a run's pairs (``found``, from ``run``),
    each measured tip as a warning with the setting that removes it; without, what a script started from
    this environment gets and how to measure it."""
    if found is None:
        held = all(environ.get(name) for name in STEADY_ENV)
        if held:
            detail = "this environment holds glibc's heap thresholds, as the tuned cells do"
        else:
            detail = (
                "a script started from this environment gets glibc's moving heap thresholds and torch's "
                "default threads, not the tuned cells' host; what that costs depends on the workload"
            )
        return [
            Finding(
                TRAINING,
                "heap and threads",
                OK,
                f"{detail}; measure it: hpubench run --condition tuned,plain, then doctor --from RUN",
            )
        ]
    if not found:
        return [
            Finding(
                TRAINING,
                "tuned vs plain",
                WARN,
                f"{run or 'the run'} has no configuration measured under both conditions",
                "run it with --condition tuned,plain (smoke and full include plain cells)",
            )
        ]
    out = []
    for t in found:
        heap, threads = t.heap_cost(), t.threads_gain(named=False)
        if heap:
            out.append(
                Finding(TRAINING, "heap", WARN, heap, f"export {HEAP_SETTING} in your training's environment")
            )
        # the threads' gain: a fact, not a fault; the key is named once, at the line's start
        detail = f"{t.key}: plain/tuned {t.ratio:.2f} ({t.modes_text()})"
        out.append(Finding(TRAINING, "tuned vs plain", OK, f"{detail}; {threads}" if threads else detail))
    return out
