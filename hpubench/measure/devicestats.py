"""Device memory over the steps of a run (what Lightning's DeviceStatsMonitor logs), kept in the record.

One number (the peak) says a cell fits; the timeline says how it got there: the jump when the optimizer
state appears in the first step, growth that never stops (a leak), the drop after the peak reset.
Samples are taken *between* steps, outside the timed brackets, so they never enter a step time.

Each sample has the normalised fields of ``MemoryStats`` plus the device's own dict where it is small:
on HPU that is the full ``hpu.memory_stats()`` key set (Limit, InUse, MaxInUse, NumAllocs, ...), exactly as
the bridge returns it. CUDA's allocator reports ~100 counters per call; those stay in ``CellResult.memory``
(taken once after the measured steps) rather than in every sample.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from hpubench.measure.memory import MemoryStats

RAW_KEYS_KEPT_MAX = 32
PHASES = ("start", "warmup", "measured")


@dataclass(frozen=True)
class MemorySample:
    step: int  # steps completed when sampled: 0 before the first warm-up step, then 1, 2, ...
    phase: str  # "start" | "warmup" | "measured": the step just finished was of that phase
    t_s: float  # seconds since the "start" sample
    in_use_bytes: int | None
    peak_allocated_bytes: int | None  # since the last reset (the worker resets after the warm-up)
    limit_bytes: int | None
    num_allocs: int | None = None
    num_frees: int | None = None
    raw: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MemorySample:
        return cls(**data)


def should_sample(phase: str, index: int, every: int, measured_steps: int) -> bool:
    """Every warm-up step (where memory changes most), every ``every``-th measured step, and the last."""
    if every <= 0:
        return False
    if phase != "measured":
        return True
    return index % every == 0 or index == measured_steps - 1


class MemoryTimeline:
    """Collects samples from ``stats`` (the accelerator's ``memory_stats``) at the steps chosen above."""

    def __init__(self, stats: Callable[[], MemoryStats], every: int, measured_steps: int) -> None:
        self._stats = stats
        self.every = every
        self.measured_steps = measured_steps
        self.samples: list[MemorySample] = []
        self._t0: float | None = None
        self._done = 0
        self.error: str | None = None

    @property
    def enabled(self) -> bool:
        return self.every > 0

    def _take(self, phase: str) -> None:
        if self.error is not None:
            return
        now = time.perf_counter()
        if self._t0 is None:
            self._t0 = now
        try:
            m = self._stats()
        except Exception as exc:  # a timeline gap must not fail a measured cell
            self.error = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
            return
        raw = dict(m.raw) if len(m.raw) <= RAW_KEYS_KEPT_MAX else {}
        self.samples.append(
            MemorySample(
                step=self._done,
                phase=phase,
                t_s=now - self._t0,
                in_use_bytes=m.in_use_bytes,
                peak_allocated_bytes=m.peak_allocated_bytes,
                limit_bytes=m.limit_bytes,
                num_allocs=m.num_allocs,
                num_frees=m.num_frees,
                raw=raw,
            )
        )

    def start(self) -> None:
        if self.enabled:
            self._take("start")

    def on_step(self, phase: str, index: int) -> None:
        """The ``measure_steps`` hook: called after each step's time is taken."""
        self._done += 1
        if should_sample(phase, index, self.every, self.measured_steps):
            self._take(phase)
