"""Runs at interpreter start when ``tests/fakes`` is on PYTHONPATH (worker subprocesses in tests).

Stock CPU torch cannot allocate on the ``"hpu"`` device, so with the habana_frameworks test double the
"HPU" tensors live in host memory: ``HPUAccelerator.torch_device`` is made to return the double's
stand-in device (``cpu:0``, ``habana_frameworks._generator.STAND_IN``), host memory that the double
still recognises as the HPU device (a ``torch.Generator`` on it is refused, contract C1).
The patch is applied by an import hook the moment ``hpubench.core.accelerators.hpu`` is imported (and
again on every re-import), so nothing is imported at start-up and processes that never touch hpubench
pay nothing.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import Any

TARGET = "hpubench.core.accelerators.hpu"


def cpu_torch_device(self: Any) -> Any:
    from habana_frameworks._generator import STAND_IN

    return STAND_IN


def patch(module: ModuleType) -> None:
    module.HPUAccelerator.torch_device = cpu_torch_device


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, inner: importlib.abc.Loader) -> None:
        self._inner = inner

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._inner.exec_module(module)
        patch(module)


class _PatchHPUPlacement(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Any, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != TARGET:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _PatchingLoader(spec.loader)
                return spec
        return None


if TARGET in sys.modules:
    patch(sys.modules[TARGET])
if not any(isinstance(f, _PatchHPUPlacement) for f in sys.meta_path):
    sys.meta_path.insert(0, _PatchHPUPlacement())
