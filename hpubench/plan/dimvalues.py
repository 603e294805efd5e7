"""The values of the built-in matrix dimensions: parsers, command-line lexers, expansion and skip rules.

``hpubench.plan.dimensions`` declares each dimension with these functions; nothing else calls them directly
except ``cluster.multi_process_skip_reason`` (the worker asks :func:`graphs_with_several_ranks` again) and
``core.strategies`` (the strategy a cell runs, :func:`strategy_of`, and its rules, asked again).
Pure: no torch, no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hpubench.errors import UsageError
from hpubench.plan.extrawork import check_options
from hpubench.plan.inventory import Inventory


class BadValue(ValueError):
    """A value failed its dimension's parser; the message is "<problem>; <fix>" without any location."""


@dataclass(frozen=True)
class Context:
    """What expansion resolves against: this machine's devices, the workload catalog (name -> sizes)
    and the accelerator names in priority order."""

    inventory: Inventory
    catalog: Mapping[str, Sequence[str]]
    accelerators: Sequence[str]


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
    except json.JSONDecodeError:
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
    """Combinations the data-parallel path does not run (the matrix and the worker both ask)."""
    if cell.devices * cell.nodes > 1 and cell.graphs:
        if strategy_of(cell) == "fsdp":
            return (
                "graph capture is not combined with FSDP cells: the all-gathers and reduce-scatters would "
                "have to be captured inside the graph"
            )
        return (
            "graph capture is not combined with data-parallel (DDP) cells: the all-reduce would have to be "
            "captured inside the graph"
        )
    return None


# ---- strategy: how the processes of a cell share the model ------------------------------------------

STRATEGIES: tuple[str, ...] = ("single", "ddp", "fsdp")
BY_LAYOUT = "auto"  # the default: single on one device, ddp on several (what every cell ran before)


def layout_strategy(world_size: int) -> str:
    """The strategy a cell of ``world_size`` processes runs when none is named."""
    return "single" if world_size == 1 else "ddp"


def strategy_of(cell: Any) -> str:
    """The strategy a cell runs: its own, or the default for its layout (``Cell.extra`` holds it only
    away from that default, so records written before the dimension existed read as what they ran)."""
    named = dict(cell.extra).get("strategy", BY_LAYOUT)
    return layout_strategy(cell.devices * cell.nodes) if named == BY_LAYOUT else str(named)


def shards_state(cell: Any) -> bool:
    """Whether the cell's strategy splits parameters, gradients and optimizer states over its ranks."""
    return strategy_of(cell) == "fsdp"


def resolve_strategy(v: str, cell: Mapping[str, Any], _ctx: Context) -> list[dict[str, Any]]:
    # The layout's own strategy is the default, whichever way it was named: one cell, its old key.
    return [{"strategy": BY_LAYOUT if v == layout_strategy(cell["devices"] * cell["nodes"]) else v}]


def strategy_match(cell: Any, v: Any) -> bool:
    """An exclude's strategy value matches the strategy the cell runs ("auto": the layout's default)."""
    return strategy_of(cell) == (layout_strategy(cell.world_size) if v == BY_LAYOUT else v)


def strategy_names(_ctx: Context) -> Sequence[str]:
    return STRATEGIES


def strategy_misfits_layout(cell: Any, _inventory: Inventory | None = None) -> str | None:
    name, world = strategy_of(cell), cell.devices * cell.nodes
    layout = f"devices={cell.devices} x nodes={cell.nodes}"
    if name == "single" and world > 1:
        return f"strategy single runs one process, but {layout} makes {world}; use ddp or fsdp"
    if name != "single" and world == 1:
        return f"strategy {name} needs several processes, but {layout} makes one; use devices >= 2"
    return None


def strategy_refuses_precision(cell: Any, _inventory: Inventory | None = None) -> str | None:
    if strategy_of(cell) == "fsdp" and cell.precision == "fp8":
        return (
            "fp8 is not combined with FSDP cells: transformer_engine's fp8 layers keep scaling state that "
            "fully_shard does not shard; untested, so not run"
        )
    return None


def accelerator_refuses(cell: Any, inventory: Inventory) -> str | None:
    # deferred: an import cycle, not a cost: hpubench.accelerators imports hpubench.plan.cell, which
    # imports this module (through plan.dimensions), so the registry cannot be imported at module top.
    from hpubench import accelerators

    return accelerators.get(cell.accelerator).skip_reason(cell, inventory.device_name(cell.accelerator))


def accelerator_names(ctx: Context) -> Sequence[str]:
    return ctx.accelerators


def workload_names(ctx: Context) -> Sequence[str]:
    return list(ctx.catalog)
