"""What ``--steps auto`` asks for: the target interval and the limits of the measured phase.

Kept apart from the stopping rule (``hpubench.measure.stopping``, which needs numpy) so the Cell and the
matrix, which only carry these settings, stay free of numerical imports: planning a matrix must stay instant.
The knobs follow pytest-benchmark (``min_rounds``, ``min_time``, ``max_time``) and asv (sample until the
estimate is stable), with the stability criterion made explicit as a relative interval half-width.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

MAX_AUTO_STEPS = 10_000  # bounds the record (step times are kept) when steps are far faster than the noise

AUTO = "auto"
# The knobs as they are spelled in matrix files (the command line adds "--" and dashes).
KNOBS: tuple[str, ...] = ("target_ci", "min_steps", "min_time", "max_time")


@dataclass(frozen=True)
class AutoSteps:
    """Measure until the throughput interval is narrow enough, within time and step limits.

    ``target_ci``: relative half-width of the throughput interval to reach (0.02 = +-2%).
    ``min_steps`` and ``min_time_s``: never stop for the target before both are reached; the warm-up
    also lasts ``min_time_s`` at least (:func:`warmup_extension`). The default 2 s is measured: this VM's
    speed drifts over seconds, which no interval inside a shorter window can see; the run-to-run CV of
    tiny cells over 5 repeats was 1.0-4.0% with 0.5 s and 1.7-2.6% with 2 s (``benchmarks/trust.py``),
    and a bare loop doing the same work in fresh processes varied as much (README, "Benchmarks").
    ``max_time_s``: stop once the measured phase has run this long (seconds), target or not; the
    minimum steps still run first, so a cell slower than ``max_time_s / min_steps`` runs longer.
    """

    target_ci: float = 0.02
    min_steps: int = 10
    min_time_s: float = 2.0
    max_time_s: float = 30.0

    def __post_init__(self) -> None:
        problem = auto_steps_problem(self)
        if problem:
            raise ValueError(problem)

    def describe(self) -> str:
        return (
            f"auto: until the interval half-width <= {self.target_ci:.1%} "
            f"(min {self.min_steps} steps and {self.min_time_s:g} s, max {self.max_time_s:g} s; "
            f"warm-up at least {self.min_time_s:g} s)"
        )

    def to_dict(self) -> dict[str, float | int]:
        return {
            "target_ci": self.target_ci,
            "min_steps": self.min_steps,
            "min_time_s": self.min_time_s,
            "max_time_s": self.max_time_s,
        }


# More warm-up steps than this are never added, however short the steps (a bound on a runaway).
MAX_WARMUP_EXTENSION = 100_000
# Upper bound of a fixed step count (``--steps``, ``--warmup-steps``, ``steps =`` in a matrix file): a
# million steps of even a 1 ms step is 17 minutes of measuring; beyond it a typo is the likelier cause,
# and the step-time arrays kept in every record would grow without end. ``--steps auto`` is the way to
# measure long.
MAX_STEPS = 1_000_000


def warmup_extension(warmup_s: Sequence[float], min_time_s: float) -> int:
    """Warm-up steps to add so that the warm-up, after its first step, lasts ``min_time_s``.

    Why: a fixed count of warm-up steps is milliseconds for a small CPU cell, and such a cell is still
    speeding up after it (measured: mlp tiny's first ~100 measured steps, ~0.1 s, ran 5-10% slower than
    the rest after 3 warm-up steps, and its figure came out ``unstable``). So under ``--steps auto`` the
    warm-up lasts at least the minimum measured time, as asv's ``warmup_time`` does. The first step
    (compilation, first touches) is left out of the time; the median of the others prices the rest, and
    the caller asks again after running them (steps may speed up meanwhile).
    """
    if len(warmup_s) < 1 or min_time_s <= 0:
        return 0
    done = sum(warmup_s[1:])
    if done >= min_time_s:
        return 0
    rest = sorted(warmup_s[1:]) or [warmup_s[0]]
    per_step = rest[len(rest) // 2]  # the median step after the first: one slow step must not price all
    return min(MAX_WARMUP_EXTENSION, math.ceil((min_time_s - done) / max(per_step, 1e-9)))


# ---- when the warm-up ends: the compiler done --------------------------------------------------------

# Most warm-up steps added while compiles still rise. A warm-up that is only compiling settles in a few
# steps: dynamo stops recompiling a frame at its recompile limit and automatic dynamic shapes stop a
# shape from recompiling after its second, so counts still rising this many steps later come from a step
# that recompiles every time, which a longer warm-up would not change (docs/measurements.md).
COMPILE_WARMUP_MAX_STEPS = 50
# Most seconds of warm-up added while compiles still rise: room for a few recompiles of a model whose
# compile takes tens of seconds, while a cell that recompiles every step stops warming up long before
# it would eat its timeout or the run's budget.
COMPILE_WARMUP_MAX_S = 120.0
# Why a warm-up ended (the start of runtime["warmup_stop"]; the quality verdict reads STOP_BOUND).
STOP_PLANNED = "planned"
STOP_SETTLED = "compiles settled"
STOP_MIN_TIME = "min-time"
STOP_BOUND = "bound"


@dataclass(frozen=True)
class WarmupAsk:
    """What one rank reports each time the warm-up asks whether to go on; the ranks of a distributed cell
    agree on the largest of each (:func:`merge_asks`), so all run the same steps."""

    compiled_last: int  # compile events during the last warm-up step
    extra_s: float  # seconds of warm-up run beyond the planned steps
    time_more: int  # steps the minimum warm-up time still wants (--steps auto; else 0)


@dataclass(frozen=True)
class WarmupDecision:
    more: int  # warm-up steps to add; 0 ends the warm-up
    stop: str  # why it ended (a STOP_* name); "" while it goes on


def merge_asks(asks: Sequence[WarmupAsk]) -> WarmupAsk:
    """Every rank's report as one: a compile on any rank keeps every rank warming up, since a rank still
    warming up would meet the others' all-reduce."""
    return WarmupAsk(
        max(a.compiled_last for a in asks), max(a.extra_s for a in asks), max(a.time_more for a in asks)
    )


