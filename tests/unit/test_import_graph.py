"""The package's import graph (issue 13, item 6): no cycles among module-level imports, and no private
name imported from another module. Read from the sources with ``ast``, so nothing is imported to check.

Imports inside functions are left out of the cycle check on purpose: a deferred import is how a heavy
optional dependency stays off the start-up path (each says why in a comment), and it cannot make an
import-time cycle.
"""

from __future__ import annotations

import ast

from sourcetree import PACKAGES, graph, modules, parse, resolve


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


def test_no_import_cycles() -> None:
    assert cycles(graph()) == []


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
