"""The benchmark matrix: presets, TOML matrix files, command-line overrides, and expansion into Cells.

A matrix is a union of *grids*; each grid is the cross product of its dimensions. Expansion resolves the
machine-dependent values ("auto", "all") against an Inventory, validates names against the workload
catalog and the accelerator registry, and turns every combination that cannot run here into a skipped
PlannedCell with the reason: a matrix written once runs on every machine, and the report shows what was
not run and why instead of silently leaving it out. Everything here is pure (no torch; the only I/O is
reading a matrix file), so planning is instant and testable with hand-built inventories.

Dimension values
    workload     a workload name, or "all" (every workload in the catalog that offers the size)
    size         a size the workload offers ("tiny", "standard", ...)
    accelerator  a registry name ("hpu", "cuda", "cpu"), "auto" (the present one with the highest
                 priority: hpu > cuda > cpu) or "all" (every present one)
    devices      a count >= 1, "auto" (every device of that accelerator here), or a list of device
                 indices such as [0, 2] (that many devices, those ones)
    nodes        a count >= 1
    precision    one of cell.PRECISIONS;  mode: one of cell.MODES;  graphs: true / false
    batch_size   a number >= 1, or "default" (the workload's default for its size)
    options      a table of workload options, e.g. {extra_work = 0.1}; a list of tables runs each set
                 (options = [{}, {extra_work = 0.1}]). Options are part of the cell key. ``extra_work``
                 (any workload) adds that fraction of a step's time as extra compute to every step:
                 a planted slowdown for checking that ``hpubench gate`` catches one.
Every dimension takes one value or a list of values. Step counts (``warmup_steps``, ``steps``) are one
number per grid.

Matrix file (TOML)::

    name = "gaudi-vs-h100"            # optional; defaults to the file name
    # preset = "smoke"                # optional: start from a preset (see below)
    size = "standard"                 # top-level dimensions and step counts ...
    steps = 50
    [[grid]]                          # ... apply to every [[grid]] table unless it sets its own
    workload = ["resnet", "bert"]
    precision = ["32-true", "bf16-mixed"]
    [[grid]]
    workload = "gpt"
    mode = ["eager", "compile"]
    devices = [1, "auto", [0, 2]]     # a list *inside* the list names device indices
    [[exclude]]                       # drop every expanded cell matching all of these fields
    accelerator = "cpu"
    mode = "compile"

Without ``[[grid]]`` tables the top-level keys form the single grid (an empty ``[[grid]]`` table is that
top-level grid, if you want it beside others). With ``preset``, the top-level dimension keys replace
those dimensions in every grid of the preset (the same rule as command-line flags), ``[[grid]]`` tables
add grids, and ``[[exclude]]`` tables add to the preset's excludes. Exclude values are compared with the
expanded cell, so they take concrete values only ("cpu", 8), never "auto" or "all"; a list in an exclude
means any of its values. Cells that repeat across grids are kept once, the first time (cells are
identified by ``Cell.key``, which leaves out step counts and device indices).

Command-line overrides (``spec_from_options``): a dimension given on the command line *replaces* that
dimension in every grid of the base matrix, and grids that become identical collapse. So
``--matrix smoke --workload bert`` runs smoke's shape (every precision, compile, lazy, graphs, 2
devices) for bert alone, and ``--matrix smoke --size standard`` is smoke at the standard size. We chose
replacing over intersecting because intersecting would make ``--size standard`` (a size no smoke grid
has) select nothing at all, and a flag that silently empties the matrix surprises everyone; for smoke,
replacing ``--workload mlp`` gives exactly smoke's mlp cells anyway. To leave cells out, use
``[[exclude]]`` in a matrix file.
"""

from __future__ import annotations

