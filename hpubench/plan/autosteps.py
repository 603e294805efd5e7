"""What ``--steps auto`` asks for: the target interval and the limits of the measured phase.

Kept apart from the stopping rule (``hpubench.measure.stopping``, which needs numpy) so the Cell and the
matrix, which only carry these settings, stay free of numerical imports: planning a matrix must stay instant.
The knobs follow pytest-benchmark (``min_rounds``, ``min_time``, ``max_time``) and asv (sample until the
estimate is stable), with the stability criterion made explicit as a relative interval half-width.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

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
