"""The strategy registry (issue 32, item 2): every strategy is one ``StrategySpec`` in
``hpubench.strategy.spec``, built in or read from the ``hpubench.strategies`` entry-point group, and every
rule about strategies (layout, precision, graph capture, sharded memory) and the ``strategy`` dimension's
names and help read it, so adding one is one module plus its registration."""

from __future__ import annotations

import importlib.metadata
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from hpubench.errors import CellSkipped, UsageError
from hpubench.plan import dimensions
from hpubench.plan.cell import Cell
from hpubench.plan.matrix import Grid
from hpubench.strategy import spec
from hpubench.strategy.spec import StrategySpec
from tests.unit.test_matrix import CPU2, one

RUNTIME = "hpubench.strategy.runtime"
WIDE = StrategySpec(
    "wide",
    "a test strategy for four to eight ranks",
    f"{RUNTIME}:DDP",
    min_world=4,
    max_world=8,
    shards_state=True,
    refuses=(("bf16-true", "bf16-true is not run with wide: its test says so"),),
    graphs_refusal="graph capture is not combined with wide cells: a test reason",
)


def cell(devices: int = 1, nodes: int = 1, strategy: str | None = None, **kw: object) -> Cell:
    extra = (("strategy", strategy),) if strategy else ()
    return Cell("mlp", devices=devices, nodes=nodes, extra=extra, **kw)  # type: ignore[arg-type]


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A registry of the built-ins alone, restored after the test; installed packages are not read."""
    monkeypatch.setattr(spec, "_REGISTRY", {s.name: s for s in spec.BUILTINS})
    monkeypatch.setattr(spec, "_plugins_loaded", True)


@pytest.fixture
def entry_points(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[..., None]:
    """Install fake ``hpubench.strategies`` entry points ``(name, value)``; modules go in tmp_path."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(spec, "_REGISTRY", {s.name: s for s in spec.BUILTINS})
    monkeypatch.setattr(spec, "_plugins_loaded", False)

    def install(*pairs: tuple[str, str]) -> None:
        eps = [importlib.metadata.EntryPoint(name=n, value=v, group=spec.ENTRY_POINT_GROUP) for n, v in pairs]
        monkeypatch.setattr(
            importlib.metadata,
            "entry_points",
            lambda **p: eps if p.get("group") == spec.ENTRY_POINT_GROUP else [],
        )

    return install


def module(tmp_path: Path, source: str) -> str:
    name = f"strat_plugin_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(source)
    sys.modules.pop(name, None)
    return name


# ---- the registry ---------------------------------------------------------------------------------


def test_the_built_ins_are_registered_in_order(registry: None) -> None:
    assert spec.names() == spec.STRATEGIES == ("single", "ddp", "fsdp")
    assert spec.choices() == ("single", "ddp", "fsdp", "auto")
    assert spec.get("fsdp").shards_state and not spec.get("ddp").shards_state
    assert [spec.get(n).runtime for n in spec.names()] == [
        f"{RUNTIME}:{c}" for c in ("SingleDevice", "DDP", "FSDP")
    ]
    with pytest.raises(KeyError, match="unknown strategy 'zero3'; known: single, ddp, fsdp"):
        spec.get("zero3")


def test_register_adds_a_name_and_refuses_a_clash(registry: None) -> None:
    assert spec.register(WIDE) is WIDE
    assert spec.register(WIDE) is WIDE  # the same declaration again: nothing changes
    assert spec.names() == ("single", "ddp", "fsdp", "wide")
    with pytest.raises(ValueError, match="strategy 'ddp' is already registered"):
        spec.register(StrategySpec("ddp", "another ddp", "mine:DDP"))
    with pytest.raises(TypeError):
        spec.register("wide")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="built in"):
        spec.unregister("fsdp")
    spec.unregister("wide")
    assert spec.names() == spec.STRATEGIES


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"name": "a/b"}, "lower-case word"),
        ({"name": "auto"}, "not 'auto'"),
        ({"name": "Zero"}, "lower-case word"),
        ({"runtime": "no_class_here"}, "'module:Class'"),
        ({"min_world": 0}, "min_world >= 1"),
        ({"min_world": 4, "max_world": 2}, "are empty"),
    ],
)
def test_a_bad_declaration_is_refused_where_it_is_made(kwargs: dict, needle: str) -> None:
    args = {"name": "ok", "help": "h", "runtime": "m:C", **kwargs}
    with pytest.raises(ValueError, match=needle):
        StrategySpec(**args)


# ---- the dimension reads the registry -------------------------------------------------------------


