"""Accelerators: the interface (``base``), the registry (``registry``) and the built-in devices.

Adding an accelerator is one module that subclasses ``Accelerator`` and calls ``registry.register``: here
for the built-in ones, or in an installed package under the ``hpubench.accelerators`` entry-point group.
"""

from __future__ import annotations

from hpubench.accelerators import cpu, cuda, hpu  # noqa: F401  (the built-ins register on import)
from hpubench.accelerators.base import Accelerator, release_all
from hpubench.accelerators.registry import (
    ENTRY_POINT_GROUP,
    check_environment,
    fork_server_env,
    get,
    kinds,
    load_entry_points,
    names,
    register,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "Accelerator",
    "check_environment",
    "fork_server_env",
    "get",
    "kinds",
    "load_entry_points",
    "names",
    "register",
    "release_all",
]
