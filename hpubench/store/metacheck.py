"""Types of the ``meta.json`` fields that readers use, checked once where the file is read.

A run's metadata can come from anywhere a ``cells.jsonl`` can (another host, a hand edit, a CI artifact),
and ``baseline save``, ``export``, ``results merge``, ``history`` and ``gate`` each read a few of its
fields: a ``git`` that is a string or a ``started_at`` that is a number crashed them one by one. So the
fields they read are checked here, as :mod:`hpubench.store.recordcheck` checks a record, and everything
else (inventory, platform details, a newer hpubench's additions) is kept as written. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from hpubench.store.recordcheck import is_number, is_whole, short_repr

_TEXT = (
    "hostname",
    "cwd",
    "started_at",
    "platform",
    "machine",
    "python_version",
    "python_executable",
    "hpubench_version",
)


class MetaError(ValueError):
    """A meta.json field of the wrong type; ``field`` is its dotted path."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"field {field}: {problem}")
        self.field = field
        self.problem = problem


def _text(d: Mapping[str, Any], name: str, where: str) -> None:
    v = d.get(name)
    if v is not None and not isinstance(v, str):
        raise MetaError(f"{where}{name}", f"must be a string, got {short_repr(v)}")


def _object(d: Mapping[str, Any], name: str, where: str = "") -> Mapping[str, Any] | None:
    v = d.get(name)
    if v is not None and not isinstance(v, Mapping):
        raise MetaError(f"{where}{name}", f"must be an object, got {short_repr(v)}")
    return v


def _list_of(d: Mapping[str, Any], name: str, where: str, ok: Callable[[object], bool], what: str) -> None:
    v = d.get(name)
    if v is not None and not (isinstance(v, list) and all(ok(x) for x in v)):
        raise MetaError(f"{where}{name}", f"must be a list of {what}, got {short_repr(v)}")


def _check_git(git: Mapping[str, Any]) -> None:
    _text(git, "commit", "git.")
    _text(git, "branch", "git.")
    if git.get("dirty") is not None and not isinstance(git["dirty"], bool):
        raise MetaError("git.dirty", f"must be true or false, got {short_repr(git['dirty'])}")


def _check_run_to_run(figures: Mapping[str, Any]) -> None:
    """Per cell key, the run count and each statistic's spread, as ``baseline save`` stores them."""
    for key, entry in figures.items():
        where = f"run_to_run[{key!r}]"
        if not isinstance(entry, Mapping):
            raise MetaError(where, f"must be an object of statistic: spread, got {short_repr(entry)}")
        for name, v in entry.items():
            if name == "runs" and not (is_whole(v) and v >= 0):
                raise MetaError(f"{where}.runs", f"must be a whole number >= 0, got {short_repr(v)}")
            if not (is_number(v) and math.isfinite(v) and v >= 0):
                raise MetaError(f"{where}.{name}", f"must be a finite number >= 0, got {short_repr(v)}")


def _check_shard(shard: Mapping[str, Any]) -> None:
    for name in ("index", "count"):
        v = shard.get(name)
        if v is not None and not (is_whole(v) and v >= 1):
            raise MetaError(f"shard.{name}", f"must be a whole number >= 1, got {short_repr(v)}")
    _text(shard, "digest", "shard.")

    def pair(x: object) -> bool:
        return isinstance(x, list) and len(x) == 2 and isinstance(x[0], str) and is_whole(x[1])

    _list_of(shard, "partition", "shard.", pair, "[cell key, shard number] pairs")


def check_meta(meta: Mapping[str, Any]) -> None:
    """Raise MetaError for the first field a reader uses whose type is wrong."""
    for name in _TEXT:
        _text(meta, name, "")
    if meta.get("cpu_count") is not None and not (is_whole(meta["cpu_count"]) and meta["cpu_count"] >= 1):
        raise MetaError("cpu_count", f"must be a whole number >= 1, got {short_repr(meta['cpu_count'])}")
    _list_of(meta, "command_line", "", lambda x: isinstance(x, str), "strings")
    _object(meta, "inventory")
    if (git := _object(meta, "git")) is not None:
        _check_git(git)
    if (saved := _object(meta, "baseline")) is not None:
        for name in ("name", "saved_at", "source", "note"):
            _text(saved, name, "baseline.")
    if (figures := _object(meta, "run_to_run")) is not None:
        _check_run_to_run(figures)
    if (shard := _object(meta, "shard")) is not None:
        _check_shard(shard)
    if (merged := _object(meta, "merged")) is not None:
        _list_of(merged, "hosts", "merged.", lambda x: isinstance(x, str), "host names")
        _list_of(merged, "sources", "merged.", lambda x: isinstance(x, Mapping), "objects")
