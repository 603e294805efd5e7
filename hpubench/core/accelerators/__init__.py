"""Accelerator registry. Adding an accelerator is one new module here that calls ``register``."""

from __future__ import annotations

from collections.abc import Mapping

from hpubench.core.accelerators.base import Accelerator, release_all

__all__ = ["Accelerator", "check_environment", "fork_server_env", "get", "names", "register", "release_all"]

_REGISTRY: dict[str, type[Accelerator]] = {}


def register(cls: type[Accelerator]) -> type[Accelerator]:
    _REGISTRY[cls.name] = cls
    return cls


def get(name: str) -> type[Accelerator]:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown accelerator {name!r}; known: {', '.join(names())}") from None


def fork_server_env() -> dict[str, str]:
    """Every accelerator's ``fork_server_env``, merged: the environment all fork servers share."""
    env: dict[str, str] = {}
    for cls in _REGISTRY.values():
        env.update(cls.fork_server_env())
    return env


def check_environment(environ: Mapping[str, str]) -> None:
    """Every accelerator's ``check_environment``: the first bad setting raises its one-line UsageError."""
    for cls in _REGISTRY.values():
        cls.check_environment(environ)


def names() -> list[str]:
    return sorted(_REGISTRY, key=lambda n: -_REGISTRY[n].auto_priority)


# The built-in accelerators register themselves on import (cheap: they import torch lazily).
from hpubench.core.accelerators import cpu, cuda, hpu  # noqa: E402, F401
