"""Every matrix dimension, declared once: what its values are and everything derived from them.

A :class:`Dimension` holds one dimension's name (the ``Cell`` field, ``Grid`` field and TOML key), its
parser (the one check of a value, shared by the command line, matrix files and grids built in code), its
default, help text and command-line flags, the names its values may take (for checking a matrix against
this machine's catalog and accelerators), how a value expands into cell fields, its part of the cell key,
its report column header and its skip rules. The CLI options of ``run``/``profile``/``list cells``
(``hpubench.present.cli.options``), matrix files and expansion (``hpubench.plan.matrix``), command-line
parsing (``hpubench.plan.cliparse``) and ``Cell.key`` all read :func:`all_dimensions`, in order.

Adding a dimension is one :func:`register` call, or, for an installed package, an entry point in the
group ``hpubench.dimensions`` naming a ``Dimension`` (read before the command line is built, so its flag
shows in ``--help``). A dimension that is not a ``Cell`` field keeps
its value in ``Cell.extra``; its key part is ``name=value``, left out at its default, so every key written
before the dimension existed stays the same. Pure: no torch, no I/O beyond reading entry points.
"""

from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hpubench.errors import UsageError
from hpubench.plan import dimvalues as v
from hpubench.plan.dimvalues import BadValue, Check, Context, ContextRule, Resolve, Rule, show
from hpubench.precision import spec as precisions
from hpubench.precision.spec import PRECISIONS
from hpubench.strategy import spec as strategy_spec

ENTRY_POINT_GROUP = "hpubench.dimensions"
MODES: tuple[str, ...] = ("eager", "lazy", "compile")
# The host conditions a cell measures under (hpubench.run.executors.base.condition_env applies them): the
# harness's tuned ones first (the default), then those of a plain script, so a figure can be set beside
# the one the user's own training gets.
CONDITIONS: tuple[str, ...] = ("tuned", "plain")
TUNED, PLAIN = CONDITIONS
# Names a registered dimension may not take: other Cell fields, the grid settings and TOML's own keys.
RESERVED = frozenset(
    {"warmup_steps", "steps", "auto_steps", "device_ids", "extra", "target_ci", "min_steps", "min_time"}
    | {"max_time", "name", "preset", "grid", "exclude", "dims"}
)
_NAME_RE = re.compile(r"[a-z][a-z0-9_]*")


def _keep(text: str) -> object:
    return text


@dataclass(frozen=True)
class Dimension:
    name: str
    help: str
    parse: Callable[[object], Any]  # one value as TOML or a grid holds it -> canonical value; BadValue
    default: Any  # the value a cell has when the matrix does not mention the dimension
    flags: tuple[str, ...] = ()  # command-line flags; () -> ("--<name with dashes>",)
    column: str | None = ""  # report column header; "" -> the name, capitalised; None: no column of its own
    key: Callable[[Any], list[str]] | None = None  # a Cell field's parts of the key; None: name=value
    text: Callable[[str], object] = _keep  # one command-line string -> the value TOML would hold
    many: Callable[[list[str]], list[object]] | None = None  # all strings of the flag at once
    split: bool = True  # command-line values may be comma-separated
    example: str = ""  # one good command-line value, for error messages
    hardware: bool = False  # part of the hardware: left out of ``Cell.match_key``
    layout: bool = False  # how many processes: scaling compares cells that differ only in these
    meta: tuple[str, ...] = ()  # values resolved at expansion ("all", "auto"), not names
    names: Callable[[Context], Sequence[str]] | None = None  # the valid concrete values here
    check: Check | None = None  # a validity check needing other dimensions' values
    resolve: Resolve | None = None  # None: the value itself becomes the cell field
    # skip rules; a rule reading several dimensions sits on the last
    rules: tuple[Rule | ContextRule, ...] = ()
    matches: Callable[[Any, Any], bool] | None = None  # (cell, an exclude's value); None: value equals

    @property
    def cli_flags(self) -> tuple[str, ...]:
        return self.flags or ("--" + self.name.replace("_", "-"),)

    @property
    def header(self) -> str | None:
        return self.column if self.column != "" else self.name.replace("_", " ").capitalize()

    def values(self, raw: object) -> tuple[Any, ...]:
        """One value or a list of them, each parsed, duplicates dropped in order."""
        items = list(raw) if isinstance(raw, (list, tuple)) else [raw]
        if not items:
            raise BadValue(f"an empty list runs nothing; give at least one value or leave {self.name} out")
        out: list[Any] = []
        for item in items:
            v = self.parse(item)
            if v not in out:
                out.append(v)
        return tuple(out)

    def from_command_line(self, texts: list[str]) -> list[object]:
        """The flag's strings as TOML-typed values, each checked by the dimension's parser."""
        raws = self.many(texts) if self.many is not None else [self.text(t) for t in texts]
        for i, raw in enumerate(raws):
            try:
                self.parse(raw)
            except BadValue as e:
                shown = texts[i] if len(raws) == len(texts) else " ".join(texts)
                raise UsageError(f"{self.cli_flags[0]} {shown!r}: {self._on_command_line(str(e))}") from None
        return raws

    def _on_command_line(self, message: str) -> str:
        """A parser's message with its matrix-file example ("e.g. nodes = 1") given as a flag instead."""
        head, sep, tail = message.rpartition(", e.g. ")
        if not sep or " = " not in tail:
            return message
        return f"{head}; e.g. {self.cli_flags[0]} {self.example}" if self.example else head


