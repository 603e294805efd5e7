"""Which commit made a cell slower: the decisions behind ``hpubench bisect``, free of git and of running.

The gate first judges BAD against GOOD. The cells it fails on throughput (a significant drop past the
threshold) or on a new failure are the ones followed; every other cell is dropped, which saves their runs
at every candidate. A candidate is then gated against GOOD runs interleaved with its own, and each
followed cell is placed on one side of the regression:

- throughput: the candidate is *bad* when its throughput ratio to GOOD, with its whole interval, lies
  below the midpoint between GOOD and BAD (the geometric mean of 1 and BAD's ratio), *good* when the
  whole interval lies above it, and *undecided* otherwise. The midpoint rather than the gate's threshold:
  a candidate is asked which end it resembles, which a few runs answer even when "no change at all" would
  need many. A regression that came in several steps is pinned at the commit that crossed half of it.
- failure: *bad* when the cell fails at the candidate and not at GOOD, *good* when it is measured.

The candidate is bad when any followed cell says bad, good when all say good, else undecided. The search is
a binary search over the first-parent path from GOOD to BAD; a candidate whose set-up failed is *skipped*
(as ``git bisect skip``), and an undecided one stops the search with "insufficient evidence" rather than a
guess. Pure: the gate's verdicts in, decisions out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hpubench.analysis.gate.outcomes import (
    FAILED,
    INSUFFICIENT,
    NOISY,
    NOT_COMPARABLE,
    REGRESSION,
    CellVerdict,
    GateResult,
)

GOOD = "good"
BAD = "bad"
UNDECIDED = "undecided"
SKIPPED = "skipped"
KIND_THROUGHPUT = "throughput"
KIND_FAILURE = "failure"


@dataclass(frozen=True)
class Followed:
    """A cell the gate failed between GOOD and BAD: what is followed, and where its midpoint lies."""

    key: str
    kind: str  # KIND_THROUGHPUT or KIND_FAILURE
    bad_ratio: float | None = None  # BAD's throughput / GOOD's (throughput only)

    @property
    def midpoint(self) -> float | None:
        """The throughput ratio halfway (on a log scale) between GOOD (1) and BAD."""
        return None if self.bad_ratio is None else math.sqrt(self.bad_ratio)


@dataclass(frozen=True)
class Evidence:
    """One followed cell at one candidate: its throughput against GOOD's interleaved runs, and the call."""

    key: str
    call: str  # GOOD, BAD or UNDECIDED
    ratio: float | None  # candidate throughput / GOOD's
    interval: tuple[float, float] | None  # of ratio
    runs: tuple[int, int]  # comparable runs (GOOD, candidate)
    why: str


@dataclass(frozen=True)
class Confirmed:
    """BAD against GOOD: the cells to follow, or why there is nothing to bisect (``problem``)."""

    followed: tuple[Followed, ...]
    problem: str | None  # None: bisect; else one line
    insufficient: bool  # the problem is too little evidence (more repeats may find it), not its absence


def _ratio(v: CellVerdict) -> tuple[float | None, tuple[float, float] | None]:
    t = v.throughput
    if t is None or t.change is None:
        return None, None
    interval = None if t.interval is None else (1 + t.interval[0], 1 + t.interval[1])
    return 1 + t.change, interval


def confirm(result: GateResult, repeat: int) -> Confirmed:
    """The cells BAD regressed on against GOOD, as the gate judged them."""
    followed = []
    for v in result.cells:
        if v.outcome == FAILED:
            followed.append(Followed(v.key, KIND_FAILURE))
        elif v.throughput is not None and v.throughput.decision == REGRESSION:
            followed.append(Followed(v.key, KIND_THROUGHPUT, _ratio(v)[0]))
    if followed:
        return Confirmed(tuple(followed), None, False)
    open_ = [
        v
        for v in result.cells
        if v.outcome == NOT_COMPARABLE
        or (v.throughput is not None and v.throughput.decision in (NOISY, INSUFFICIENT))
    ]
    if open_:
        v = open_[0]
        return Confirmed(
            (),
            f"insufficient evidence that BAD is slower than GOOD: {v.key} {v.reason}; "
            f"fix: rerun with --repeat {2 * repeat}, on a quiet machine (the runs so far are kept)",
            True,
        )
    shown = "; ".join(f"{v.key}: {v.reason}" for v in result.cells[:3])
    return Confirmed(
        (),
        f"no regression between GOOD and BAD: the gate passes ({shown}); fix: pick a BAD at which "
        "'hpubench gate' against GOOD fails, or narrow the cells to the one that regressed",
        False,
    )


