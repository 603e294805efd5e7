"""Strategies, declared once: the names a matrix takes, the layouts each fits, what it refuses, and the
class that runs it.

Pure (no torch), so planning, estimates, skip rules and reports read the declarations without loading a
device. The behaviour, a ``hpubench.strategy.runtime.Strategy`` subclass, is named here as
``"module:Class"`` and imported only in the worker (``runtime.for_cell``). Third parties add a strategy
with an installed package that advertises a :class:`StrategySpec` under the ``hpubench.strategies``
entry-point group; the registry reads that group once per process, the first time a name outside the
built-ins is asked for.

Every rule the matrix and the worker apply to a cell's strategy lives here and reads the registry:
the layout default (:func:`strategy_of`), whether the layout fits (:func:`strategy_misfits_layout`), a
precision it refuses (:func:`strategy_refuses_precision`), graph capture with several processes
(:func:`multi_process_skip_reason`) and whether it shards the training state (:func:`shards_state`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from hpubench.errors import UsageError
from hpubench.plugins.entrypoints import load_named

ENTRY_POINT_GROUP = "hpubench.strategies"
BY_LAYOUT = "auto"  # the default: single on one device, ddp on several (what every cell ran before)
_NAME_RE = re.compile(r"[a-z][a-z0-9_-]*")  # part of a cell key (strategy=<name>): no '/', no spaces
DATA_PARALLEL_GRAPHS = (
    "graph capture is not combined with data-parallel (DDP) cells: the all-reduce would have to be "
    "captured inside the graph"
)


@dataclass(frozen=True)
class StrategySpec:
    """One strategy and the facts the rest of hpubench reads from it."""

    name: str
    help: str
    runtime: str  # "module:Class": the Strategy subclass that runs it, imported in the worker only
    min_world: int = 2  # processes (devices x nodes) it needs
    max_world: int | None = None  # processes it can run at most; None: no limit
    shards_state: bool = False  # splits parameters, gradients and optimizer states over the ranks (memory)
    refuses: tuple[tuple[str, str], ...] = ()  # (precision, why a cell of it is not run with this strategy)
    graphs_refusal: str | None = None  # why graph capture is not combined with it; None: DDP's words

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME_RE.fullmatch(self.name) or self.name == BY_LAYOUT:
            raise ValueError(
                f"strategy name {self.name!r} must be a lower-case word (letters, digits, _ or -) and not "
                f"{BY_LAYOUT!r}"
            )
        module, sep, attr = str(self.runtime).partition(":")
        if not (module and sep and attr):
            raise ValueError(f"strategy {self.name!r}: runtime {self.runtime!r} must be 'module:Class'")
        if self.min_world < 1 or (self.max_world is not None and self.max_world < self.min_world):
            raise ValueError(
                f"strategy {self.name!r}: world sizes {self.min_world}..{self.max_world} are empty; "
                "min_world >= 1 and max_world >= min_world (or None)"
            )

    def fits(self, world_size: int) -> bool:
        return self.min_world <= world_size and (self.max_world is None or world_size <= self.max_world)

    def refusal(self, precision: str) -> str | None:
        """Why a cell of ``precision`` is not run with this strategy, or None."""
        return dict(self.refuses).get(precision)


_RUNTIME = "hpubench.strategy.runtime"
BUILTINS: tuple[StrategySpec, ...] = (
    StrategySpec("single", "one process on one device", f"{_RUNTIME}:SingleDevice", min_world=1, max_world=1),
    StrategySpec(
        "ddp",
        "one process per device, gradients all-reduced every step (DistributedDataParallel)",
        f"{_RUNTIME}:DDP",
    ),
    StrategySpec(
        "fsdp",
        "torch fully_shard; transformer blocks sharded one by one",
        f"{_RUNTIME}:FSDP",
        shards_state=True,
        refuses=(
            (
                "fp8",
                "fp8 is not combined with FSDP cells: transformer_engine's fp8 layers keep scaling state "
                "that fully_shard does not shard; untested, so not run",
            ),
        ),
        graphs_refusal=(
            "graph capture is not combined with FSDP cells: the all-gathers and reduce-scatters would have "
            "to be captured inside the graph"
        ),
    ),
)
STRATEGIES: tuple[str, ...] = tuple(s.name for s in BUILTINS)  # the built-ins, in the help's order
BUILTIN_HELP = (
    "single, ddp or fsdp (torch fully_shard; transformer blocks sharded one by one); default auto: "
    "single on one device, ddp on several."
)

_REGISTRY: dict[str, StrategySpec] = {s.name: s for s in BUILTINS}
_plugins_loaded = False


# ---- the registry -----------------------------------------------------------------------------------


def register(spec: StrategySpec) -> StrategySpec:
    """Add a strategy; its name must be new (registering the same declaration again is a no-op)."""
    if not isinstance(spec, StrategySpec):
        raise TypeError(f"{spec!r} is not a hpubench.strategy.spec.StrategySpec")
    if _REGISTRY.get(spec.name) not in (None, spec):
        raise ValueError(f"strategy {spec.name!r} is already registered")
    _REGISTRY[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    """Remove a strategy registered after the built-in ones (tests that register their own)."""
    if name in STRATEGIES:
        raise ValueError(f"strategy {name!r} is built in")
    _REGISTRY.pop(name, None)


def load_entry_points() -> list[str]:
    """Register the strategies installed packages advertise (once per process); returns names added.

    A broken one is one line (``UsageError``) naming the entry point and the fix, never skipped, and raised
    again on every later call, so the command that needs the strategies reports it even when the help,
    which shows the built-ins then, asked first.
    """
    global _plugins_loaded
    if _plugins_loaded:
        return []
    added = load_named(ENTRY_POINT_GROUP, "strategy", StrategySpec, _REGISTRY)
    _plugins_loaded = True
    return added


def names() -> tuple[str, ...]:
    """Every strategy, the built-ins first."""
    load_entry_points()
    return tuple(_REGISTRY)


def choices() -> tuple[str, ...]:
    """What ``strategy`` takes: every strategy, then ``auto`` (the layout's default)."""
    return (*names(), BY_LAYOUT)


def get(name: str) -> StrategySpec:
    found = find(name)
    if found is None:
        raise KeyError(f"unknown strategy {name!r}; known: {', '.join(names())}")
    return found


def find(name: str) -> StrategySpec | None:
    """The declaration of ``name``, or None; the installed packages are read only for a name that is not
    built in, so a matrix of built-ins never depends on them."""
    if name not in _REGISTRY:
        load_entry_points()
    return _REGISTRY.get(name)


def dimension_help() -> str:
    """The ``--strategy`` help: the built-ins, then each installed strategy with its own help."""
    try:
        known = names()
    except UsageError:  # a broken plugin: the command that reads strategies reports it as one line
        known = STRATEGIES
    added = [_REGISTRY[n] for n in known if n not in STRATEGIES]
    if not added:
        return BUILTIN_HELP
    return BUILTIN_HELP + " Installed: " + "; ".join(f"{s.name} ({s.help})" for s in added) + "."


# ---- the strategy a cell runs, and its rules --------------------------------------------------------


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
    spec = find(strategy_of(cell))
    return spec is not None and spec.shards_state


def _either(options: list[str]) -> str:
    return options[0] if len(options) == 1 else f"{', '.join(options[:-1])} or {options[-1]}"


def strategy_misfits_layout(cell: Any, _inventory: Any = None) -> str | None:
    """Why the cell's layout (devices x nodes processes) does not fit its strategy, or None."""
    name, world = strategy_of(cell), cell.devices * cell.nodes
    spec = find(name)
    if spec is None:
        return f"strategy {name} is not installed here; installed: {', '.join(names())}"
    layout = f"devices={cell.devices} x nodes={cell.nodes}"
    if spec.max_world is not None and world > spec.max_world:
        runs = "one process" if spec.max_world == 1 else f"at most {spec.max_world} processes"
        others = [s for s in names() if s != name and _REGISTRY[s].fits(world)]
        fix = f"use {_either(others)}" if others else "use fewer devices or nodes"
        return f"strategy {name} runs {runs}, but {layout} makes {world}; {fix}"
    if world < spec.min_world:
        needs = "several" if spec.min_world == 2 else f"at least {spec.min_world}"
        makes = "one" if world == 1 else str(world)
        fix = "devices >= 2" if spec.min_world == 2 else f"devices x nodes >= {spec.min_world}"
        return f"strategy {name} needs {needs} processes, but {layout} makes {makes}; use {fix}"
    return None


def strategy_refuses_precision(cell: Any, _inventory: Any = None) -> str | None:
    """Why the cell's strategy does not run its precision (fp8 with fsdp), or None."""
    spec = find(strategy_of(cell))
    return None if spec is None else spec.refusal(cell.precision)


def multi_process_skip_reason(cell: Any) -> str | None:
    """Combinations the multi-process path does not run (pure: the matrix and the worker both ask):
    graph capture with several ranks, in the words of the cell's strategy."""
    if cell.devices * cell.nodes > 1 and cell.graphs:
        spec = find(strategy_of(cell))
        return (spec.graphs_refusal if spec is not None else None) or DATA_PARALLEL_GRAPHS
    return None
