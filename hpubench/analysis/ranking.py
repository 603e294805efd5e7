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

Numerics (issue 33): a faster configuration whose loss was not shown to match the reference is no answer to
"which should I use". :func:`rank` names as best only a configuration whose numerics verdict is ``ok``
(:mod:`hpubench.analysis.numerics`; drift, diverged, unchecked and not recorded all fall short), holds it
against the next one that is ok, and says which faster ones it passed over and why: "fastest with ok
numerics; X is faster but its numerics are drift".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from hpubench.analysis.compare import numerics_word
from hpubench.analysis.numerics import OK as NUMERICS_OK
from hpubench.analysis.numerics import worst as worst_numerics
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
    numerics: str | None = None  # the numerics verdict (None: recorded before numerics were checked)
    name: str = ""  # how a page names the configuration when it passes it over


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


@dataclass(frozen=True)
class Ranking:
    """Which configuration a page shows first and holds against which, by index into the contenders.

    ``best``: the best figure whose numerics are ok, else (none is ok) the best figure, which is then never
    a winner; ``runner_up``: the next one with ok numerics (where none is ok: the next figure);
    ``passed_over``: better figures left out for their numerics, best first."""

    best: int
    runner_up: int | None
    decision: Decision
    passed_over: tuple[int, ...] = ()


def rank(
    contenders: Sequence[Contender],
    higher_is_better: bool = True,
    words: tuple[str, str] = ("fastest", "faster"),
) -> Ranking:
    """The best of ``contenders`` (at least one) that a page may name, and why it names it or none.

    ``words``: the superlative and comparative of the figure ("fastest", "faster"; "cheapest",
    "cheaper"), for the sentence that says which better figures were passed over."""
    order = sorted(range(len(contenders)), key=lambda i: contenders[i].value, reverse=higher_is_better)
    eligible = [i for i in order if contenders[i].numerics == NUMERICS_OK]
    if not eligible:
        best, runner = order[0], (order[1] if len(order) > 1 else None)
        word = numerics_word(worst_numerics(c.numerics for c in contenders))
        if runner is None:
            only = decide(contenders[best], None, higher_is_better)
            return Ranking(best, None, Decision(ONLY, f"{only.text}; numerics: {word}"))
        why = f"{NOT_COMPARABLE}: no configuration's numerics are ok (worst: {word})"
        return Ranking(best, runner, Decision(NOT_COMPARABLE, why))
    best = eligible[0]
    runner = eligible[1] if len(eligible) > 1 else None
    decision = decide(contenders[best], None if runner is None else contenders[runner], higher_is_better)
    passed = tuple(order[: order.index(best)])
    if not passed:
        return Ranking(best, runner, decision)
    superlative, comparative = words
    why = "; ".join(
        f"{contenders[i].name or 'another configuration'} is {comparative} but its numerics are "
        f"{numerics_word(contenders[i].numerics)}"
        for i in passed
    )
    text = decision.text
    if runner is None:
        q = contenders[best].quality
        text = "the only configuration with ok numerics" + ("" if q == OK else f"; quality: {q or UNJUDGED}")
    return Ranking(
        best, runner, Decision(decision.outcome, f"{superlative} with ok numerics; {why}; {text}"), passed
    )