def decide_warmup(
    ask: WarmupAsk,
    extra_steps: int,
    rose_before: bool = False,
    max_steps: int = COMPILE_WARMUP_MAX_STEPS,
    max_s: float = COMPILE_WARMUP_MAX_S,
) -> WarmupDecision:
    """Whether the warm-up goes on: while its last step compiled something, one step more (or what the
    minimum time still wants), until ``max_steps`` steps or ``max_s`` seconds were added; then it stops
    with STOP_BOUND and the cell measures anyway (its verdict says ``recompiled``, with this reason).

    ``extra_steps``: warm-up steps run beyond the planned ones; ``rose_before``: compiles rose at an
    earlier ask, so the extension was the compiler's (the stop reason says which).
    """
    rising = ask.compiled_last > 0
    if rising and (extra_steps >= max_steps or ask.extra_s >= max_s):
        return WarmupDecision(0, STOP_BOUND)
    if rising:
        return WarmupDecision(max(1, ask.time_more), "")
    if ask.time_more > 0:
        return WarmupDecision(ask.time_more, "")
    if extra_steps == 0:
        return WarmupDecision(0, STOP_PLANNED)
    return WarmupDecision(0, STOP_SETTLED if rose_before else STOP_MIN_TIME)


def compiled_warmup(warmup_steps: int, compiles: bool) -> int:
    """Warm-up steps a cell is expected to run, for the estimate and the budget: a cell whose first step
    compiles (``compiles``: not eager, or graph capture) warms up until a step compiles nothing, so its
    warm-up is at least the compiling step and one quiet one."""
    return max(warmup_steps, 2) if compiles else warmup_steps


LEAD_IN_STEPS = 1
"""Warm-up steps run after the rule has said it is done (``hpubench.measure.steps``): the lead-in, which
follows the slow first sample of the interference meter, so that the pause lands on a warm-up step."""


class WarmupRule:
    """``measure_steps``' ``more_warmup``: asked after the planned warm-up and again after each batch it
    adds, with the step times and the compile events of each step so far (:func:`decide_warmup`).

    ``min_time_s``: under ``--steps auto`` the warm-up also lasts this long after its first step
    (:func:`warmup_extension`); ``agree``: in a distributed cell, every rank's ask gathered and merged
    (:func:`merge_asks`), so every rank takes the same decision.
    """

    def __init__(
        self, planned: int, min_time_s: float = 0.0, agree: Callable[[WarmupAsk], WarmupAsk] | None = None
    ) -> None:
        self.planned = planned
        self.min_time_s = min_time_s
        self.agree = agree
        self.rose = False  # compiles rose at some ask: the compiler extended the warm-up
        self.timed = False  # the minimum time did
        self.last: WarmupAsk | None = None
        self.decision: WarmupDecision | None = None

    def __call__(self, warmup_s: Sequence[float], compiled: Sequence[int]) -> int:
        extra = max(0, len(warmup_s) - self.planned)
        time_more = warmup_extension(warmup_s, self.min_time_s) if self.min_time_s > 0 else 0
        ask = WarmupAsk(int(compiled[-1]) if compiled else 0, float(sum(warmup_s[self.planned :])), time_more)
        if self.agree is not None:
            ask = self.agree(ask)
        self.last, self.decision = ask, decide_warmup(ask, extra, self.rose)
        self.rose = self.rose or ask.compiled_last > 0
        self.timed = self.timed or ask.time_more > 0
        return self.decision.more

    def facts(
        self, warmup_s: Sequence[float], compiled: Sequence[int], lead_in: int = 0
    ) -> tuple[tuple[str, Any], ...]:
        """Runtime facts: how long the warm-up ran and why it stopped (``warmup_stop``, ``warmup_extended``
        where it ran past its planned steps, ``warmup_compiles``); none where it was never asked.
        ``warmup_s`` and ``compiled`` end with ``lead_in`` steps the rule did not decide (``measure_steps``
        runs :data:`LEAD_IN_STEPS`; an observed training loop, none)."""
        if self.decision is None or self.last is None:
            return ()
        n = len(warmup_s) - lead_in  # the steps the rule decided
        extra = max(0, n - self.planned)
        stop = self.decision.stop or STOP_PLANNED
        timed = f"{n} steps, to last {self.min_time_s:g} s after the first"
        why = {
            STOP_PLANNED: f"after the {n} planned steps: the last compiled nothing",
            STOP_SETTLED: f"{n} steps ({self.planned} planned + {extra} more) until one compiled nothing",
            STOP_MIN_TIME: f"{timed}; the last compiled nothing",
            STOP_BOUND: (
                f"compiles still rose after {extra} more steps, {self.last.extra_s:.3g} s (at most "
                f"{COMPILE_WARMUP_MAX_STEPS} steps or {COMPILE_WARMUP_MAX_S:g} s are added)"
            ),
        }[stop]
        compiling = [i for i, c in enumerate(compiled) if c > 0]
        facts: tuple[tuple[str, Any], ...] = (
            ("warmup_stop", f"{stop}: {why}" + (f"; then {lead_in} lead-in step" if lead_in else "")),
            (
                "warmup_compiles",
                {
                    "steps": len(warmup_s),
                    "lead_in": lead_in,
                    "planned": self.planned,
                    "seconds": float(sum(warmup_s)),
                    "compiles": int(sum(compiled)),
                    "last_compiling_step": compiling[-1] if compiling else None,
                    "compiled_last": self.last.compiled_last,
                },
            ),
        )
        if extra:
            why_more = [
                text
                for text, on in (
                    ("while compiles rose", self.rose),
                    (f"to reach {self.min_time_s:g} s after the first (--steps auto)", self.timed),
                )
                if on
            ]
            text = f"{self.planned} warm-up steps + {extra} more {' and '.join(why_more)}".rstrip()
            facts += (("warmup_extended", text),)
        return facts


