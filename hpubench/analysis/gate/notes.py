"""The notes under a gate's verdict: what a reader must know to trust it (cells that could not be tested,
spreads that were modelled, too few runs for the permutation test, sides measured apart, a changed device
or thread or heap policy, numerics that could not be compared).

Separate from the verdicts: notes never change a decision, they only qualify it. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone

from hpubench.analysis.compare import CellRuns
from hpubench.analysis.gate.rules import (
    GateSettings,
    permutation_test_can_decide,
    runs_needed_for_permutation_test,
)
from hpubench.analysis.numerics import DIVERGED, DRIFT, UNCHECKED
from hpubench.analysis.numerics import OK as NUMERICS_OK
from hpubench.analysis.stats.estimator import INSUFFICIENT_ADVICE, Change


def _device(runs: CellRuns) -> str | None:
    return runs.record.runtime.device_name if runs.measured else None


# Facts of how a cell was run or measured that move its figure without any change of the code: (runtime
# field, its key, name in the note). A record without the field predates it (the heap: glibc's own
# thresholds then); a one-device cell has no step-time reduction on either side, so no note.
POLICIES = (
    ("threads", "policy", "CPU thread policy"),
    ("heap", "policy", "heap policy"),
    ("distributed", "step_time_reduction", "multi-rank step-time reduction"),
)


def _policy(runs: CellRuns, fact: str, key: str) -> str | None:
    if not runs.measured:
        return None
    facts = getattr(runs.record.runtime, fact)
    return "not recorded" if not facts else str(facts.get(key, "not recorded"))


def policy_notes(b_map: dict[str, CellRuns], c_map: dict[str, CellRuns], matched: Sequence[str]) -> list[str]:
    """One note per policy that differs between the sides' matched cells (README: Host heap policy)."""
    notes = []
    for fact, key, name in POLICIES:
        pairs = {(_policy(b_map[k], fact, key), _policy(c_map[k], fact, key)) for k in matched}
        changed = sorted({f"{b} -> {c}" for b, c in pairs if b and c and b != c})
        if changed:
            notes.append(
                f"the {name} changed between baseline and current ({'; '.join(changed)}): it moves a "
                "cell's figure without any change of the code; measure both sides under one policy"
            )
    return notes


def numerics_notes(
    b_map: dict[str, CellRuns], c_map: dict[str, CellRuns], matched: Sequence[str]
) -> list[str]:
    """One note naming the cells measured on both sides whose numerics were not compared (a side without a
    verdict, or unchecked), and which of them are drift or diverged now: they pass on numerics untested."""
    why: dict[str, list[str]] = {}
    bad_now = []
    for k in matched:
        b, c = b_map[k], c_map[k]
        if not (b.measured and c.measured) or b.numerics == c.numerics in (NUMERICS_OK, None):
            continue  # both ok, or both from before numerics (the table's "-/-" says so)
        if b.numerics is None:
            reason = "baseline recorded before numerics were checked"
        elif UNCHECKED in (b.numerics, c.numerics):
            reason = f"unchecked in {'baseline' if b.numerics == UNCHECKED else 'current'}"
        elif c.numerics is None:
            reason = "current recorded without numerics"
        else:
            continue  # both judged: with_numerics decided
        why.setdefault(reason, []).append(k)
        if c.numerics in (DRIFT, DIVERGED):
            bad_now.append(f"{k} ({c.numerics})")
    if not why:
        return []
    parts = "; ".join(f"{len(keys)} {reason}" for reason, keys in why.items())
    note = f"numerics not compared for {sum(map(len, why.values()))} cell(s) ({parts}): never a failure"
    if bad_now:
        note += f"; current numerics are not ok for {', '.join(bad_now)}"
    if "baseline recorded before numerics were checked" in why:
        note += "; re-save the baseline with this hpubench ('hpubench baseline save') to gate on numerics"
    return [note]


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


def _runs_needed(need: int | None, cells: int, alpha: float) -> str:
    if need is None:
        return f"no run count reaches alpha {alpha:g} split over {cells} cell(s)"
    return f"{need} per side needed for {cells} cell(s) at alpha {alpha:g}"


def _repeat_advice(need: int | None) -> str:
    if need is None:
        return "gate fewer cells at once or raise --alpha"
    return f"run with --repeat {need} or more"


def gate_notes(
    changes: dict[str, Change],
    b_map: dict[str, CellRuns],
    c_map: dict[str, CellRuns],
    matched: list[str],
    s: GateSettings,
) -> tuple[str, ...]:
    """What a reader must know to trust the verdict, one sentence each (none: nothing to qualify)."""
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
            f"{few} of {len(tested)} tested cell(s) had too few runs for the permutation test "
            f"({_runs_needed(need, len(tested), s.alpha)}), so a Welch t test was used, which one run slowed "
            f"as a whole can blind; {_repeat_advice(need)}"
        )
    weak = sum(
        "permutation" in t.method
        and not permutation_test_can_decide(t.base_runs, t.cur_runs, s.alpha, len(tested))
        for t in tested.values()
    )
    if weak:
        notes.append(
            f"{weak} cell(s) were permutation-tested with too few runs to ever reach significance "
            f"({_runs_needed(need, len(tested), s.alpha)}): they cannot fail the gate on throughput; "
            f"{_repeat_advice(need)}"
        )
    apart = _measured_apart([b_map[k] for k in changes], [c_map[k] for k in changes])
    if apart:
        notes.append(apart)
    pairs = {(_device(b_map[k]), _device(c_map[k])) for k in matched}
    changed = sorted({f"{b} -> {c}" for b, c in pairs if b and c and b != c})
    if changed:
        notes.append(f"the device changed between baseline and current ({'; '.join(changed)})")
    notes.extend(policy_notes(b_map, c_map, matched))
    notes.extend(numerics_notes(b_map, c_map, matched))
    return tuple(notes)
