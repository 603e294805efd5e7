"""The package's import graph (issue 13, item 6): no cycles among module-level imports, and no private
name imported from another module. Read from the sources with ``ast``, so nothing is imported to check.

Imports inside functions are left out of the cycle check on purpose: a deferred import is how a heavy
optional dependency stays off the start-up path (each says why in a comment), and it cannot make an
import-time cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("hpubench", "reports", "workloads")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for top in PACKAGES for p in (ROOT / top).rglob("*.py")}


def _resolve(mod: str, node: ast.ImportFrom, is_pkg: bool) -> str:
    if not node.level:
        return node.module or ""
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def top_level_imports(mod: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Modules of ours that ``mod`` imports at import time (module body, not functions or TYPE_CHECKING)."""
    tree = ast.parse(path.read_text())
    out: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, ast.Import):
                out.update(a.name for a in node.names if a.name in known)
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(mod, node, path.name == "__init__.py")
                for a in node.names:
                    sub = f"{target}.{a.name}"
                    out.add(sub if sub in known else target)
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                for block in ("body", "orelse", "finalbody", "handlers"):
                    for child in getattr(node, block, []) or []:
                        visit(child.body if isinstance(child, ast.ExceptHandler) else [child])

    visit(tree.body)
    return {m for m in out if m in known and m != mod}


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


def graph() -> dict[str, set[str]]:
    """Module -> the modules of ours it imports at import time. A submodule's implicit import of its parent
    package is not an edge: Python always runs the parent first, whatever the submodule imports."""
    known = modules()
    return {m: top_level_imports(m, p, known) for m, p in known.items()}


def test_no_import_cycles() -> None:
    assert cycles(graph()) == []


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")  # __version__ and the like are public


def test_no_private_names_imported_across_modules() -> None:
    known = modules()
    bad = []
    for mod, path in known.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                target = _resolve(mod, node, path.name == "__init__.py")
                if target.split(".")[0] in PACKAGES:
                    bad += [f"{mod}: from {target} import {a.name}" for a in node.names if private(a.name)]
    assert bad == []


def test_the_cycle_finder_finds_one() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
