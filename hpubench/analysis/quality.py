"""A verdict on every measured figure: can it be trusted as a steady, undisturbed measurement? Pure.

A throughput with a tight interval can still be wrong: on a loaded 2-core machine a cell whose OpenMP
threads wait for a descheduled sibling runs 40-100x slower, every step equally slow, so its interval is
tight. Step times alone cannot tell; the facts the run records beside them can. This module reads the
step times and those facts (``runtime["run_queue_wait"]``, ``runtime["interference"]``,
``runtime["compiles_measured"]``, ``runtime["partial"]``, ``runtime["steps_stop"]``; each may be absent
in records written before it existed) and returns one verdict with one line per problem found, naming
the measured figure and the bound it crossed.

Verdicts, most severe first (:data:`PRECEDENCE`); where several problems are found all their reasons
are kept and the verdict is the first of them in this order. The order puts a cause before its symptoms
and what a rerun does not fix before what it does:

- ``partial``: the cell stopped (timeout, crash) before its planned steps; every other check looks at an
  incomplete sample, and the figure is not what was asked for.
- ``recompiled``: graphs were compiled during the measured steps, so compile time is averaged into the
  figure. It comes from the code or the configuration and reproduces on every rerun.
- ``interfered``: the cell's busy threads waited for a CPU, or other processes used a share of the cores
  the cell had; the usual *cause* of drift and spread, and the only check that catches a uniformly
  collapsed cell.
- ``unstable``: the second half of the steps ran at a different speed from the first; the interval then
  describes a mixture, and more steps do not fix it.
- ``noisy``: the interval is wider than the bound; more steps (``--steps auto``) usually fix it.
- ``unmeasured``: nothing wrong was found, but the conditions could not be measured (no per-thread
  run-queue counts and a window too short for /proc/stat's ticks), so ``ok`` would be a claim nobody
  checked. The least severe problem: the figure may be right, and a longer window fixes it.
- ``ok``: none of the above.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from hpubench.analysis.stats import summary as stats
from hpubench.analysis.trend import halves_test
from hpubench.plan.autosteps import STOP_BOUND
from hpubench.store.record import STATUS_OK, STATUS_SKIPPED, CellResult

OK = "ok"
NOISY = "noisy"
UNSTABLE = "unstable"
INTERFERED = "interfered"
RECOMPILED = "recompiled"
PARTIAL = "partial"
UNMEASURED = "unmeasured"
# Most severe first: the verdict of several problems is the first of them here (see the module docstring).
PRECEDENCE: tuple[str, ...] = (PARTIAL, RECOMPILED, INTERFERED, UNSTABLE, NOISY, UNMEASURED, OK)
# What measured something other than the cell, so is never compared (hpubench.analysis.compare, the gate).
UNCOMPARABLE: tuple[str, ...] = (INTERFERED, RECOMPILED, PARTIAL)
VERDICTS = PRECEDENCE

NOISY_HALFWIDTH = 0.05
"""Largest relative half-width of the 95% throughput interval still called ok. Two configurations whose
figures differ by less than about twice this cannot be told apart, and differences of 5-10% are the ones
a user benchmarks for; 20 steps of 1 ms with one 17 ms stall (a 44% lower figure) give a half-width of
64% and must not pass.
``--steps auto`` aims well inside it (2% by default)."""

UNSTABLE_ALPHA = 0.01
"""Significance level of the halves test. Strict, because an i.i.d. sequence must almost never be called
unstable: at 0.01, fewer than 1 in 100 steady cells trip the test (before the effect size filters more)."""

UNSTABLE_MIN_SHIFT = 0.03
"""Smallest change between the halves' medians called unstable, whatever the p-value. Step times are
autocorrelated, so on thousands of steps a rank test finds drifts of a fraction of a percent
"significant"; a 1% drift does not change any conclusion a user draws, 3% starts to (it is above the 2%
interval ``--steps auto`` targets)."""

MIN_INTERVAL_STEPS = 5
"""Fewest measured steps whose interval is believed. A percentile bootstrap over n values never leaves
their range, so for a handful of steps it only restates them: 2 steps 1% apart give a ±0.5% "interval"
whatever the spread between runs. Below this a figure is ``noisy`` however close its steps are
(a budgeted run that can afford 2 steps of a minute-long cell says so instead of passing it)."""

MIN_TREND_STEPS = 10
"""Fewest measured steps the halves test is run on: with 5 against 5 the smallest exact two-sided
p-value is 2/252 = 0.008 < UNSTABLE_ALPHA; with 4 against 4 it is 2/70 = 0.029, so fewer steps could
never be called unstable, and saying "tested" would mislead."""

INTERFERENCE_BOUND = 0.10
"""Largest share of the measured window's core-seconds (wall time x cores the cell had) that other
processes may use. One busy neighbour on a 2-core machine shows ~50%, on an 8-core one ~12%: both caught.
Background noise stays far below (hpubench's own CLI takes 0.3-0.7% of one core while a cell measures).
On machines with more than 10 cores a single busy thread falls under the bound; the figure is recorded in
every record for a stricter reading."""

RUN_QUEUE_BOUND = 0.10
"""Largest share of the time the cell's busy threads were runnable that they may spend waiting for a CPU
(``runtime["run_queue_wait"]``, from schedstat). A thread beside two busy neighbours on two cores waits a
third of the time or more; a thread with a core of its own waits for the odd kernel thread only. Unlike
the /proc/stat share it does not fade on many-core machines: it is measured at the cell's own threads."""

RESOLUTION_BOUND = 0.10
"""Coarsest /proc/stat resolution (``interference_detail["resolution"]``) at which the share still counts
as a measurement where no run-queue figure exists: a share is called interfered only when it clears
INTERFERENCE_BOUND by its resolution, so beyond this even a neighbour taking twice the bound could pass
unseen. With 10 ms ticks that is a window of 200 ms; a shorter one is ``unmeasured``."""


@dataclass(frozen=True)
class Finding:
    """One problem: the verdict it implies and the line that says what was measured against what bound."""

    verdict: str
    reason: str


@dataclass(frozen=True)
class Quality:
    """The verdict of one record and one line per problem found, most severe first (empty when ok)."""

    verdict: str
    reasons: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")


def judge(findings: Sequence[Finding]) -> Quality:
    """The verdict of a list of findings by :data:`PRECEDENCE`; reasons sorted most severe first."""
    ordered = sorted(findings, key=lambda f: PRECEDENCE.index(f.verdict))  # stable: keeps the found order
    return Quality(ordered[0].verdict if ordered else OK, tuple(f.reason for f in ordered))


def worst(verdicts: Sequence[str | None]) -> str | None:
    """The most severe of some verdicts; None when none is known."""
    known = [v for v in verdicts if v is not None]
    return min(known, key=PRECEDENCE.index) if known else None


def _number(x: Any) -> float | None:
    """A finite real from a runtime fact, or None: records from other versions may hold anything."""
    if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x):
        return None
    return float(x)