import difflib
import itertools
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hpubench.autosteps import AUTO, KNOBS, MAX_STEPS, AutoSteps, parse_knob
from hpubench.cell import DIMENSIONS, MODES, PRECISIONS, Cell, PlannedCell
from hpubench.cluster import multi_process_skip_reason
from hpubench.core.extrawork import check_options
from hpubench.errors import UsageError
from hpubench.inventory import Inventory

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

SETTINGS: tuple[str, ...] = ("warmup_steps", "steps", *KNOBS)  # KNOBS: how steps = "auto" measures
DEFAULT_WARMUP_STEPS = 3
DEFAULT_STEPS = 20

DeviceValue = int | str | tuple[int, ...]


class _BadValue(Exception):
    """A value failed validation; the message is "<problem>; <fix>" without any location."""


# ---- value validation (shared by Grid, matrix files and command-line options) -------------------------


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _one_value(key: str, v: object) -> object:
    if key in ("workload", "size", "accelerator"):
        if not isinstance(v, str) or not v.strip():
            raise _BadValue(f"{key} takes names (strings), e.g. {key} = {_EXAMPLES[key]}")
        if "/" in v:  # "/" separates the parts of a cell key
            raise _BadValue(f"{key} {v.strip()!r} holds '/', which cell keys use as separator; rename it")
        return v.strip()
    if key == "precision":
        if v not in PRECISIONS:
            raise _BadValue(f"unknown precision; valid: {', '.join(PRECISIONS)}")
        return v
    if key == "mode":
        if v not in MODES:
            raise _BadValue(f"unknown mode; valid: {', '.join(MODES)}")
        return v
    if key == "graphs":
        if not isinstance(v, bool):
            raise _BadValue("graphs takes true or false")
        return v
    if key == "nodes":
        if not _is_int(v) or v < 1:
            raise _BadValue("nodes takes whole numbers >= 1, e.g. nodes = 1")
        return v
    if key == "batch_size":
        if v is None or v == "default":
            return None
        if not _is_int(v) or v < 1:
            raise _BadValue('batch_size takes whole numbers >= 1 or "default", e.g. batch_size = 32')
        return v
    if key == "options":
        return _option_set(v)
    if key == "devices":
        if v == "auto":
            return "auto"
        if _is_int(v):
            if v < 1:
                raise _BadValue(
                    f"devices {v} is not a count (counts start at 1); to name device indices, put them "
                    "in an inner list: devices = [[0, 2]]"
                )
            return v
        if isinstance(v, (list, tuple)):
            if not v or not all(_is_int(i) and i >= 0 for i in v):
                raise _BadValue("a device index list needs whole numbers >= 0, e.g. devices = [[0, 2]]")
            if len(set(v)) != len(v):
                raise _BadValue("a device index list names a device twice; list each index once")
            return tuple(v)
        raise _BadValue(
            'devices takes counts >= 1, "auto", or index lists, e.g. devices = [1, "auto", [0, 2]]'
        )
    raise _BadValue(f"unknown dimension {key!r}")  # pragma: no cover - callers check keys first


_EXAMPLES = {"workload": '"mlp"', "size": '"tiny"', "accelerator": '"auto"'}
_OPTION_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _option_set(v: object) -> tuple[tuple[str, str], ...]:
    """One set of workload options as sorted (name, value) strings, the form ``Cell.options`` keeps.

    Values become strings because they end up in the cell key; "/" and spaces are refused there since
    they would make keys ambiguous or unreadable.
    """
    if isinstance(v, Mapping):
        pairs = list(v.items())
    elif isinstance(v, (list, tuple)) and all(isinstance(p, (list, tuple)) and len(p) == 2 for p in v):
        pairs = [tuple(p) for p in v]
    else:
        raise _BadValue("options takes a table of name = value, e.g. options = {extra_work = 0.1}")
    out: dict[str, str] = {}
    for name, value in pairs:
        if not isinstance(name, str) or not name or not set(name) <= _OPTION_NAME_CHARS:
            raise _BadValue(f"option name {name!r} must be letters, digits or _, e.g. extra_work")
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, (int, float, str)):
            text = str(value).strip()
        else:
            raise _BadValue(f"option {name} takes a number or a string, got {_show(value)}")
        if not text or "/" in text or any(c.isspace() for c in text):
            raise _BadValue(
                f"option {name} = {_show(value)}: values must be non-empty, without '/' or spaces"
            )
        out[name] = text
    try:
        check_options(out, where="options")  # values the harness knows (extra_work = nan, ...)
    except UsageError as e:
        raise _BadValue(str(e)) from None
    return tuple(sorted(out.items()))


