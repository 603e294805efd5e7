"""What one telemetry reading costs the host: timed before a run (``hpubench doctor``) and by the benchmark.

The sampler's thread reads its source every ``--telemetry-interval`` (and the energy counter alone in
between, within a CPU budget: ``sampler.ENERGY_POLL_CPU_BUDGET``). Where a reading is dear, the full
readings alone take a share of a core that host-bound steps can lose: measured on an H100 host, one NVML
reading took 2.4 ms of CPU, 2.4% of a core at the default 0.1 s. Timing a few readings up front lets
``doctor`` say so before anything runs.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from hpubench.measure.telemetry.base import TelemetrySource, TelemetryUnavailable

DEFAULT_READS = 20


@dataclass(frozen=True)
class ReadCost:
    """Median CPU and wall seconds of one full reading and one energy-only reading, on the calling thread."""

    source: str
    full_cpu_s: float
    full_wall_s: float
    energy_cpu_s: float
    energy_wall_s: float
    reads: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def time_reads(source: TelemetrySource, reads: int = DEFAULT_READS) -> ReadCost:
    """Time ``reads`` full readings and as many energy-only ones (thread CPU time and wall time)."""
    if reads < 1:
        raise ValueError(f"reads must be >= 1, got {reads}")
    medians: list[float] = []
    for read in (source.read, source.read_energy):
        cpu, wall = [], []
        for _ in range(reads):
            c0, w0 = time.thread_time(), time.perf_counter()
            read()
            cpu.append(time.thread_time() - c0)
            wall.append(time.perf_counter() - w0)
        medians += [statistics.median(cpu), statistics.median(wall)]
    return ReadCost(source.name, *medians, reads=reads)


def probe(opener: Callable[[], TelemetrySource], reads: int = DEFAULT_READS) -> dict[str, Any]:
    """JSON-ready: the read cost of the source ``opener`` opens, or why there is none. Never raises."""
    try:
        source = opener()
    except TelemetryUnavailable as exc:
        return {"absent": str(exc)}
    except Exception as exc:  # a broken library is a fact for doctor, not a crash
        return {"error": f"{type(exc).__name__}: {exc}"}
    try:
        return time_reads(source, reads).to_dict()
    except Exception as exc:
        return {"error": f"reading {source.name} failed: {type(exc).__name__}: {exc}"}
    finally:
        with contextlib.suppress(Exception):  # closing a broken source must not hide what was measured
            source.close()
