"""The accelerator registry: one name per ``Accelerator`` subclass, built-in or installed.

Built-ins register when ``hpubench.accelerators`` imports them; an installed package advertises its
accelerator under the ``hpubench.accelerators`` entry-point group (``name = "module:Class"``), loaded the
first time the registry is asked, in every process. Kept apart from the package's ``__init__`` so the
built-in modules can register without importing the package that imports them.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping

from hpubench.accelerators.base import Accelerator
from hpubench.errors import UsageError
from hpubench.plugins.entrypoints import load_group

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
    concrete = lambda obj: (  # noqa: E731
        None
        if inspect.isclass(obj) and issubclass(obj, Accelerator) and not inspect.isabstract(obj)
        else "a concrete Accelerator subclass"
    )
    for where, obj in load_group(ENTRY_POINT_GROUP, "accelerator", concrete):
        assert isinstance(obj, type)
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


def kinds() -> list[type[Accelerator]]:
    """Every accelerator class in priority order: what matrix expansion is given to decide skips."""
    return [_REGISTRY[n] for n in names()]
