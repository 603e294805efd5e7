"""The ``bridge`` fixture: the habana_frameworks double imported fresh in this process (contract tests)."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator
from types import ModuleType

import pytest
from contract_doubles import FAKES, FOREIGN
from hpudouble import purge_double

Load = Callable[..., ModuleType]


@pytest.fixture
def bridge(monkeypatch: pytest.MonkeyPatch) -> Iterator[Load]:
    """Import the bridge double fresh in this process with the given environment; returns its ``core``.

    The environment is saved and restored as a whole, not through ``monkeypatch``: importing the bridge
    writes to it (C13: ``HLS_MODULE_ID``, ``MASTER_ADDR``, ``ID``, ``TORCHINDUCTOR_COMPILE_THREADS``), and
    ``monkeypatch``, undone after this fixture, would put back a module id the bridge wrote in between,
    pinning every later test's card."""
    saved = dict(os.environ)
    for key in [k for k in os.environ if k.startswith(FOREIGN)]:
        del os.environ[key]
    monkeypatch.syspath_prepend(str(FAKES))
    purge_double()

    def load(**env: str) -> ModuleType:
        os.environ.update(env)
        purge_double()
        return importlib.import_module("habana_frameworks.torch.core")

    yield load
    purge_double()
    os.environ.clear()
    os.environ.update(saved)