def _throughput_evidence(f: Followed, v: CellVerdict) -> Evidence:
    ratio, interval = _ratio(v)
    runs = (v.baseline_runs, v.current_runs)
    mid = f.midpoint
    if ratio is None or interval is None or mid is None:
        return Evidence(f.key, UNDECIDED, ratio, interval, runs, f"not measured on both sides: {v.reason}")
    lo, hi = interval
    if v.throughput is not None and v.throughput.evidence == "insufficient":
        call, why = UNDECIDED, "too few runs to show a difference"
    elif hi < mid:
        call, why = BAD, f"below the midpoint {mid:.3f}"
    elif lo > mid:
        call, why = GOOD, f"above the midpoint {mid:.3f}"
    else:
        call, why = UNDECIDED, f"the interval holds the midpoint {mid:.3f}"
    return Evidence(f.key, call, ratio, interval, runs, why)


def judge(result: GateResult, followed: Sequence[Followed]) -> tuple[str, tuple[Evidence, ...]]:
    """A candidate gated against GOOD: GOOD, BAD or UNDECIDED, and the evidence of each followed cell."""
    by_key = {v.key: v for v in result.cells}
    evidence = []
    for f in followed:
        v = by_key.get(f.key)
        if v is None:
            evidence.append(Evidence(f.key, UNDECIDED, None, None, (0, 0), "not in the candidate's runs"))
        elif f.kind == KIND_FAILURE or v.outcome == FAILED:
            ratio, interval = _ratio(v)
            call = BAD if v.outcome == FAILED else GOOD if v.current_runs else UNDECIDED
            evidence.append(
                Evidence(f.key, call, ratio, interval, (v.baseline_runs, v.current_runs), v.reason)
            )
        else:
            evidence.append(_throughput_evidence(f, v))
    calls = {e.call for e in evidence}
    call = BAD if BAD in calls else GOOD if calls == {GOOD} else UNDECIDED
    return call, tuple(evidence)


# ---- the search --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Search:
    """Where a bisect over ``n`` candidates stands. Candidates are the commits after GOOD up to BAD, oldest
    first (the last is BAD); ``calls`` maps a tested candidate's index to GOOD, BAD, UNDECIDED or SKIPPED."""

    n: int
    calls: Mapping[int, str]

    @property
    def bounds(self) -> tuple[int, int]:
        """(last known good index, first known bad index); -1 stands for GOOD itself."""
        bad = min([i for i, c in self.calls.items() if c == BAD] + [self.n - 1])
        good = max([i for i, c in self.calls.items() if c == GOOD and i < bad] + [-1])
        return good, bad

    def open(self) -> list[int]:
        """Candidates between the bounds not yet tested."""
        good, bad = self.bounds
        return [i for i in range(good + 1, bad) if i not in self.calls]

    @property
    def undecided(self) -> int | None:
        """A candidate between the bounds the evidence could not place, if any: the search stops there."""
        good, bad = self.bounds
        return next((i for i in range(good + 1, bad) if self.calls.get(i) == UNDECIDED), None)

    def next(self) -> int | None:
        """The candidate to test next: the untested one nearest the middle of the bounds; None when done."""
        if self.undecided is not None:
            return None
        left = self.open()
        if not left:
            return None
        good, bad = self.bounds
        middle = (good + bad) / 2
        return min(left, key=lambda i: (abs(i - middle), i))

    @property
    def done(self) -> bool:
        """Nothing left to test: the first bad candidate is known, or only skipped ones stand between."""
        return self.next() is None and self.undecided is None

    @property
    def first_bad(self) -> int | None:
        """The first bad candidate, once the one before it is known good (or is GOOD itself)."""
        good, bad = self.bounds
        return bad if self.done and bad == good + 1 else None

    @property
    def skipped_range(self) -> tuple[int, int] | None:
        """Only skipped candidates between the bounds: the first and last that may be the first bad."""
        good, bad = self.bounds
        return (good + 1, bad) if self.done and bad > good + 1 else None

    def steps_left(self) -> int:
        """Candidates still to test at most, were every untested one between the bounds testable."""
        left = len(self.open())
        return 0 if left == 0 else math.ceil(math.log2(left + 1))
