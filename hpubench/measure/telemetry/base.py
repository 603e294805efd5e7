"""The one small interface every telemetry source implements: open, read a reading, close.

A source reports only what its device really measures; a field it cannot read stays None, because a
report that shows 0 W for "not measured" is worse than one that shows nothing. Opening raises
``TelemetryUnavailable`` with a one-line reason, which the record keeps so "absent" is always explained.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, TypeVar

T = TypeVar("T")


class TelemetryUnavailable(Exception):
    """No telemetry from this source here; the message says why (and how to get it, where possible)."""


@dataclass(frozen=True)
class Reading:
    """One poll of a source. ``t`` is ``time.perf_counter()`` so readings line up with step timings."""

    t: float
    power_w: float | None = None
    energy_j: float | None = None  # a cumulative counter (wraps undone); only differences mean anything
    utilisation_pct: float | None = None
    temperature_c: float | None = None


class TelemetrySource(ABC):
    name: ClassVar[str]  # "hlml", "nvml", "rapl"
    scope: ClassVar[str]  # what the figures cover, e.g. "one GPU board"; RAPL covers the whole socket
    # Where the energy counter advances in coarse steps, the sampler reads it alone this often between
    # full readings, so the summary can take the energy between two steps (``counter.py``).
    energy_poll_s: ClassVar[float | None] = None

    def __init__(self) -> None:
        self.device = ""  # what the source says it is measuring, e.g. the board name
        self.notes: list[str] = []  # caveats a reader of the figures must know
        self.errors: dict[str, str] = {}  # field -> first error; that field is not polled again

    @abstractmethod
    def read(self) -> Reading: ...

    def read_energy(self) -> Reading:
        """A reading of the energy counter alone (sources with ``energy_poll_s`` make it cheap)."""
        return self.read()

    def close(self) -> None:
        """Release the library handle; never raises (called from cleanup paths)."""

    def _field(self, name: str, fn: Callable[[], T]) -> T | None:
        """One field of a reading; a field that fails once is dropped for the rest of the run.

        Devices answer "not supported" for some queries (no energy counter before Volta, no sensor), and
        asking again every 100 ms would only cost time inside the measured window.
        """
        if name in self.errors:
            return None
        try:
            return fn()
        except Exception as exc:
            self.errors[name] = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
            return None

    @staticmethod
    def now() -> float:
        return time.perf_counter()
