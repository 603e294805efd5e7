"""The benchmark matrix: presets, TOML matrix files, command-line overrides, and expansion into Cells.

A matrix is a union of *grids*; each grid is the cross product of its dimensions. Expansion resolves the
machine-dependent values ("auto", "all") against an Inventory, validates names against the workload
catalog and the accelerator registry, and turns every combination that cannot run here into a skipped
PlannedCell with the reason: a matrix written once runs on every machine, and the report shows what was
not run and why instead of silently leaving it out. Everything here is pure (no torch; the only I/O is
reading a matrix file), so planning is instant and testable with hand-built inventories.

Dimension values (declared in ``hpubench.plan.dimensions``, where a new dimension is one declaration)
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
import sys
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from hpubench.errors import UsageError
from hpubench.plan import dimensions
from hpubench.plan.autosteps import AUTO, KNOBS
from hpubench.plan.cell import MODES, PRECISIONS, Cell, PlannedCell
from hpubench.plan.dimensions import BadValue, Context, show
from hpubench.plan.dimvalues import AcceleratorKind
from hpubench.plan.grid import SETTINGS, Grid, grid_kwargs
from hpubench.plan.inventory import Inventory

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

_CELL_FIELDS = frozenset(f.name for f in fields(Cell))


def __getattr__(name: str) -> Any:
    if name == "DIMENSIONS":  # the dimension names, in order, including any registered since import
        return dimensions.names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _show_label(key: str, value: object) -> str:
    if key == "options":  # option sets read as {extra_work = 0.1}, not as nested pairs
        return show([dict(opts) for opts in value])  # type: ignore[attr-defined]
    return show(value)


# ---- the records ------------------------------------------------------------------------------------


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
            except BadValue as e:
                raise UsageError(f"matrix {self.name!r}: exclude #{i}: {e}") from None
        object.__setattr__(self, "exclude", tuple(norm))


def _exclude(ex: Mapping[str, object]) -> dict[str, object]:
    if not ex:
        raise BadValue("an empty exclude would drop every cell; name at least one dimension")
    names = dimensions.names()
    for key in ex:
        if key not in names:
            raise BadValue(f"unknown key {key!r}; valid: {', '.join(names)}")
    out = grid_kwargs(ex)
    for key, vals in out.items():
        if any(v in ("auto", "all") for v in vals):
            concrete = 'excludes match expanded cells; use concrete values, not "auto"/"all"'
            raise BadValue(f"{key} = {show(ex[key])}: {concrete}")
    return out


# ---- presets ----------------------------------------------------------------------------------------


def _smoke() -> MatrixSpec:
    # 3 warm-up steps, then --steps auto bounded for a quick check: at least 10 steps and 0.2 s, at most
    # 1 s of measured steps per cell (13 cells run on a CPU-only machine, so at most ~14.5 s of measuring;
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
            # (f) two devices: the multi-process path; its steps spread more (ranks share the cores): 2.5 s
            # keeps its interval inside the noisy bound (docs/measurements.md, 2026-11-27)
            Grid(workload=("mlp",), devices=(2,), **{**common, "max_time": 2.5}),
            # (g) mixed precision on a transformer
            Grid(workload=("gpt",), precision=("bf16-mixed",), **common),
            # (h) what a plain script gets, beside (a)'s tuned figures
            Grid(workload=("mlp", "gpt"), condition=("plain",), **common),
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
                steps="auto",  # with AutoSteps' default knobs (hpubench.plan.autosteps)
            ),
            Grid(  # what a plain script gets, beside the tuned figures of one device in eager mode
                workload=("all",),
                size=("standard",),
                accelerator=("auto",),
                precision=("32-true", "bf16-mixed"),
                condition=("plain",),
                warmup_steps=5,
                steps="auto",
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


def _grid_keys() -> tuple[str, ...]:
    return (*dimensions.names(), *SETTINGS)


def _unknown_key(key: str, valid: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, valid, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown key {key!r}{hint}; valid keys: {', '.join(valid)}"


def _table_grid_kwargs(table: Mapping[str, Any]) -> dict[str, Any]:
    """Validated Grid keyword arguments from one TOML table; raises BadValue naming the key."""
    valid = _grid_keys()
    for key in table:
        if key not in valid:
            raise BadValue(_unknown_key(key, valid))
    return grid_kwargs(table)


def _tables(data: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    raw = data.get(key, [])
    if not isinstance(raw, list) or not all(isinstance(t, dict) for t in raw):
        raise BadValue(f"{key} must be an array of tables: write each one as [[{key}]] followed by its keys")
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
    except (tomllib.TOMLDecodeError, RecursionError) as e:  # RecursionError: nested past any matrix
        msg = " ".join(str(e).split())
        raise UsageError(f"{p}: invalid TOML: {msg}; fix the syntax there") from None

    where = "top level"
    try:
        for key in data:
            if key not in (*_grid_keys(), "name", "preset", "grid", "exclude"):
                raise BadValue(_unknown_key(key, (*_grid_keys(), "name", "preset", "grid", "exclude")))
        name = data.get("name", p.stem)
        if not isinstance(name, str) or not name.strip():
            raise BadValue(f"name = {show(name)}: name takes a non-empty string")
        base: MatrixSpec | None = None
        if "preset" in data:
            if data["preset"] not in PRESETS:
                raise BadValue(
                    f"preset = {show(data['preset'])}: unknown preset; presets: {', '.join(PRESETS)}"
                )
            base = preset(data["preset"])
        top_kwargs = _table_grid_kwargs({k: v for k, v in data.items() if k in _grid_keys()})
        grid_tables = _tables(data, "grid")
        exclude_tables = _tables(data, "exclude")

        grids: list[Grid] = []
        if base is not None:
            grids += _override(base.grids, top_kwargs)
        for i, table in enumerate(grid_tables, 1):
            where = f"[[grid]] #{i}"
            grids.append(Grid(**{**top_kwargs, **_table_grid_kwargs(table)}))
        if base is None and not grid_tables:
            grids.append(Grid(**top_kwargs))

        excludes: list[dict[str, object]] = list(base.exclude) if base is not None else []
        for i, table in enumerate(exclude_tables, 1):
            where = f"[[exclude]] #{i}"
            excludes.append(_exclude(table))
    except BadValue as e:
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
    return _unique([g.replace(**kwargs) for g in grids]) if kwargs else list(grids)


def spec_from_options(
    base: MatrixSpec | None = None,
    *,
    warmup_steps: int | None = None,
    steps: int | str | None = None,
    auto: Mapping[str, object] | None = None,
    **dims: Sequence[Any] | None,
) -> MatrixSpec:
    """A matrix from command-line flags: each given dimension replaces that dimension in every grid.

    ``dims`` maps dimension names (``hpubench.plan.dimensions``) to their values; ``None`` means the flag was
    not given. With no ``base`` each dimension takes its default (every workload, tiny, auto accelerator,
    1 device, 1 node, 32-true, eager, no graphs, default batch size). Why "replace" and not "intersect":
    see the module docstring. A device index list is a list value, e.g. ``devices=[[0, 2]]``.
    """
    by_name = {d.name: d for d in dimensions.all_dimensions()}
    unknown = sorted(set(dims) - set(by_name))
    if unknown:
        raise TypeError(f"spec_from_options() got unknown dimension(s): {', '.join(unknown)}")
    given: dict[str, Any] = {
        **dims,
        "warmup_steps": warmup_steps,
        "steps": steps,
        **{k: (auto or {}).get(k) for k in KNOBS},
    }
    kwargs: dict[str, Any] = {}
    for key, raw in given.items():
        if raw is None:
            continue
        flag = by_name[key].cli_flags[0] if key in by_name else "--" + key.replace("_", "-")
        try:
            kwargs.update(grid_kwargs({key: raw}))
        except BadValue as e:
            raise UsageError(f"{flag} {str(e).removeprefix(f'{key} = ')}") from None
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


def _unknown_name(d: dimensions.Dimension, values: Any, ctx: Context, meta: bool = True) -> str | None:
    """The first of ``values`` that is neither a meta value ("all", "auto") nor a valid name here."""
    if d.names is None:
        return None
    allowed = [*(d.meta if meta else ()), ", ".join(d.names(ctx)) or "(none)"]
    for v in values:
        if v not in allowed[:-1] and v not in d.names(ctx):
            return f"unknown {d.name} {v!r}; valid: {', '.join(allowed)}"
    return None


def _validate(spec: MatrixSpec, ctx: Context) -> None:
    """Every name in the matrix must exist; checked before expanding so errors never depend on order."""
    dims = dimensions.all_dimensions()
    for i, g in enumerate(spec.grids, 1):
        where = f"matrix {spec.name!r}" + (f", grid #{i}" if len(spec.grids) > 1 else "")
        values = g.dimension_values()
        for d in dims:
            problem = _unknown_name(d, values[d.name], ctx)
            problem = problem or (d.check(values[d.name], values, ctx) if d.check is not None else None)
            if problem:
                raise UsageError(f"{where}: {problem}")
    # A misspelt name in an exclude would silently exclude nothing: check those names too.
    for ex in spec.exclude:
        for d in dims:
            problem = _unknown_name(d, ex.get(d.name, ()), ctx, meta=False)
            if problem:
                raise UsageError(f"matrix {spec.name!r}: exclude has {problem}")


def _combinations(g: Grid, ctx: Context) -> Iterator[dict[str, Any]]:
    """Every cell's dimension fields, nested in dimension order (the first dimension outermost)."""
    dims = dimensions.all_dimensions()
    values = g.dimension_values()

    def walk(i: int, cell: dict[str, Any]) -> Iterator[dict[str, Any]]:
        if i == len(dims):
            yield cell
            return
        d = dims[i]
        for v in values[d.name]:
            for fields_ in d.resolve(v, cell, ctx) if d.resolve is not None else [{d.name: v}]:
                yield from walk(i + 1, {**cell, **fields_})

    yield from walk(0, {})


