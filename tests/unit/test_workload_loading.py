"""Registering workloads: validation, ``--workloads-from`` files and ``hpubench.workloads`` entry points."""

from __future__ import annotations

import importlib.metadata
import sys
import textwrap
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ClassVar

import pytest
import torch
from torch import nn

import workloads
from hpubench.errors import UsageError
from workloads.base import Batch, SizeSpec, Workload

HEADER = """\
import torch
from torch import nn
import workloads
from workloads.base import SizeSpec, Workload
"""

GOOD_CLASS = """
@workloads.register
class Fileload(Workload):
    name = "{name}"
    description = "a linear layer on noise"
    sizes = {{"tiny": SizeSpec(4, "one linear layer")}}

    def build_model(self, size):
        return nn.Linear(3, 2)

    def make_batch(self, size, batch_size, device, generator):
        return (torch.randn((batch_size, 3), generator=generator, device=device),)

    def loss(self, model, batch):
        return model(batch[0]).square().mean()
"""


@pytest.fixture(autouse=True)
def _registry_restored() -> Iterator[None]:
    saved = dict(workloads.registry._REGISTRY)
    modules = set(sys.modules)
    yield
    workloads.registry._REGISTRY.clear()
    workloads.registry._REGISTRY.update(saved)
    for name in set(sys.modules) - modules:
        if name.startswith(("hpubench_workload_file_", "wl_plugin_")):
            del sys.modules[name]


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str], Path]:
    def _write(filename: str, source: str) -> Path:
        path = tmp_path / filename
        path.write_text(textwrap.dedent(source))
        return path

    return _write


def _unique(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:8]}"


def _assert_one_line(err: pytest.ExceptionInfo[UsageError], path: Path, *parts: str) -> None:
    message = str(err.value)
    assert "\n" not in message
    assert repr(str(path)) in message, message
    for part in parts:
        assert part in message, message
    assert "drop --workloads-from" in message


class _Good(Workload):
    name = "good-thirdparty"
    description = "minimal"
    sizes: ClassVar[dict[str, SizeSpec]] = {"tiny": SizeSpec(2, "minimal")}

    def build_model(self, size: str) -> nn.Module:
        return nn.Linear(2, 2)

    def make_batch(
        self, size: str, batch_size: int, device: torch.device, generator: torch.Generator | None
    ) -> Batch:
        return (torch.randn((batch_size, 2), generator=generator, device=device),)

    def loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        return model(batch[0]).sum()


# --- register ------------------------------------------------------------------------------------


def test_register_accepts_a_third_party_class_with_one_size() -> None:
    assert workloads.register(_Good) is _Good
    assert workloads.catalog()["good-thirdparty"] == ("tiny",)
    assert workloads.register(_Good) is _Good  # registering again is harmless


@pytest.mark.parametrize(
    ("attrs", "match"),
    [
        ({"name": ""}, "name"),
        ({"name": "has/slash"}, "name"),
        ({"sizes": {}}, "sizes"),
        ({"sizes": {"tiny": 4}}, "SizeSpec"),
        ({"sizes": {"tiny": SizeSpec(0, "empty")}}, "batch_size"),
    ],
)
def test_register_rejects_bad_classes(attrs: dict[str, object], match: str) -> None:
    bad = type("Bad", (_Good,), attrs)
    with pytest.raises(ValueError, match=match):
        workloads.register(bad)
    assert "Bad" not in {c.__name__ for c in workloads.registry._REGISTRY.values()}


def test_register_rejects_missing_name_abstract_classes_and_non_workloads() -> None:
    class NoName(Workload):
        sizes: ClassVar[dict[str, SizeSpec]] = {"tiny": SizeSpec(2, "x")}

    with pytest.raises(ValueError, match="name"):
        workloads.register(NoName)

    class Abstract(Workload):
        name = "abstract"
        sizes: ClassVar[dict[str, SizeSpec]] = {"tiny": SizeSpec(2, "x")}

    with pytest.raises(ValueError, match="does not implement"):
        workloads.register(Abstract)
    with pytest.raises(ValueError, match="not a Workload"):
        workloads.register(int)  # type: ignore[arg-type]


def test_builtins_need_tiny_and_standard() -> None:
    builtin = type("Builtin", (_Good,), {"name": "builtin-like", "__module__": "workloads.fake"})
    with pytest.raises(ValueError, match="standard"):
        workloads.register(builtin)


def test_a_different_class_cannot_take_a_builtin_name() -> None:
    impostor = type("Impostor", (_Good,), {"name": "mlp"})
    with pytest.raises(ValueError, match="already taken"):
        workloads.register(impostor)
    assert type(workloads.get("mlp")).__module__ == "workloads.mlp"


# --- load_file -----------------------------------------------------------------------------------


def test_load_file_registers_its_workloads(write: Callable[[str, str], Path]) -> None:
    path = write("mine.py", HEADER + GOOD_CLASS.format(name="from-file"))
    assert workloads.load_file(str(path)) == ["from-file"]
    wl = workloads.get("from-file")
    batch = wl.make_batch("tiny", 4, torch.device("cpu"), torch.Generator().manual_seed(0))
    assert torch.isfinite(wl.loss(wl.build_model("tiny"), batch))
    # The same file again replaces its own workloads rather than clashing with them.
    assert workloads.load_file(path) == ["from-file"]


