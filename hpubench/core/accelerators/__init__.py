"""Accelerator registry. Adding an accelerator is one module that calls ``register``: here for the built-in
ones, or in an installed package that advertises it under the ``hpubench.accelerators`` entry-point group
(``name = "module:Class"``), loaded the first time the registry is asked, in every process.
"""

from __future__ import annotations

import importlib.metadata
import inspect
from collections.abc import Mapping

from hpubench.core.accelerators.base import Accelerator, release_all
from hpubench.errors import UsageError

__all__ = [
    "Accelerator",
    "check_environment",
    "fork_server_env",
    "get",
    "load_entry_points",
    "names",
    "register",
    "release_all",
]

_REGISTRY: dict[str, type[Accelerator]] = {}
ENTRY_POINT_GROUP = "hpubench.accelerators"
_plugins_loaded = False


def register(cls: type[Accelerator]) -> type[Accelerator]:
    _REGISTRY[cls.name] = cls
    return cls


def load_entry_points() -> list[str]:
    """Register the accelerators installed packages advertise (once per process); returns names added.

    A broken one is one line (``UsageError``) naming the entry point and the fix, never skipped: a
    silently missing accelerator would only surface later as an "unknown accelerator".
    """
    global _plugins_loaded
    if _plugins_loaded:
        return []
    _plugins_loaded = True
    added = []
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        where = f"accelerator entry point {ep.name!r} ({ep.value})"
        fix = "fix or uninstall the package that provides it"
        try:
            obj = ep.load()
        except Exception as exc:
            raise UsageError(f"{where} failed to load: {type(exc).__name__}: {exc}; {fix}") from None
        if not (inspect.isclass(obj) and issubclass(obj, Accelerator)) or inspect.isabstract(obj):
            raise UsageError(f"{where} is not a concrete Accelerator subclass; {fix}")
        if _REGISTRY.get(obj.name) is not obj:
            if obj.name in _REGISTRY:
                raise UsageError(f"{where} reuses the name {obj.name!r} of another accelerator; rename it")
            register(obj)
            added.append(obj.name)
    return added


def get(name: str) -> type[Accelerator]:
    load_entry_points()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown accelerator {name!r}; known: {', '.join(names())}") from None


def fork_server_env() -> dict[str, str]:
    """Every accelerator's ``fork_server_env``, merged: the environment all fork servers share."""
    env: dict[str, str] = {}
    load_entry_points()
    for cls in _REGISTRY.values():
        env.update(cls.fork_server_env())
    return env


def check_environment(environ: Mapping[str, str]) -> None:
    """Every accelerator's ``check_environment``: the first bad setting raises its one-line UsageError."""
    load_entry_points()
    for cls in _REGISTRY.values():
        cls.check_environment(environ)


def names() -> list[str]:
    load_entry_points()
    return sorted(_REGISTRY, key=lambda n: -_REGISTRY[n].auto_priority)


# The built-in accelerators register themselves on import (cheap: they import torch lazily).
from hpubench.core.accelerators import cpu, cuda, hpu  # noqa: E402, F401