def _cell(found: Mapping[str, Any], g: Grid) -> Cell:
    extra = {k: v for k, v in found.items() if k not in _CELL_FIELDS and v != dimensions.get(k).default}
    own = {k: v for k, v in found.items() if k in _CELL_FIELDS}
    return Cell(**own, **g.cell_steps(), extra=tuple(extra.items()))


def _matches(cell: Cell, ex: Mapping[str, object]) -> bool:
    for key, vals in ex.items():
        match = dimensions.get(key).matches
        if not any(match(cell, v) if match else cell.value(key) == v for v in vals):  # type: ignore[attr-defined]
            return False
    return True


def expand(
    spec: MatrixSpec,
    inventory: Inventory,
    catalog: Mapping[str, Sequence[str]],
    kinds: Sequence[AcceleratorKind],
) -> list[PlannedCell]:
    """Every cell of the matrix on this machine, runnable or skipped with its reason.

    Deterministic: grids in order, each in the order of the dimensions (workload outermost), "all"
    workloads in catalog order, "all" accelerators in priority order. A cell repeated by a later grid is
    dropped (first wins, by ``Cell.key``); excluded cells are dropped entirely. Invalid names raise
    UsageError; anything that is valid but cannot run here becomes a skipped PlannedCell (the first skip
    rule of the dimensions, in order, that refuses it). ``kinds`` are the accelerator kinds in priority
    order (``hpubench.accelerators.kinds()``), handed in because the plan sits below the plugins.
    """
    ctx = Context(inventory, catalog, kinds)
    _validate(spec, ctx)
    out: list[PlannedCell] = []
    seen: set[str] = set()
    for g in spec.grids:
        for found in _combinations(g, ctx):
            cell = _cell(found, g)
            if cell.key in seen or any(_matches(cell, ex) for ex in spec.exclude):
                continue
            seen.add(cell.key)
            out.append(PlannedCell(cell, dimensions.skip_reason(cell, ctx)))
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


__all__ = [  # noqa: F822 - DIMENSIONS comes from the module's __getattr__
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