# ---- the registry -----------------------------------------------------------------------------------

_REGISTRY: dict[str, Dimension] = {}
_LOADED: list[bool] = []  # non-empty once the entry points were read


def register(dim: Dimension) -> Dimension:
    """Add a dimension after the ones registered so far; its name must be new and a plain word."""
    if not isinstance(dim, Dimension):
        raise ValueError(f"{dim!r} is not a Dimension")
    if not _NAME_RE.fullmatch(dim.name) or dim.name in RESERVED:
        raise ValueError(f"dimension name {dim.name!r} must be a lower-case word and not one of the settings")
    if dim.name in _REGISTRY and _REGISTRY[dim.name] is not dim:
        raise ValueError(f"dimension {dim.name!r} is already registered")
    dim.parse(dim.default)  # a default its own parser refuses would break every matrix
    _REGISTRY[dim.name] = dim
    return dim


def unregister(name: str) -> None:
    """Remove a dimension registered after the built-in ones (tests that register their own)."""
    if name in BUILTIN:
        raise ValueError(f"dimension {name!r} is built in")
    _REGISTRY.pop(name, None)


def load_entry_points() -> None:
    """Register the dimensions installed packages advertise, once; a broken one is one UsageError (raised
    again on every later call, so the command that needs the dimensions reports it)."""
    if _LOADED:
        return
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            obj = ep.load()
            if not isinstance(obj, Dimension):
                raise TypeError(f"it is a {type(obj).__name__}, not a hpubench.plan.dimensions.Dimension")
            register(obj)
        except Exception as exc:
            raise UsageError(
                f"dimension entry point {ep.name!r} ({ep.value}) failed to load: {type(exc).__name__}: "
                f"{' '.join(str(exc).split())}; fix or uninstall the package that provides it"
            ) from exc
    _LOADED.append(True)


def all_dimensions() -> tuple[Dimension, ...]:
    """Every dimension in order: the built-in ones, then the registered ones."""
    load_entry_points()
    return tuple(_REGISTRY.values())


def get(name: str) -> Dimension:
    load_entry_points()
    return _REGISTRY[name]


def header_of(name: str) -> str:
    """A dimension's report column header; a dimension not registered here is shown by its name."""
    dim = _REGISTRY.get(name)
    return (dim.header or name) if dim is not None else name


def names() -> tuple[str, ...]:
    return tuple(d.name for d in all_dimensions())


def extra_key_part(name: str, value: object) -> str:
    """An added dimension's part of the key: ``name=value`` (booleans as true/false)."""
    return f"{name}={show(value) if isinstance(value, bool) else value}"


def key_parts(cell: Any, *, with_hardware: bool = True) -> list[str]:
    """The parts of a cell's key: each ``Cell`` field dimension's, in order, then ``name=value`` for each
    value in ``Cell.extra`` (added dimensions away from their defaults), sorted by name.

    The extra parts need no registration: a record from a machine with a plugin dimension this one lacks
    keeps its key here, and two plugins read the same whichever registered first.
    """
    dims = all_dimensions()
    parts = [p for d in dims if d.key is not None and (with_hardware or not d.hardware) for p in d.key(cell)]
    return parts + [extra_key_part(k, v) for k, v in cell.extra]


def skip_reason(cell: Any, ctx: Context) -> str | None:
    """The first skip rule that refuses the cell here (rules in dimension order), or None."""
    for d in all_dimensions():
        for rule in d.rules:
            reason = rule.check(cell, ctx) if isinstance(rule, ContextRule) else rule(cell, ctx.inventory)
            if reason is not None:
                return reason
    return None


# ---- the built-in dimensions, in key order ----------------------------------------------------------


class StrategyDimension(Dimension):
    """The strategy dimension: its help is read from the strategy registry when asked (the command line is
    built after the entry points are read), so ``--help`` names the strategies installed packages add."""

    @property  # type: ignore[override]
    def help(self) -> str:
        return strategy_spec.dimension_help()

    @help.setter
    def help(self, _text: str) -> None:  # the dataclass's __init__ sets the field; the registry answers
        pass


