"""From raw telemetry readings to the figures a report shows: mean power, energy per step, samples per kWh.

Pure (no torch, no I/O) so the arithmetic is unit-tested directly. Anything that was not measured is None,
never 0: a 0 W or 0 J figure would read as "free" in a price/performance table.

Energy comes from the source's cumulative counter when it has one (``counter``: taken between two of its
steps where the polls resolve them, with the error its steps allow), else from the trapezoid integral of
the power samples (as good as the sampling interval and the sensor's own averaging).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

from hpubench.measure.telemetry.base import Reading
from hpubench.measure.telemetry.counter import CounterWindow, counter_window

J_PER_KWH = 3.6e6
MAX_SAMPLES_KEPT = 500  # the record keeps an evenly thinned series; the summary uses every reading
RESOLUTION_NOTE_PCT = 5.0  # a counter figure less certain than this says so in the notes
SAMPLER_NOTE_PCT = 1.0  # a sampler thread busier than this (% of a core) says so in the notes


@dataclass(frozen=True)
class TelemetrySample:
    t_s: float  # seconds since the first reading (the start of the measured steps)
    power_w: float | None
    energy_j: float | None  # since the first reading
    utilisation_pct: float | None
    temperature_c: float | None


@dataclass(frozen=True)
class TelemetryResult:
    """Telemetry over the plain measured steps; ``source`` None: absent, and ``absent_reason`` says why."""

    source: str | None  # "hlml", "nvml", "rapl"; None: no telemetry here
    absent_reason: str | None = None
    device: str | None = None
    scope: str | None = None  # what the figures cover (RAPL: the whole socket)
    interval_s: float | None = None
    readings: int = 0
    duration_s: float | None = None
    steps: int | None = None
    samples_per_step: int | None = None
    energy_method: str | None = None  # "counter" | "power-integral"
    energy_j: float | None = None
    energy_resolution_pct: float | None = None  # counter only: the error its steps and the polls allow
    counter_step_s: float | None = None  # counter only: its step period, where the polls resolved it
    # The polling thread's own CPU time over the window, % of one core: about the most its polls can take
    # from the steps' host thread (``sampler.Sampler``).
    sampler_cpu_pct: float | None = None
    mean_power_w: float | None = None
    max_power_w: float | None = None
    energy_per_step_j: float | None = None
    energy_per_sample_j: float | None = None
    samples_per_kwh: float | None = None
    mean_utilisation_pct: float | None = None
    max_temperature_c: float | None = None
    # Only when the user gave --energy-price (currency per kWh): no price is ever assumed.
    energy_price_per_kwh: float | None = None
    energy_cost_per_1m_samples: float | None = None
    energy_cost_per_hour: float | None = None
    notes: tuple[str, ...] = ()
    samples: tuple[TelemetrySample, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TelemetryResult:
        d = dict(data)
        d["notes"] = tuple(d.get("notes") or ())
        d["samples"] = tuple(TelemetrySample(**s) for s in d.get("samples") or ())
        return cls(**d)


def absent(reason: str) -> TelemetryResult:
    return TelemetryResult(source=None, absent_reason=reason)


def _trapezoid(points: Sequence[tuple[float, float]]) -> float:
    return sum((t1 - t0) * (p0 + p1) / 2 for (t0, p0), (t1, p1) in itertools.pairwise(points))


def _thin(samples: list[TelemetrySample], limit: int) -> tuple[TelemetrySample, ...]:
    if len(samples) <= limit:
        return tuple(samples)
    idx = sorted({round(i * (len(samples) - 1) / (limit - 1)) for i in range(limit)})
    return tuple(samples[i] for i in idx)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _resolution_notes(counted: CounterWindow, duration: float) -> list[str]:
    if counted.resolution_pct <= RESOLUTION_NOTE_PCT:
        return []
    if counted.steps_resolved:
        why = f"the counter steps every ~{counted.step_period_s:.3g} s"
        fix = "a longer window narrows it (--min-time)"
    else:
        why = "the polls did not resolve the counter's steps, which may be as coarse as the polling"
        fix = "a shorter --telemetry-interval or a longer window (--min-time) narrows it"
    return [f"energy within +/-{counted.resolution_pct:.0f}% over this {duration:.2f} s window: {why}; {fix}"]


class _Energy(NamedTuple):
    """The window's energy and how it was had: the counter's error and every caveat go into the record."""

    joules: float | None
    method: str | None  # "counter" | "power-integral"; None: no energy figure
    counted: CounterWindow | None  # the counter's window, where the counter advanced
    notes: list[str]


def summarise(
    readings: Sequence[Reading],
    *,
    source: str,
    steps: int,
    samples_per_step: int,
    interval_s: float | None = None,
    device: str | None = None,
    scope: str | None = None,
    price_per_kwh: float | None = None,
    notes: Sequence[str] = (),
    sampler_cpu_pct: float | None = None,
) -> TelemetryResult:
    """Figures over the window from the first to the last reading, which bracket ``steps`` steps."""
    notes = [*notes, *_sampler_notes(sampler_cpu_pct)]
    readings = sorted(readings, key=lambda r: r.t)
    if len(readings) < 2:
        return TelemetryResult(
            source=source,
            device=device,
            scope=scope,
            interval_s=interval_s,
            readings=len(readings),
            sampler_cpu_pct=sampler_cpu_pct,
            notes=(*notes, "fewer than two readings: no window to measure over"),
        )
    t0 = readings[0].t
    duration = readings[-1].t - t0
    powers = [(r.t, r.power_w) for r in readings if r.power_w is not None]
    energy = _window_energy(readings, powers, duration)
    joules = energy.joules
    # Energy over the window is the better mean: power samples are as coarse as the polling.
    mean_power = joules / duration if joules is not None and duration > 0 else _mean([p for _, p in powers])
    per_step, per_sample, per_kwh = _per_work(joules, steps, steps * samples_per_step)
    cost_1m, cost_hour = _costs(price_per_kwh, per_sample, mean_power)
    counted = energy.counted
    return TelemetryResult(
        source=source,
        device=device,
        scope=scope,
        interval_s=interval_s,
        readings=len(readings),
        duration_s=duration,
        steps=steps,
        samples_per_step=samples_per_step,
        energy_method=energy.method,
        energy_j=joules,
        energy_resolution_pct=None if counted is None else counted.resolution_pct,
        counter_step_s=None if counted is None else counted.step_period_s,
        sampler_cpu_pct=sampler_cpu_pct,
        mean_power_w=mean_power,
        max_power_w=max((p for _, p in powers), default=None),
        energy_per_step_j=per_step,
        energy_per_sample_j=per_sample,
        samples_per_kwh=per_kwh,
        mean_utilisation_pct=_mean([r.utilisation_pct for r in readings if r.utilisation_pct is not None]),
        max_temperature_c=max(
            (r.temperature_c for r in readings if r.temperature_c is not None), default=None
        ),
        energy_price_per_kwh=price_per_kwh,
        energy_cost_per_1m_samples=cost_1m,
        energy_cost_per_hour=cost_hour,
        notes=(*notes, *energy.notes),
        samples=_thin(_series(readings), MAX_SAMPLES_KEPT),
    )


def _sampler_notes(sampler_cpu_pct: float | None) -> list[str]:
    """A note where the polling thread itself was busy enough to slow a host-bound step."""
    if sampler_cpu_pct is not None and sampler_cpu_pct > SAMPLER_NOTE_PCT:
        return [
            f"the telemetry sampler took {sampler_cpu_pct:.1f}% of a core over the window, which a "
            "host-bound step can lose; a longer --telemetry-interval or --no-telemetry avoids it"
        ]
    return []


def _window_energy(
    readings: Sequence[Reading], powers: Sequence[tuple[float, float]], duration: float
) -> _Energy:
    """Energy over the window: the source's own counter where it has one and it advanced (exact up to its
    steps), else the power samples' mean over the span they cover, applied to the whole window."""
    joules: float | None = None
    method: str | None = None
    notes: list[str] = []
    counted = None
    if readings[0].energy_j is not None and readings[-1].energy_j is not None:
        counted = counter_window([(r.t, r.energy_j) for r in readings if r.energy_j is not None])
        if counted is None:
            notes.append(f"energy counter did not advance over {duration:.3f} s")
        else:
            joules, method = counted.energy_j, "counter"
            notes += _resolution_notes(counted, duration)
    if joules is None and len(powers) >= 2 and powers[-1][0] > powers[0][0]:
        span = powers[-1][0] - powers[0][0]
        # Mean power over the span the samples cover, applied to the whole window.
        joules, method = _trapezoid(powers) / span * duration, "power-integral"
    return _Energy(joules, method, counted, notes)


