"""The doubles of tests/fakes in the test process: where they live, and how to import them fresh and forget
them, so that each test gets the bridge in its own mode (the bridge fixes the mode at import) and a fresh
HLML. Shared by the contract tests and the in-process HPU and HLML tests."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

FAKES = Path(__file__).resolve().parent / "fakes"
# Variables the doubles or the bridge read: a test starts from none of them.
FOREIGN = ("PT_HPU", "HPUBENCH_FAKE", "HABANA_", "HLS_")


def purge_double() -> None:
    """Forget every imported piece of the double and undo what it did to this process: the card it
    acquired is released (C5), its HPU device retired, torch's Generator and autocast restored (C1, C9),
    its import hooks and lazy-mode module hook removed, and a ``HABANA_PROFILE`` it defaulted taken back."""
    # Deferred: tests/conftest.py imports this module in every session, most of which never load torch.
    import torch
    import torch.nn.modules.module as module_mod

    cards = sys.modules.get("habana_frameworks._cards")
    if cards is not None:
        cards.release()  # or later workers could not have the card
    runtime = sys.modules.get("habana_frameworks._runtime")
    if runtime is not None:
        runtime.retire()  # its device runtime stays loaded, but torch sees no HPU any more
    core = sys.modules.get("habana_frameworks.torch.core")
    if getattr(core, "PROFILE_SET_BY_BRIDGE", False):
        os.environ.pop(core.PROFILE_ENV, None)  # type: ignore[union-attr]
    torch.Generator = torch._C.Generator  # type: ignore[misc]  (the double's refusing one, C1)
    torch.autocast = torch.amp.autocast_mode.autocast  # type: ignore[misc]  (C9 on first-gen)
    for name in [n for n in sys.modules if n == "habana_frameworks" or n.startswith("habana_frameworks.")]:
        del sys.modules[name]
    hpu_module = sys.modules.get("torch.hpu")
    if isinstance(hpu_module, ModuleType) and "habana_frameworks" in getattr(hpu_module, "__name__", ""):
        del sys.modules["torch.hpu"]
    if "habana_frameworks" in getattr(getattr(torch, "hpu", None), "__name__", ""):
        delattr(torch, "hpu")
    sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "hpubench_double_hook", None)]
    # A lazy-mode double watches every module call through one global forward pre-hook; left behind, it
    # would fire in later tests of this process (and fail there, the double's modules being gone).
    hook = getattr(module_mod, "_hpubench_double_lazy_hook", None)
    if hook is not None:
        hook.remove()
        module_mod._hpubench_double_lazy_hook = None


def load_runtime_early() -> None:
    """Load the double's device runtime into this process and retire it at once, before any test runs a
    backward: autograd sets up its devices at a process's first backward, and an HPU registered after that
    fails every backward on it ("Cannot access accelerator device"), whichever test ran first. On a Gaudi
    the bridge loads first; this puts the double in the same place. The modules are forgotten again, so
    no test finds ``habana_frameworks`` importable unless it asks for the double."""
    sys.path.insert(0, str(FAKES))
    try:
        runtime = importlib.import_module("habana_frameworks._runtime")
        runtime.load(0)
    finally:
        sys.path.remove(str(FAKES))
        purge_double()


# The double's own knobs and the bridge's mode: a fresh import starts from none of them.
DOUBLE_ENV = (
    "PT_HPU_LAZY_MODE",
    "HPUBENCH_FAKE_HPU_NAME",
    "HPUBENCH_FAKE_HPU_COUNT",
    "HPUBENCH_FAKE_HPU_CALL_LOG",
)

Load = Callable[..., ModuleType]


def fresh_bridge(monkeypatch: pytest.MonkeyPatch) -> Iterator[Load]:
    """A loader that imports the bridge double fresh with the given mode and knobs and returns
    ``habana_frameworks.torch.core``; the process's environment and modules are restored afterwards."""
    saved_env = dict(os.environ)
    purge_double()
    monkeypatch.syspath_prepend(str(FAKES))

    def load(lazy_mode: str | None = None, name: str = "GAUDI2", count: int = 8, **extra: str) -> ModuleType:
        for var in DOUBLE_ENV:
            os.environ.pop(var, None)
        if lazy_mode is not None:
            os.environ["PT_HPU_LAZY_MODE"] = lazy_mode
        os.environ["HPUBENCH_FAKE_HPU_NAME"] = name
        os.environ["HPUBENCH_FAKE_HPU_COUNT"] = str(count)
        os.environ.update(extra)
        purge_double()
        return importlib.import_module("habana_frameworks.torch.core")

    yield load
    purge_double()
    os.environ.clear()
    os.environ.update(saved_env)


def _forget_pyhlml() -> list[str]:
    return [m for m in sys.modules if m == "pyhlml" or m.startswith("pyhlml.")]


def fresh_pyhlml(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The pyhlml double imported fresh in this process, from an environment without the doubles'
    variables; forgotten again afterwards (the ``pyhlml`` fixture of tests/conftest.py)."""
    for key in [k for k in os.environ if k.startswith(FOREIGN)]:
        monkeypatch.delenv(key)
    monkeypatch.syspath_prepend(str(FAKES))
    for name in _forget_pyhlml():
        monkeypatch.delitem(sys.modules, name)
    import pyhlml  # deferred: only the double on FAKES, put on the path just above, is meant

    yield pyhlml
    for name in _forget_pyhlml():
        sys.modules.pop(name, None)
