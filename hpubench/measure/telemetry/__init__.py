"""Power, energy, utilisation and temperature while the measured steps run, one source per device kind.

Each accelerator names its source (``Accelerator.telemetry_source``): HPU HLML (``habana-pyhlml``), CUDA
NVML (``nvidia-ml-py``), CPU RAPL counters under ``/sys/class/powercap``. Each is optional and imported
lazily: a missing package, driver or permission makes the cell's telemetry *absent with a reason*, never
zero and never a failed cell.

Importing this package imports no device library and no torch (the result store reads these records).
"""

from __future__ import annotations

from collections.abc import Callable

from hpubench.measure.telemetry.base import Reading, TelemetrySource, TelemetryUnavailable
from hpubench.measure.telemetry.sampler import ENERGY_POLL_CPU_BUDGET, Sampler
from hpubench.measure.telemetry.summary import TelemetryResult, TelemetrySample, absent, summarise

__all__ = [
    "Monitor",
    "Reading",
    "Sampler",
    "TelemetryResult",
    "TelemetrySample",
    "TelemetrySource",
    "TelemetryUnavailable",
    "absent",
    "summarise",
]


class Monitor:
    """What the worker drives: open once, sample the measured window, summarise, close.

    Opening happens before the warm-up so library start-up (nvmlInit, hlmlInit) never lands inside the
    measured window; ``start``/``stop`` bracket exactly the measured steps.
    """

    def __init__(self, opener: Callable[[], TelemetrySource], interval_s: float) -> None:
        """``opener`` is the accelerator's ``telemetry_source`` (HLML, NVML, RAPL: one per device kind)."""
        self.interval_s = interval_s
        self.source: TelemetrySource | None = None
        self.reason: str | None = None
        self.sampler: Sampler | None = None
        try:
            self.source = opener()
        except TelemetryUnavailable as exc:
            self.reason = str(exc)
        except Exception as exc:  # a broken library install is "absent", not a failed benchmark
            self.reason = f"telemetry source failed to open: {type(exc).__name__}: {exc}"

    def start(self) -> None:
        if self.source is not None and self.sampler is None:
            self.sampler = Sampler(self.source, self.interval_s)
            self.sampler.start()

    def stop(self) -> None:
        if self.sampler is not None:
            self.sampler.stop()

    def result(
        self, steps: int, samples_per_step: int, price_per_kwh: float | None = None
    ) -> TelemetryResult:
        if self.source is None:
            return absent(self.reason or "no telemetry source")
        if self.sampler is None:
            return absent("telemetry was never started (the measured steps did not run)")
        self.sampler.stop()
        notes = list(self.source.notes)
        notes += [f"{field} not read: {err}" for field, err in self.source.errors.items()]
        notes += [f"read failed: {err}" for err in self.sampler.read_errors]
        per_poll = self.sampler.cpu_per_poll_s()
        if self.sampler.energy_polls_limited and per_poll is not None:
            notes.append(
                f"energy-only polls held back to keep the sampler within {ENERGY_POLL_CPU_BUDGET:.0%} of a "
                f"core (a reading took ~{per_poll * 1e3:.2g} ms of CPU here); energy_resolution_pct says how "
                "exact the energy still is"
            )
        return summarise(
            self.sampler.readings,
            source=self.source.name,
            steps=steps,
            samples_per_step=samples_per_step,
            interval_s=self.interval_s,
            device=self.source.device or None,
            scope=self.source.scope,
            price_per_kwh=price_per_kwh,
            notes=notes,
            sampler_cpu_pct=self.sampler.cpu_share_pct(),
        )

    def close(self) -> None:
        self.stop()
        if self.source is not None:
            self.source.close()