def test_the_dimension_takes_a_registered_strategy_and_its_help_names_it(registry: None) -> None:
    dim = dimensions.get("strategy")
    assert dim.help == spec.BUILTIN_HELP
    with pytest.raises(UsageError, match="unknown strategy; valid: single, ddp, fsdp, auto"):
        Grid(workload="mlp", strategy="wide")
    spec.register(WIDE)
    assert Grid(workload="mlp", strategy="wide").strategy == ("wide",)
    assert (
        dim.help.startswith(spec.BUILTIN_HELP)
        and "wide (a test strategy for four to eight ranks)" in dim.help
    )
    with pytest.raises(UsageError, match="unknown strategy; valid: single, ddp, fsdp, wide, auto"):
        Grid(workload="mlp", strategy="zero3")


def test_a_plugin_strategy_expands_into_its_own_keys_with_its_rules(registry: None) -> None:
    spec.register(WIDE)
    planned = one(Grid(workload="mlp", accelerator="cpu", devices=2, strategy=["ddp", "wide"]), CPU2)
    assert [(p.cell.key.rsplit("/", 1)[-1], p.skip_reason) for p in planned] == [
        ("bsdefault", None),
        (
            "strategy=wide",
            "strategy wide needs at least 4 processes, but devices=2 x nodes=1 makes 2; "
            "use devices x nodes >= 4",
        ),
    ]


# ---- the rules read the declarations ----------------------------------------------------------------


def test_the_built_in_rules_keep_their_words(registry: None) -> None:
    assert spec.strategy_misfits_layout(cell(2, strategy="single")) == (
        "strategy single runs one process, but devices=2 x nodes=1 makes 2; use ddp or fsdp"
    )
    assert spec.strategy_misfits_layout(cell(1, strategy="fsdp")) == (
        "strategy fsdp needs several processes, but devices=1 x nodes=1 makes one; use devices >= 2"
    )
    assert spec.strategy_misfits_layout(cell(2)) is None and spec.strategy_misfits_layout(cell(1)) is None
    assert spec.strategy_refuses_precision(cell(2, strategy="fsdp", precision="fp8")).startswith(
        "fp8 is not combined with FSDP cells"
    )
    assert spec.strategy_refuses_precision(cell(2, precision="fp8")) is None
    assert spec.shards_state(cell(2, strategy="fsdp")) and not spec.shards_state(cell(2))


def test_multi_process_graph_capture_is_refused_in_the_strategys_words(registry: None) -> None:
    assert spec.multi_process_skip_reason(cell(2, graphs=True)) == spec.DATA_PARALLEL_GRAPHS
    assert spec.multi_process_skip_reason(cell(2, strategy="fsdp", graphs=True)).startswith(
        "graph capture is not combined with FSDP cells"
    )
    assert spec.multi_process_skip_reason(cell(2)) is None
    assert spec.multi_process_skip_reason(cell(1, graphs=True)) is None


def test_a_plugins_rules_come_from_its_declaration(registry: None) -> None:
    spec.register(WIDE)
    assert spec.strategy_misfits_layout(cell(4, strategy="wide")) is None
    assert spec.strategy_misfits_layout(cell(4, nodes=2, strategy="wide")) is None
    assert spec.strategy_misfits_layout(cell(1, strategy="wide")) == (
        "strategy wide needs at least 4 processes, but devices=1 x nodes=1 makes one; "
        "use devices x nodes >= 4"
    )
    assert spec.strategy_misfits_layout(cell(8, nodes=2, strategy="wide")) == (
        "strategy wide runs at most 8 processes, but devices=8 x nodes=2 makes 16; use ddp or fsdp"
    )
    # the built-ins' advice names a plugin that fits the layout
    assert spec.strategy_misfits_layout(cell(4, strategy="single")).endswith("; use ddp, fsdp or wide")
    assert spec.strategy_refuses_precision(cell(4, strategy="wide", precision="bf16-true")) == (
        "bf16-true is not run with wide: its test says so"
    )
    assert spec.strategy_refuses_precision(cell(4, strategy="wide", precision="fp8")) is None
    assert spec.multi_process_skip_reason(cell(4, strategy="wide", graphs=True)) == WIDE.graphs_refusal
    assert spec.shards_state(cell(4, strategy="wide"))


def test_a_strategy_not_installed_here_is_skipped_not_crashed(registry: None) -> None:
    assert spec.strategy_misfits_layout(cell(2, strategy="zero3")) == (
        "strategy zero3 is not installed here; installed: single, ddp, fsdp"
    )
    assert not spec.shards_state(cell(2, strategy="zero3"))


