"""The package's layout rules (issue 13), read from the sources with ``ast`` so nothing of the package is
imported to check them:

1. no module over 500 lines, no class over 200 lines, no function over 80 lines (nested ones counted
   inside their parent too);
2. hpubench.plan and hpubench.analysis do not import torch at import time, however indirectly;
3. every import inside a function says why it is deferred (a comment with the word ``deferred``);
4. hpubench is laid out in its stage subpackages, with only a few modules at the top;
5. no doc, benchmark or test names a module path that does not exist.

Each check is a function of a source tree or string, and each has a test on a synthetic case that shows it
flags a violation, so none of them can pass by checking nothing.
"""

from __future__ import annotations

import ast
import re
from collections import deque
from pathlib import Path

from sourcetree import PACKAGES, ROOT, imported_names, modules, parse, top_level_imports

MAX_MODULE_LINES = 500
MAX_CLASS_LINES = 200
MAX_FUNCTION_LINES = 80


# 1. Sizes ------------------------------------------------------------------------------------------------


def oversized(files: dict[str, str], root: Path = ROOT) -> list[str]:
    """``path: N lines`` for each module over MAX_MODULE_LINES and ``path:line class C: N lines`` for each
    class (nested ones included, decorators counted) over MAX_CLASS_LINES; ``files`` maps path to source."""
    bad = []
    for path, text in files.items():
        n = len(text.splitlines())
        if n > MAX_MODULE_LINES:
            bad.append(f"{path}: {n} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                size = (node.end_lineno or node.lineno) - first + 1
                kind, limit = (
                    ("class", MAX_CLASS_LINES)
                    if isinstance(node, ast.ClassDef)
                    else ("def", MAX_FUNCTION_LINES)
                )
                if size > limit:
                    bad.append(f"{path}:{node.lineno} {kind} {node.name}: {size} lines")
    return bad


def sources(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in modules(root, packages).values()}


def test_no_module_over_500_lines_nor_class_over_200_nor_function_over_80() -> None:
    bad = oversized(sources())
    assert not bad, "too large:\n" + "\n".join(bad)


def test_the_size_check_flags_a_long_module_and_a_long_class() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_CLASS_LINES))
    small = f"@decorated\nclass Big:\n{body}\n"  # 202 lines counting the decorator
    assert oversized({"a.py": small}) == ["a.py:2 class Big: 202 lines"]
    long = "x = 1\n" * (MAX_MODULE_LINES + 1)
    assert oversized({"b.py": long}) == ["b.py: 501 lines"]
    assert oversized({"c.py": "x = 1\n" * MAX_MODULE_LINES}) == []
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    assert oversized({"d.py": f"def long():\n{body}\n"}) == ["d.py:1 def long: 81 lines"]
    assert oversized({"e.py": f"def fits():\n{body[: body.rindex(chr(10))]}\n"}) == []


# 2. No torch at import time in plan and analysis -----------------------------------------------------------

TORCH_FREE = ("hpubench.plan", "hpubench.analysis")


def parents(mod: str) -> list[str]:
    """The packages Python imports before ``mod``: ``a.b.c`` -> ``a``, ``a.b``."""
    parts = mod.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def import_chain(start: str, dependency: str, known: dict[str, Path]) -> list[str] | None:
    """The shortest chain of import-time imports by which importing ``start`` imports ``dependency`` (a
    top-level name such as ``torch``), ending with the module that imports it; None if it does not."""
    return import_chains([start], dependency, known)[start]