def _partial(fact: Any, n_steps: int, planned_steps: int | None) -> Finding | None:
    if not isinstance(fact, Mapping):
        return None
    done = fact.get("steps_done")
    done = done if isinstance(done, int) and not isinstance(done, bool) else n_steps
    of = f" of {planned_steps}" if planned_steps else ""
    why = str(fact.get("reason") or "no reason recorded")
    return Finding(PARTIAL, f"stopped after {done}{of} steps: {why}")


def _recompiled(count: Any, counter: Any, warmup_stop: Any = None) -> Finding | None:
    """Compiles in the measured steps; where the warm-up gave up on them at its bound
    (``runtime["warmup_stop"]``), the reason says so: a longer warm-up would not have helped."""
    n = _number(count)
    if n is None or n <= 0:
        return None
    k = int(n)
    what = f" (counted: {counter})" if isinstance(counter, str) and counter else ""
    bound = ""
    if isinstance(warmup_stop, str) and warmup_stop.startswith(f"{STOP_BOUND}:"):
        bound = f"; warm-up stopped at its bound: {warmup_stop.split(': ', 1)[1]}"
    return Finding(
        RECOMPILED, f"{k} graph compilation{'s' if k != 1 else ''} during the measured steps{what}{bound}"
    )


def _interfered(share: Any, detail: Any) -> Finding | None:
    """Interfered only when the share is over the bound by more than its resolution.

    /proc/stat counts CPU time in ticks (10 ms), so over a window of a few ticks the share is only known
    to within ``interference_detail["resolution"]`` (a 30 ms window on 2 CPUs: +-60%); a quiet short cell
    would otherwise read as interfered by rounding alone. A collapsed cell runs long windows, where the
    resolution is fine, so this never hides the collapse the measure exists for.
    """
    x = _number(share)
    res = _number(detail.get("resolution")) if isinstance(detail, Mapping) else None
    res = res or 0.0
    crowded = _crowded(detail.get("runnable_at_edges")) if isinstance(detail, Mapping) else None
    if x is not None and res > RESOLUTION_BOUND and crowded:
        return Finding(INTERFERED, f"{crowded}; the window is too short for /proc/stat (±{res:.0%})")
    if x is None or x - res <= INTERFERENCE_BOUND:
        return None
    within = f", resolution ±{res:.0%}" if res >= 0.005 else ""
    return Finding(
        INTERFERED,
        f"other processes used {x:.0%} of the window's core time (> {INTERFERENCE_BOUND:.0%} bound{within})",
    )


