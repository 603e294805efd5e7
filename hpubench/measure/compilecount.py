"""Counting graph compilations in a window of steps: proof that the measured steps ran in steady state.

A shape change or a dynamo recompile inside the measured steps puts compile time into the figure. Each
source of compilations is a counter read twice, after the warm-up and after the measured steps; the
accelerator (``Accelerator.compile_counter``) says which sources its device has: torch.compile's own
counters on every device, CUDA graph captures, the HPU bridge's graph compilations.

Sources count at different layers, so one event can show in two of them (a dynamo recompile on HPU is
also one or more bridge graph compilations). The window's count is therefore the largest of the sources'
deltas, a lower bound on the distinct compilations; every source's delta is kept beside it.
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

    ``frames_total`` counts frames handed to dynamo's converter: each first compile of a frame and each
    recompile after a guard failure (a new shape, a new dtype); ``unique_graphs`` the FX graphs it
    produced. The module is read from ``sys.modules`` rather than imported: importing torch._dynamo takes
    seconds, and a process that never imported it compiled nothing (its counters would start at zero).
    """

    name = "torch._dynamo frames compiled (counters frames.total; graphs: stats.unique_graphs)"

    def snapshot(self) -> dict[str, int]:
        utils = sys.modules.get("torch._dynamo.utils")
        counters = getattr(utils, "counters", None)
        if counters is None:
            return {"dynamo_frames": 0, "dynamo_graphs": 0}
        return {
            "dynamo_frames": int(counters["frames"]["total"]),
            "dynamo_graphs": int(counters["stats"]["unique_graphs"]),
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
