"""Reading the project's own sources with ``ast``: module names, and the imports each module runs at import
time. Shared by the import-graph and layout tests (tests/unit/test_import_graph.py, test_layout.py), which
check the package without importing any of it. Every function takes the tree's root, so the tests can run
the same code on a small synthetic tree.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("hpubench", "reports", "workloads")


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    """Dotted module name -> its source file, for every module and package under ``packages``."""
    return {module_name(p, root): p for top in packages for p in sorted((root / top).rglob("*.py"))}


@functools.cache
def parse(path: Path) -> ast.Module:
    """The module's syntax tree, parsed once per test session (the tests read and never write sources)."""
    return ast.parse(path.read_text())


def resolve(mod: str, node: ast.ImportFrom, is_pkg: bool) -> str:
    """The absolute module a ``from ... import`` in module ``mod`` names (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def import_time_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements a module runs when imported: its body, including ``if``/``try``/``with`` blocks,
    but not function or class bodies, nor ``if TYPE_CHECKING:`` blocks."""

    def visit(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
        for node in body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                yield node
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                for block in ("body", "orelse", "finalbody", "handlers"):
                    for child in getattr(node, block, []) or []:
                        yield from visit(child.body if isinstance(child, ast.ExceptHandler) else [child])

    return visit(tree.body)


def imported_names(mod: str, path: Path) -> set[str]:
    """Every absolute module name ``mod`` may import at import time: ``import a.b`` gives ``a.b``;
    ``from a import b`` gives both ``a`` and ``a.b`` (``b`` may be a submodule or an attribute)."""
    out: set[str] = set()
    for node in import_time_imports(parse(path)):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        else:
            target = resolve(mod, node, path.name == "__init__.py")
            out.add(target)
            out.update(f"{target}.{a.name}" for a in node.names)
    return out


def every_import(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement a module may run: at import time or later inside a function (a deferred
    import is still a dependency), but not ``if TYPE_CHECKING:`` blocks, which never run."""

    def visit(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                yield from (i for c in child.orelse for i in visit_one(c))
                continue
            yield from visit_one(child)

    def visit_one(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        else:
            yield from visit(node)

    return visit(tree)


def our_imports(mod: str, path: Path, known: dict[str, Path], deferred: bool = False) -> set[str]:
    """Modules of ours that ``mod`` imports: at import time (module body, not functions or TYPE_CHECKING),
    or with ``deferred`` also inside functions. ``from pkg import sub`` is an edge to ``pkg.sub`` when that
    is a module, else to ``pkg``."""
    nodes = every_import(parse(path)) if deferred else import_time_imports(parse(path))
    out: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in known)
        else:
            target = resolve(mod, node, path.name == "__init__.py")
            for a in node.names:
                sub = f"{target}.{a.name}"
                out.add(sub if sub in known else target)
    return {m for m in out if m in known and m != mod}


def top_level_imports(mod: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Modules of ours that ``mod`` imports at import time (module body, not functions or TYPE_CHECKING)."""
    return our_imports(mod, path, known)


def graph(known: dict[str, Path] | None = None, deferred: bool = False) -> dict[str, set[str]]:
    """Module -> the modules of ours it imports (at import time; with ``deferred``, anywhere). A submodule's
    implicit import of its parent package is not an edge: Python always runs the parent first, whatever the
    submodule imports."""
    known = modules() if known is None else known
    return {m: our_imports(m, p, known, deferred) for m, p in known.items()}
