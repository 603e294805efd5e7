"""Loading one entry-point group of installed plugins, the same way for every kind that has a registry.

Pure of hpubench's registries: the caller checks and registers what comes back. A plugin that fails to
load, or is not the kind its group expects, is one ``UsageError`` naming the entry point and the fix,
never skipped: a silently missing plugin would surface later as an "unknown" name with no hint of why.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable
from typing import Any

from hpubench.errors import UsageError

FIX = "fix or uninstall the package that provides it"


def load_group(group: str, kind: str, wrong_kind: Callable[[object], str | None]) -> list[tuple[str, object]]:
    """(where, object) for every entry point of ``group``; ``wrong_kind(obj)`` names what it should have
    been, or None when it is right. ``where`` ("<kind> entry point 'x' (mod:obj)") prefixes any later
    refusal the caller makes, such as a name already taken."""
    out = []
    for ep in importlib.metadata.entry_points(group=group):
        where = f"{kind} entry point {ep.name!r} ({ep.value})"
        try:
            obj = ep.load()
        except Exception as exc:
            raise UsageError(f"{where} failed to load: {type(exc).__name__}: {exc}; {FIX}") from None
        expected = wrong_kind(obj)
        if expected is not None:
            raise UsageError(f"{where} is not {expected}; {FIX}")
        out.append((where, obj))
    return out


def load_named(group: str, kind: str, cls: type, registry: dict[str, Any]) -> list[str]:
    """Add every entry point of ``group`` (each an instance of ``cls`` with a ``name``) to ``registry``;
    the names added. The same object twice is one entry; another object under a taken name is refused."""
    wrong = lambda obj: None if isinstance(obj, cls) else f"an {cls.__module__}.{cls.__qualname__}"  # noqa: E731
    added = []
    for where, obj in load_group(group, kind, wrong):
        name = obj.name  # type: ignore[attr-defined]
        if registry.get(name) not in (None, obj):
            raise UsageError(f"{where} reuses the name {name!r} of another {kind}; rename it")
        if name not in registry:
            registry[name] = obj
            added.append(name)
    return added
