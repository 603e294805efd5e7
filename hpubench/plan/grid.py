"""A Grid: one cross product of dimension values, plus the step settings its cells measure with.

Its dimensions are whatever ``hpubench.plan.dimensions`` declares (``Grid(workload="mlp").workload`` is
``("mlp",)``); each value goes through its dimension's parser, so a grid built in code is checked exactly
like one read from a matrix file or the command line. Pure: no torch, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hpubench.errors import UsageError
from hpubench.plan import dimensions
from hpubench.plan.autosteps import AUTO, KNOBS, MAX_STEPS, AutoSteps, parse_knob
from hpubench.plan.dimensions import BadValue, show

SETTINGS: tuple[str, ...] = ("warmup_steps", "steps", *KNOBS)  # KNOBS: how steps = "auto" measures
DEFAULT_WARMUP_STEPS = 3
DEFAULT_STEPS = 20
_SETTING_DEFAULTS: dict[str, Any] = {
    "warmup_steps": DEFAULT_WARMUP_STEPS,
    "steps": DEFAULT_STEPS,  # or "auto": until the interval is narrow enough (the knobs)
    "target_ci": AutoSteps.target_ci,
    "min_steps": AutoSteps.min_steps,
    "min_time": AutoSteps.min_time_s,
    "max_time": AutoSteps.max_time_s,
}


def parse_setting(key: str, raw: object) -> int | float | str:
    """One step setting (one number per grid); BadValue says what it takes."""
    if key in KNOBS:
        try:
            return parse_knob(key, raw)
        except ValueError as e:
            raise BadValue(str(e)) from None
    if key == "steps" and isinstance(raw, str) and raw.strip().lower() == AUTO:
        return AUTO
    low = 1 if key == "warmup_steps" else 2
    why = "the first step is never measured" if key == "warmup_steps" else "a spread needs two samples"
    if not isinstance(raw, int) or isinstance(raw, bool):
        also = ' or "auto"' if key == "steps" else ""
        raise BadValue(f"{key} takes one whole number{also}, e.g. {key} = {low + 2}")
    if raw < low:
        raise BadValue(f"{key} must be at least {low} ({why})")
    if raw > MAX_STEPS:
        raise BadValue(f'{key} must be at most {MAX_STEPS:,} (for long measurements: steps = "auto")')
    return int(raw)


class Grid:
    """One cross product of dimension values (each a tuple), and the step settings (one value each)."""

    warmup_steps: int
    steps: int | str
    target_ci: float
    min_steps: int
    min_time: float
    max_time: float

    def __init__(self, **kwargs: Any) -> None:
        dims = dimensions.all_dimensions()
        unknown = sorted(set(kwargs) - {d.name for d in dims} - set(SETTINGS))
        if unknown:
            raise TypeError(f"Grid() got unexpected keyword argument(s): {', '.join(unknown)}")
        values: dict[str, tuple[Any, ...]] = {}
        for d in dims:
            raw = kwargs.get(d.name, (d.default,))
            try:
                values[d.name] = d.values(raw)
            except BadValue as e:
                raise UsageError(f"grid: {d.name} = {show(raw)}: {e}") from None
        object.__setattr__(self, "_values", values)
        for key in SETTINGS:
            raw = kwargs.get(key, _SETTING_DEFAULTS[key])
            try:
                object.__setattr__(self, key, parse_setting(key, raw))
            except BadValue as e:
                raise UsageError(f"grid: {key} = {show(raw)}: {e}") from None
        try:
            self.auto_steps  # noqa: B018 (validates the knobs together: min_time <= max_time)
        except ValueError as e:
            raise UsageError(f"grid: {e}") from None

    def __getattr__(self, name: str) -> Any:  # a dimension's values; settings are plain attributes
        values = self.__dict__.get("_values", {})
        if name in values:
            return values[name]
        raise AttributeError(f"Grid has no dimension or setting {name!r}")

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Grid is frozen; use grid.replace(...)")

    def _identity(self) -> tuple[Any, ...]:
        return (tuple(self._values.items()), tuple(getattr(self, k) for k in SETTINGS))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Grid) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def __repr__(self) -> str:
        parts = [f"{k}={v!r}" for k, v in self._values.items()]
        parts += [f"{k}={getattr(self, k)!r}" for k in SETTINGS]
        return f"Grid({', '.join(parts)})"

    def dimension_values(self) -> dict[str, tuple[Any, ...]]:
        return dict(self._values)

    def replace(self, **kwargs: Any) -> Grid:
        """This grid with the given dimensions or settings replaced."""
        return Grid(**{**self._values, **{k: getattr(self, k) for k in SETTINGS}, **kwargs})

    @property
    def auto_steps(self) -> AutoSteps:
        return AutoSteps(self.target_ci, self.min_steps, self.min_time, self.max_time)

    def cell_steps(self) -> dict[str, Any]:
        """The Cell's ``warmup_steps``, ``steps`` and ``auto_steps`` for this grid."""
        if self.steps == AUTO:
            return {"warmup_steps": self.warmup_steps, "steps": None, "auto_steps": self.auto_steps}
        return {"warmup_steps": self.warmup_steps, "steps": self.steps}

    def combinations(self) -> int:
        """The number of value combinations before "all"/"auto" are resolved and rules applied."""
        n = 1
        for values in self._values.values():
            n *= len(values)
        return n


def grid_kwargs(table: Mapping[str, Any]) -> dict[str, Any]:
    """Validated Grid keyword arguments from one TOML table or set of flags; BadValue names the key."""
    dims = {d.name: d for d in dimensions.all_dimensions()}
    out: dict[str, Any] = {}
    for key, raw in table.items():
        try:
            out[key] = parse_setting(key, raw) if key in SETTINGS else dims[key].values(raw)
        except BadValue as e:
            raise BadValue(f"{key} = {show(raw)}: {e}") from None
    return out
