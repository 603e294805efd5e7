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

The warm-up ends with a lead-in step (``LEAD_IN_STEPS``), run after the warm-up rule is done and after
the slow bookkeeping between warm-up and window (the caller's ``on_warmup_done``, the interference meter's
first sample in ``on_window_open``): a pause of about a millisecond before a step (/proc reads, a sleep, a
file write) leaves the next few steps slower on a CPU, and the window would otherwise begin with them
(docs/measurements.md). The compile count opens before the lead-in too, since the rule had stopped by
then; the observers whose first reading is cheap (page faults, telemetry) start right before the window.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from hpubench.measure.clocks import HostClock, StepClock
from hpubench.measure.stopping import StopCondition, fixed_steps
from hpubench.plan.autosteps import LEAD_IN_STEPS


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
    on_window_open: Callable[[], None] | None = None,
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
    device is synchronised (telemetry). Once the warm-up rule is done: ``on_warmup_done`` (the caller's
    bookkeeping), ``on_window_open`` (observers whose first reading is slow, the interference meter's
    /proc reads, or whose count must include the next step: compilations), then the lead-in step.
    ``on_step_time(phase, index, seconds, loss)`` gets each step's time as it is taken (the step feed:
    ``hpubench.run.stepfeed``). ``compiles()`` returns the compile
    events since its previous call (``hpubench.measure.compilecount.CompileProgress``), read before the
    warm-up and after each warm-up step, outside its timed bracket. ``more_warmup(warmup_times,
    compiles_per_step)``, asked after the planned warm-up steps and again after each batch it adds, returns
    how many more to run (0 ends the warm-up; until the compiler is done and a minimum time has passed:
    :class:`hpubench.plan.autosteps.WarmupRule`); every rank of a distributed cell must get the same.

    ``clock`` times the measured steps (default: ``HostClock(synchronize)``; a clock that reads late: the
    module docstring).
    """
    edges = (on_warmup_done, on_window_open)
    warmed = _warm_up(
        step, batches, synchronize, warmup_steps, (on_step, on_step_time), edges, more_warmup, compiles
    )
    warmup, launched, compiled, loss_first = warmed
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


WarmUp = tuple[list[float], list[float], list[int], float]
StepHooks = tuple[Callable[[str, int], None] | None, Callable[[str, int, float, float], None] | None]


def _warm_up(
    step: Callable[[tuple[torch.Tensor, ...]], torch.Tensor],
    batches: Sequence[tuple[torch.Tensor, ...]],
    synchronize: Callable[[], None],
    warmup_steps: int,
    hooks: StepHooks,
    edges: tuple[Callable[[], None] | None, Callable[[], None] | None],
    more_warmup: Callable[[Sequence[float], Sequence[int]], int] | None,
    compiles: Callable[[], int] | None,
) -> WarmUp:
    """(warm-up step times, the host's launch time of each, compile events per warm-up step, first loss):
    the steps the warm-up rule decides (``more_warmup`` may extend the phase, as ``measure_steps`` says),
    then ``on_warmup_done``, ``on_window_open`` (``edges``) and the lead-in step (module docstring).
    ``hooks``: ``on_step`` and ``on_step_time``."""
    warmed: WarmUp = ([], [], [], math.nan)
    if compiles is not None:
        compiles()  # the baseline: what compiled before the warm-up is not the first step's
    synchronize()
    planned = warmup_steps
    while len(warmed[0]) < planned:
        warmed = _warm_step(step, batches, synchronize, hooks, compiles, warmed)
        done = len(warmed[0])
        if done == planned and done >= warmup_steps and more_warmup is not None:
            planned += more_warmup(warmed[0], warmed[2])  # asked again after the added steps, until it says 0
    on_warmup_done, on_window_open = edges
    for hook in (on_warmup_done, on_window_open):
        if hook is not None:
            hook()
    for _ in range(LEAD_IN_STEPS):
        warmed = _warm_step(step, batches, synchronize, hooks, compiles, warmed)
    return warmed


def _warm_step(
    step: Callable[[tuple[torch.Tensor, ...]], torch.Tensor],
    batches: Sequence[tuple[torch.Tensor, ...]],
    synchronize: Callable[[], None],
    hooks: StepHooks,
    compiles: Callable[[], int] | None,
    warmed: WarmUp,
) -> WarmUp:
    """One warm-up step, appended to ``warmed``: bracketed by syncs, so its time is its own (the first one
    includes compilation), and the time until the step returned, before its sync, is its launch."""
    warmup, launched, compiled, loss_first = warmed
    on_step, on_step_time = hooks
    i = len(warmup)
    t0 = time.perf_counter()
    loss = step(batches[i % len(batches)])
    launched.append(time.perf_counter() - t0)
    synchronize()
    warmup.append(time.perf_counter() - t0)
    value = loss.item()
    del loss  # a warm-up step stands alone (module docstring)
    compiled.append(compiles() if compiles is not None else 0)
    if on_step is not None:
        on_step("warmup", i)
    if on_step_time is not None:
        on_step_time("warmup", i, warmup[-1], value)
    return warmup, launched, compiled, value if i == 0 else loss_first


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