def _crowded(edges: Any) -> str | None:
    """Where the ticks cannot see the window, its two ends can: a host that had more runnable threads than
    CPUs at both, other processes' among them, kept a neighbour queued beside the cell (a cell whose
    threads happened to get a CPU each while the neighbours shared the rest waits for nothing, yet shares
    the machine). The reason line, or None."""
    if not isinstance(edges, Mapping):
        return None
    host, own, cpus = edges.get("host"), edges.get("own"), _number(edges.get("cpus_online"))
    if not (isinstance(host, Sequence) and isinstance(own, Sequence) and len(host) == len(own) == 2 and cpus):
        return None
    pairs = [(_number(h), _number(o)) for h, o in zip(host, own, strict=True)]
    if any(h is None or o is None or h <= cpus or h - o < 1 for h, o in pairs):
        return None
    return (
        f"more runnable threads than the host's {cpus:.0f} CPUs at both ends of the measured window "
        f"({host[0]} and {host[1]}, the cell's own {own[0]} and {own[1]})"
    )


def _waited(share: Any) -> Finding | None:
    """Interfered when the cell's busy threads waited on a run queue for more than the bound. Counted in
    nanoseconds at the cell's own threads, so a window of a few milliseconds is as good as a long one."""
    x = _number(share)
    if x is None or x <= RUN_QUEUE_BOUND:
        return None
    return Finding(
        INTERFERED,
        f"the cell's busy threads waited for a CPU {x:.0%} of the time they were runnable "
        f"(> {RUN_QUEUE_BOUND:.0%} bound)",
    )


def _unmeasured(rt: Mapping[str, Any]) -> Finding | None:
    """Unmeasured where a record that measures conditions has neither source: no run-queue figure, and
    /proc/stat unreadable or too coarse over this window (:data:`RESOLUTION_BOUND`). Records from before
    conditions were measured carry neither fact and are left as they were judged."""
    if _number(rt.get("run_queue_wait")) is not None:
        return None
    rq = rt.get("run_queue_detail")
    why = rq.get("reason") if isinstance(rq, Mapping) else None
    why = f"; {why}" if isinstance(why, str) and why else "; no run-queue wait recorded"
    error = rt.get("interference_error")
    if isinstance(error, str) and error:
        return Finding(
            UNMEASURED, f"conditions not measurable in this window: /proc/stat unreadable ({error}){why}"
        )
    detail = rt.get("interference_detail")
    res = _number(detail.get("resolution")) if isinstance(detail, Mapping) else None
    if res is None or res <= RESOLUTION_BOUND:
        return None
    window = _number(detail.get("window_s")) if isinstance(detail, Mapping) else None
    over = f"over {window * 1e3:.0f} ms " if window is not None else ""
    return Finding(
        UNMEASURED,
        f"conditions not measurable in this window: /proc/stat ticks {over}resolve other processes' share "
        f"only to ±{res:.0%} (> {RESOLUTION_BOUND:.0%} bound){why}",
    )


