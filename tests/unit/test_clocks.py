"""Step clocks (``hpubench.measure.clocks``) inside ``measure_steps``: the event clock reads each step late,
and still every step is counted once, in order, with its own loss, and a fixed count stays exact.

The events are a double of ``torch.cuda.Event(enable_timing=True)`` that fails where CUDA does: an event
completes only once the device passes it (its own or a later event's ``synchronize``, or a device sync),
and ``elapsed_time`` between events not both complete raises, as CUDA's cudaErrorNotReady does."""

from __future__ import annotations

import re
import time
import weakref

import pytest
import torch

from hpubench.accelerators.cpu import CPUAccelerator
from hpubench.accelerators.cuda.accelerator import CUDAAccelerator
from hpubench.measure.clocks import LAUNCH_BOUND_SHARE, EventClock, HostClock, launch_share
from hpubench.measure.steps import measure_steps
from hpubench.plan.autosteps import LEAD_IN_STEPS

pytestmark = pytest.mark.serial


class FakeDevice:
    """A stream of recorded events. With ``trail=None`` it completes them only when waited for; with
    ``trail=k`` it also completes every event recorded at least k records before the newest (a device
    trailing the host by k events)."""

    def __init__(self, trail: int | None = None) -> None:
        self.recorded: list[FakeEvent] = []
        self.trail = trail
        self.records = 0  # every record() call: the device operations the clock made

    def synchronize(self) -> None:
        for ev in self.recorded:
            ev.done = True

    def advance(self) -> None:
        if self.trail is not None:
            for ev in self.recorded[: max(0, len(self.recorded) - self.trail)]:
                ev.done = True


class FakeEvent:
    def __init__(self, device: FakeDevice) -> None:
        self.device = device
        self.at: float | None = None
        self.done = False

    def record(self) -> None:  # recording again moves the event to the stream's end, as in CUDA
        self.at, self.done = time.perf_counter(), False
        self.device.records += 1
        if self in self.device.recorded:
            self.device.recorded.remove(self)
        self.device.recorded.append(self)
        self.device.advance()

    def query(self) -> bool:
        if self.at is None:
            raise RuntimeError("event not recorded")
        return self.done

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


def _event_clock(trail: int | None = None) -> EventClock:
    device = FakeDevice(trail)
    return EventClock(lambda: FakeEvent(device), device.synchronize, pin=False)


def device_bound() -> None:
    """A warm-up step's sync that waits for device work: the step's launch is a small share of it, so the
    event clock keeps its events."""
    time.sleep(0.003)


def launch_bound() -> None:
    """A sync with nothing to wait for: the host's launch is the whole step (host timestamps)."""


BOUNDS = {"device": device_bound, "launch": launch_bound}


class CountingStep:
    """A training step whose loss is its own call number, so a loss read from the wrong step shows. Its
    launch takes half a millisecond of host time, as a real step's does: a launch of microseconds would
    leave the launch share (``clocks.launch_share``) to the scheduler's jitter between the launch and the
    sync, and the launch-bound case would come out device-bound now and then (seen once in a full run)."""

    HOST_S = 0.0005

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
        self.calls += 1
        time.sleep(self.HOST_S)
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


@pytest.mark.parametrize("bound", list(BOUNDS))
@pytest.mark.parametrize("trail", [None, 1, 40])
@pytest.mark.parametrize("steps", [7, 16, 150])  # under a batch, one batch, past the ring's end
def test_event_clock_fixed_count_is_exact_and_every_step_is_read_once_in_order(
    bound: str, trail: int | None, steps: int
) -> None:
    step, fed = CountingStep(), []
    clock = _event_clock(trail)
    out = measure_steps(
        step,
        [(torch.ones(3),)],
        BOUNDS[bound],
        2,
        steps,
        on_step_time=lambda phase, i, s, loss: fed.append((phase, i, loss)),
        clock=clock,
    )
    assert clock.stamps is (bound == "launch")
    warm = 2 + LEAD_IN_STEPS  # the planned warm-up and the lead-in
    assert step.calls == warm + steps and len(out.warmup_s) == warm
    assert len(out.measured_s) == steps and all(t >= 0 for t in out.measured_s)
    measured = [f for f in fed if f[0] == "measured"]
    assert [i for _, i, _ in measured] == list(range(steps))
    assert [loss for _, _, loss in measured] == [float(n) for n in range(warm + 1, warm + 1 + steps)]  # own
    assert out.loss_last == float(warm + steps) and out.stop_reason == f"fixed: {steps} steps"