def _knob_problem(name: str, v: object) -> str | None:
    """Why one knob's value cannot run (one line), or None; ``name`` as spelled in KNOBS."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return f"{name} takes a number, got {v!r}"
    if name == "target_ci" and not 0 < v < 1:
        return f"target_ci must be a fraction between 0 and 1 (e.g. 0.02 or 2%), got {v:g}"
    if name == "min_steps" and (v != int(v) or v < 3):
        return f"min_steps must be a whole number >= 3 (an interval needs a spread), got {v:g}"
    if name == "min_time" and v < 0:
        return f"min_time must be seconds >= 0, got {v:g}"
    if name == "max_time" and v <= 0:
        return f"max_time must be positive seconds, got {v:g}"
    return None


def auto_steps_problem(a: AutoSteps) -> str | None:
    """Why these settings cannot run (one line), or None."""
    for name, v in zip(KNOBS, (a.target_ci, a.min_steps, a.min_time_s, a.max_time_s), strict=True):
        problem = _knob_problem(name, v)
        if problem:
            return problem
    if a.min_time_s > a.max_time_s:
        return (
            f"min_time ({a.min_time_s:g} s) is longer than max_time ({a.max_time_s:g} s); "
            "lower one or raise the other"
        )
    return None


def parse_steps(value: object) -> int | None:
    """``"auto"`` -> None; a whole number >= 2 -> itself. Raises ValueError with the fix otherwise."""
    if isinstance(value, str):
        text = value.strip().lower()
        if text == AUTO:
            return None
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"takes a whole number >= 2 or 'auto', got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"takes a whole number >= 2 or 'auto', got {value!r}")
    if value < 2:
        raise ValueError(f"must be at least 2 (a spread needs two samples) or 'auto', got {value}")
    if value > MAX_STEPS:
        raise ValueError(f"must be at most {MAX_STEPS:,} (a typo is likelier than such a run), got {value:,}")
    return value


def parse_knob(name: str, value: object) -> float | int:
    """One auto knob from a string or a TOML value; ``target_ci`` takes ``2%`` or ``0.02``.

    Raises ValueError naming the problem; the caller adds where the value came from.
    """
    if name not in KNOBS:
        raise ValueError(f"unknown setting {name!r}; valid: {', '.join(KNOBS)}")
    raw = value
    if isinstance(value, str):
        text = value.strip()
        percent = name == "target_ci" and text.endswith("%")
        try:
            value = float(text[:-1]) / 100 if percent else float(text)
        except ValueError:
            raise ValueError(f"takes a number, got {raw!r}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"takes a number, got {raw!r}")
    problem = _knob_problem(name, value)
    if problem:
        raise ValueError(problem)
    return int(value) if name == "min_steps" else float(value)


def with_knobs(base: AutoSteps, knobs: dict[str, float | int]) -> AutoSteps:
    """``base`` with the given knobs (matrix-file / command-line spelling) replaced."""
    fields = {"min_time": "min_time_s", "max_time": "max_time_s"}
    values = base.to_dict()
    for k, v in knobs.items():
        values[fields.get(k, k)] = v
    return AutoSteps(**values)  # type: ignore[arg-type]
