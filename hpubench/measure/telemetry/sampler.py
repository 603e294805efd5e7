"""A background thread polling a telemetry source while the measured steps run.

The thread sleeps on an Event between polls, so it costs the training loop a wake-up every poll and
nothing else; the start and stop readings are taken on the calling thread, at the exact edges of the
measured window. A counter that advances in steps still misses up to one step at each edge; a source
that declares ``energy_poll_s`` has its counter read alone that often between full readings, so the
summary can see its steps and take the energy between two of them.

What the polls cost is kept with them: the thread's own CPU time over the window (``thread_cpu_s``). Its
reads hold the GIL only for their Python part (ctypes releases it around the library call), but a driver
call can contend with the steps' own calls into the same driver. Measured on an H100 host
(``benchmarks/telemetry_cost.py``, one process, rotated rounds): one NVML reading took 2.4 ms of CPU, so
polling the counter every 20 ms kept the thread 10-17% busy (gpt tiny read 0.9735 of its speed without
telemetry in one run; the host was too noisy for its throughput ratios to be trusted, README); on this
2-core VM a trivial reading's wake-up costs ~0.1-0.2 ms. So the energy-only polls are extras within a
CPU budget (``ENERGY_POLL_CPU_BUDGET`` of one core): taken while the thread's CPU so far stays within it,
otherwise left out until the next full reading. The full readings every ``interval_s`` are what the user
asked for and are always taken. On that H100 host with the budget: 20 polls a second instead of 32-51,
the thread 3.8-4.5% of a core (full readings alone: 1.7-3.3%), and a cell's record says the energy-only
polls were held back and what a reading cost.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from hpubench.measure.telemetry.base import Reading, TelemetrySource

ENERGY_POLL_CPU_BUDGET = 0.01  # energy-only polls only while the thread has used at most 1% of a core


def within_budget(cpu_s: float, elapsed_s: float, budget: float = ENERGY_POLL_CPU_BUDGET) -> bool:
    """Whether a thread that used ``cpu_s`` of CPU over ``elapsed_s`` is within ``budget`` of a core."""
    return cpu_s <= budget * elapsed_s


class Sampler:
    def __init__(
        self,
        source: TelemetrySource,
        interval_s: float,
        energy_polls: bool = True,
        cpu_budget: float = ENERGY_POLL_CPU_BUDGET,
    ) -> None:
        """``energy_polls`` False leaves out the energy-only polls a source may declare (full readings
        every ``interval_s`` alone): ``benchmarks/telemetry_cost.py`` prices the two apart. ``cpu_budget``
        is the share of one core the energy-only polls may bring the thread up to."""
        self.source = source
        self.interval_s = interval_s
        self.energy_polls = energy_polls
        self.cpu_budget = cpu_budget
        self.thread_cpu_s: float | None = None  # the polling thread's CPU time, edge readings excluded
        self.window_s: float | None = None  # start() to stop(), wall clock
        self.thread_polls = 0  # readings the thread took (the edge readings are the caller's)
        self.energy_polls_limited = False  # the CPU budget left out energy-only polls at least once
        self._t_start = 0.0
        self.readings: list[Reading] = []
        self.read_errors: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._stopped = False

    def _poll(self, read: Callable[[], Reading] | None = None) -> None:
        try:
            self.readings.append((read or self.source.read)())
        except Exception as exc:  # a source bug must not take the benchmark down
            if len(self.read_errors) < 5:
                self.read_errors.append(" ".join(f"{type(exc).__name__}: {exc}".split())[:200])

    def _loop(self) -> None:
        cpu0 = time.thread_time()
        try:
            self._polls(cpu0)
        finally:
            self.thread_cpu_s = time.thread_time() - cpu0

    def _polls(self, cpu0: float) -> None:
        fast = self.source.energy_poll_s if self.energy_polls else None
        if fast is None or fast >= self.interval_s:
            while not self._stop.wait(self.interval_s):
                self._poll()
                self.thread_polls += 1
            return
        t0 = time.perf_counter()
        next_full = t0 + self.interval_s
        wait = fast
        while not self._stop.wait(wait):
            if time.perf_counter() >= next_full:
                next_full += self.interval_s
                self._poll()
            else:
                self._poll(self.source.read_energy)
            self.thread_polls += 1
            now = time.perf_counter()
            if within_budget(time.thread_time() - cpu0, now - t0, self.cpu_budget):
                wait = fast
            else:  # no energy-only polls until the next full reading
                self.energy_polls_limited = self.energy_polls_limited or now + fast < next_full
                wait = max(0.0, next_full - now)

    def start(self) -> None:
        self._poll()
        self._t_start = time.perf_counter()
        self._thread = threading.Thread(target=self._loop, name="hpubench-telemetry", daemon=True)
        self._thread.start()

    def stop(self) -> list[Reading]:
        """Idempotent: the worker also calls it from cleanup when a step raised."""
        if self._stopped:
            return self.readings
        self._stopped = True
        self.window_s = time.perf_counter() - self._t_start
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10.0)
            self._poll()
        return self.readings

    def cpu_per_poll_s(self) -> float | None:
        """The thread's CPU time per reading it took (wake-up included); None before stop() or without any."""
        if self.thread_cpu_s is None or self.thread_polls == 0:
            return None
        return self.thread_cpu_s / self.thread_polls

    def cpu_share_pct(self) -> float | None:
        """The polling thread's CPU time as a percentage of one core over the window; None before stop()
        or when the thread did not finish."""
        if self.thread_cpu_s is None or not self.window_s:
            return None
        return 100.0 * self.thread_cpu_s / self.window_s