def _per_work(
    joules: float | None, steps: int, samples_total: int
) -> tuple[float | None, float | None, float | None]:
    """(J per step, J per sample, samples per kWh): None, never 0, where no energy was measured."""
    per_step = joules / steps if joules is not None and steps > 0 else None
    per_sample = joules / samples_total if joules is not None and samples_total > 0 else None
    per_kwh = samples_total / (joules / J_PER_KWH) if joules else None
    return per_step, per_sample, per_kwh


def _costs(
    price_per_kwh: float | None, per_sample: float | None, mean_power: float | None
) -> tuple[float | None, float | None]:
    """(cost per million samples, cost per hour) at the user's --energy-price; no price is ever assumed."""
    if price_per_kwh is None:
        return None, None
    cost_1m = price_per_kwh * per_sample * 1e6 / J_PER_KWH if per_sample is not None else None
    cost_hour = price_per_kwh * mean_power / 1000.0 if mean_power is not None else None
    return cost_1m, cost_hour


def _series(readings: Sequence[Reading]) -> list[TelemetrySample]:
    """Every reading as a sample of the window: time and energy counted from its first reading."""
    t0, base_e = readings[0].t, readings[0].energy_j
    return [
        TelemetrySample(
            t_s=r.t - t0,
            power_w=r.power_w,
            energy_j=(r.energy_j - base_e) if (r.energy_j is not None and base_e is not None) else None,
            utilisation_pct=r.utilisation_pct,
            temperature_c=r.temperature_c,
        )
        for r in readings
    ]
