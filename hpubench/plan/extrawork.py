"""Workload options the harness itself understands; today one: ``extra_work``, a planted slowdown.

To show that ``hpubench gate`` catches a 10% slowdown (and does not cry wolf on an unchanged one) we need
a change that makes every step a known fraction slower and changes nothing else. ``extra_work=0.1`` does
that for any workload: after the warm-up it adds a fixed number of small matrix products to every step,
sized so they take about 10% of a plain step.

Real compute, not a sleep: a sleep frees the core, so on a loaded machine the planted delay would stay
fixed while real work stretches, and on an asynchronous device a host-side sleep can hide behind queued
kernels. The amount is calibrated once per run, at the end of the warm-up, and then frozen: from there on
the *work* per step is fixed, as it is for a real regression, and the time it takes varies with the
machine like the rest of the step. Calibration times plain steps and the extra work several times each,
in turn, and uses the minimum of each: on a shared machine one descheduled moment can stretch a sample a
hundredfold, while the minimum is the uncontended cost, and timing them in turn lets a host whose speed
moves meanwhile move both, so the ratio of the two holds. The step reports
it (:func:`learned_facts`) and the result records it as ``runtime["extra_work"]`` so the planted fraction
can be checked.

Parsing and checking are pure (the CLI validates ``--option`` without importing torch); torch is imported
only where the work is built.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any

from hpubench.errors import UsageError

EXTRA_WORK = "extra_work"
# name -> what it does; workloads may accept more names through a ``workload_options`` class attribute.
HARNESS_OPTIONS: dict[str, str] = {
    EXTRA_WORK: "fraction of a plain step's time added as extra compute to every measured step",
}
MAX_EXTRA_WORK = 10.0  # 10x the step: beyond that it is not a "slowdown" any more, and a typo is likelier
CALIBRATION_STEPS = 10  # plain steps timed after the warm-up to size the extra work (minimum)
CORRECTIONS = 2  # rounds that time the burn in turn with the plain step and correct the unit count
# Plain steps the calibration runs inside the last warm-up call: alone once, then in turn with the burn
# in each correction and in the final reading.
CALIBRATION_PLAIN_STEPS = CALIBRATION_STEPS * (CORRECTIONS + 2)
UNIT_REPEATS = 30  # timings of the unit of extra work (minimum)
MAX_UNITS = 2000  # above this many units per step the unit doubles in size (less Python overhead)
UNIT_SIZES = (32, 64, 128, 256, 512, 1024)  # square matmul sizes tried, smallest first (granularity)


def parse_extra_work(value: str) -> float:
    """``extra_work`` as a fraction (``0.1`` or ``10%``); raises ValueError with the fix."""
    text = str(value).strip()
    scale = 0.01 if text.endswith("%") else 1.0
    try:
        fraction = float(text.rstrip("%")) * scale
    except ValueError:
        raise ValueError(f"extra_work takes a fraction such as 0.1 or 10%, got {value!r}") from None
    if not math.isfinite(fraction) or not 0 <= fraction <= MAX_EXTRA_WORK:
        raise ValueError(f"extra_work must be between 0 and {MAX_EXTRA_WORK:g} (a fraction), got {value!r}")
    return fraction


def check_options(options: Mapping[str, str], where: str = "options") -> None:
    """Validate the values of options the harness knows; unknown names are the worker's to judge."""
    if EXTRA_WORK in options:
        try:
            parse_extra_work(options[EXTRA_WORK])
        except ValueError as exc:
            raise UsageError(f"{where}: {exc}") from None


def unknown_options(options: Mapping[str, str], workload: object) -> list[str]:
    """Names neither the harness nor the workload accepts: a typo must not run a plain cell silently."""
    accepted = set(HARNESS_OPTIONS) | set(getattr(workload, "workload_options", {}) or {})
    return sorted(set(options) - accepted)


def apply_options(
    options: Mapping[str, str],
    workload: object,
    step: Callable[[Any], Any],
    warmup_steps: int,
    synchronize: Callable[[], None],
    device: Any,
) -> Callable[[Any], Any]:
    """The cell's step with the harness options applied (the same step when there are none).

    An unknown option fails the cell rather than running a plain one under its name. What the step learns
    while it runs (the extra work's calibration) is read back with :func:`learned_facts`.
    """
    bad = unknown_options(options, workload)
    if bad:
        known = sorted(set(HARNESS_OPTIONS) | set(getattr(workload, "workload_options", {}) or {}))
        raise ValueError(f"unknown workload option(s) {', '.join(bad)}; known: {', '.join(known)}")
    fraction = parse_extra_work(options[EXTRA_WORK]) if EXTRA_WORK in options else 0.0
    if fraction <= 0:
        return step
    return _ExtraWorkStep(step, fraction, warmup_steps, synchronize, device)


