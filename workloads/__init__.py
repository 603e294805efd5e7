"""Workload registry: the reference workloads, entry points (group ``hpubench.workloads``) and files.

Adding a workload is one new module that defines a ``Workload`` subclass decorated with ``register``.
"""

from __future__ import annotations

from workloads.base import Workload

_REGISTRY: dict[str, type[Workload]] = {}


def register(cls: type[Workload]) -> type[Workload]:
    _REGISTRY[cls.name] = cls
    return cls


def get(name: str) -> Workload:
    try:
        return _REGISTRY[name]()
    except KeyError:
        raise KeyError(f"unknown workload {name!r}; known: {', '.join(names())}") from None


def names() -> list[str]:
    return sorted(_REGISTRY)


def catalog() -> dict[str, tuple[str, ...]]:
    """Workload name -> its sizes: the pure facts the matrix validates against."""
    return {n: tuple(_REGISTRY[n].sizes) for n in names()}
