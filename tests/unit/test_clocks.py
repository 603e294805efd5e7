"""Step clocks (``hpubench.measure.clocks``) inside ``measure_steps``: the event clock reads each step late,
and still every step is counted once, in order, with its own loss, and a fixed count stays exact.

The events are a double of ``torch.cuda.Event(enable_timing=True)`` that fails where CUDA does: an event
completes only once the device passes it (its own or a later event's ``synchronize``, or a device sync),
and ``elapsed_time`` between events not both complete raises, as CUDA's cudaErrorNotReady does."""

from __future__ import annotations

import time

import pytest
import torch

from hpubench.accelerators.cpu import CPUAccelerator
from hpubench.accelerators.cuda.accelerator import CUDAAccelerator
from hpubench.measure.clocks import EventClock, HostClock
from hpubench.measure.steps import measure_steps


class FakeDevice:
    """A stream of recorded events that completes them only when waited for."""

    def __init__(self) -> None:
        self.recorded: list[FakeEvent] = []

    def synchronize(self) -> None:
        for ev in self.recorded:
            ev.done = True


class FakeEvent:
    def __init__(self, device: FakeDevice) -> None:
        self.device = device
        self.at: float | None = None
        self.done = False

    def record(self) -> None:  # recording again moves the event to the stream's end, as in CUDA
        self.at, self.done = time.perf_counter(), False
        if self in self.device.recorded:
            self.device.recorded.remove(self)
        self.device.recorded.append(self)

    def synchronize(self) -> None:
        if self.at is None:
            raise RuntimeError("event not recorded")
        for ev in self.device.recorded[: self.device.recorded.index(self) + 1]:
            ev.done = True

    def elapsed_time(self, end_event: FakeEvent) -> float:
        if self.at is None or end_event.at is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        if not (self.done and end_event.done):
            raise RuntimeError("CUDA error: device not ready")
        return (end_event.at - self.at) * 1e3


def _event_clock() -> EventClock:
    device = FakeDevice()
    return EventClock(lambda: FakeEvent(device), device.synchronize, pin=False)


class CountingStep:
    """A training step whose loss is its own call number, so a loss read from the wrong step shows."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
        self.calls += 1
        return (batch[0].sum() * 0 + self.calls).requires_grad_()


def test_the_double_refuses_a_time_the_device_has_not_reached() -> None:
    device = FakeDevice()
    a, b = FakeEvent(device), FakeEvent(device)
    a.record()
    b.record()
    with pytest.raises(RuntimeError, match="not ready"):
        a.elapsed_time(b)
    b.synchronize()
    assert a.elapsed_time(b) >= 0


def test_event_clock_fixed_count_is_exact_and_every_step_is_read_once_in_order() -> None:
    step, fed = CountingStep(), []
    out = measure_steps(
        step,
        [(torch.ones(3),)],
        lambda: None,
        2,
        7,
        on_step_time=lambda phase, i, s, loss: fed.append((phase, i, loss)),
        clock=_event_clock(),
    )
    assert step.calls == 2 + 7
    assert len(out.measured_s) == 7 and all(t >= 0 for t in out.measured_s)
    measured = [f for f in fed if f[0] == "measured"]
    assert [i for _, i, _ in measured] == list(range(7))
    assert [loss for _, _, loss in measured] == [float(n) for n in range(3, 10)]  # each step's own loss
    assert out.loss_last == 9.0 and out.stop_reason == "fixed: 7 steps"


def test_event_clock_stop_rule_sees_known_steps_and_the_step_begun_counts() -> None:
    asked: list[int] = []

    def stop(times: list[float], elapsed: float) -> str | None:
        asked.append(len(times))
        return "enough" if len(times) >= 4 else None

    step = CountingStep()
    out = measure_steps(step, [(torch.ones(3),)], lambda: None, 1, stop, clock=_event_clock())
    assert asked == [1, 2, 3, 4]  # asked once per step, as each one's time became known
    assert step.calls == 1 + 4 + EventClock.LAG  # the step begun before the answer ran, and counts
    assert len(out.measured_s) == 4 + EventClock.LAG and out.stop_reason == "enough"
    assert out.loss_last == float(step.calls)


def test_event_clock_reads_a_step_only_once_the_next_has_begun() -> None:
    clock = _event_clock()
    clock.begin()
    clock.end(torch.tensor(1.0))
    assert clock.ready() == []  # nothing known yet: no sync happened
    clock.begin()
    clock.end(torch.tensor(2.0))
    (first,) = clock.ready()
    assert first[1] == 1.0
    (last,) = clock.finish()
    assert last[1] == 2.0


def test_host_clock_is_the_default_and_syncs_every_step() -> None:
    syncs = []
    step = CountingStep()
    out = measure_steps(step, [(torch.ones(3),)], lambda: syncs.append(1), 1, 5)
    # one sync per warm-up step, one before the measured phase, one per measured step (HostClock)
    assert len(syncs) == 1 + 1 + 1 + 5 and len(out.measured_s) == 5


def test_each_accelerator_names_its_clock() -> None:
    assert isinstance(CPUAccelerator(0).step_clock(), HostClock)
    cuda = CUDAAccelerator(0).step_clock()  # no CUDA call until a step begins
    assert isinstance(cuda, EventClock) and "events" in cuda.method