def learned_facts(step: Callable[[Any], Any]) -> tuple[tuple[str, Any], ...]:
    """The runtime facts a step from :func:`apply_options` learned so far, as ``(name, value)`` pairs.

    The extra work is sized at the end of the warm-up, so its fact exists only once that has run; the
    record keeps it so the planted fraction can be checked. A plain step learns nothing.
    """
    if isinstance(step, _ExtraWorkStep) and step.calibration is not None:
        return ((EXTRA_WORK, dict(step.calibration)),)
    return ()


def _min_times(
    fns: tuple[Callable[[], Any], ...], synchronize: Callable[[], None], n: int
) -> tuple[float, ...]:
    """The minimum time of each of ``fns`` over ``n`` rounds, run in turn within each round: a host whose
    speed moves during the calibration then moves every one of them alike, so their ratio holds."""
    best = [math.inf] * len(fns)
    for _ in range(n):
        for i, fn in enumerate(fns):
            synchronize()
            t0 = time.perf_counter()
            fn()
            synchronize()
            best[i] = min(best[i], time.perf_counter() - t0)
    return tuple(best)


class _ExtraWorkStep:
    """A step that, once the warm-up is over, does ``units`` extra matrix products after the real step.

    The warm-up is counted in calls: the launcher's measurement runs exactly ``warmup_steps`` warm-up
    calls before the measured ones, and the calibration runs inside the last warm-up call, so it is
    excluded from the measured figures and the first (compile) step stays the first step.
    """

    def __init__(
        self,
        step: Callable[[Any], Any],
        fraction: float,
        warmup_steps: int,
        synchronize: Callable[[], None],
        device: Any,
    ) -> None:
        self._step = step
        self._fraction = fraction
        self._warmup_steps = warmup_steps
        self._sync = synchronize
        self._device = device
        self.calibration: dict[str, Any] | None = None  # set at the end of the warm-up (learned_facts)
        self._calls = 0
        self._units = 0
        self._a: Any = None
        self._b: Any = None
        self._out: Any = None

    def _set_unit(self, n: int) -> None:
        import torch  # deferred: the torch-free CLI imports this module (HARNESS_OPTIONS)

        g = torch.Generator(device="cpu").manual_seed(n)
        # Orthogonal factors keep the products bounded however often they run (no inf/nan slow paths).
        q, _ = torch.linalg.qr(torch.randn(n, n, generator=g))
        self._a = q.to(self._device)
        self._b = q.T.contiguous().to(self._device)
        self._out = torch.empty_like(self._a)

    def _unit(self) -> None:
        import torch  # deferred: see _set_unit

        torch.mm(self._a, self._b, out=self._out)

    def _burn(self, units: int) -> None:
        for _ in range(units):
            self._unit()

    def _calibrate(self, batch: Any) -> None:
        def plain() -> None:
            self._step(batch)

        (base_s,) = _min_times((plain,), self._sync, CALIBRATION_STEPS)
        size = unit_s = 0.0
        for n in UNIT_SIZES:
            self._set_unit(n)
            self._burn(3)  # first calls allocate and pick kernels
            (ten_s,) = _min_times((lambda: self._burn(10),), self._sync, UNIT_REPEATS)
            unit_s, size = ten_s / 10, n
            if self._fraction * base_s / unit_s <= MAX_UNITS:
                break
        units = max(1, round(self._fraction * base_s / unit_s))
        # A unit timed alone is mostly dispatch overhead, whose cost drifts; time the burn as it will
        # run (that many units back to back), in turn with the plain step, and correct the count,
        # so the planted share holds.
        for _ in range(CORRECTIONS):
            base_s, burn_s = _min_times((plain, lambda u=units: self._burn(u)), self._sync, CALIBRATION_STEPS)
            units = max(1, round(units * self._fraction * base_s / burn_s))
        base_s, burn_s = _min_times((plain, lambda u=units: self._burn(u)), self._sync, CALIBRATION_STEPS)
        self._units = units
        self.calibration = {
            "fraction": self._fraction,
            "units_per_step": units,
            "unit": f"matmul {int(size)}x{int(size)}",
            "unit_s": burn_s / units,
            "base_step_s": base_s,
            "planted_s": burn_s,
            "planted_fraction": burn_s / base_s,
        }

    def __call__(self, batch: Any) -> Any:
        self._calls += 1
        loss = self._step(batch)
        if self._calls < self._warmup_steps:
            return loss
        if self._calls == self._warmup_steps:
            self._calibrate(batch)
            return loss
        self._burn(self._units)
        return loss
