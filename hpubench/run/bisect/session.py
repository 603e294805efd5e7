"""``hpubench bisect``'s loop: confirm the regression, then a binary search between GOOD and BAD.

Every tested commit is measured in interleaved rounds with GOOD (each round runs both, their order
alternating), so both sides share the machine's drift; GOOD's runs for each candidate are its own. The
calls are made by :mod:`hpubench.analysis.bisect` from the gate's verdicts on those runs.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from hpubench.analysis import bisect as search
from hpubench.analysis.gate.decide import gate
from hpubench.analysis.gate.outcomes import GateResult
from hpubench.analysis.gate.rules import GateSettings
from hpubench.errors import UsageError
from hpubench.run.bisect import rounds
from hpubench.run.bisect.gitrepo import Commit, worktree
from hpubench.run.bisect.state import BisectState
from hpubench.store.leftovers import Scratch
from hpubench.store.readback import load_results
from hpubench.store.record import STATUS_SKIPPED

Progress = Callable[[str], None]
SCRATCH_PREFIX = "hpubench-bisect-"  # the worktrees' folder; a killed bisect's is removed by the next


@dataclass(frozen=True)
class Request:
    repo: Path  # the repository's root
    good: Commit
    bad: Commit
    candidates: tuple[Commit, ...]  # after GOOD up to BAD, oldest first
    run_args: tuple[str, ...]  # passed to every 'hpubench run'
    setup: str | None
    repeat: int  # interleaved rounds per tested commit
    out: Path
    settings: GateSettings


@dataclass(frozen=True)
class Tested:
    commit: Commit
    call: str  # good, bad, undecided or skipped
    evidence: tuple[search.Evidence, ...]
    note: str = ""


@dataclass(frozen=True)
class Outcome:
    followed: tuple[search.Followed, ...]
    tested: tuple[Tested, ...]  # in the order tested; BAD first
    first_bad: Commit | None
    between: tuple[Commit, ...]  # when only skipped commits stand between: those that may be the first bad
    stopped: str | None  # why no commit could be named ("insufficient evidence ...")
    runs: int  # 'hpubench run' invocations, this session and earlier ones
    cell_runs: int  # cells measured (failed ones included) in all of them
    wall_s: float  # this session


class _Bisect:
    """One session: GOOD's worktree, the state, the progress lines."""

    def __init__(
        self, req: Request, state: BisectState, scratch: Path, stack: contextlib.ExitStack, say: Progress
    ):
        self.req, self.state, self.scratch, self.stack, self.say = req, state, scratch, stack, say
        self.started = time.monotonic()
        self._good: Path | None = None

    @property
    def good_tree(self) -> Path:
        """GOOD's worktree, checked out and set up when a round first needs it (a resumed bisect whose
        rounds are all done needs none), kept until the session ends."""
        if self._good is None:
            self._good = self.stack.enter_context(_good_tree(self.req, self.scratch, self.say))
        return self._good

    def _dirs(self, commit: Commit) -> tuple[Path, Path]:
        runs = self.req.out / "runs"
        return runs / f"good-vs-{commit.short}", runs / commit.short

    def _log(self, commit: Commit, what: str) -> Path:
        logs = self.req.out / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        return logs / f"{commit.short}-{what}.log"

    def _run(self, tree: Path, commit: Commit, out: Path, rnd: int, what: str) -> None:
        t0 = time.monotonic()
        rounds.measure(tree, commit, self.req.run_args, out, rnd, self._log(commit, what))
        self.state.run_seconds.append(round(time.monotonic() - t0, 3))

    def measure(self, commit: Commit) -> bool:
        """Finish ``commit``'s interleaved rounds with GOOD; False when its set-up failed (skipped)."""
        if commit.sha in self.state.setup_failed:
            return False
        done = self.state.rounds.get(commit.sha, 0)
        if done >= self.req.repeat:
            return True
        good_dir, cand_dir = self._dirs(commit)
        with worktree(self.req.repo, commit, self.scratch) as tree:
            if self.req.setup:
                try:
                    rounds.set_up(self.req.setup, tree, commit, self._log(commit, "setup"))
                except rounds.SetupFailed as exc:
                    self.state.setup_failed[commit.sha] = exc.line
                    self.state.save()
                    self.say(f"skipped {commit.short}: {exc.line}")
                    return False
            for rnd in range(done + 1, self.req.repeat + 1):
                self.say(f"  {commit.short}: round {rnd} of {self.req.repeat} (with GOOD){self._eta(commit)}")
                sides = [(self.good_tree, self.req.good, good_dir, "good"), (tree, commit, cand_dir, "run")]
                for side_tree, side_commit, out, what in sides if rnd % 2 else sides[::-1]:
                    log_as = f"{what}-vs-{commit.short}" if what == "good" else what
                    self._run(side_tree, side_commit, out, rnd, log_as)
                self.state.rounds[commit.sha] = rnd
                self.state.save()
        return True

    def _eta(self, commit: Commit) -> str:
        per_run = self.state.seconds_per_run()
        if per_run is None:
            return ""
        left_here = self.req.repeat - self.state.rounds.get(commit.sha, 0)
        return f"; ~{_duration(per_run * 2 * left_here)} for this commit"

    def gate(self, commit: Commit, settings: GateSettings) -> GateResult:
        good_dir, cand_dir = self._dirs(commit)
        return gate(load_results([str(good_dir)]), load_results([str(cand_dir)]), settings)

    def progress(self, s: search.Search) -> None:
        left = len(s.open())
        steps = s.steps_left()
        per_run = self.state.seconds_per_run()
        eta = f", about {_duration(steps * 2 * self.req.repeat * per_run)} left" if per_run and steps else ""
        self.say(f"bisect: {left} commit(s) left to place, about {steps} more to test{eta}")