def import_chains(starts: list[str], dependency: str, known: dict[str, Path]) -> dict[str, list[str] | None]:
    """import_chain for each of ``starts``, reading each module's imports once."""
    edges = {m: top_level_imports(m, p, known) | set(parents(m)) for m, p in known.items()}
    direct = {m for m, p in known.items() if any(n.split(".")[0] == dependency for n in imported_names(m, p))}
    out: dict[str, list[str] | None] = {}
    for start in starts:
        came_from: dict[str, str | None] = {start: None}
        queue = deque([start])
        out[start] = None
        while queue:
            mod = queue.popleft()
            if mod in direct:
                chain = [mod]
                while (prev := came_from[chain[-1]]) is not None:
                    chain.append(prev)
                out[start] = [*reversed(chain), dependency]
                break
            for nxt in sorted(edges[mod] - came_from.keys()):
                if nxt in known:
                    came_from[nxt] = mod
                    queue.append(nxt)
    return out


def torch_at_import(prefixes: tuple[str, ...], known: dict[str, Path]) -> list[str]:
    """``a -> b -> torch`` for each module under ``prefixes`` that imports torch when imported."""
    starts = [m for m in sorted(known) if any(m == p or m.startswith(p + ".") for p in prefixes)]
    chains = import_chains(starts, "torch", known)
    return [" -> ".join(chain) for chain in chains.values() if chain]


def test_plan_and_analysis_do_not_import_torch_at_import_time() -> None:
    bad = torch_at_import(TORCH_FREE, modules())
    assert not bad, "imports torch at import time:\n" + "\n".join(bad)


def test_the_torch_check_sees_a_module_that_imports_torch() -> None:
    # The real tree: trainstep imports torch at its top, so the chain finder must say so.
    assert import_chain("hpubench.run.trainstep", "torch", modules()) == ["hpubench.run.trainstep", "torch"]


def write_tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_the_torch_check_follows_imports_and_parent_packages(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/plan/__init__.py": "",
            "pkg/plan/direct.py": "from pkg.core import heavy\n",
            "pkg/plan/relative.py": "from ..core.heavy import train\n",
            "pkg/plan/deferred.py": "def f():\n    import torch  # deferred\n",
            "pkg/plan/typing_only.py": "import typing\nif typing.TYPE_CHECKING:\n    import torch\n",
            "pkg/plan/sub/__init__.py": "from pkg.core import heavy\n",
            "pkg/plan/sub/leaf.py": "x = 1\n",  # imports torch only through its parent package
            "pkg/core/__init__.py": "",
            "pkg/core/heavy.py": "import torch.nn\n\ndef train():\n    pass\n",
        },
    )
    known = modules(tmp_path, ("pkg",))
    assert torch_at_import(("pkg.plan",), known) == [
        "pkg.plan.direct -> pkg.core.heavy -> torch",
        "pkg.plan.relative -> pkg.core.heavy -> torch",
        "pkg.plan.sub -> pkg.core.heavy -> torch",
        "pkg.plan.sub.leaf -> pkg.plan.sub -> pkg.core.heavy -> torch",
    ]


# 3. Imports inside functions say why they are deferred --------------------------------------------------


def undeferred_imports(text: str) -> list[int]:
    """Line numbers of imports inside a function body that carry no comment containing ``deferred`` (any
    case) on their own lines or just above. Going up from the import, the lines just above are the other
    imports of the same contiguous block, a ``try:`` that opens it, and the comment lines above those: a
    comment above the block covers each import in it."""
    tree = ast.parse(text)
    lines = text.splitlines()
    ends: dict[int, int] = {}  # last line of an import inside a function -> its first line
    found: dict[int, int] = {}  # first line -> last line

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)) and in_function:
                found[child.lineno] = child.end_lineno or child.lineno
                ends[found[child.lineno]] = child.lineno
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            visit(child, inner)

    visit(tree, False)

    def says_deferred(first: int, last: int) -> bool:
        # Only import statements, comment lines and ``try:`` lines are read: none holds a string, so the
        # first ``#`` starts the comment.
        return any("deferred" in lines[n - 1].partition("#")[2].lower() for n in range(first, last + 1))

    bad = []
    for first, last in sorted(found.items()):
        ok = says_deferred(first, last)
        n = first - 1
        while not ok and n >= 1:
            stripped = lines[n - 1].strip()
            if n in ends:  # the import just above, in the same block: its own comment is its own
                n = ends[n]
            elif stripped.startswith("#") or stripped.startswith("try:"):
                ok = says_deferred(n, n)
            else:
                break
            n -= 1
        if not ok:
            bad.append(first)
    return bad


