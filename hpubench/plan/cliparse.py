"""Turns command-line strings into typed matrix dimensions, rejecting bad values with one clear line."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from hpubench.errors import UsageError
from hpubench.plan import dimensions
from hpubench.plan.autosteps import AUTO, KNOBS, MAX_STEPS, parse_knob, parse_steps

MAX_TIMEOUT_S = 7 * 24 * 3600.0  # a week: longer is a typo (and overflows some wait calls)
MAX_REPEAT = 1_000  # runs of a whole matrix: more is a typo, and would plan for ever


def split_values(option: str, values: list[str] | None) -> list[str] | None:
    """Repeated options and comma-separated values both work; '[0,2]' stays one value (device indices).

    An empty value (``--workload ""``, ``-w mlp,``) is refused: dropping it would turn an empty variable
    in a script into "every workload".
    """
    if not values:
        return None
    out: list[str] = []
    for v in values:
        v = v.strip()
        parts = [v] if v.startswith("[") else [p.strip() for p in v.split(",")]
        if not all(parts):
            raise UsageError(
                f"{option} {v!r} has an empty value; give names separated by commas, e.g. {option} mlp,gpt"
            )
        out += parts
    return out


def check_repeat(repeat: int, minimum: int) -> int:
    """``--repeat``: whole runs of the matrix, at least ``minimum`` and at most ``MAX_REPEAT``."""
    if not minimum <= repeat <= MAX_REPEAT:
        raise UsageError(f"--repeat must be between {minimum} and {MAX_REPEAT:,}, got {repeat}")
    return repeat


def check_timeout(timeout: float) -> float:
    """``--timeout`` in seconds: finite, positive, at most ``MAX_TIMEOUT_S``."""
    if not math.isfinite(timeout) or not 0 < timeout <= MAX_TIMEOUT_S:
        raise UsageError(
            f"--timeout must be positive and finite, at most {MAX_TIMEOUT_S:.0f} seconds (a week), "
            f"got {timeout}; e.g. --timeout 600"
        )
    return timeout


def out_dir(value: str | Path | None) -> Path | None:
    """``--out`` as a path; an empty string would write the run into the current directory."""
    if value is None:
        return None
    if not str(value).strip():
        raise UsageError("--out is empty; give a run directory, e.g. --out results/today")
    return Path(value)


def parse_dimensions(
    *,
    steps: str | int | None = None,
    warmup_steps: int | None = None,
    auto: dict[str, str | None] | None = None,
    **dims: list[str] | None,
) -> dict[str, Any]:
    """Keyword arguments for ``matrix.spec_from_options``: only the dimensions the user gave.

    ``dims`` maps dimension names (``hpubench.plan.dimensions``) to the strings of their flag, repeated or
    comma-separated; each becomes the value a matrix file would hold, checked by the dimension's own
    parser (names that need the workload catalog or this machine, such as sizes, are checked when the
    matrix expands, for flags and files alike). ``steps`` is a count or "auto"; ``auto`` maps the auto
    knobs (``autosteps.KNOBS``) to their strings.
    """
    by_name = {d.name: d for d in dimensions.all_dimensions()}
    unknown = sorted(set(dims) - set(by_name))
    if unknown:
        raise TypeError(f"parse_dimensions() got unknown dimension(s): {', '.join(unknown)}")
    out: dict[str, Any] = {}
    for name, texts in dims.items():
        d = by_name[name]
        given = split_values(d.cli_flags[0], texts) if d.split else texts
        if given:
            out[name] = d.from_command_line(given)
    if steps is not None:
        try:
            n = parse_steps(steps)
        except ValueError as e:
            raise UsageError(f"--steps {e}; e.g. --steps 50 or --steps auto") from None
        out["steps"] = AUTO if n is None else n
    knobs = {k: v for k, v in (auto or {}).items() if v is not None}
    for name, value in knobs.items():
        flag = "--" + name.replace("_", "-")
        if name not in KNOBS:
            raise UsageError(f"{flag} is not a setting of --steps auto; valid: {', '.join(KNOBS)}")
        if out.get("steps", AUTO) != AUTO:
            raise UsageError(f"{flag} applies to --steps auto only; drop it or give --steps auto")
        try:
            parsed = parse_knob(name, value)
        except ValueError as e:
            raise UsageError(f"{flag} {value}: {e}") from None
        out.setdefault("auto", {})[name] = parsed
    if warmup_steps is not None:
        if warmup_steps > MAX_STEPS:
            raise UsageError(f"--warmup-steps must be at most {MAX_STEPS:,}, got {warmup_steps:,}")
        if warmup_steps < 1:
            raise UsageError(
                f"--warmup-steps must be at least 1 (the first step is never measured), got {warmup_steps}"
            )
        out["warmup_steps"] = warmup_steps
    return out