def _values(key: str, raw: object) -> tuple[Any, ...]:
    """One dimension's values as a tuple, validated, duplicates dropped in order."""
    items = list(raw) if isinstance(raw, (list, tuple)) else [raw]
    if not items:
        raise _BadValue(f"an empty list runs nothing; give at least one value or leave {key} out")
    out: list[Any] = []
    for item in items:
        v = _one_value(key, item)
        if v not in out:
            out.append(v)
    return tuple(out)


def _setting(key: str, raw: object) -> int | float | str:
    if key in KNOBS:
        try:
            return parse_knob(key, raw)
        except ValueError as e:
            raise _BadValue(str(e)) from None
    if key == "steps" and isinstance(raw, str) and raw.strip().lower() == AUTO:
        return AUTO
    low = 1 if key == "warmup_steps" else 2
    why = "the first step is never measured" if key == "warmup_steps" else "a spread needs two samples"
    if not _is_int(raw):
        also = ' or "auto"' if key == "steps" else ""
        raise _BadValue(f"{key} takes one whole number{also}, e.g. {key} = {low + 2}")
    if raw < low:  # type: ignore[operator]
        raise _BadValue(f"{key} must be at least {low} ({why})")
    if raw > MAX_STEPS:  # type: ignore[operator]
        raise _BadValue(f'{key} must be at most {MAX_STEPS:,} (for long measurements: steps = "auto")')
    return int(raw)  # type: ignore[call-overload]


def _show(value: object) -> str:
    """A value as the user would write it in TOML (lists with brackets, strings quoted)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    if value is None:
        return '"default"'
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k} = {_show(v)}" for k, v in value.items()) + "}"
    return str(value)


def _show_label(key: str, value: object) -> str:
    if key == "options":  # option sets read as {extra_work = 0.1}, not as nested pairs
        return _show([dict(opts) for opts in value])  # type: ignore[attr-defined]
    return _show(value)


# ---- the records ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Grid:
    """One cross product of dimension values (each a tuple); see the module docstring for the values."""

    workload: tuple[str, ...] = ("all",)
    size: tuple[str, ...] = ("tiny",)
    accelerator: tuple[str, ...] = ("auto",)
    devices: tuple[DeviceValue, ...] = (1,)
    nodes: tuple[int, ...] = (1,)
    precision: tuple[str, ...] = ("32-true",)
    mode: tuple[str, ...] = ("eager",)
    graphs: tuple[bool, ...] = (False,)
    batch_size: tuple[int | None, ...] = (None,)
    options: tuple[tuple[tuple[str, str], ...], ...] = ((),)  # option sets; () is "no options"
    warmup_steps: int = DEFAULT_WARMUP_STEPS
    steps: int | str = DEFAULT_STEPS  # or "auto": until the interval is narrow enough (the knobs below)
    target_ci: float = AutoSteps.target_ci
    min_steps: int = AutoSteps.min_steps
    min_time: float = AutoSteps.min_time_s
    max_time: float = AutoSteps.max_time_s

    def __post_init__(self) -> None:
        # Normalising here means a Grid built in code is checked exactly like one read from a file.
        for key in DIMENSIONS:
            try:
                object.__setattr__(self, key, _values(key, getattr(self, key)))
            except _BadValue as e:
                raise UsageError(f"grid: {key} = {_show(getattr(self, key))}: {e}") from None
        for key in SETTINGS:
            try:
                object.__setattr__(self, key, _setting(key, getattr(self, key)))
            except _BadValue as e:
                raise UsageError(f"grid: {key} = {_show(getattr(self, key))}: {e}") from None
        try:
            self.auto_steps  # noqa: B018 (validates the knobs together: min_time <= max_time)
        except ValueError as e:
            raise UsageError(f"grid: {e}") from None

    @property
    def auto_steps(self) -> AutoSteps:
        return AutoSteps(self.target_ci, self.min_steps, self.min_time, self.max_time)

    def cell_steps(self) -> dict[str, Any]:
        """The Cell's ``steps`` and ``auto_steps`` for this grid."""
        if self.steps == AUTO:
            return {"steps": None, "auto_steps": self.auto_steps}
        return {"steps": self.steps}

    def combinations(self) -> int:
        """The number of value combinations before "all"/"auto" are resolved and rules applied."""
        n = 1
        for key in DIMENSIONS:
            n *= len(getattr(self, key))
        return n


