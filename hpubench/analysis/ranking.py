"""May a page call one configuration better than another? Pure, so every "winner" a report or summary
names is decided by one unit-tested rule.

The rule: the best configuration is named only when both it and the runner-up are judged ``ok``
(:mod:`hpubench.analysis.quality`) and their intervals do not overlap. Otherwise the page says why it names
none: "not comparable: <verdict>" when either figure cannot be trusted (a collapsed or noisy cell can look
slower or faster than it is, so no interval arithmetic rescues it), else "no significant difference".
Overlap of two 95% intervals is a conservative test (non-overlap implies a difference at well under 5%),
which is what a headline should be: it is read without its caveats.

An interval from one run holds the spread of that run's steps, not the spread between runs, and the two
differ: on the 2-core VM resnet tiny ran at 0.7-1.3% CV over blocks in one process but 2.8-4.1% over
processes, forked or fresh (README, 2026-11-26). A winner named from single runs says so, as ``compare``'s
"(within-run only)" does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hpubench.analysis.quality import OK, worst

WINNER = "winner"
ONLY = "only one"
NO_DIFFERENCE = "no significant difference"
NOT_COMPARABLE = "not comparable"
UNJUDGED = "no quality verdict"
WITHIN_RUN = "within-run only: each process runs at its own speed, which one run cannot show; --repeat 3 can"


@dataclass(frozen=True)
class Contender:
    """A configuration's figure with its interval and quality verdict (None: recorded before verdicts)."""

    value: float
    lo: float
    hi: float
    quality: str | None
    runs: int = 1  # repeats the figure and its interval come from (run --repeat)


@dataclass(frozen=True)
class Decision:
    """``outcome``: WINNER, ONLY, NO_DIFFERENCE or NOT_COMPARABLE; ``text``: what a page prints."""

    outcome: str
    text: str

    @property
    def names_winner(self) -> bool:
        return self.outcome == WINNER


def _interval_known(c: Contender) -> bool:
    return all(isinstance(x, int | float) and math.isfinite(x) for x in (c.value, c.lo, c.hi))


def decide(best: Contender, runner_up: Contender | None, higher_is_better: bool = True) -> Decision:
    """Whether ``best`` (the better point estimate) may be called better than ``runner_up``."""
    if runner_up is None:
        if best.quality == OK:
            return Decision(ONLY, "the only configuration measured")
        return Decision(ONLY, f"the only configuration measured; quality: {best.quality or UNJUDGED}")
    qualities = (best.quality, runner_up.quality)
    if any(q != OK for q in qualities):
        bad = worst([q for q in qualities if q != OK])
        return Decision(NOT_COMPARABLE, f"{NOT_COMPARABLE}: {bad or UNJUDGED}")
    if not (_interval_known(best) and _interval_known(runner_up)):
        return Decision(NOT_COMPARABLE, f"{NOT_COMPARABLE}: no interval")
    apart = best.lo > runner_up.hi if higher_is_better else best.hi < runner_up.lo
    if not apart:
        return Decision(NO_DIFFERENCE, NO_DIFFERENCE)
    if min(best.runs, runner_up.runs) < 2:
        return Decision(WINNER, f"intervals apart, both ok ({WITHIN_RUN})")
    return Decision(WINNER, "intervals apart, both ok")
