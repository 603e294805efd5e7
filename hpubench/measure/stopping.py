"""When to stop measuring: fixed step counts and the ``--steps auto`` rule. Pure: no torch, no I/O.

``measure_steps`` asks a stop condition after every measured step (outside the timed bracket) whether to
stop, handing it the step times so far and the seconds since the measured phase began; the condition
answers None (go on) or the reason, which the record keeps as ``runtime["steps_stop"]``.

The auto rule measures in rounds of growing size, as pytest-benchmark and asv do: the interval is computed
at round ends only (``min_steps``, then 25% more steps each round), and only once ``min_time`` has passed,
so the total work is linear in the steps measured. That work runs between two steps, outside their brackets,
yet the steps after it run slower (``docs/measurements.md``), so none is done early. The interval it uses is
the cheap one, a Student-t interval on batch means (``locations.run_location``: contiguous batches long
enough to absorb the steps' autocorrelation), not the record's percentile bootstrap (``stats.throughput``,
2000 resamples, too slow to run every round). Both describe the same mean step time; the bootstrap treats
steps as independent and so reads narrower on a drifting machine, which makes the batch-means rule the
stricter of the two. The record keeps the bootstrap interval and, beside the stop reason, the half-width the
rule saw.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from hpubench.analysis.stats import locations, studentt
from hpubench.analysis.stats import summary as stats
from hpubench.plan.autosteps import MAX_AUTO_STEPS, AutoSteps

# A stop condition: (measured step times so far, seconds since the measured phase began) -> reason or None.
StopCondition = Callable[[Sequence[float], float], "str | None"]
# Agreement between the ranks of a distributed cell: every rank passes its own decision, every rank gets
# back the same one (rank 0's), so all ranks run the same number of steps.
Agree = Callable[["str | None"], "str | None"]

ROUND_GROWTH = 1.25  # each round measures 25% more steps than all the rounds before it together
MIN_STEPS_FOR_INTERVAL = 6  # batch means need at least 3 batches of 2 steps
CONFIDENCE = stats.DEFAULT_CONFIDENCE


def fixed_steps(n: int) -> StopCondition:
    """Exactly ``n`` steps."""
    if n < 1:
        raise ValueError(f"need at least one step, got {n}")

    def stop(times: Sequence[float], elapsed_s: float) -> str | None:
        return f"fixed: {n} steps" if len(times) >= n else None

    return stop


def half_width(step_times_s: Sequence[float], confidence: float = CONFIDENCE) -> float:
    """Relative half-width of the throughput interval: t quantile x batch-means standard error.

    The standard error is of the log mean step time (``locations.run_location``), so it is relative, and the
    throughput (work over total time) has the same relative error as the mean step time. Infinite when
    there are too few steps for an interval.
    """
    if len(step_times_s) < MIN_STEPS_FOR_INTERVAL:
        return math.inf
    loc = locations.run_location(step_times_s, "mean")
    if loc.df < 1:
        return math.inf
    return studentt.student_t_ppf(0.5 + confidence / 2, loc.df) * loc.se


def next_check(n: int, rule: AutoSteps) -> int:
    """The step count at which the round after one ending at ``n`` steps ends."""
    if n < rule.min_steps:
        return rule.min_steps
    return min(MAX_AUTO_STEPS, max(n + 1, math.ceil(n * ROUND_GROWTH)))


def decide(
    step_times_s: Sequence[float], elapsed_s: float, rule: AutoSteps, *, round_end: bool
) -> tuple[str | None, float | None]:
    """The auto rule's decision after a step: (the reason to stop or None to go on, the interval's
    half-width where the decision needed it, else None).

    Never before ``min_steps``. Then: the time limit (checked after every step), the step cap, and, at a
    round end once ``min_time`` has passed, the target half-width. The interval is computed only there:
    the work between two steps slows the steps after it, so rounds before ``min_time`` do none.
    """
    n = len(step_times_s)
    if n < rule.min_steps:
        return None, None
    if elapsed_s >= rule.max_time_s:
        hw = half_width(step_times_s)
        return f"max-time: {rule.max_time_s:g} s reached, half-width {_pct(hw)} after {n} steps", hw
    if n >= MAX_AUTO_STEPS:
        hw = half_width(step_times_s)
        return f"max-steps: {MAX_AUTO_STEPS} steps reached, half-width {_pct(hw)}", hw
    if not round_end or elapsed_s < rule.min_time_s:
        return None, None
    hw = half_width(step_times_s)
    if hw <= rule.target_ci:
        return f"target: interval half-width {_pct(hw)} <= {_pct(rule.target_ci)} after {n} steps", hw
    return None, hw


def round_note(n: int, width: float | None, rule: AutoSteps) -> str:
    """The live display's text at a round end: the interval the rule just saw, or when it will first look."""
    target = f"(target {_pct(rule.target_ci)})"
    if width is None:
        return f"step {n}, interval from {rule.min_time_s:g} s {target}"
    return f"step {n}, interval ±{_pct(width)} {target}"


def _pct(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{x:.1%}"


class AutoStop:
    """The auto rule as a stop condition: keeps track of where the rounds end.

    Alone (``agree`` None) it checks the time limit after every step and the target at round ends. In a
    distributed cell every rank must stop at the same step, so it decides only at round ends (which fall
    on the same step counts on every rank) and every rank adopts rank 0's decision through ``agree``;
    the time limit can then overshoot by up to one round (25% of the steps so far).
    """

    def __init__(
        self, rule: AutoSteps, agree: Agree | None = None, on_round: Callable[[str], None] | None = None
    ) -> None:
        """``on_round`` gets, at each round end, the width of the interval the rule just saw against the
        target (:func:`round_note`), for the live display (the step feed's ``note``): under auto steps
        "step n/N" has no N."""
        self.rule = rule
        self.agree = agree
        self.on_round = on_round
        self._next = next_check(0, rule)
        self.rounds = 0

    def __call__(self, times: Sequence[float], elapsed_s: float) -> str | None:
        n = len(times)
        round_end = n >= self._next
        if round_end:
            self._next = next_check(n, self.rule)
            self.rounds += 1
        elif self.agree is not None:
            return None
        reason, width = decide(times, elapsed_s, self.rule, round_end=round_end)
        if round_end and self.on_round is not None:
            self.on_round(round_note(n, width, self.rule))
        return reason if self.agree is None else self.agree(reason)

    def summary(self, times: Sequence[float]) -> dict[str, object]:
        """What the record keeps beside the stop reason: the rule, the rounds and the final half-width."""
        hw = half_width(times)
        return {
            **self.rule.to_dict(),
            "rounds": self.rounds,
            "half_width": hw if math.isfinite(hw) else None,
            "interval": f"Student t ({CONFIDENCE:.0%}) on batch means of the step times (stopping rule); "
            "the record's samples_per_s_ci is the percentile bootstrap",
        }