def _conditions(rt: Mapping[str, Any]) -> list[Finding | None]:
    """What the conditions say: interfered by either source, else unmeasured where neither could see."""
    found = [
        _waited(rt.get("run_queue_wait")),
        _interfered(rt.get("interference"), rt.get("interference_detail")),
    ]
    return found if any(found) else [_unmeasured(rt)]


def _unstable(times: Sequence[float], rt: Mapping[str, Any]) -> Finding | None:
    if len(times) < MIN_TREND_STEPS:
        return None
    t = halves_test(times)
    if t.p_value >= UNSTABLE_ALPHA or abs(t.shift) < UNSTABLE_MIN_SHIFT:
        return None
    direction = "slower" if t.shift > 0 else "faster"
    return Finding(
        UNSTABLE,
        f"second half {abs(t.shift):.0%} {direction} than first ({t.method.split(',')[0]} p={t.p_value:.2g}, "
        f"{t.n_first} vs {t.n_second} steps, bound {UNSTABLE_MIN_SHIFT:.0%} at p < {UNSTABLE_ALPHA:g})"
        + _likely_cause(rt),
    )


def crowded_by_itself(rt: Mapping[str, Any]) -> tuple[int, int, float] | None:
    """(busy threads, CPUs, the share of their runnable time they waited) where the record shows a cell
    whose own busy threads outnumber its CPUs (several ranks on a few cores, each with its communication
    threads): it takes turns on them, and how the turns fall moves for stretches of steps, on a quiet host
    too. None where the record does not show it."""
    rq, detail = rt.get("run_queue_detail"), rt.get("interference_detail")
    if not isinstance(rq, Mapping) or not isinstance(detail, Mapping):
        return None
    busy, on_cpu, wait = (_number(rq.get(k)) for k in ("busy_threads", "on_cpu_s", "wait_s"))
    cpus = detail.get("cpus")
    if busy is None or on_cpu is None or wait is None or not isinstance(cpus, Sequence) or not cpus:
        return None  # an empty list of CPUs is as unknown as a missing one
    if busy <= len(cpus):
        return None
    return int(busy), len(cpus), wait / (on_cpu + wait) if on_cpu + wait > 0 else 0.0


def _likely_cause(rt: Mapping[str, Any]) -> str:
    """The tail of an ``unstable`` reason naming the cause the record shows, or empty."""
    crowded = crowded_by_itself(rt)
    if crowded is None:
        return ""
    busy, cpus, share = crowded
    return (
        f"; likely cause: the cell's own {busy} busy threads outnumber its {cpus} CPUs and waited "
        f"for each other {share:.0%} of their runnable time (with fewer ranks per host, or more CPUs, "
        "they wait less)"
    )


def _noisy(times: Sequence[float], rel_halfwidth: float | None, stop: Any) -> Finding | None:
    if len(times) < 2:
        return Finding(NOISY, f"only {len(times)} measured step{'s' if len(times) != 1 else ''}: no interval")
    if len(times) < MIN_INTERVAL_STEPS:
        return Finding(
            NOISY,
            f"only {len(times)} measured steps: too few for an interval (at least {MIN_INTERVAL_STEPS})",
        )
    hw = rel_halfwidth if rel_halfwidth is not None else stats.throughput(times, 1.0).rel_halfwidth
    if hw <= NOISY_HALFWIDTH:
        return None
    why = f", {stop}" if isinstance(stop, str) and stop else ""
    return Finding(
        NOISY, f"interval half-width {hw:.1%} > {NOISY_HALFWIDTH:.0%} bound ({len(times)} steps{why})"
    )