def test_event_clock_steps_tile_the_window() -> None:
    """A step begins where the previous one ended: the step times add up to the window, host work
    between steps included, as a plain loop's wall clock counts it."""
    clock = _event_clock()

    def slow_step(batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
        time.sleep(0.002)
        return batch[0].sum()

    t0 = time.perf_counter()
    clock.begin()
    for _ in range(5):
        clock.begin()
        clock.end(slow_step((torch.ones(2),)))
        time.sleep(0.003)  # host work between steps: hooks, the stop rule
        clock.ready()
    times = clock.finish()
    wall = time.perf_counter() - t0
    assert len(times) == 5 and all(s >= 0.005 for s, _ in times[1:])
    assert sum(s for s, _ in times) <= wall


@pytest.mark.parametrize("bound", list(BOUNDS))
@pytest.mark.parametrize("trail", [None, 1, 3])
def test_event_clock_stop_rule_sees_known_steps_in_order_and_the_steps_begun_count(
    bound: str, trail: int | None
) -> None:
    asked: list[int] = []

    def stop(times: list[float], elapsed: float) -> str | None:
        asked.append(len(times))
        return "enough" if len(times) >= 4 else None

    step, clock = CountingStep(), _event_clock(trail)
    out = measure_steps(step, [(torch.ones(3),)], BOUNDS[bound], 1, stop, clock=clock)
    assert asked == [1, 2, 3, 4]  # asked once per step, in order, as each one's time became known
    ahead = step.calls - 1 - LEAD_IN_STEPS - 4  # steps begun before the answer was known: they count
    batch = EventClock.STAMP_BATCH if clock.stamps else EventClock.BATCH
    assert 0 < ahead <= batch * (EventClock.IN_FLIGHT + 1)  # the most it may run ahead
    assert len(out.measured_s) == 4 + ahead and out.stop_reason == "enough"
    assert out.loss_last == float(step.calls)


def test_event_clock_stop_rule_is_a_step_late_on_slow_steps() -> None:
    """Steps slower than the fetch interval are fetched one by one, so a stop rule is not left waiting
    for a batch to fill: with a device one event behind, it hears of each step one step later."""
    asked: list[int] = []

    def stop(times: list[float], elapsed: float) -> str | None:
        asked.append(len(times))
        return "enough" if len(times) >= 3 else None

    def slow(batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
        time.sleep(EventClock.FETCH_EVERY_S * 1.5)
        return batch[0].sum()

    out = measure_steps(slow, [(torch.ones(3),)], device_bound, 1, stop, clock=_event_clock(trail=1))
    assert asked == [1, 2, 3] and len(out.measured_s) <= 3 + 2


def test_event_clock_reads_a_step_only_once_the_device_has_passed_it() -> None:
    clock = _event_clock()  # a device that completes nothing until waited for
    for value in (1.0, 2.0):
        clock.begin()
        clock.end(torch.tensor(value))
        assert clock.ready() == []  # nothing known yet: no sync happened
    assert [loss for _, loss in clock.finish()] == [1.0, 2.0]


class ReplayStep:
    """A replayed graph's step: the loss lives in one static buffer that every call overwrites."""

    def __init__(self) -> None:
        self.calls = 0
        self.static = torch.zeros(())

    def __call__(self, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
        self.calls += 1
        self.static.fill_(self.calls)
        return self.static


@pytest.mark.parametrize("bound", list(BOUNDS))
@pytest.mark.parametrize("copy_loss", [True, False])
def test_event_clock_copies_a_replayed_loss_only_when_told(copy_loss: bool, bound: str) -> None:
    """A held loss is read late, so a buffer the next replay overwrites must be copied (graphs=True):
    without the copy every step of a batch would read the last one's value. The record says so."""
    device = FakeDevice()
    clock = EventClock(lambda: FakeEvent(device), device.synchronize, pin=False, copy_loss=copy_loss)
    fed: list[float] = []
    measure_steps(
        ReplayStep(),
        [(torch.ones(3),)],
        BOUNDS[bound],
        1,
        5,
        on_step_time=lambda phase, i, s, loss: fed.append(loss) if phase == "measured" else None,
        clock=clock,
    )
    first = 2 + LEAD_IN_STEPS  # after one warm-up step and the lead-in
    if copy_loss:
        assert fed == [float(n) for n in range(first, first + 5)]
    else:
        assert fed == [float(first + 4)] * 5  # what the copy prevents
    if clock.stamps:
        work = "one device operation a step" if copy_loss else "no device operation a step"
        assert work in clock.method


def test_cuda_clock_copies_the_loss_of_graphed_cells_only() -> None:
    assert CUDAAccelerator(0).step_clock(graphs=True).copy_loss is True
    assert CUDAAccelerator(0).step_clock(graphs=False).copy_loss is False


def test_host_clock_is_the_default_and_syncs_every_step() -> None:
    syncs = []
    step = CountingStep()
    out = measure_steps(step, [(torch.ones(3),)], lambda: syncs.append(1), 1, 5)
    # one before the warm-up, one per warm-up step and lead-in, one before the measured phase, one per
    # measured step (HostClock)
    assert len(syncs) == 1 + 1 + LEAD_IN_STEPS + 1 + 5 and len(out.measured_s) == 5


def test_each_accelerator_names_its_clock() -> None:
    assert isinstance(CPUAccelerator(0).step_clock(), HostClock)
    cuda = CUDAAccelerator(0).step_clock()  # no CUDA call until a step begins
    assert isinstance(cuda, EventClock) and "events" in cuda.method


def test_a_measured_loss_lives_until_the_next_step_returns_as_in_a_plain_loop() -> None:
    """What a step's loss keeps alive decides where the next step's temporaries land on the heap; a plain
    ``loss = step(batch)`` loop keeps it through the next step, and so does the measured loop."""
    refs: list[weakref.ref[torch.Tensor]] = []
    seen: list[tuple[bool, bool]] = []  # at each measured step's start: (previous alive, one before dead)

    def step(batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
        if len(refs) >= 3:  # two measured steps before this one (after one warm-up step)
            seen.append((refs[-1]() is not None, refs[-2]() is None))
        loss = batch[0].sum() * 2
        refs.append(weakref.ref(loss))
        return loss

    measure_steps(step, [(torch.ones(3),)], lambda: None, 1, 6)
    assert seen and all(prev_alive and older_dead for prev_alive, older_dead in seen)


def test_event_clock_reads_one_element_losses_of_any_shape() -> None:
    """A loss of shape (1,) (a workload's own reduction) reads as a 0-d one does."""
    clock = _event_clock()
    for value in (1.0, 2.0):
        clock.begin()
        clock.end(torch.full((1,), value))
        clock.ready()
    assert [loss for _, loss in clock.finish()] == [1.0, 2.0]


def test_launch_share_is_the_later_half_of_the_warm_up() -> None:
    """The first warm-up steps compile or capture on the host (their launch is nearly all of them): only
    the later half counts, and a step never launches longer than it lasts."""
    assert launch_share([], []) is None
    assert launch_share([0.5], [1.0]) == 0.5
    assert launch_share([9.9, 9.9, 0.2, 0.3], [10.0, 10.0, 1.0, 1.0]) == pytest.approx(0.25)
    assert launch_share([1.2, 1.2], [1.0, 1.0]) == 1.0
    assert launch_share([0.1, 0.0], [0.0, 0.0]) is None  # no measurable step


@pytest.mark.parametrize(("bound", "per_step"), [("device", True), ("launch", False)])
def test_only_a_launch_bound_step_goes_without_a_device_operation(bound: str, per_step: bool) -> None:
    """Where the device waits on the host, an event a step is what costs the step (module docstring):
    host timestamps replace it, and only the batched loss fetches record events."""
    device, steps = FakeDevice(trail=1), 150
    clock = EventClock(lambda: FakeEvent(device), device.synchronize, pin=False)
    before: list[int] = []
    measure_steps(
        CountingStep(),
        [(torch.ones(3),)],
        BOUNDS[bound],
        3,
        steps,
        clock=clock,
        on_measured_start=lambda: before.append(device.records),
    )
    events = device.records - before[0]
    if per_step:
        assert events >= steps and "events" in clock.method
    else:
        assert events <= steps // 8 and clock.method.startswith("host timestamps")
        assert re.search(r"launch took (9\d|100)% of a synchronised warm-up step", clock.method)


def test_host_timestamps_tile_the_window_and_the_last_step_takes_the_final_wait() -> None:
    """The device finishes what the host launched after the last step: that wait is the last step's, so
    the step times add up to the window's wall clock, as a plain loop timed around a final sync."""
    device = FakeDevice(trail=0)
    waits = {"final": 0.0}

    def synchronize() -> None:
        time.sleep(waits["final"])
        device.synchronize()

    clock = EventClock(lambda: FakeEvent(device), synchronize, pin=False)
    clock.warmed([1.0, 1.0], [1.0, 1.0])
    assert clock.stamps
    waits["final"] = 0.03
    t0 = time.perf_counter()
    clock.begin()
    got = []
    for _ in range(5):
        clock.begin()
        time.sleep(0.002)  # the step's launch
        clock.end(torch.ones(()))
        got += clock.ready()
    got += clock.finish()
    wall = time.perf_counter() - t0
    times = [s for s, _ in got]
    assert len(times) == 5 and times[-1] >= 0.03 and all(0.002 <= t < 0.03 for t in times[:-1])
    assert sum(times) == pytest.approx(wall, abs=0.002)


def test_the_choice_is_made_before_the_window_only() -> None:
    """A clock already timing steps keeps its method: a step's two boundaries are of one kind."""
    device = FakeDevice()
    clock = EventClock(lambda: FakeEvent(device), device.synchronize, pin=False)
    clock.warmed([0.5, 0.5], [1.0, 1.0])  # half the step on the host: the device bounds it
    assert not clock.stamps and LAUNCH_BOUND_SHARE > 0.5
    clock.begin()
    clock.warmed([1.0], [1.0])
    assert not clock.stamps and "events" in clock.method
    clock.end(torch.ones(()))
    assert [loss for _, loss in clock.finish()] == [1.0]