def test_imports_inside_functions_say_they_are_deferred() -> None:
    bad = [f"{path}:{line}" for path, text in sources().items() for line in undeferred_imports(text)]
    assert not bad, "imports inside functions without a `deferred` comment:\n" + "\n".join(bad)


def test_the_deferred_check_flags_an_import_without_a_reason() -> None:
    source = '''\
import os  # module level: no comment needed


def same_line():
    import torch  # deferred: heavy


def line_above():
    """Doc."""
    # Deferred: heavy, and the comment may run
    # over several lines.
    import torch
    from torch import nn
    from torch.profiler import (
        profile,
    )
    return torch, nn, profile


def in_try():
    # deferred: optional
    try:
        import pynvml
    except ImportError:
        pynvml = None


def no_reason():
    """Doc."""
    import json
    # a comment that says nothing
    import csv  # the wrong word
    return json, csv


def reason_too_far():
    # deferred: not adjacent

    import torch


class Holder:
    def method(self):
        def nested():
            import pickle
        return nested

    import abc  # a class body runs at import time, like the module: not this rule's business
'''
    assert undeferred_imports(source) == [30, 32, 39, 45]


# 4. The subpackage layout --------------------------------------------------------------------------------

SUBPACKAGES = {
    "plan",
    "run",
    "measure",
    "accelerators",
    "precision",
    "strategy",
    "store",
    "analysis",
    "present",
    "plugins",
}
# numfmt sits beside errors: both are foundations every layer may use (test_import_graph.LAYERS).
TOP_MODULES = {"api", "errors", "numfmt", "pytest_plugin", "__main__", "__init__"}


def layout_problems(package: Path) -> list[str]:
    """What is missing from or extra in ``package``'s top level, and any folder of modules without an
    ``__init__.py``."""
    subpackages = {p.parent.name for p in package.glob("*/__init__.py")}
    top = {p.stem for p in package.glob("*.py")}
    bad = [f"missing subpackage {name}" for name in sorted(SUBPACKAGES - subpackages)]
    bad += [f"module at the top level: {name}.py" for name in sorted(top - TOP_MODULES)]
    folders = {p.parent for p in package.rglob("*.py")} - {package}
    bad += [
        f"no __init__.py in {d.relative_to(package.parent)}"
        for d in sorted(folders)
        if not (d / "__init__.py").exists()
    ]
    return bad


def test_hpubench_is_laid_out_in_its_stage_subpackages() -> None:
    assert layout_problems(ROOT / "hpubench") == []


def test_the_layout_check_flags_a_missing_subpackage_and_a_stray_module(tmp_path: Path) -> None:
    files = {f"pkg/{name}/__init__.py": "" for name in SUBPACKAGES - {"store"}}
    files |= {"pkg/__init__.py": "", "pkg/api.py": "", "pkg/helpers.py": "", "pkg/run/loose/mod.py": ""}
    write_tree(tmp_path, files)
    assert layout_problems(tmp_path / "pkg") == [
        "missing subpackage store",
        "module at the top level: helpers.py",
        "no __init__.py in pkg/run/loose",
    ]


# 5. Module paths named in docs and tests exist -----------------------------------------------------------

FILE_SUFFIXES = {"json", "toml", "yaml", "yml", "log", "txt", "csv", "html", "xml", "md", "py", "lock", "cfg"}


