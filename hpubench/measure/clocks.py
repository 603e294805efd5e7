"""How a measured step's time and loss are read: on the host around a device sync, or from device events.

``measure_steps`` brackets each measured step with a clock's ``begin`` and ``end`` and takes the finished
steps' (seconds, loss) from ``ready`` as they become known, in step order, then the rest from ``finish``.

``HostClock`` (the default, every device): ``perf_counter`` around the step, the device synchronised at its
end, the loss read with ``.item()``. On an asynchronous device that sync and read stop the host from
queueing the next step while the device finishes this one, which a plain training loop does not: a
launch-bound CUDA step read several percent slow so (docs/measurements.md).

``EventClock`` (devices with timing events: CUDA) keeps the per-step work to what a launch-bound step can
afford. On a virtualised H200 host every extra device operation in a step cost that step several percent
(docs/measurements.md), so a step makes one: an event recorded on the device's stream at its end. A step
begins where the previous one ended, so its time includes any host work between steps, as a plain loop's
wall clock does. The loss tensor is held, detached, which is no device operation (unless a graph replay
overwrites it: then it is copied). The losses travel to the host in batches (one stack, one copy and one
event a batch, no sync), and a batch's steps are read once the device has passed its event, polled
without waiting. The host may run up to ``IN_FLIGHT`` batches ahead before it waits, so the hooks and the
stop rule see each step a few steps late; every step is still read once, in order.

Even one event a step still cost a launch-bound step there, and only a step with no device operation of its
own matched a plain loop. So the event clock is told the warm-up's split (``warmed``): where the host's
launch filled nearly all of a synchronised warm-up step (``LAUNCH_BOUND_SHARE``), the device waits on the
host, a step's boundaries are host timestamps, and the device is synchronised once, at the window's end,
whose wait the last step takes. On a step the device bounds, host timestamps would time the launches, so
the events stay.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import median
from typing import Protocol

import torch

# The timing method a record states (runtime["timing"]): the clock's, then this.
WARMUP_NOTE = "warm-up steps (first step includes compile/graph capture) timed separately and excluded"
# A warm-up step whose launch took this share of its synchronised time, or more, leaves the device waiting
# on the host: launch-bound (module docstring).
LAUNCH_BOUND_SHARE = 0.9


def launch_share(launch_s: Sequence[float], step_s: Sequence[float]) -> float | None:
    """The host's launch over the synchronised step, median over the warm-up's later half (its first steps
    compile or capture on the host); None without a warm-up step."""
    pairs = [(a, b) for a, b in zip(launch_s, step_s, strict=True) if b > 0]
    recent = pairs[len(pairs) // 2 :]
    return median(min(a / b, 1.0) for a, b in recent) if recent else None


class StepClock(Protocol):
    method: str  # one line for the record: how a step's time is taken

    def warmed(self, launch_s: Sequence[float], step_s: Sequence[float]) -> None:
        """The warm-up's host launch and synchronised times per step, before the first ``begin``: a clock
        may choose how it times the steps from them."""
        ...

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

    def warmed(self, launch_s: Sequence[float], step_s: Sequence[float]) -> None:
        """Nothing to choose: the sync is this clock's method."""

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

    def query(self) -> bool: ...  # has the device passed it (no wait)

    def synchronize(self) -> None: ...

    def elapsed_time(self, end_event: DeviceEvent) -> float: ...  # milliseconds


Mark = DeviceEvent | float  # a step boundary: a recorded event, or the host's perf_counter there


@dataclass
class _Fetch:
    """Steps whose losses were sent to the host together: their end boundaries, the host buffer the losses
    land in, and the event the device passes once the copy is done."""

    ends: list[Mark]
    host: torch.Tensor
    done: DeviceEvent