BUILTIN: tuple[Dimension, ...] = (
    Dimension(
        "workload",
        "Workload(s); repeat or comma-separate.",
        v.parse_name("workload", '"mlp"'),
        "all",
        flags=("--workload", "-w"),
        key=lambda c: [c.workload],
        meta=("all",),
        names=v.workload_names,
        resolve=v.resolve_workloads,
        example="mlp",
    ),
    Dimension(
        "size",
        "Size(s) the workloads declare: tiny, standard, or a plugin workload's own.",
        v.parse_name("size", '"tiny"'),
        "tiny",
        key=lambda c: [c.size],
        check=v.check_sizes,
        resolve=v.resolve_sizes,
        example="tiny",
    ),
    Dimension(
        "accelerator",
        "cpu, cuda, hpu, auto or all.",
        v.parse_name("accelerator", '"auto"'),
        "auto",
        flags=("--accelerator", "-a"),
        column="Hardware",
        key=lambda c: [c.accelerator],
        hardware=True,
        meta=("auto", "all"),
        names=v.accelerator_names,
        resolve=v.resolve_accelerators,
        rules=(v.no_device,),
        example="cpu",
    ),
    Dimension(
        "devices",
        "Count, 'auto', or indices like '[0,2]'.",
        v.parse_devices,
        1,
        flags=("--devices", "-d"),
        column="Dev × nodes",
        key=lambda c: [f"{c.devices}x{c.nodes}"],  # the nodes count shares this part
        layout=True,
        text=v.devices_text,
        resolve=v.resolve_devices,
        matches=v.devices_match,
        rules=(v.too_many_devices,),
        example="2",
    ),
    Dimension(
        "nodes",
        "Number of nodes.",
        v.parse_nodes,
        1,
        column=None,
        key=lambda c: [],
        text=v.int_text,
        example="2",
        layout=True,
    ),
    Dimension(
        "precision",
        ", ".join(PRECISIONS) + " (and any an installed package adds).",
        v.parse_registered("precision", PRECISIONS, precisions.names),
        "32-true",
        flags=("--precision", "-p"),
        key=lambda c: [c.precision],
    ),
    Dimension(
        "mode",
        "eager, lazy (HPU) or compile.",
        v.parse_one_of("mode", MODES),
        "eager",
        key=lambda c: [c.mode],
    ),
    Dimension(
        "graphs",
        "on/off: HPU graphs or CUDA graphs.",
        v.parse_graphs,
        False,
        key=lambda c: ["graphs" if c.graphs else "nographs"],
        text=v.graphs_text,
        rules=(v.graphs_with_several_ranks, v.accelerator_refuses),  # these read graphs last
        example="on",
    ),
    Dimension(
        "batch_size",
        "Per-device batch size(s).",
        v.parse_batch_size,
        None,
        flags=("--batch-size", "-b"),
        column="Batch",
        key=lambda c: [f"bs{c.batch_size}" if c.batch_size is not None else "bsdefault"],
        text=v.batch_text,
        example="32",
    ),
    Dimension(
        "options",
        "Workload option name=value (repeatable), part of the cell key; e.g. extra_work=0.1 plants a "
        "10% slowdown.",
        v.parse_options,
        (),
        flags=("--option",),
        column=None,
        key=lambda c: [f"{name}={value}" for name, value in c.options],
        many=v.option_flags,
        split=False,  # name=value pairs are not comma-split: values may hold commas
        example="extra_work=0.1",
    ),
    StrategyDimension(
        "strategy",
        "",  # read from hpubench.strategy.spec when asked: it names the strategies packages install
        v.parse_registered(
            "strategy", (*strategy_spec.STRATEGIES, strategy_spec.BY_LAYOUT), strategy_spec.choices
        ),
        strategy_spec.BY_LAYOUT,
        layout=True,  # scaling compares an fsdp cell with the 1-device cell too
        meta=(strategy_spec.BY_LAYOUT,),
        names=v.strategy_names,
        resolve=v.resolve_strategy,
        matches=v.strategy_match,
        rules=(strategy_spec.strategy_misfits_layout, strategy_spec.strategy_refuses_precision),
        example="fsdp",
    ),
    Dimension(
        "condition",
        "tuned: the harness's quiet host settings (HPUBENCH_MALLOC heap, HPUBENCH_CPU_THREADS threads); "
        "plain: what a plain training script gets (glibc's own heap, torch's default threads, a fresh "
        "interpreter).",
        v.parse_one_of("condition", CONDITIONS),
        CONDITIONS[0],
        example="plain",
    ),
)
for _dim in BUILTIN:
    register(_dim)
