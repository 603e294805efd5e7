"""Applies the mutant named by ``HPUBENCH_MUTANT`` (``mutants.py``) right after its module is imported, in
every process with this directory on its path. Nothing happens without the variable."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
from types import ModuleType
from typing import Any

_NAME = os.environ.get("HPUBENCH_MUTANT")


class _PatchAfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target
        self.inner: Any = None

    def find_spec(
        self, fullname: str, path: Any, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.target:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                self.inner, spec.loader = spec.loader, self
                return spec
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.inner.exec_module(module)
        import mutants  # deferred: only a mutated process needs it

        mutants.apply(_NAME, module)


if _NAME:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import mutants

    sys.meta_path.insert(0, _PatchAfterImport(mutants.MUTANTS[_NAME].module))