@pytest.mark.parametrize(
    ("source", "parts"),
    [
        (HEADER + "x = (\n", ["syntax error", "line 5"]),
        (HEADER + "\nfoo()\n", ["failed to import", "NameError", "foo", "(line 6)"]),
        (HEADER + "raise RuntimeError('first\\nsecond')\n", ["RuntimeError: first second (line 5)"]),
        (HEADER + "import sys\nsys.exit(3)\n", ["SystemExit: 3"]),
        (HEADER + "X = 1\n", ["registers no workload", "@workloads.register"]),
        (HEADER + GOOD_CLASS.format(name="bad name"), ["invalid workload", "name"]),
        (HEADER + GOOD_CLASS.format(name="mlp"), ["invalid workload", "already taken"]),
        (
            HEADER + GOOD_CLASS.format(name="no-tiny").replace('"tiny"', '"big"'),
            ["'no-tiny'", "'tiny' size"],
        ),
        (
            HEADER + GOOD_CLASS.format(name="forgot").replace("@workloads.register\n", ""),
            ["registers no workload", "defines Fileload without @register"],
        ),
    ],
    ids=["syntax", "name-error", "raises", "exits", "empty", "bad-name", "clash", "no-tiny", "unregistered"],
)
def test_load_file_problems_are_one_line_usage_errors(
    write: Callable[[str, str], Path], source: str, parts: list[str]
) -> None:
    path = write("broken.py", source)
    before = dict(workloads.registry._REGISTRY)
    with pytest.raises(UsageError) as err:
        workloads.load_file(str(path))
    _assert_one_line(err, path, *parts)
    assert before == workloads.registry._REGISTRY  # nothing half-registered
    assert not [m for m in sys.modules if m.startswith("hpubench_workload_file_")]


def test_load_file_reports_a_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.py"
    with pytest.raises(UsageError) as err:
        workloads.load_file(str(path))
    _assert_one_line(err, path, "does not exist")
    with pytest.raises(UsageError, match="is not a file"):
        workloads.load_file(str(tmp_path))


# --- entry points --------------------------------------------------------------------------------


@pytest.fixture
def entry_points(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[..., None]:
    """Install fake entry points of group hpubench.workloads, as ``(name, value)`` pairs."""
    monkeypatch.syspath_prepend(str(tmp_path))

    def install(*pairs: tuple[str, str]) -> None:
        eps = [
            importlib.metadata.EntryPoint(name=n, value=v, group=workloads.ENTRY_POINT_GROUP)
            for n, v in pairs
        ]

        def fake(**params: str) -> list[importlib.metadata.EntryPoint]:
            return eps if params.get("group") == workloads.ENTRY_POINT_GROUP else []

        monkeypatch.setattr(importlib.metadata, "entry_points", fake)

    return install


def test_entry_point_naming_a_class_registers_it(
    write: Callable[[str, str], Path], entry_points: Callable[..., None]
) -> None:
    module = _unique("wl_plugin_")
    write(
        f"{module}.py", HEADER + GOOD_CLASS.format(name="plugin-class").replace("@workloads.register\n", "")
    )
    entry_points(("plugin", f"{module}:Fileload"))
    assert workloads.load_entry_points() == ["plugin-class"]
    assert workloads.catalog()["plugin-class"] == ("tiny",)
    assert workloads.load_entry_points() == []  # already there: nothing new, no error


def test_entry_point_naming_a_module_imports_it(
    write: Callable[[str, str], Path], entry_points: Callable[..., None]
) -> None:
    module = _unique("wl_plugin_")
    write(f"{module}.py", HEADER + GOOD_CLASS.format(name="plugin-module"))
    entry_points(("plugin", module))
    assert workloads.load_entry_points() == ["plugin-module"]
    assert "plugin-module" in workloads.names()


def test_no_entry_points_adds_nothing(entry_points: Callable[..., None]) -> None:
    entry_points()
    assert workloads.load_entry_points() == []


@pytest.mark.parametrize(
    ("source", "attr", "parts"),
    [
        (None, "", ["failed to load", "ModuleNotFoundError"]),
        (HEADER + "def not_a_class(): pass\n", ":not_a_class", ["is invalid", "function"]),
        (HEADER + "class Other: pass\n", ":Other", ["is invalid", "not a Workload subclass"]),
        (HEADER + GOOD_CLASS.format(name="mlp"), "", ["is invalid", "already taken"]),
    ],
    ids=["missing-module", "function", "not-workload", "clash"],
)
def test_broken_entry_points_are_one_line_usage_errors(
    write: Callable[[str, str], Path],
    entry_points: Callable[..., None],
    source: str | None,
    attr: str,
    parts: list[str],
) -> None:
    module = _unique("wl_plugin_")
    if source is not None:
        write(f"{module}.py", source)
    entry_points(("broken", module + attr))
    before = dict(workloads.registry._REGISTRY)
    with pytest.raises(UsageError) as err:
        workloads.load_entry_points()
    message = str(err.value)
    assert "\n" not in message and "'broken'" in message and "uninstall" in message
    for part in parts:
        assert part in message, message
    assert before == workloads.registry._REGISTRY


def test_two_files_cannot_claim_the_same_name(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second = tmp_path / "a" / "same.py", tmp_path / "b" / "same.py"
    for path in (first, second):
        path.write_text(HEADER + GOOD_CLASS.format(name="twice"))
    assert workloads.load_file(first) == ["twice"]
    with pytest.raises(UsageError) as err:
        workloads.load_file(second)
    _assert_one_line(err, second, "already taken")