@dataclass(frozen=True)
class MatrixSpec:
    """A union of grids, minus excluded combinations. ``exclude`` dicts map dimension -> value(s)."""

    grids: tuple[Grid, ...]
    exclude: tuple[dict[str, object], ...] = ()
    name: str = "custom"

    def __post_init__(self) -> None:
        object.__setattr__(self, "grids", tuple(self.grids))
        if not self.grids:
            raise UsageError(f"matrix {self.name!r} has no grids; give at least one")
        norm = []
        for i, ex in enumerate(self.exclude, 1):
            try:
                norm.append(_exclude(ex))
            except _BadValue as e:
                raise UsageError(f"matrix {self.name!r}: exclude #{i}: {e}") from None
        object.__setattr__(self, "exclude", tuple(norm))


def _exclude(ex: Mapping[str, object]) -> dict[str, object]:
    if not ex:
        raise _BadValue("an empty exclude would drop every cell; name at least one dimension")
    out: dict[str, object] = {}
    for key, raw in ex.items():
        if key not in DIMENSIONS:
            raise _BadValue(f"unknown key {key!r}; valid: {', '.join(DIMENSIONS)}")
        try:
            vals = _values(key, raw)
        except _BadValue as e:
            raise _BadValue(f"{key} = {_show(raw)}: {e}") from None
        if any(v in ("auto", "all") for v in vals):
            raise _BadValue(
                f'{key} = {_show(raw)}: excludes match expanded cells; use concrete values, not "auto"/"all"'
            )
        out[key] = vals
    return out


# ---- presets ----------------------------------------------------------------------------------------


def _smoke() -> MatrixSpec:
    # 3 warm-up steps, then --steps auto bounded for a quick check: at least 10 steps and 0.2 s, at most
    # 1 s of measured steps per cell (11 cells run on a CPU-only machine, so at most ~11 s of measuring;
    # the rest of the preset's time is process start, model set-up and compilation).
    common: dict[str, Any] = {
        "size": ("tiny",),
        "accelerator": ("auto",),
        "warmup_steps": 3,
        "steps": "auto",
        "min_time": 0.2,
        "max_time": 1.0,
    }
    return MatrixSpec(
        name="smoke",
        grids=(
            # (a) every workload, plain fp32 eager
            Grid(workload=("mlp", "resnet", "gpt", "bert"), **common),
            # (b) every precision on the cheapest workload
            Grid(workload=("mlp",), precision=PRECISIONS, **common),
            # (c) torch.compile on a dense and a transformer model
            Grid(workload=("mlp", "gpt"), mode=("compile",), **common),
            # (d) lazy mode (skipped with its reason off HPU)
            Grid(workload=("mlp",), mode=("lazy",), **common),
            # (e) graph capture in eager and lazy
            Grid(workload=("mlp",), mode=("eager", "lazy"), graphs=(True,), **common),
            # (f) two devices: the multi-process path
            Grid(workload=("mlp",), devices=(2,), **common),
            # (g) mixed precision on a transformer
            Grid(workload=("gpt",), precision=("bf16-mixed",), **common),
        ),
    )


