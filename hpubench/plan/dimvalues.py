"""The values of the built-in matrix dimensions: parsers, command-line lexers, expansion and skip rules.

``hpubench.plan.dimensions`` declares each dimension with these functions; nothing else calls them directly.
The strategy dimension's names and rules are declared in ``hpubench.strategy.spec`` (which the worker asks
too); the accelerators' refusals come in through the expansion context. Pure: no torch, no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from hpubench.errors import UsageError
from hpubench.plan.extrawork import check_options
from hpubench.plan.inventory import Inventory
from hpubench.strategy import spec as strategy_spec


class BadValue(ValueError):
    """A value failed its dimension's parser; the message is "<problem>; <fix>" without any location."""


class AcceleratorKind(Protocol):
    """What planning asks of an accelerator kind (``hpubench.accelerators``' classes answer it): its name,
    its rank for "auto", and the cells it refuses on a device of that name. Passed in by the caller, never
    imported: the accelerators import this package, so the plan stays below them."""

    name: ClassVar[str]
    auto_priority: ClassVar[int]

    def skip_reason(self, cell: Any, device_name: str) -> str | None: ...


@dataclass(frozen=True)
class Context:
    """What expansion resolves against: this machine's devices, the workload catalog (name -> sizes)
    and the accelerator kinds in priority order (``accelerators``: their names)."""

    inventory: Inventory
    catalog: Mapping[str, Sequence[str]]
    kinds: Sequence[AcceleratorKind]

    @property
    def accelerators(self) -> list[str]:
        return [k.name for k in self.kinds]

    def kind(self, name: str) -> AcceleratorKind:
        return next(k for k in self.kinds if k.name == name)


@dataclass(frozen=True)
class ContextRule:
    """A skip rule that needs the context (the accelerator kinds given to expansion), not only the
    inventory a plain ``Rule`` gets; built-in only, so a plugin dimension's rules keep their signature."""

    check: Callable[[Any, Context], str | None]


# (cell, inventory) -> why the cell cannot run here, or None. Cells are typed Any: hpubench.plan.cell imports
# this module, so naming Cell here would make a cycle.
Rule = Callable[[Any, Inventory], str | None]
# (one grid value, the cell fields resolved so far, context) -> the cell fields it becomes (none: no cell)
Resolve = Callable[[Any, Mapping[str, Any], Context], list[dict[str, Any]]]
# (this dimension's grid values, every dimension's grid values, context) -> why they are invalid, or None
Check = Callable[[tuple[Any, ...], Mapping[str, tuple[Any, ...]], Context], str | None]


