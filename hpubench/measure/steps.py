"""Timing of training steps: warm-up kept apart, every measured step timed on its own.

Warm-up steps are bracketed by device syncs. Measured steps are timed by the device's clock
(``hpubench.measure.clocks``): host time around a sync per step by default, device events where the device
has them (a sync per step costs an asynchronous device real throughput), host timestamps where the
warm-up found the step launch-bound (the device waits on the host, so the launch is the step). Either way
each step time is a real duration; the per-step samples are what the statistics and the gate use.
A clock that reads a step's time late (``EventClock``) hands the hooks and the stop condition each step
once it is known, in order; a stop condition's answer then leaves the steps already begun to finish, and
they count. A fixed count is exact either way.

A measured step's loss tensor lives until the next step returns, as in a plain training loop
(``loss = step(batch)`` in a ``for``): what it keeps alive decides where on the heap the next step's
temporaries land, and so whether glibc's default heap trims and regrows every step. Dropping it before
the next step, as this loop once did, doubled hf:gpt2 tiny's page faults a step against the same loop
written plainly, under the untuned heap (docs/measurements.md). The clock keeps a host float (HostClock:
``.item()`` after the sync) or a detached tensor (EventClock), never the step's graph. A warm-up step's
loss is dropped at once: its time includes a sync and it stands alone.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from hpubench.measure.clocks import HostClock, StepClock
from hpubench.measure.stopping import StopCondition, fixed_steps


@dataclass(frozen=True)
class StepTimes:
    warmup_s: tuple[float, ...]
    measured_s: tuple[float, ...]
    loss_first: float
    loss_last: float
    stop_reason: str = ""  # why the measured steps ended (runtime["steps_stop"])
    warmup_compiles: tuple[int, ...] = ()  # compile events of each warm-up step (where counted)


class NonFiniteLoss(RuntimeError):
    """The loss left the finite range: the measured figures would describe a broken run."""


def measure_steps(
    step: Callable[[tuple[torch.Tensor, ...]], torch.Tensor],
    batches: Sequence[tuple[torch.Tensor, ...]],
    synchronize: Callable[[], None],
    warmup_steps: int,
    steps: int | StopCondition,
    on_warmup_done: Callable[[], None] | None = None,
    on_step: Callable[[str, int], None] | None = None,
    on_measured_start: Callable[[], None] | None = None,
    on_measured_end: Callable[[], None] | None = None,
    on_step_time: Callable[[str, int, float, float], None] | None = None,
    more_warmup: Callable[[Sequence[float], Sequence[int]], int] | None = None,
    clock: StepClock | None = None,
    compiles: Callable[[], int] | None = None,
) -> StepTimes:
    """Warm-up then measured steps. The hooks run outside every timed bracket.

    ``steps`` is a count, or a stop condition (``hpubench.measure.stopping``) asked after every measured step,
    outside the timed bracket, with the step times so far and the seconds since the measured phase began.

    ``on_step(phase, index)`` follows each step once its time is taken ("warmup" or "measured"; memory
    sampling); ``on_measured_start``/``on_measured_end`` bracket the measured steps exactly, after the
    device is synchronised (telemetry). ``on_step_time(phase, index, seconds, loss)`` gets each step's
    time as it is taken (the step feed: ``hpubench.run.stepfeed``). ``compiles()`` returns the compile
    events since its previous call (``hpubench.measure.compilecount.CompileProgress``), read before the
    warm-up and after each warm-up step, outside its timed bracket. ``more_warmup(warmup_times,
    compiles_per_step)``, asked after the planned warm-up steps and again after each batch it adds, returns
    how many more to run (0 ends the warm-up; until the compiler is done and a minimum time has passed:
    :class:`hpubench.plan.autosteps.WarmupRule`); every rank of a distributed cell must get the same.

    ``clock`` times the measured steps (default: ``HostClock(synchronize)``; a clock that reads late: the
    module docstring).
    """
    warmup, launched, compiled, loss_first = _warm_up(
        step,
        batches,
        synchronize,
        warmup_steps,
        (on_step, on_step_time, on_warmup_done),
        more_warmup,
        compiles,
    )
    stop, count, clock = _measured_setup(steps, clock, synchronize)
    clock.warmed(launched, warmup)
    measured: list[float] = []
    losses: list[float] = []
    synchronize()
    if on_measured_start is not None:
        on_measured_start()
    start = time.perf_counter()
    reason = None

    def take(done: list[tuple[float, float]]) -> None:
        nonlocal reason
        for seconds, value in done:
            k = len(measured)
            measured.append(seconds)
            losses.append(value)
            if on_step is not None:
                on_step("measured", k)
            if on_step_time is not None:
                on_step_time("measured", k, seconds, value)
            if count is None and reason is None:
                reason = stop(measured, time.perf_counter() - start)

    i = 0
    while reason is None and (count is None or i < count):
        clock.begin()
        loss = step(batches[(len(warmup) + i) % len(batches)])
        clock.end(loss)
        # ``loss`` is replaced when the next step returns: it lives as long as a plain loop's (docstring)
        i += 1
        take(clock.ready())
    take(clock.finish())  # a clock that reads late still holds the last steps begun: they ran, they count
    if count is not None:
        reason = stop(measured, time.perf_counter() - start)
    if on_measured_end is not None:
        on_measured_end()
    _check_finite(loss_first, losses)
    return StepTimes(tuple(warmup), tuple(measured), loss_first, losses[-1], reason, tuple(compiled))


def _warm_up(
    step: Callable[[tuple[torch.Tensor, ...]], torch.Tensor],
    batches: Sequence[tuple[torch.Tensor, ...]],
    synchronize: Callable[[], None],
    warmup_steps: int,
    hooks: tuple[
        Callable[[str, int], None] | None,
        Callable[[str, int, float, float], None] | None,
        Callable[[], None] | None,
    ],
    more_warmup: Callable[[Sequence[float], Sequence[int]], int] | None,
    compiles: Callable[[], int] | None,
) -> tuple[list[float], list[float], list[int], float]:
    """(warm-up step times, the host's launch time of each, compile events per warm-up step, first loss).
    Each warm-up step is bracketed by syncs, so its time is its own (the first one includes compilation),
    and the time until the step returned, before its sync, is its launch; ``hooks`` are ``on_step``,
    ``on_step_time`` and ``on_warmup_done``; ``more_warmup`` may extend the phase, as ``measure_steps`` says.
    """
    on_step, on_step_time, on_warmup_done = hooks
    warmup: list[float] = []
    launched: list[float] = []
    compiled: list[int] = []
    if compiles is not None:
        compiles()  # the baseline: what compiled before the warm-up is not the first step's
    synchronize()
    planned = warmup_steps
    i = 0
    while i < planned:
        t0 = time.perf_counter()
        loss = step(batches[i % len(batches)])
        launched.append(time.perf_counter() - t0)
        synchronize()
        warmup.append(time.perf_counter() - t0)
        value = loss.item()
        del loss  # a warm-up step stands alone (module docstring)
        compiled.append(compiles() if compiles is not None else 0)
        if i == 0:
            loss_first = value
        if on_step is not None:
            on_step("warmup", i)
        if on_step_time is not None:
            on_step_time("warmup", i, warmup[-1], value)
        i += 1
        if i == planned and i >= warmup_steps and more_warmup is not None:
            planned += more_warmup(warmup, compiled)  # asked again after the added steps, until it says 0
    if on_warmup_done is not None:
        on_warmup_done()
    return warmup, launched, compiled, loss_first


def _measured_setup(
    steps: int | StopCondition, clock: StepClock | None, synchronize: Callable[[], None]
) -> tuple[StopCondition, int | None, StepClock]:
    """(stop condition, fixed count, clock) for the measured steps. A fixed count is counted as steps
    begin, so a clock that reads late runs exactly that many; a stop condition is asked as they end."""
    stop = fixed_steps(steps) if isinstance(steps, int) else steps
    count = steps if isinstance(steps, int) else None  # a fixed count is counted as steps begin
    return stop, count, clock if clock is not None else HostClock(synchronize)


def _check_finite(loss_first: float, losses: Sequence[float]) -> None:
    """Raise :class:`NonFiniteLoss` where the first or any measured loss is not finite: the figures of
    such a run would describe a broken training, so they are never reported as a result."""
    bad = next((i for i, v in enumerate(losses) if not math.isfinite(v)), None)
    if not math.isfinite(loss_first) or bad is not None:
        where = "the first step" if not math.isfinite(loss_first) else f"measured step {bad}"
        raise NonFiniteLoss(f"loss became non-finite at {where} (precision or learning-rate problem)")
