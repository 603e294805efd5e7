"""How a measured step's time and loss are read: on the host around a device sync, or from device events.

``measure_steps`` brackets each measured step with a clock's ``begin`` and ``end`` and takes the finished
steps' (seconds, loss) from ``ready`` as they become known, in step order, then the rest from ``finish``.

``HostClock`` (the default, every device): ``perf_counter`` around the step, the device synchronised at its
end, the loss read with ``.item()``. On an asynchronous device that sync and read stop the host from
queueing the next step while the device finishes this one, which a plain training loop does not. Measured
on an NVIDIA H200 (torch 2.11, one process, 30 interleaved rounds against the same step looped with a sync
only at the ends): mlp tiny's figure read 0.959 of the loop's (interval 0.945-0.993) and the steps really
ran at 0.927; gpt tiny 0.992, resnet tiny 1.005.

``EventClock`` (devices with timing events: CUDA): events recorded on the device's stream before and after
each step, the loss copied to pinned host memory behind the end event, and no sync between steps. A step's
time is the device's elapsed time between its two events; its figures are read once the next step has
begun on the device (one step late), so the host stays at most about a step ahead and the stop rule sees
every step but the last. Host bookkeeping between steps (hooks, the stop rule) falls between one step's
end event and the next one's begin event, outside both, as it falls outside the host clock's bracket.
On a second H200 (18 interleaved rounds, a noisier host) mlp tiny read 0.964 of the loop (0.903-1.052)
with this clock against 0.928 (0.891-1.014) with the host clock; gpt 0.967 against 1.023, resnet 1.047
against 1.023: no difference shown beyond that host's noise. Wall-clock, mlp tiny's measured loop ran at
~0.90 of the plain loop's speed there with either clock (0.899, 0.896): what a launch-bound step loses to
the loop's per-step work (loss reads, hooks) is not separated yet.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import Protocol

import torch

# The timing method a record states (runtime["timing"]): the clock's, then this.
WARMUP_NOTE = "warm-up steps (first step includes compile/graph capture) timed separately and excluded"


class StepClock(Protocol):
    method: str  # one line for the record: how a step's time is taken

    def begin(self) -> None: ...

    def end(self, loss: torch.Tensor) -> None: ...

    def ready(self) -> list[tuple[float, float]]: ...

    def finish(self) -> list[tuple[float, float]]: ...


class HostClock:
    """``perf_counter`` around each step, the device synchronised at its end (and before the first: the
    caller's sync); the loss read after the time is taken."""

    method = "time.perf_counter around each step, device synchronised before and after"

    def __init__(self, synchronize: Callable[[], None]) -> None:
        self._synchronize = synchronize
        self._t0 = 0.0
        self._done: list[tuple[float, float]] = []

    def begin(self) -> None:
        self._t0 = time.perf_counter()

    def end(self, loss: torch.Tensor) -> None:
        self._synchronize()
        seconds = time.perf_counter() - self._t0
        self._done.append((seconds, loss.item()))

    def ready(self) -> list[tuple[float, float]]:
        done, self._done = self._done, []
        return done

    def finish(self) -> list[tuple[float, float]]:
        return self.ready()


class DeviceEvent(Protocol):
    """What ``EventClock`` needs of an event (``torch.cuda.Event(enable_timing=True)`` has it)."""

    def record(self) -> None: ...

    def synchronize(self) -> None: ...

    def elapsed_time(self, end_event: DeviceEvent) -> float: ...  # milliseconds


class EventClock:
    """Device events around each step, read one step late; see the module docstring.

    ``new_event`` makes a timing event on the device's current stream; ``synchronize`` waits for the
    device; ``pin`` pins the host copies of the loss (needed for a copy that does not wait)."""

    method = (
        "device timing events recorded around each step on its stream, no sync between steps, each step "
        "read once the next has begun"
    )
    LAG = 1  # steps begun after a step before its figures are read

    def __init__(
        self, new_event: Callable[[], DeviceEvent], synchronize: Callable[[], None], pin: bool
    ) -> None:
        self._new_event = new_event
        self._synchronize = synchronize
        self._pin = pin
        self._free: list[DeviceEvent] = []  # events of read steps, reused (creating one costs a driver call)
        self._slots: list[torch.Tensor] = []  # host copies of the loss, a ring of LAG + 2
        self._pending: deque[tuple[DeviceEvent, DeviceEvent, int]] = deque()  # (begin, end, slot)
        self._begun: DeviceEvent | None = None
        self._count = 0

    def _event(self) -> DeviceEvent:
        return self._free.pop() if self._free else self._new_event()

    def begin(self) -> None:
        self._begun = self._event()
        self._begun.record()

    def end(self, loss: torch.Tensor) -> None:
        if self._begun is None:
            raise RuntimeError("EventClock.end without begin")
        stop = self._event()
        stop.record()
        if not self._slots:
            n = self.LAG + 2  # at most LAG + 1 steps are unread, so a slot is read before it is reused
            self._slots = [torch.empty_like(loss, device="cpu", pin_memory=self._pin) for _ in range(n)]
        slot = self._count % len(self._slots)
        with torch.no_grad():  # a host copy of the value, not a node of the step's graph
            self._slots[slot].copy_(loss, non_blocking=True)
        self._pending.append((self._begun, stop, slot))
        self._begun = None
        self._count += 1

    def _read(self, begin: DeviceEvent, stop: DeviceEvent, slot: int) -> tuple[float, float]:
        seconds = begin.elapsed_time(stop) / 1e3
        self._free += (begin, stop)
        return seconds, self._slots[slot].item()

    def ready(self) -> list[tuple[float, float]]:
        done = []
        while len(self._pending) > self.LAG:
            begin, stop, slot = self._pending.popleft()
            # The next step's begin event was recorded after this step's loss copy: once the device has
            # passed it, both the end event and the copy are complete.
            self._pending[0][0].synchronize()
            done.append(self._read(begin, stop, slot))
        return done

    def finish(self) -> list[tuple[float, float]]:
        self._synchronize()
        done = [self._read(*p) for p in self._pending]
        self._pending.clear()
        return done