class EventClock:
    """One timing event per step boundary (or, once ``warmed`` finds the step launch-bound, a host
    timestamp), losses fetched in batches; see the module docstring.

    ``new_event`` makes a timing event on the device's current stream; ``synchronize`` waits for the
    device; ``pin`` pins the host copies of the losses (needed for a copy that does not wait);
    ``copy_loss``: the step returns its loss in a buffer the next step overwrites (a replayed graph's
    static output), so each loss is copied on the device, one more operation a step."""

    method = (
        "device timing events at each step boundary on its stream, no sync between steps; steps read in "
        "batches once the device has passed them"
    )
    STAMPS = (
        "host timestamps at each step boundary, {work}: launch-bound, the host's launch took {share:.0%} "
        "of a synchronised warm-up step; losses fetched in batches, the device synchronised at the window's "
        "end (its wait in the last step)"
    )
    NO_WORK = "no device operation a step"
    COPY_WORK = "one device operation a step (the loss copied: a graph replay overwrites it)"
    BATCH = 16  # most steps whose losses one fetch brings to the host
    FETCH_EVERY_S = 0.01  # host seconds after which the queued steps are fetched even if fewer
    # With host timestamps a step's time is known at once, only its loss travels: fetches are rarer.
    STAMP_BATCH = 64
    STAMP_FETCH_EVERY_S = 0.05
    IN_FLIGHT = 4  # unread fetches before the host waits for the oldest: how far it may run ahead

    def __init__(
        self,
        new_event: Callable[[], DeviceEvent],
        synchronize: Callable[[], None],
        pin: bool,
        copy_loss: bool = False,
    ) -> None:
        self._new_event = new_event
        self._synchronize = synchronize
        self._pin = pin
        self.copy_loss = copy_loss  # stated, so a caller can check what it asked for
        self.stamps = False  # host timestamps at the boundaries (``warmed``)
        self._batch, self._every_s = self.BATCH, self.FETCH_EVERY_S
        self._free: list[DeviceEvent] = []  # events of read steps, reused (creating one costs a driver call)
        self._hosts: list[torch.Tensor] = []  # host buffers of read fetches, reused
        self._begun: Mark | None = None  # the boundary before the first step not yet read
        self._queued: list[Mark] = []  # end boundaries of steps not yet fetched
        self._losses: list[torch.Tensor] = []  # their losses, still on the device
        self._fetches: deque[_Fetch] = deque()
        self._since = 0.0  # host time of the first queued step

    def warmed(self, launch_s: Sequence[float], step_s: Sequence[float]) -> None:
        share = launch_share(launch_s, step_s)
        if self._begun is None and share is not None and share >= LAUNCH_BOUND_SHARE:
            self.stamps = True
            work = self.COPY_WORK if self.copy_loss else self.NO_WORK
            self.method = self.STAMPS.format(share=share, work=work)
            self._batch, self._every_s = self.STAMP_BATCH, self.STAMP_FETCH_EVERY_S

    def _event(self) -> DeviceEvent:
        return self._free.pop() if self._free else self._new_event()

    def _mark(self) -> Mark:
        if self.stamps:
            return time.perf_counter()
        event = self._event()
        event.record()
        return event

    def begin(self) -> None:
        if self._begun is None:  # the window's first boundary; later steps begin where the last ended
            self._begun = self._mark()

    def end(self, loss: torch.Tensor) -> None:
        if self._begun is None:
            raise RuntimeError("EventClock.end without begin")
        stop = self._mark()
        # Held, not copied: a detached tensor is a host-side object, no device operation.
        self._losses.append(loss.detach().clone() if self.copy_loss else loss.detach())
        if not self._queued:
            self._since = time.perf_counter()
        self._queued.append(stop)

    def ready(self) -> list[tuple[float, float]]:
        done: list[tuple[float, float]] = []
        if self._queued and (
            len(self._queued) == self._batch or time.perf_counter() - self._since >= self._every_s
        ):
            done += self._fetch()
        while self._fetches and self._fetches[0].done.query():
            done += self._read(self._fetches.popleft())
        return done

    def finish(self) -> list[tuple[float, float]]:
        done = self._fetch() if self._queued else []
        self._synchronize()
        if self.stamps and self._fetches:  # the last step ends when the device has done its work
            self._fetches[-1].ends[-1] = time.perf_counter()
        while self._fetches:
            done += self._read(self._fetches.popleft())
        return done

    def _fetch(self) -> list[tuple[float, float]]:
        """Send the queued steps' losses to the host behind them (one stack, one copy, one event). Where
        ``IN_FLIGHT`` fetches are unread, first wait for the oldest and read it: the host runs no further
        ahead, and the losses it holds stay few."""
        done = []
        if len(self._fetches) == self.IN_FLIGHT:
            oldest = self._fetches.popleft()
            oldest.done.synchronize()
            done = self._read(oldest)
        host = self._hosts.pop() if self._hosts else torch.empty(self._batch, pin_memory=self._pin)
        n = len(self._queued)
        with torch.no_grad():
            host[:n].copy_(torch.stack(self._losses).reshape(n).float(), non_blocking=True)  # 0-d or (1,)
        fetched = self._event()
        fetched.record()
        self._fetches.append(_Fetch(self._queued, host, fetched))
        self._queued, self._losses = [], []
        return done

    def _read(self, fetch: _Fetch) -> list[tuple[float, float]]:
        losses = fetch.host[: len(fetch.ends)].tolist()
        out = []
        begin = self._begun
        for stop, loss in zip(fetch.ends, losses, strict=True):
            out.append((self._seconds(begin, stop), loss))
            if not isinstance(begin, float):
                self._free.append(begin)
            begin = stop
        self._begun = begin
        self._free.append(fetch.done)
        self._hosts.append(fetch.host)
        return out

    @staticmethod
    def _seconds(begin: Mark | None, stop: Mark) -> float:
        if isinstance(begin, float) and isinstance(stop, float):
            return stop - begin
        if begin is None or isinstance(begin, float) or isinstance(stop, float):
            raise RuntimeError("EventClock: a step's boundaries are of different kinds")
        return begin.elapsed_time(stop) / 1e3