def _full() -> MatrixSpec:
    return MatrixSpec(
        name="full",
        grids=(
            Grid(
                workload=("all",),
                size=("standard",),
                accelerator=("auto",),
                devices=(1, "auto"),
                nodes=(1,),
                precision=PRECISIONS,
                mode=MODES,
                graphs=(False, True),
                warmup_steps=5,
                steps="auto",  # the default knobs: 2% target, 10 steps and 2 s at least, 30 s at most
            ),
        ),
    )


_PRESETS = {"smoke": _smoke, "full": _full}
PRESETS: tuple[str, ...] = tuple(_PRESETS)


def preset(name: str) -> MatrixSpec:
    try:
        return _PRESETS[name]()
    except KeyError:
        raise UsageError(f"unknown matrix preset {name!r}; presets: {', '.join(PRESETS)}") from None


# ---- matrix files -----------------------------------------------------------------------------------

_FILE_TOP_KEYS = (*DIMENSIONS, *SETTINGS, "name", "preset", "grid", "exclude")
_FILE_GRID_KEYS = (*DIMENSIONS, *SETTINGS)


def _unknown_key(key: str, valid: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, valid, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown key {key!r}{hint}; valid keys: {', '.join(valid)}"


def _table_grid_kwargs(table: Mapping[str, Any], valid: Sequence[str]) -> dict[str, Any]:
    """Validated Grid keyword arguments from one TOML table; raises _BadValue naming the key."""
    out: dict[str, Any] = {}
    for key, raw in table.items():
        if key not in valid:
            raise _BadValue(_unknown_key(key, valid))
        try:
            out[key] = _setting(key, raw) if key in SETTINGS else _values(key, raw)
        except _BadValue as e:
            raise _BadValue(f"{key} = {_show(raw)}: {e}") from None
    return out


def _tables(data: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    raw = data.get(key, [])
    if not isinstance(raw, list) or not all(isinstance(t, dict) for t in raw):
        raise _BadValue(f"{key} must be an array of tables: write each one as [[{key}]] followed by its keys")
    return raw


def load_matrix_file(path: str | Path) -> MatrixSpec:
    """Read a TOML matrix file (format in the module docstring); any problem is a one-line UsageError."""
    p = Path(path)
    try:
        text = p.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise UsageError(f"{p}: no such matrix file; give the path to a .toml file") from None
    except OSError as e:
        raise UsageError(
            f"{p}: cannot read the matrix file ({e.strerror}); check the path and permissions"
        ) from None
    except UnicodeDecodeError:
        raise UsageError(f"{p}: not UTF-8 text; save the matrix file as UTF-8") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        msg = " ".join(str(e).split())
        raise UsageError(f"{p}: invalid TOML: {msg}; fix the syntax there") from None

    where = "top level"
    try:
        for key in data:
            if key not in _FILE_TOP_KEYS:
                raise _BadValue(_unknown_key(key, _FILE_TOP_KEYS))
        name = data.get("name", p.stem)
        if not isinstance(name, str) or not name.strip():
            raise _BadValue(f"name = {_show(name)}: name takes a non-empty string")
        base: MatrixSpec | None = None
        if "preset" in data:
            if data["preset"] not in PRESETS:
                raise _BadValue(
                    f"preset = {_show(data['preset'])}: unknown preset; presets: {', '.join(PRESETS)}"
                )
            base = preset(data["preset"])
        top = {k: v for k, v in data.items() if k in _FILE_GRID_KEYS}
        top_kwargs = _table_grid_kwargs(top, _FILE_GRID_KEYS)
        grid_tables = _tables(data, "grid")
        exclude_tables = _tables(data, "exclude")

        grids: list[Grid] = []
        if base is not None:
            grids += _override(base.grids, top_kwargs)
        for i, table in enumerate(grid_tables, 1):
            where = f"[[grid]] #{i}"
            grids.append(Grid(**{**top_kwargs, **_table_grid_kwargs(table, _FILE_GRID_KEYS)}))
        if base is None and not grid_tables:
            grids.append(Grid(**top_kwargs))

        excludes: list[dict[str, object]] = list(base.exclude) if base is not None else []
        for i, table in enumerate(exclude_tables, 1):
            where = f"[[exclude]] #{i}"
            excludes.append(_exclude(table))
    except _BadValue as e:
        raise UsageError(f"{p}: {where}: {e}") from None
    return MatrixSpec(grids=tuple(_unique(grids)), exclude=tuple(excludes), name=name.strip())


# ---- command-line options ---------------------------------------------------------------------------


def _unique(grids: Sequence[Grid]) -> list[Grid]:
    out: list[Grid] = []
    for g in grids:
        if g not in out:
            out.append(g)
    return out


def _override(grids: Sequence[Grid], kwargs: Mapping[str, Any]) -> list[Grid]:
    return _unique([replace(g, **kwargs) for g in grids]) if kwargs else list(grids)


def spec_from_options(
    base: MatrixSpec | None = None,
    *,
    workload: Sequence[str] | None = None,
    size: Sequence[str] | None = None,
    accelerator: Sequence[str] | None = None,
    devices: Sequence[int | str | Sequence[int]] | None = None,
    nodes: Sequence[int] | None = None,
    precision: Sequence[str] | None = None,
    mode: Sequence[str] | None = None,
    graphs: Sequence[bool] | None = None,
    batch_size: Sequence[int | None] | None = None,
    options: Sequence[Mapping[str, object]] | None = None,
    warmup_steps: int | None = None,
    steps: int | str | None = None,
    auto: Mapping[str, object] | None = None,
) -> MatrixSpec:
    """A matrix from command-line flags: each given dimension replaces that dimension in every grid.

    ``None`` means the flag was not given. With no ``base`` the defaults are every workload, tiny, auto
    accelerator, 1 device, 1 node, 32-true, eager, no graphs, default batch size. Why "replace" and not
    "intersect": see the module docstring. A device index list is a list value, e.g. ``devices=[[0, 2]]``.
    """
    given = {
        "workload": workload,
        "size": size,
        "accelerator": accelerator,
        "devices": devices,
        "nodes": nodes,
        "precision": precision,
        "mode": mode,
        "graphs": graphs,
        "batch_size": batch_size,
        "options": options,
        "warmup_steps": warmup_steps,
        "steps": steps,
        **{k: (auto or {}).get(k) for k in KNOBS},
    }
    kwargs: dict[str, Any] = {}
    for key, raw in given.items():
        if raw is None:
            continue
        flag = "--option" if key == "options" else "--" + key.replace("_", "-")
        try:
            kwargs[key] = _setting(key, raw) if key in SETTINGS else _values(key, raw)
        except _BadValue as e:
            raise UsageError(f"{flag} {_show(raw)}: {e}") from None
    grids = [Grid(**kwargs)] if base is None else _override(base.grids, kwargs)
    knobs = [k for k in KNOBS if k in kwargs]
    if knobs and all(g.steps != AUTO for g in grids):
        raise UsageError(f"--{knobs[0].replace('_', '-')} applies to --steps auto only; add --steps auto")
    if base is None:
        return MatrixSpec(grids=tuple(grids), name="cli")
    if not kwargs:
        return base
    label = ",".join(f"{k}={_show_label(k, v)}" for k, v in kwargs.items())
    return MatrixSpec(grids=tuple(grids), exclude=base.exclude, name=f"{base.name}[{label}]")


# ---- expansion --------------------------------------------------------------------------------------


def _registry() -> tuple[list[str], Any]:
    # Imported here, not at module top: the registry imports every accelerator module, and listing
    # presets or reading a matrix file should not need them.
    from hpubench.core import accelerators

    return accelerators.names(), accelerators


def _plural(n: int, acc: str) -> str:
    return f"{n} {acc} device" + ("" if n == 1 else "s")


def _validate(spec: MatrixSpec, catalog: Mapping[str, Sequence[str]], known_accs: Sequence[str]) -> None:
    """Every name in the matrix must exist; checked before expanding so errors never depend on order."""
    workloads = list(catalog)
    for i, g in enumerate(spec.grids, 1):
        where = f"matrix {spec.name!r}" + (f", grid #{i}" if len(spec.grids) > 1 else "")
        for acc in g.accelerator:
            if acc not in ("auto", "all") and acc not in known_accs:
                raise UsageError(
                    f"{where}: unknown accelerator {acc!r}; valid: auto, all, {', '.join(known_accs)}"
                )
        for wl in g.workload:
            if wl == "all":
                continue
            if wl not in catalog:
                raise UsageError(
                    f"{where}: unknown workload {wl!r}; valid: all, {', '.join(workloads) or '(none)'}"
                )
            for size in g.size:
                if size not in catalog[wl]:
                    raise UsageError(
                        f"{where}: workload {wl!r} has no size {size!r}; it offers: {', '.join(catalog[wl])}"
                    )
        if "all" in g.workload:
            for size in g.size:
                if not any(size in sizes for sizes in catalog.values()):
                    raise UsageError(
                        f"{where}: no workload offers size {size!r}; sizes offered: {_all_sizes(catalog)}"
                    )
    # A misspelt name in an exclude would silently exclude nothing: check those names too.
    for ex in spec.exclude:
        for key, valid in (("accelerator", known_accs), ("workload", workloads)):
            for name in ex.get(key, ()):  # type: ignore[union-attr]
                if name not in valid:
                    raise UsageError(
                        f"matrix {spec.name!r}: exclude has unknown {key} {name!r}; valid: {', '.join(valid)}"
                    )


def _all_sizes(catalog: Mapping[str, Sequence[str]]) -> str:
    seen: list[str] = []
    for sizes in catalog.values():
        seen += [s for s in sizes if s not in seen]
    return ", ".join(seen) or "(none)"


def _workload_sizes(g: Grid, catalog: Mapping[str, Sequence[str]]) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for wl in g.workload:
        names = list(catalog) if wl == "all" else [wl]
        for name in names:
            for size in g.size:
                # "all" means every workload that offers the size; an explicit one was validated already.
                if size in catalog[name] and (name, size) not in pairs:
                    pairs.append((name, size))
    return pairs


def _accelerators(values: Sequence[str], inventory: Inventory, known_accs: Sequence[str]) -> list[str]:
    present = [a for a in known_accs if inventory.count(a) > 0]  # known_accs is in priority order
    out: list[str] = []
    for v in values:
        if v == "auto":
            resolved = present[:1] or ["cpu"]  # with nothing present, cpu is skipped with its reason
        elif v == "all":
            resolved = present
        else:
            resolved = [v]
        out += [a for a in resolved if a not in out]
    return out


def _matches(cell: Cell, ex: Mapping[str, object]) -> bool:
    for key, vals in ex.items():
        if key == "devices":
            ids = cell.device_ids if cell.device_ids is not None else tuple(range(cell.devices))
            hit = any((v == ids) if isinstance(v, tuple) else (v == cell.devices) for v in vals)  # type: ignore[union-attr]
        else:
            hit = getattr(cell, key) in vals  # type: ignore[operator]
        if not hit:
            return False
    return True


def _skip_reason(cell: Cell, inventory: Inventory, registry: Any) -> str | None:
    acc = cell.accelerator
    have = inventory.count(acc)
    if have == 0:
        return f"no {acc} device on this machine"
    if cell.devices > have:
        return f"devices={cell.devices} but this machine has {_plural(have, acc)}"
    if cell.device_ids is not None:
        bad = [i for i in cell.device_ids if i >= have]
        if bad:
            return (
                f"device index {bad[0]} is out of range: this machine has {_plural(have, acc)} (0-{have - 1})"
            )
    return multi_process_skip_reason(cell) or registry.get(acc).skip_reason(cell, inventory.device_name(acc))


def expand(spec: MatrixSpec, inventory: Inventory, catalog: Mapping[str, Sequence[str]]) -> list[PlannedCell]:
    """Every cell of the matrix on this machine, runnable or skipped with its reason.

    Deterministic: grids in order, each in the order of ``DIMENSIONS`` (workload outermost), "all"
    workloads in catalog order, "all" accelerators in priority order. A cell repeated by a later grid is
    dropped (first wins, by ``Cell.key``); excluded cells are dropped entirely. Invalid names raise
    UsageError; anything that is valid but cannot run here becomes a skipped PlannedCell.
    """
    known_accs, registry = _registry()
    _validate(spec, catalog, known_accs)
    out: list[PlannedCell] = []
    seen: set[str] = set()
    for g in spec.grids:
        accs = _accelerators(g.accelerator, inventory, known_accs)
        for (wl, size), acc, dev, nodes, prec, mode, graphs, bs, opts in itertools.product(
            _workload_sizes(g, catalog),
            accs,
            g.devices,
            g.nodes,
            g.precision,
            g.mode,
            g.graphs,
            g.batch_size,
            g.options,
        ):
            ids: tuple[int, ...] | None = None
            if dev == "auto":
                count = max(1, inventory.count(acc))  # absent accelerator: one device, skipped below
            elif isinstance(dev, tuple):
                ids, count = dev, len(dev)
            else:
                count = int(dev)
            cell = Cell(
                workload=wl,
                size=size,
                accelerator=acc,
                devices=count,
                nodes=nodes,
                precision=prec,
                mode=mode,
                graphs=graphs,
                batch_size=bs,
                warmup_steps=g.warmup_steps,
                **g.cell_steps(),
                options=opts,
                device_ids=ids,
            )
            if cell.key in seen or any(_matches(cell, ex) for ex in spec.exclude):
                continue
            seen.add(cell.key)
            out.append(PlannedCell(cell, _skip_reason(cell, inventory, registry)))
    return out


@dataclass(frozen=True)
class MatrixSummary:
    """Counts for a planned matrix: what will run, what will not, and the reasons, most common first."""

    total: int
    runnable: int
    skipped: int
    reasons: tuple[tuple[str, int], ...] = field(default=())
    by_accelerator: tuple[tuple[str, int], ...] = field(default=())  # runnable cells per accelerator

    def lines(self) -> list[str]:
        out = [f"{self.total} cells: {self.runnable} runnable, {self.skipped} skipped"]
        out += [f"  skipped {n}x: {reason}" for reason, n in self.reasons]
        return out


def explain(planned: Sequence[PlannedCell]) -> MatrixSummary:
    """Summary counts of an expanded matrix, for ``hpubench plan`` and the report header."""
    reasons = Counter(p.skip_reason for p in planned if p.skip_reason is not None)
    accs = Counter(p.cell.accelerator for p in planned if p.runnable)
    skipped = sum(reasons.values())
    return MatrixSummary(
        total=len(planned),
        runnable=len(planned) - skipped,
        skipped=skipped,
        reasons=tuple(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))),
        by_accelerator=tuple(sorted(accs.items(), key=lambda kv: (-kv[1], kv[0]))),
    )


__all__ = [
    "DIMENSIONS",
    "PRESETS",
    "SETTINGS",
    "Grid",
    "MatrixSpec",
    "MatrixSummary",
    "expand",
    "explain",
    "load_matrix_file",
    "preset",
    "spec_from_options",
]
