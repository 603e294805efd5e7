"""A background thread polling a telemetry source while the measured steps run.

The thread sleeps on an Event between polls, so it costs the training loop a wake-up every poll and
nothing else; the start and stop readings are taken on the calling thread, at the exact edges of the
measured window. A counter that advances in steps still misses up to one step at each edge; a source
that declares ``energy_poll_s`` has its counter read alone that often between full readings, so the
summary can see its steps and take the energy between two of them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from hpubench.measure.telemetry.base import Reading, TelemetrySource


class Sampler:
    def __init__(self, source: TelemetrySource, interval_s: float) -> None:
        self.source = source
        self.interval_s = interval_s
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
        fast = self.source.energy_poll_s
        if fast is None or fast >= self.interval_s:
            while not self._stop.wait(self.interval_s):
                self._poll()
            return
        next_full = time.perf_counter() + self.interval_s
        while not self._stop.wait(fast):
            if time.perf_counter() >= next_full:
                next_full += self.interval_s
                self._poll()
            else:
                self._poll(self.source.read_energy)

    def start(self) -> None:
        self._poll()
        self._thread = threading.Thread(target=self._loop, name="hpubench-telemetry", daemon=True)
        self._thread.start()

    def stop(self) -> list[Reading]:
        """Idempotent: the worker also calls it from cleanup when a step raised."""
        if self._stopped:
            return self.readings
        self._stopped = True
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10.0)
            self._poll()
        return self.readings
