"""Counting graph compilations in a window of steps: proof that the measured steps ran in steady state.

A shape change or a dynamo recompile inside the measured steps puts compile time into the figure. Each
source of compilations is a counter read twice, after the warm-up and after the measured steps; the
accelerator (``Accelerator.compile_counter``) says which sources its device has: torch.compile's own
counters on every device, CUDA graph captures, the HPU bridge's graph compilations.

Sources count at different layers, so one event can show in two of them (a dynamo recompile on HPU is
also one or more bridge graph compilations). The window's count is therefore the largest of the sources'
deltas, a lower bound on the distinct compilations; every source's delta is kept beside it.

The same headline counters, read after every warm-up step (:class:`CompileProgress`), tell the warm-up
whether the compiler is done (``hpubench.plan.autosteps.decide_warmup``).
"""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


class CompileCounter(ABC):
    """One source of compile events: monotone counts read at any time, named for the record."""

    name: str  # what is counted, for runtime["compile_counter"]

    @abstractmethod
    def snapshot(self) -> dict[str, int]:
        """Current totals, by counter name (monotone between two reads in one process)."""


class DynamoCounter(CompileCounter):
    """torch.compile's own counters (``torch._dynamo.utils.counters``), the same on every device.

    The headline is ``stats.unique_graphs``: the FX graphs dynamo compiled, one per first compile and one
    per recompile after a guard failure (a new shape, a new dtype, a changed Python value).
    ``frames.total`` is kept as detail only: it counts every frame handed to dynamo's frame callback
    without a cached entry, also those it skips at once without tracing (no tensor in the frame), so any
    Python function first called from a compiled region counts there. That is what made DDP compile cells
    read ``recompiled``: DDP rebuilds its buckets in its second step and logs it, and the ``logging``
    frames it calls were counted as compilations (docs/measurements.md, 2026-11-27).
    The module is read from ``sys.modules`` rather than imported: importing torch._dynamo takes seconds,
    and a process that never imported it compiled nothing (its counters would start at zero).
    """

    name = "torch._dynamo graphs compiled (counters stats.unique_graphs; frames seen: frames.total)"

    def snapshot(self) -> dict[str, int]:
        utils = sys.modules.get("torch._dynamo.utils")
        counters = getattr(utils, "counters", None)
        if counters is None:
            return {"dynamo_graphs": 0, "dynamo_frames": 0}
        return {
            "dynamo_graphs": int(counters["stats"]["unique_graphs"]),
            "dynamo_frames": int(counters["frames"]["total"]),
        }


class EventCounter(CompileCounter):
    """Events hpubench itself causes and counts (e.g. the CUDA graph captures it performs)."""

    def __init__(self, name: str, key: str) -> None:
        self.name = name
        self.key = key
        self.count = 0

    def add(self, n: int = 1) -> None:
        self.count += n

    def snapshot(self) -> dict[str, int]:
        return {self.key: self.count}


class Unavailable(CompileCounter):
    """A source that could not be set up: every read fails with the reason, so the record says so."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason

    def snapshot(self) -> dict[str, int]:
        raise RuntimeError(self.reason)


@dataclass(frozen=True)
class CompileWindowResult:
    compiles: int  # the largest source delta (see the module docstring)
    counter: str  # what was counted, for the record
    detail: dict[str, int]  # every counter's delta over the window
    errors: tuple[str, ...] = ()

    def runtime_fields(self) -> dict[str, object]:
        out: dict[str, object] = {
            "compiles_measured": self.compiles,
            "compile_counter": self.counter,
            "compile_detail": dict(self.detail),
        }
        if self.errors:
            out["compile_counter_errors"] = list(self.errors)
        return out


def window_delta(
    before: Mapping[str, int], after: Mapping[str, int], groups: Sequence[Sequence[str]]
) -> tuple[int, dict[str, int]]:
    """Per-counter deltas, and the window's count: the largest delta among each source's first counter.

    ``groups`` lists every source's counter names, its headline counter first (the rest are detail:
    dynamo's graph count describes the same frames). Pure, for the unit tests.
    """
    detail = {k: int(after.get(k, 0)) - int(before.get(k, 0)) for k in after}
    heads = [detail.get(g[0], 0) for g in groups if g]
    return (max(heads) if heads else 0), detail


class CompileWindow:
    """Brackets the measured steps: ``start`` after the warm-up, ``stop`` after the last measured step.

    A source that fails to read is left out with its error recorded, never failing the cell.
    """

    def __init__(self, sources: Sequence[CompileCounter]) -> None:
        self.sources = list(sources)
        self._before: dict[int, dict[str, int]] = {}
        self._after: dict[int, dict[str, int]] = {}
        self.errors: list[str] = []

    def _read(self, into: dict[int, dict[str, int]]) -> None:
        for i, src in enumerate(self.sources):
            try:
                into[i] = src.snapshot()
            except Exception as exc:  # a counter must never fail a measured cell
                self.errors.append(f"{src.name}: {type(exc).__name__}: {exc}"[:300])

    def start(self) -> None:
        self._before.clear()
        self._read(self._before)

    def stop(self) -> None:
        self._after.clear()
        self._read(self._after)

    def result(self) -> CompileWindowResult | None:
        """None when the window never closed (the measured steps did not finish)."""
        read = [i for i in range(len(self.sources)) if i in self._before and i in self._after]
        if not self._after and not self.errors:
            return None
        before: dict[str, int] = {}
        after: dict[str, int] = {}
        groups: list[list[str]] = []
        for i in read:
            before.update(self._before[i])
            after.update(self._after[i])
            groups.append(list(self._after[i]))
        compiles, detail = window_delta(before, after, groups)
        names = [self.sources[i].name for i in read]
        counter = names[0] if len(names) == 1 else "largest of: " + " | ".join(names) if names else "none"
        return CompileWindowResult(compiles, counter, detail, tuple(self.errors))


class CompileProgress:
    """Compile events step by step during the warm-up: what tells it whether the compiler is done.

    Each call returns the events since the previous one (the first call sets the baseline and returns 0),
    counted as the window counts them: the largest delta among the sources' headline counters. A source
    that fails to read is left out, as in :class:`CompileWindow`, which records its error.
    """

    def __init__(self, sources: Sequence[CompileCounter]) -> None:
        self.sources = list(sources)
        self._last: dict[str, int] | None = None

    def _heads(self) -> dict[str, int]:
        heads: dict[str, int] = {}
        for src in self.sources:
            try:
                snap = src.snapshot()
            except Exception:  # a counter must never fail a cell; the window records the error
                continue
            for name, value in list(snap.items())[:1]:  # a source's headline counter comes first
                heads[name] = int(value)
        return heads

    def __call__(self) -> int:
        now = self._heads()
        before, self._last = self._last, now
        if before is None:
            return 0
        deltas = [v - before[k] for k, v in now.items() if k in before]
        return max([0, *deltas])
