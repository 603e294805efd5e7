"""Turns command-line strings into typed matrix dimensions, rejecting bad values with one clear line."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from hpubench.autosteps import AUTO, KNOBS, MAX_STEPS, parse_knob, parse_steps
from hpubench.cell import MODES, PRECISIONS, SIZES
from hpubench.errors import UsageError

_TRUE = {"on", "true", "yes", "1"}
_FALSE = {"off", "false", "no", "0"}
MAX_TIMEOUT_S = 7 * 24 * 3600.0  # a week: longer is a typo (and overflows some wait calls)


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


def _positive_int(option: str, value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise UsageError(f"{option} takes whole numbers, got {value!r}; e.g. {option} 2") from None
    if n < 1:
        raise UsageError(f"{option} must be at least 1, got {n}")
    return n


def _choice(option: str, value: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise UsageError(f"{option} {value!r} is not one of {', '.join(choices)}")
    return value


def _devices(value: str) -> int | str | list[int]:
    if value == "auto":
        return "auto"
    if value.startswith("["):
        try:
            ids = json.loads(value)
        except json.JSONDecodeError:
            ids = None
        if not isinstance(ids, list) or not ids or not all(isinstance(i, int) and i >= 0 for i in ids):
            raise UsageError(
                f"--devices {value!r} is not a list of device indices; write e.g. --devices '[0,2]'"
            )
        if len(set(ids)) != len(ids):
            raise UsageError(f"--devices {value!r} names a device twice; list each index once")
        return ids
    return _positive_int("--devices", value)


def _graphs(value: str) -> bool:
    v = value.lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise UsageError(f"--graphs takes on or off, got {value!r}")


def _options(values: list[str]) -> dict[str, str]:
    """``--option name=value`` flags (repeatable) as one option set, checked where hpubench knows them."""
    from hpubench.core.extrawork import check_options

    opts: dict[str, str] = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise UsageError(f"--option takes name=value, got {item!r}; e.g. --option extra_work=0.1")
        opts[name.strip()] = value.strip()
    check_options(opts, where="--option")
    return opts


def _batch(value: str) -> int | None:
    return None if value == "default" else _positive_int("--batch-size", value)


def parse_dimensions(
    *,
    workload: list[str] | None = None,
    size: list[str] | None = None,
    accelerator: list[str] | None = None,
    devices: list[str] | None = None,
    nodes: list[str] | None = None,
    precision: list[str] | None = None,
    mode: list[str] | None = None,
    graphs: list[str] | None = None,
    batch_size: list[str] | None = None,
    options: list[str] | None = None,
    steps: str | int | None = None,
    warmup_steps: int | None = None,
    auto: dict[str, str | None] | None = None,
) -> dict[str, Any]:
    """Keyword arguments for ``matrix.spec_from_options``: only the dimensions the user gave.

    ``steps`` is a count or "auto"; ``auto`` maps the auto knobs (``autosteps.KNOBS``) to their strings.
    """
    out: dict[str, Any] = {}
    if workload:
        out["workload"] = workload
    if size:
        out["size"] = [_choice("--size", v, SIZES) for v in size]
    if accelerator:
        out["accelerator"] = accelerator
    if devices:
        out["devices"] = [_devices(v) for v in devices]
    if nodes:
        out["nodes"] = [_positive_int("--nodes", v) for v in nodes]
    if precision:
        out["precision"] = [_choice("--precision", v, PRECISIONS) for v in precision]
    if mode:
        out["mode"] = [_choice("--mode", v, MODES) for v in mode]
    if graphs:
        out["graphs"] = [_graphs(v) for v in graphs]
    if batch_size:
        out["batch_size"] = [_batch(v) for v in batch_size]
    if options:
        out["options"] = [_options(options)]
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