def findings(
    step_times_s: Sequence[float],
    runtime: Mapping[str, Any] | None = None,
    *,
    rel_halfwidth: float | None = None,
    planned_steps: int | None = None,
) -> tuple[Finding, ...]:
    """Every problem with a measurement, most severe first.

    ``rel_halfwidth``: the throughput interval's relative half-width where the record already holds it
    (else computed here with :func:`hpubench.analysis.stats.summary.throughput`, the same bootstrap that
    made it);
    ``planned_steps``: the steps asked for, so a partial record can say "12 of 20".
    """
    times = [float(t) for t in step_times_s]
    rt = runtime or {}
    found = [
        _partial(rt.get("partial"), len(times), planned_steps),
        _recompiled(rt.get("compiles_measured"), rt.get("compile_counter"), rt.get("warmup_stop")),
        *_conditions(rt),
        _unstable(times, rt),
        _noisy(times, rel_halfwidth, rt.get("steps_stop")),
    ]
    return tuple(f for f in found if f is not None)


def assess(
    step_times_s: Sequence[float],
    runtime: Mapping[str, Any] | None = None,
    *,
    rel_halfwidth: float | None = None,
    planned_steps: int | None = None,
) -> Quality:
    """The verdict on one measurement (see :func:`findings` for the arguments)."""
    return judge(findings(step_times_s, runtime, rel_halfwidth=rel_halfwidth, planned_steps=planned_steps))


# ---- records -----------------------------------------------------------------------------------------------


def record_findings(result: CellResult) -> tuple[Finding, ...] | None:
    """The findings on a record's measured steps; None where it has none (skipped, failed before measuring).

    A failed record with step times is a partial one: if it lacks ``runtime["partial"]`` (written by an
    older launcher) its failure reason stands in.
    """
    if result.status == STATUS_SKIPPED or not result.step_times_s:
        return None
    runtime = result.runtime
    if result.status != STATUS_OK and not isinstance(runtime.partial, Mapping):
        runtime = {**runtime, "partial": {"steps_done": len(result.step_times_s), "reason": result.reason}}
    m = result.metrics
    hw = None
    if m is not None and m.samples_per_s > 0 and len(result.step_times_s) == m.measured_steps:
        hw = (m.samples_per_s_ci[1] - m.samples_per_s_ci[0]) / 2 / m.samples_per_s
    planned = result.cell.steps if isinstance(result.cell.steps, int) else None
    return findings(result.step_times_s, runtime, rel_halfwidth=hw, planned_steps=planned)


def assess_record(result: CellResult) -> Quality | None:
    """The verdict on a record; None where there is nothing measured to judge."""
    found = record_findings(result)
    return None if found is None else judge(found)


def with_quality(result: CellResult) -> CellResult:
    """The record with ``quality`` and ``quality_reasons`` set from :func:`assess_record`."""
    q = assess_record(result)
    return replace(
        result, quality=None if q is None else q.verdict, quality_reasons=() if q is None else q.reasons
    )


def assess_repeats(results: Sequence[CellResult], rel_halfwidth: float | None = None) -> Quality | None:
    """One verdict for every repetition of a cell, for a row that shows them together; None if none judged.

    Problems of any repetition count (an interfered repetition is averaged into the figure), each reason
    prefixed with its repetition. Where the row's figure has its own interval over all repetitions
    (``rel_halfwidth``), noise is judged on that interval instead of on each repetition's.
    """
    found: list[Finding] = []
    judged = False
    for r in results:
        # Unjudged records (written before verdicts) stay unjudged: their runs lack the facts that catch
        # a collapsed cell, so judging their step times alone could call a collapse ok.
        fs = None if r.quality is None else record_findings(r)
        if fs is None:
            continue
        judged = True
        for f in fs:
            if rel_halfwidth is None or f.verdict != NOISY:
                found.append(
                    Finding(f.verdict, f"run {r.repeat}: {f.reason}" if len(results) > 1 else f.reason)
                )
    if not judged:
        return None
    if rel_halfwidth is not None and rel_halfwidth > NOISY_HALFWIDTH:
        found.append(
            Finding(
                NOISY,
                f"interval half-width {rel_halfwidth:.1%} > {NOISY_HALFWIDTH:.0%} bound (over all runs)",
            )
        )
    return judge(found)