# ---- entry points -------------------------------------------------------------------------------


def test_an_entry_point_naming_a_spec_registers_it_once(
    entry_points: Callable[..., None], tmp_path: Path
) -> None:
    source = (
        f"from hpubench.strategy.spec import StrategySpec\nS = StrategySpec('tiny', 'h', '{RUNTIME}:DDP')\n"
    )
    entry_points(("tiny", f"{module(tmp_path, source)}:S"))
    assert spec.load_entry_points() == ["tiny"]
    assert spec.load_entry_points() == []  # once per process
    assert spec.names()[-1] == "tiny" and spec.get("tiny").help == "h"


@pytest.mark.parametrize(
    ("source", "attr", "needle"),
    [
        (None, "S", "failed to load: ModuleNotFoundError"),
        ("S = 'not a spec'\n", "S", "is not an hpubench.strategy.spec.StrategySpec; fix or uninstall"),
        (
            "from hpubench.strategy.spec import StrategySpec\nS = StrategySpec('bad/name', 'h', 'm:C')\n",
            "S",
            "failed to load: ValueError: strategy name 'bad/name'",
        ),
        (
            "from hpubench.strategy.spec import StrategySpec\nS = StrategySpec('ddp', 'mine', 'm:C')\n",
            "S",
            "reuses the name 'ddp' of another strategy; rename it",
        ),
    ],
    ids=["missing-module", "not-a-spec", "bad-name", "clash"],
)
def test_a_broken_entry_point_is_one_line_naming_it(
    entry_points: Callable[..., None], tmp_path: Path, source: str | None, attr: str, needle: str
) -> None:
    name = module(tmp_path, source) if source is not None else "no_such_strategy_module"
    entry_points(("broken", f"{name}:{attr}"))
    with pytest.raises(UsageError) as err:
        spec.names()
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"strategy entry point 'broken' ({name}:{attr})")
    assert needle in message, message
    assert spec.get("ddp") is spec.BUILTINS[1]  # a clash never replaces the built-in


def test_a_broken_plugin_leaves_the_help_with_the_built_ins(entry_points: Callable[..., None]) -> None:
    entry_points(("broken", "no_such_strategy_module:S"))
    assert spec.dimension_help() == spec.BUILTIN_HELP
    for _ in range(2):  # the help asked first; the command that reads the strategies still reports it
        with pytest.raises(UsageError, match="no_such_strategy_module:S"):
            spec.names()
    # a matrix of built-ins never reads the packages: it plans as before
    assert spec.strategy_misfits_layout(cell(2)) is None and spec.shards_state(cell(2, strategy="fsdp"))


# ---- the runtime builds the registered class (torch) -------------------------------------------------


def test_for_cell_builds_the_registered_runtime_class(registry: None, tmp_path: Path, monkeypatch) -> None:
    from hpubench.strategy import runtime  # deferred: imports torch

    monkeypatch.syspath_prepend(str(tmp_path))
    name = module(
        tmp_path,
        "from hpubench.strategy.runtime import SingleDevice\n\nclass Solo(SingleDevice):\n    pass\n",
    )
    spec.register(StrategySpec("solo", "one process, a subclass", f"{name}:Solo", min_world=1, max_world=1))
    built = runtime.for_cell(cell(1, strategy="solo"))
    assert type(built).__name__ == "Solo" and built.name == "solo"
    assert isinstance(runtime.for_cell(cell(1)), runtime.SingleDevice)
    ranks = {"RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2"}
    ddp = runtime.for_cell(cell(2), ranks)
    assert type(ddp) is runtime.DDP and (ddp.name, ddp.rank, ddp.world_size) == ("ddp", 1, 2)
    with pytest.raises(CellSkipped, match="use devices >= 2"):
        runtime.for_cell(cell(1, strategy="ddp"))


def test_a_runtime_that_is_not_a_strategy_fails_with_its_name(registry: None) -> None:
    from hpubench.strategy import runtime  # deferred: imports torch

    spec.register(StrategySpec("odd", "h", "hpubench.strategy.spec:StrategySpec", min_world=1, max_world=1))
    with pytest.raises(RuntimeError, match=r"'hpubench\.strategy\.spec:StrategySpec' is not a concrete"):
        runtime.for_cell(cell(1, strategy="odd"))
    spec.register(StrategySpec("gone", "h", "no_such_module_here:X", min_world=1, max_world=1))
    with pytest.raises(RuntimeError, match="cannot be imported"):
        runtime.for_cell(cell(1, strategy="gone"))