def named_paths(text: str, package: str) -> set[str]:
    """Dotted names (``pkg.a.b``) and file or folder paths (``pkg/a/b.py``, ``pkg/a/``) of ``package`` in
    ``text``. A name like ``pkg.json`` is a file, not a module, and is left out."""
    pre = r"(?<![\w./-])" + re.escape(package)
    dotted = set(re.findall(pre + r"(?:\.[A-Za-z_]\w*)+", text))
    dotted = {d for d in dotted if not (d.count(".") == 1 and d.split(".")[1] in FILE_SUFFIXES)}
    paths = set(re.findall(pre + r"/(?:\w+/)*(?:\w+\.py(?!\w))?", text))
    return dotted | paths


def top_level_names(path: Path) -> set[str]:
    """Names a module binds at import time: defs, classes, assignments and imports, in its body and in
    its top-level ``if``/``try`` blocks."""
    names: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                for block in ("body", "orelse", "finalbody", "handlers"):
                    for child in getattr(node, block, []) or []:
                        visit(child.body if isinstance(child, ast.ExceptHandler) else [child])

    visit(parse(path).body)
    return names


def entry_point_groups(known: dict[str, Path]) -> set[str]:
    """The ``ENTRY_POINT_GROUP = "..."`` strings of our modules: entry-point group names, not modules."""
    groups = set()
    for path in known.values():
        for node in parse(path).body:
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Constant)
                and any(isinstance(t, ast.Name) and t.id == "ENTRY_POINT_GROUP" for t in node.targets)
            ):
                groups.add(str(node.value.value))
    return groups


def dangling(name: str, known: dict[str, Path], root: Path, groups: set[str]) -> bool:
    """Whether ``name`` (dotted or a path) names nothing: for a dotted name, the longest prefix that is a
    module or package, then at most the one name after it, which that module must bind at its top level
    (what follows is an attribute of that and is not checked)."""
    if "/" in name:
        return not (root / name).exists()
    if name in groups:
        return False
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        mod = ".".join(parts[:i])
        if mod in known:
            return i < len(parts) and parts[i] not in top_level_names(known[mod])
    return True


def dangling_paths(files: list[Path], root: Path, package: str, known: dict[str, Path]) -> list[str]:
    groups = entry_point_groups(known)
    bad = []
    for path in files:
        for name in sorted(named_paths(path.read_text(), package)):
            if dangling(name, known, root, groups):
                bad.append(f"{path.relative_to(root)}: {name}")
    return bad


def text_files(root: Path = ROOT) -> list[Path]:
    names = ["README.md", "Makefile", "pyproject.toml", "docs/*.md", "benchmarks/*.py", "tests/**/*.py"]
    return sorted(p for pattern in names for p in root.glob(pattern) if p.is_file())


def test_docs_and_tests_name_only_modules_that_exist() -> None:
    bad = dangling_paths(text_files(), ROOT, "hpubench", modules())
    assert not bad, "names a module or file that does not exist:\n" + "\n".join(bad)


def test_the_path_check_flags_a_module_that_moved(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            "pkg/__init__.py": "__version__ = '1'\n",
            "pkg/store/__init__.py": "",
            "pkg/store/results.py": "import time\n\nclass Store:\n    pass\n\ndef load():\n    pass\n",
            "pkg/groups.py": 'ENTRY_POINT_GROUP = "pkg.accelerators"\n',
            "README.md": """\
Fine: pkg.store.results, pkg.store, pkg.store.results.load, pkg.store.results.Store.write, pkg.__version__,
`mock.patch("pkg.store.results.time.monotonic")`, pkg/store/results.py, pkg/store/, the group
pkg.accelerators, a file pkg.json, mypkg.old, the end of a sentence in pkg.store.
Moved or gone: pkg.store.old, pkg.results.load, pkg.store.results.gone, pkg/results.py, pkg/old/.
""",
        },
    )
    known = modules(tmp_path, ("pkg",))
    assert dangling_paths([tmp_path / "README.md"], tmp_path, "pkg", known) == [
        "README.md: pkg.results.load",
        "README.md: pkg.store.old",
        "README.md: pkg.store.results.gone",
        "README.md: pkg/old/",
        "README.md: pkg/results.py",
    ]
