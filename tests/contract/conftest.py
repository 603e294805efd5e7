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
    """Import the bridge double fresh in this process with the given environment; returns its ``core``."""
    for key in [k for k in os.environ if k.startswith(FOREIGN)]:
        monkeypatch.delenv(key)
    monkeypatch.syspath_prepend(str(FAKES))
    purge_double()

    def load(**env: str) -> ModuleType:
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        purge_double()
        return importlib.import_module("habana_frameworks.torch.core")

    yield load
    purge_double()
