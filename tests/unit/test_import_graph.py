"""The package's import graph: no cycles, counting imports deferred into functions (a deferred import is
still a dependency, and one that closes a circle only hides it); layers import downward only; and no private
name imported from another module. Read from the sources with ``ast``, so nothing is imported to check.

The layers, bottom to top (``LAYERS``): the pure foundations (errors, number formatting, plugin loading,
the precision and strategy specs, statistics), plan, workloads, measure, store, the plugin runtimes
(accelerators, precision, strategy), analysis, run and the trainer integrations, api, and the presentation
(CLI, reports). A module may import its own layer and those below. The plan is handed the accelerator kinds
by its caller instead of importing them.
"""

from __future__ import annotations

import ast
from pathlib import Path

from sourcetree import PACKAGES, graph, modules, parse, resolve

LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "hpubench",
        "hpubench.errors",
        "hpubench.numfmt",
        "hpubench.plugins",
        "hpubench.precision.spec",
        "hpubench.strategy.spec",
        "hpubench.analysis.stats",
    ),
    ("hpubench.plan",),
    ("workloads",),
    ("hpubench.measure",),
    ("hpubench.store",),
    ("hpubench.accelerators", "hpubench.precision", "hpubench.strategy"),
    ("hpubench.analysis",),
    ("hpubench.run", "hpubench.integrations"),
    ("hpubench.api",),
    ("hpubench.present", "reports", "hpubench.pytest_plugin", "hpubench.__main__"),
)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return found


def test_no_import_cycles_counting_deferred_imports() -> None:
    assert cycles(graph(deferred=True)) == []


def layer_of(module: str, layers: tuple[tuple[str, ...], ...] = LAYERS) -> tuple[int, str]:
    """(layer index, the prefix that placed it): the longest prefix of ``module`` named in ``layers``."""
    found = [
        (len(p), i, p)
        for i, names in enumerate(layers)
        for p in names
        if module == p or module.startswith(p + ".")
    ]
    if not found:
        raise AssertionError(f"{module} is in no layer; add its package to LAYERS")
    _, index, prefix = max(found)
    return index, prefix


def upward_imports(imports: dict[str, set[str]], layers: tuple[tuple[str, ...], ...] = LAYERS) -> list[str]:
    """``a -> b (layer x imports layer y)`` for each import from a lower layer to a higher one."""
    bad = []
    for mod, targets in sorted(imports.items()):
        here, prefix = layer_of(mod, layers)
        for target in sorted(targets):
            there, target_prefix = layer_of(target, layers)
            if there > here:
                bad.append(f"{mod} -> {target} ({prefix} imports {target_prefix})")
    return bad


def test_layers_import_downward_only_counting_deferred_imports() -> None:
    bad = upward_imports(graph(deferred=True))
    assert not bad, "imports that climb a layer:\n" + "\n".join(bad)


def test_the_layer_check_flags_an_upward_import_and_allows_a_downward_one() -> None:
    layers = (("p.base",), ("p.plan",), ("p.run",))
    assert upward_imports({"p.plan.a": {"p.base.x", "p.plan.b"}, "p.run.c": {"p.plan.a"}}, layers) == []
    assert upward_imports({"p.plan.a": {"p.run.c"}}, layers) == ["p.plan.a -> p.run.c (p.plan imports p.run)"]
    # the longest prefix decides: a pure spec module may sit below its package
    assert layer_of("p.run.spec", (("p.run.spec",), ("p.run",))) == (0, "p.run.spec")


def test_deferred_imports_are_edges_and_type_checking_ones_are_not(tmp_path: Path) -> None:
    files = {
        "q/__init__.py": "",
        "q/a.py": "def f():\n    from q import b  # deferred: heavy\n",
        "q/b.py": "import typing\nif typing.TYPE_CHECKING:\n    from q import c\n",
        "q/c.py": "from q import a\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    known = modules(tmp_path, ("q",))
    assert graph(known)["q.a"] == set()
    assert graph(known, deferred=True)["q.a"] == {"q.b"}
    assert graph(known, deferred=True)["q.b"] == set()


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")  # __version__ and the like are public


def test_no_private_names_imported_across_modules() -> None:
    known = modules()
    bad = []
    for mod, path in known.items():
        for node in ast.walk(parse(path)):
            if isinstance(node, ast.ImportFrom):
                target = resolve(mod, node, path.name == "__init__.py")
                if target.split(".")[0] in PACKAGES:
                    bad += [f"{mod}: from {target} import {a.name}" for a in node.names if private(a.name)]
    assert bad == []


def test_the_cycle_finder_finds_one() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
