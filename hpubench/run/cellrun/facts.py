"""Runtime facts: what a cell's run learns about itself (device name, batch size, mode in force, ...).

Each step of the worker returns the facts it learned, as ``(name, value)`` pairs in the order it learned
them, and the record merges them once (:func:`runtime_of`): a later value for a name replaces an earlier
one, as writes into one dict did, so a fact a later step refines (the distributed facts) keeps its place.

A failure part way through a step must not lose what was learned before it: a failed or skipped record
still says which device and batch size it ran with. :meth:`Learned.keeping` turns a failure inside it into
:class:`Stopped`, which carries the original exception and every fact known at that point, through any
number of nested steps, to the worker.

Pure: no torch, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

Fact = tuple[str, Any]
Facts = tuple[Fact, ...]


class Stopped(Exception):
    """A cell's own failure (or skip), with the runtime facts learned before it.

    ``cause`` is the exception the cell met, unchanged, so the record's reason and traceback are its own.
    """

    def __init__(self, cause: Exception, facts: Facts) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.facts = facts


class Learned:
    """The facts one step learns, in order, on top of the ``known`` facts earlier steps returned.

    Local to the step that fills it: helpers hand their facts back, the step adds them here. ``new()`` is
    what the step returns; ``known`` facts only travel with a failure, so a failed record keeps them.
    """

    def __init__(self, known: Facts = ()) -> None:
        self._known = known
        self._new: list[Fact] = []

    def add(self, name: str, value: Any) -> None:
        """One fact, learned now: it goes after every fact learned before it."""
        self._new.append((name, value))

    def extend(self, facts: Iterable[Fact]) -> None:
        """The facts a helper returned, in its order."""
        self._new.extend(facts)

    def new(self) -> Facts:
        """This step's facts, for it to return (the known ones are the earlier steps' to report)."""
        return tuple(self._new)

    def get(self, name: str, default: Any = None) -> Any:
        """The latest value of ``name`` among the known and the new facts (the value the record will hold)."""
        return runtime_of(self._known, self._new).get(name, default)

    @contextmanager
    def keeping(self) -> Iterator[None]:
        """A failure inside leaves as :class:`Stopped` with every fact known so far: the known ones, this
        step's, and those of a nested step that stopped."""
        try:
            yield
        except Stopped as stop:
            raise Stopped(stop.cause, (*self._known, *self._new, *stop.facts)) from stop.cause
        except Exception as exc:
            raise Stopped(exc, (*self._known, *self._new)) from exc


def runtime_of(*groups: Iterable[Fact]) -> dict[str, Any]:
    """The record's runtime facts: every group's pairs in order, a later value replacing an earlier one."""
    out: dict[str, Any] = {}
    for group in groups:
        for name, value in group:
            out[name] = value
    return out
