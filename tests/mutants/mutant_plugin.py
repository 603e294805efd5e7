"""The mutant in the pytest process itself: pytest's assertion rewriter imports hpubench's modules ahead of
``sitecustomize``'s import hook (hpubench is a pytest plugin), so the patch is applied here, once pytest is
configured and before any test module is collected."""

from __future__ import annotations

import importlib
import os

import pytest
from mutants import ENV, MUTANTS


def pytest_configure(config: pytest.Config) -> None:
    name = os.environ.get(ENV)
    if name:
        mutant = MUTANTS[name]
        mutant.patch(importlib.import_module(mutant.module))