def show(value: object) -> str:
    """A value as the user would write it in TOML (lists with brackets, strings quoted)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(show(v) for v in value) + "]"
    if value is None:
        return '"default"'
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k} = {show(v)}" for k, v in value.items()) + "}"
    return str(value)


# ---- value parsers ----------------------------------------------------------------------------------


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def parse_name(key: str, example: str) -> Callable[[object], str]:
    def parse(v: object) -> str:
        if not isinstance(v, str) or not v.strip():
            raise BadValue(f"{key} takes names (strings), e.g. {key} = {example}")
        if "/" in v:  # "/" separates the parts of a cell key
            raise BadValue(f"{key} {v.strip()!r} holds '/', which cell keys use as separator; rename it")
        return v.strip()

    return parse


def parse_one_of(key: str, choices: Sequence[str]) -> Callable[[object], str]:
    def parse(v: object) -> str:
        if v not in choices:
            raise BadValue(f"unknown {key}; valid: {', '.join(choices)}")
        return v  # type: ignore[return-value]

    return parse


def parse_registered(
    key: str, builtin: Sequence[str], registered: Callable[[], Sequence[str]]
) -> Callable[[object], str]:
    """Like :func:`parse_one_of`, where installed packages may add names: a built-in one is taken as is,
    any other is looked up in ``registered()``, which loads the plugins. Never at import: a plugin that
    imports hpubench would meet a half-imported module."""

    def parse(v: object) -> str:
        if v in builtin:
            return v  # type: ignore[return-value]
        choices = registered()
        if v not in choices:
            raise BadValue(f"unknown {key}; valid: {', '.join(choices)}")
        return v  # type: ignore[return-value]

    return parse


def parse_graphs(v: object) -> bool:
    if not isinstance(v, bool):
        raise BadValue("graphs takes true or false (on or off on the command line)")
    return v


def parse_nodes(v: object) -> int:
    if not _is_int(v) or v < 1:  # type: ignore[operator]
        raise BadValue("nodes takes whole numbers >= 1, e.g. nodes = 1")
    return v  # type: ignore[return-value]


def parse_batch_size(v: object) -> int | None:
    if v is None or v == "default":
        return None
    if not _is_int(v) or v < 1:  # type: ignore[operator]
        raise BadValue('batch_size takes whole numbers >= 1 or "default", e.g. batch_size = 32')
    return v  # type: ignore[return-value]


def parse_devices(v: object) -> int | str | tuple[int, ...]:
    if v == "auto":
        return "auto"
    if _is_int(v):
        if v < 1:  # type: ignore[operator]
            raise BadValue(
                f"devices {v} is not a count: counts are at least 1; to name device indices, put them "
                "in an inner list: devices = [[0, 2]]"
            )
        return v  # type: ignore[return-value]
    if isinstance(v, (list, tuple)):
        if not v or not all(_is_int(i) and i >= 0 for i in v):
            raise BadValue("a device index list needs whole numbers >= 0, e.g. devices = [[0, 2]]")
        if len(set(v)) != len(v):
            raise BadValue("a device index list names a device twice; list each index once")
        return tuple(v)
    raise BadValue('devices takes counts >= 1, "auto", or index lists, e.g. devices = [1, "auto", [0, 2]]')


_OPTION_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def parse_options(v: object) -> tuple[tuple[str, str], ...]:
    """One set of workload options as sorted (name, value) strings, the form ``Cell.options`` keeps.

    Values become strings because they end up in the cell key; "/" and spaces are refused there since
    they would make keys ambiguous or unreadable.
    """
    if isinstance(v, Mapping):
        pairs = list(v.items())
    elif isinstance(v, (list, tuple)) and all(isinstance(p, (list, tuple)) and len(p) == 2 for p in v):
        pairs = [tuple(p) for p in v]
    else:
        raise BadValue("options takes a table of name = value, e.g. options = {extra_work = 0.1}")
    out: dict[str, str] = {}
    for name, value in pairs:
        if not isinstance(name, str) or not name or not set(name) <= _OPTION_NAME_CHARS:
            raise BadValue(f"option name {name!r} must be letters, digits or _, e.g. extra_work")
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, (int, float, str)):
            text = str(value).strip()
        else:
            raise BadValue(f"option {name} takes a number or a string, got {show(value)}")
        if not text or "/" in text or any(c.isspace() for c in text):
            raise BadValue(f"option {name} = {show(value)}: values must be non-empty, without '/' or spaces")
        out[name] = text
    try:
        check_options(out, where="options")  # values the harness knows (extra_work = nan, ...)
    except UsageError as e:
        raise BadValue(str(e)) from None
    return tuple(sorted(out.items()))


# ---- command-line strings -> the values TOML would hold ---------------------------------------------

_TRUE = {"on", "true", "yes", "1"}
_FALSE = {"off", "false", "no", "0"}


def int_text(text: str) -> object:
    return int(text) if re.fullmatch(r"[+-]?\d+", text.strip()) else text


def devices_text(text: str) -> object:
    if not text.startswith("["):
        return int_text(text)
    try:
        ids = json.loads(text)
    except (ValueError, RecursionError):
        ids = None
    if not isinstance(ids, list) or not all(_is_int(i) for i in ids):
        raise UsageError(f"--devices {text!r} is not a list of device indices; write e.g. --devices '[0,2]'")
    return ids


def graphs_text(text: str) -> object:
    low = text.lower()
    return True if low in _TRUE else False if low in _FALSE else text


def batch_text(text: str) -> object:
    return None if text == "default" else int_text(text)


def option_flags(texts: list[str]) -> list[object]:
    """``--option name=value`` flags (repeatable) form one option set."""
    opts: dict[str, str] = {}
    for item in texts:
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise UsageError(f"--option takes name=value, got {item!r}; e.g. --option extra_work=0.1")
        opts[name.strip()] = value.strip()
    check_options(opts, where="--option")
    return [opts]


# ---- expansion and validity -------------------------------------------------------------------------


def _plural(n: int, acc: str) -> str:
    return f"{n} {acc} device" + ("" if n == 1 else "s")


def all_sizes(catalog: Mapping[str, Sequence[str]]) -> str:
    seen: list[str] = []
    for sizes in catalog.values():
        seen += [s for s in sizes if s not in seen]
    return ", ".join(seen) or "(none)"


def check_sizes(sizes: tuple[Any, ...], grid: Mapping[str, tuple[Any, ...]], ctx: Context) -> str | None:
    for wl in grid["workload"]:
        offered = ctx.catalog.get(wl)
        for size in sizes if offered is not None else ():
            if size not in offered:  # type: ignore[operator]
                return f"workload {wl!r} has no size {size!r}; it offers: {', '.join(offered)}"  # type: ignore[arg-type]
    if "all" in grid["workload"]:
        for size in sizes:
            if not any(size in offered for offered in ctx.catalog.values()):
                return f"no workload offers size {size!r}; sizes offered: {all_sizes(ctx.catalog)}"
    return None


def resolve_workloads(v: str, _cell: Mapping[str, Any], ctx: Context) -> list[dict[str, Any]]:
    # "all": every workload but a family's ("hf:gpt2"), which run only when named: a family is open-ended.
    return [{"workload": n} for n in ([n for n in ctx.catalog if ":" not in n] if v == "all" else [v])]


def resolve_sizes(v: str, cell: Mapping[str, Any], ctx: Context) -> list[dict[str, Any]]:
    # "all" workloads means every workload that offers the size; an explicit one was checked already
    return [{"size": v}] if v in ctx.catalog[cell["workload"]] else []


def resolve_accelerators(v: str, _cell: Mapping[str, Any], ctx: Context) -> list[dict[str, Any]]:
    present = [a for a in ctx.accelerators if ctx.inventory.count(a) > 0]  # priority order
    by_meta = {"auto": present[:1] or ["cpu"], "all": present}  # auto with nothing present: cpu, skipped
    return [{"accelerator": a} for a in by_meta.get(v, [v])]


def resolve_devices(v: Any, cell: Mapping[str, Any], ctx: Context) -> list[dict[str, Any]]:
    if v == "auto":  # an absent accelerator: one device, skipped by its rule
        return [{"devices": max(1, ctx.inventory.count(cell["accelerator"])), "device_ids": None}]
    if isinstance(v, tuple):
        return [{"devices": len(v), "device_ids": v}]
    return [{"devices": int(v), "device_ids": None}]


def devices_match(cell: Any, v: Any) -> bool:
    """An exclude's devices value: a count matches the cell's count, an index list its device indices."""
    if isinstance(v, tuple):
        return v == (cell.device_ids if cell.device_ids is not None else tuple(range(cell.devices)))
    return v == cell.devices


def no_device(cell: Any, inventory: Inventory) -> str | None:
    return None if inventory.count(cell.accelerator) else f"no {cell.accelerator} device on this machine"


def too_many_devices(cell: Any, inventory: Inventory) -> str | None:
    acc, have = cell.accelerator, inventory.count(cell.accelerator)
    if cell.devices > have:
        return f"devices={cell.devices} but this machine has {_plural(have, acc)}"
    bad = [i for i in cell.device_ids or () if i >= have]
    if bad:
        return f"device index {bad[0]} is out of range: this machine has {_plural(have, acc)} (0-{have - 1})"
    return None


def graphs_with_several_ranks(cell: Any, _inventory: Inventory | None = None) -> str | None:
    """Combinations the multi-process path does not run, in the words of the cell's strategy (the matrix
    and the worker both ask ``hpubench.strategy.spec``)."""
    return strategy_spec.multi_process_skip_reason(cell)


# ---- strategy: how the processes of a cell share the model ------------------------------------------
# Declared in hpubench.strategy.spec (built-ins and installed packages): its names, layout default and
# rules are read from there; what stays here is how the dimension expands and matches.


def resolve_strategy(v: str, cell: Mapping[str, Any], _ctx: Context) -> list[dict[str, Any]]:
    # The layout's own strategy is the default, whichever way it was named: one cell, its old key.
    default = strategy_spec.layout_strategy(cell["devices"] * cell["nodes"])
    return [{"strategy": strategy_spec.BY_LAYOUT if v == default else v}]


def strategy_match(cell: Any, v: Any) -> bool:
    """An exclude's strategy value matches the strategy the cell runs ("auto": the layout's default)."""
    named = strategy_spec.layout_strategy(cell.world_size) if v == strategy_spec.BY_LAYOUT else v
    return strategy_spec.strategy_of(cell) == named


def strategy_names(_ctx: Context) -> Sequence[str]:
    return strategy_spec.names()


def refused_by_accelerator(cell: Any, ctx: Context) -> str | None:
    return ctx.kind(cell.accelerator).skip_reason(cell, ctx.inventory.device_name(cell.accelerator))


accelerator_refuses = ContextRule(refused_by_accelerator)


def accelerator_names(ctx: Context) -> Sequence[str]:
    return ctx.accelerators


def workload_names(ctx: Context) -> Sequence[str]:
    return list(ctx.catalog)
