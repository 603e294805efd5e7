"""The terminal tables' side of the column registry: getters from a cell's runs (its repetitions) and the
formatters of the full and the 80-column tables. Where the two tables read a figure differently they did
so before the registry, and each keeps its own rule (their output is unchanged)."""

from __future__ import annotations

from statistics import median
from typing import Any

from hpubench import numfmt
from hpubench.analysis.numerics import OK as NUMERICS_OK
from hpubench.analysis.numerics import UNCHECKED
from hpubench.analysis.numerics import worst as worst_numerics
from hpubench.analysis.quality import OK, PARTIAL, assess_repeats
from hpubench.present.columns.model import Runs, Spread, Term
from hpubench.store.record import CellResult

# ---- getters from a cell's runs (terminal rows) ------------------------------------------------------------


def label(runs: Runs) -> str:
    return runs.label


def status(runs: Runs) -> str:
    """The record's status; repetitions: failed if any failed, else the last one's where none finished."""
    records = runs.records
    if not runs.repeated:
        return records[0].status
    if not runs.measured:
        return records[-1].status
    return "failed" if any(r.status == "failed" for r in records) else "ok"


def quality(runs: Runs) -> str | None:
    """The quality verdict (repetitions judged together); None for records written before verdicts."""
    if not runs.repeated:
        return runs.records[0].quality
    q = assess_repeats(list(runs.records))
    return None if q is None else q.verdict


def numerics(runs: Runs) -> str | None:
    """The worst numerics verdict of the cell's runs (a failed one too: a diverged loss fails the cell); None
    for records written before numerics were checked, which no table shows as ok."""
    return worst_numerics(r.numerics for r in runs.records)


def verdict(runs: Runs) -> str:
    """The quality verdict, or the status where no run was measured (the 80-column table's one word)."""
    if not runs.measured:
        return runs.records[-1].status
    return quality(runs) or "-"


def throughput(runs: Runs) -> Spread:
    """samples/s with its interval; repetitions: the median run with the lowest and highest run."""
    if runs.repeated:
        rates = [m.samples_per_s for m in runs.metrics]
        return Spread(median(rates), min(rates), max(rates), len(rates))
    m = runs.metrics[0]
    return Spread(m.samples_per_s, *m.samples_per_s_ci)


def peak(runs: Runs) -> int | None:
    """The highest peak memory of the measured runs (a run alone: its own, whatever it is)."""
    if not runs.repeated:
        r = runs.measured[0][0]
        return r.memory.peak_allocated_bytes if r.memory else None
    peaks = [
        r.memory.peak_allocated_bytes for r, _ in runs.measured if r.memory and r.memory.peak_allocated_bytes
    ]
    return max(peaks) if peaks else None


def peak_of_any_run(runs: Runs) -> int | None:
    """The highest peak memory any run recorded (the 80-column table's rule)."""
    peaks = [
        r.memory.peak_allocated_bytes for r in runs.records if r.memory and r.memory.peak_allocated_bytes
    ]
    return max(peaks) if peaks else None


def scaling(runs: Runs) -> tuple[float, int] | None:
    """(median scaling efficiency, devices) over the measured runs that have one."""
    effs = [sc for _, sc in runs.measured if sc is not None]
    return (median(sc.efficiency for sc in effs), effs[0].world_size) if effs else None


def _steps_and_mode(r: CellResult) -> str:
    note = (
        f"{r.metrics.measured_steps if r.metrics else '?'} steps, mode {r.runtime.get('mode_in_force', '?')}"
    )
    dist = r.runtime.distributed
    if isinstance(dist, dict) and dist.get("world_size"):
        note += f", {dist['world_size']} ranks ({dist.get('backend') or '?'})"
    return note


def note(runs: Runs) -> str:
    """How the figure was made (steps, mode, ranks), or why there is none; repetitions counted."""
    records = runs.records
    failed = [r for r in records if r.status == "failed"]
    counted = f"{len(records)} runs" + (f", {len(failed)} failed" if failed else "")
    if not runs.measured:
        if not runs.repeated:
            return records[0].reason or ""
        reason = next((r.reason for r in failed if r.reason), None) or (records[0].reason or "")
        return f"{counted}: {reason}"
    note = _steps_and_mode(runs.measured[0][0])
    return f"{counted}; {note}" if runs.repeated else note


# ---- terminal formatters -----------------------------------------------------------------------------------


def status_style(status: str) -> str:
    return {"ok": "green", "failed": "red", "skipped": "dim"}[status]


def quality_style(verdict: str | None) -> str:
    if verdict is None:
        return "dim"
    return "green" if verdict == OK else "red" if verdict == PARTIAL else "yellow"


def numerics_style(verdict: str | None) -> str:
    if verdict is None:
        return "dim"
    return "green" if verdict == NUMERICS_OK else "yellow" if verdict == UNCHECKED else "red"


def verdict_style(word: str) -> str:
    if word == OK:
        return "green"
    if word in (PARTIAL, "failed"):
        return "red"
    return "dim" if word in ("skipped", "-") else "yellow"


def rate_with_interval(s: Spread) -> str:
    return f"{s.value:,.1f} [{s.lo:,.1f}, {s.hi:,.1f}]"


def plus_minus(s: Spread) -> str:
    """The interval as ±%: "-" for repetitions with one measured run (no range to tell)."""
    return numfmt.DASH if s.runs is not None and s.runs < 2 else numfmt.plus_minus(s.value, s.lo, s.hi)


def fixed_ms(s: float | None) -> str:
    return numfmt.fixed(None if s is None else s * 1e3, ".2f")


def percent(x: float | None) -> str:
    return numfmt.DASH if x is None else f"{x:.1%}"


def percent_sig(x: float | None) -> str:
    return numfmt.DASH if x is None else f"{numfmt.sig(x * 100, 2)}%"


def scaling_text(s: tuple[float, int] | None) -> str:
    return numfmt.DASH if s is None else f"{s[0]:.0%} of x{s[1]}"


def compact_figure(title: str, text: Any, **kw: Any) -> Term:
    """A figure of the 80-column table: folded rather than cut, never wrapped."""
    return Term(text, title, overflow="fold", no_wrap=True, **kw)