def _duration(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    return f"{m} min {s} s" if m else f"{s} s"


def _counts(req: Request) -> tuple[int, int]:
    """'hpubench run' invocations and the cells they measured, over every run directory of the bisect."""
    runs = cells = 0
    for d in sorted((req.out / "runs").glob("*")):
        if (d / "cells.jsonl").exists():
            records = [r for r in load_results([str(d)]) if r.status != STATUS_SKIPPED]
            cells += len(records)
            runs += len({r.repeat for r in records})
    return runs, cells


@contextlib.contextmanager
def _good_tree(req: Request, scratch: Path, say: Progress) -> Iterator[Path]:
    with worktree(req.repo, req.good, scratch) as tree:
        if req.setup:
            say(f"set-up at GOOD {req.good.short}: {req.setup}")
            try:
                rounds.set_up(req.setup, tree, req.good, req.out / "logs" / f"{req.good.short}-setup.log")
            except rounds.SetupFailed as exc:
                raise UsageError(f"{exc.line}; fix: a --setup that works at GOOD") from None
        yield tree


def run(req: Request, state: BisectState, say: Progress) -> Outcome:
    """Confirm BAD against GOOD, then search; every call is made from the runs' records."""
    (req.out / "logs").mkdir(parents=True, exist_ok=True)
    with Scratch(SCRATCH_PREFIX) as scratch, contextlib.ExitStack() as stack:
        b = _Bisect(req, state, scratch.path, stack, say)
        say(f"confirming: BAD {req.bad.short} against GOOD {req.good.short}, {req.repeat} interleaved rounds")
        b.measure(req.bad)
        confirmed = search.confirm(b.gate(req.bad, req.settings), req.repeat)
        if confirmed.problem and not confirmed.insufficient:
            raise UsageError(confirmed.problem)
        # the intervals that place a candidate, at alpha split over the cells followed
        alpha = req.settings.alpha / max(1, len(confirmed.followed))
        judging = replace(req.settings, confidence=1 - alpha, missing="ignore")
        # BAD's own row: the gate found it slower; its evidence is shown as every candidate's is
        evidence = search.judge(b.gate(req.bad, judging), confirmed.followed)[1] if confirmed.followed else ()
        tested = [Tested(req.bad, search.BAD, evidence)]
        calls: dict[int, str] = {len(req.candidates) - 1: search.BAD}
        s = search.Search(len(req.candidates), calls)
        while confirmed.problem is None and (i := s.next()) is not None:
            b.progress(s)
            commit = req.candidates[i]
            say(f"testing {commit.short} {commit.subject[:60]}")
            if not b.measure(commit):
                calls[i] = search.SKIPPED
                tested.append(Tested(commit, search.SKIPPED, (), state.setup_failed.get(commit.sha, "")))
            else:
                call, evidence = search.judge(b.gate(commit, judging), confirmed.followed)
                calls[i] = call
                tested.append(Tested(commit, call, evidence))
                say(f"  {commit.short}: {call}")
            s = search.Search(len(req.candidates), calls)
        return _outcome(req, confirmed, tuple(tested), s, b.started)


def _outcome(
    req: Request, confirmed: search.Confirmed, tested: tuple[Tested, ...], s: search.Search, started: float
) -> Outcome:
    stopped = confirmed.problem
    if stopped is None and s.undecided is not None:
        c = req.candidates[s.undecided]
        stopped = (
            f"insufficient evidence at {c.short}: its runs do not tell which side of the regression it is "
            f"on; fix: rerun with --repeat {2 * req.repeat} (the runs so far are kept)"
        )
    first = None if s.first_bad is None or stopped else req.candidates[s.first_bad]
    between = (
        () if s.skipped_range is None else tuple(req.candidates[s.skipped_range[0] : s.skipped_range[1] + 1])
    )
    runs, cells = _counts(req)
    return Outcome(
        confirmed.followed, tested, first, between, stopped, runs, cells, time.monotonic() - started
    )
