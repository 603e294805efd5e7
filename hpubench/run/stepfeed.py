"""The step feed: a cell's step times, streamed from the child to the parent while the cell runs.

Today's record only exists once a cell ends; a cell stopped by its timeout or a crash would otherwise
take every step it measured with it. So the child appends its step times to a small JSON-lines file next
to the cell's log as they complete, and the parent reads it (for the live display once a second, and for
a partial record when no record comes back). A file, not a pipe: it works unchanged for a forked child
(whose parent is the zygote, not the launcher), a spawned one and a rank of a distributed cell, and it
survives the child: every line is one ``os.write`` to a file opened with ``O_APPEND``, so whatever was
written before a SIGKILL or a segfault is in the page cache and readable.

Cost: the writer runs only from ``measure_steps``' hook, outside every timed bracket, and buffers steps,
writing at most every ``FLUSH_EVERY_S`` (plus the first and last warm-up step, and the last measured
step): a clock read and a list append per step, one ``json.dumps`` and ``write`` per flush. Steps since
the last flush are lost if the child dies (at most ``FLUSH_EVERY_S`` of them).

Lines, each a JSON object:

- ``{"header": {...}, "t": EPOCH}`` once, before the warm-up: the facts needed to turn step times into
  figures (:class:`FeedHeader`).
- ``{"phase": "warmup"|"measured", "first": I, "times": [S, ...], "loss": L, "t": EPOCH}``: the step
  times of steps ``I, I+1, ...`` of that phase and the loss of the last of them (the first warm-up step
  is always a batch of its own, so its loss is the run's first loss).
- ``{"detail": TEXT, "t": EPOCH}``: what the measuring loop wants shown instead of "step n/N" (the
  interval's current width under adaptive steps).

No torch here: the loss arrives as a tensor but only ``float()`` touches it.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, SupportsFloat

from hpubench.analysis.peaks import PeakFigure

FLUSH_EVERY_S = 0.5
FEED_SUFFIX = ".steps.jsonl"
PHASE_WARMUP = "warmup"
PHASE_MEASURED = "measured"


def feed_path(log: Path) -> Path:
    """The step feed of the cell whose log is ``log`` (``x.r1.log`` -> ``x.r1.steps.jsonl``)."""
    return log.with_name(log.name.removesuffix(".log") + FEED_SUFFIX)


@dataclass(frozen=True)
class FeedHeader:
    """What the child knows once the cell is built; with the step times it makes the cell's figures.

    ``samples_per_step``, ``tokens_per_step`` and ``flops_per_step`` are global (all ranks), as in
    :func:`hpubench.analysis.metrics.build_metrics`. ``source`` says whose steps the feed holds ("this
    process", or "rank 0" for a distributed cell). ``runtime`` is the record's runtime facts gathered so far.
    """

    steps: int | None  # planned measured steps; None when the loop decides (adaptive steps)
    warmup_steps: int
    samples_per_step: int
    tokens_per_step: int | None
    flops_per_step: int | None
    world_size: int
    peak: PeakFigure | None = None
    source: str = "this process"
    runtime: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FeedHeader:
        d = dict(data)
        if d.get("peak") is not None:
            d["peak"] = PeakFigure(**d["peak"])
        return cls(**d)


class StepFeed:
    """The child's writer. ``on_step_time`` is the hook ``measure_steps`` calls after each step."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        header: FeedHeader,
        flush_every_s: float = FLUSH_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.header = header
        self.flush_every_s = flush_every_s
        self.clock = clock
        self._fd: int | None = None
        with contextlib.suppress(OSError):
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._phase = PHASE_WARMUP
        self._first = 0
        self._times: list[float] = []
        self._last_flush = clock()
        self._write({"header": header.to_dict()})

    def on_step_time(self, phase: str, index: int, seconds: float, loss: SupportsFloat) -> None:
        """Buffer one step's time; write the buffer when due. Never raises for an I/O problem."""
        if phase != self._phase:
            self._flush(None)
            self._phase, self._first = phase, index
        self._times.append(seconds)
        now = self.clock()
        if phase == PHASE_WARMUP:
            due = index == 0 or index == self.header.warmup_steps - 1
        else:
            due = index == (self.header.steps or 0) - 1
        if due or now - self._last_flush >= self.flush_every_s:
            self._flush(loss)
            self._last_flush = now

    def flush(self) -> None:
        """Write the buffered steps now: called once the warm-up is done, so the warm-up steps it added past
        the planned ones are not written from the first measured step's hook, a pause inside the window."""
        self._flush(None)
        self._last_flush = self.clock()

    def note(self, detail: str) -> None:
        """Text the display shows instead of "step n/N" (e.g. the interval's width under adaptive steps)."""
        self._write({"detail": detail})

    def close(self) -> None:
        self._flush(None)
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    def _flush(self, loss: SupportsFloat | None) -> None:
        if not self._times:
            return
        value = float(loss) if loss is not None else None
        self._write(
            {
                "phase": self._phase,
                "first": self._first,
                "times": self._times,
                "loss": value if value is None or math.isfinite(value) else str(value),
            }
        )
        self._first += len(self._times)
        self._times = []

    def _write(self, obj: dict[str, Any]) -> None:
        if self._fd is None:
            return
        line = json.dumps({**obj, "t": time.time()}, separators=(",", ":"), default=str) + "\n"
        try:
            os.write(self._fd, line.encode())
        except OSError:  # a full disk costs the live view and the partial record, never the cell
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


@dataclass(frozen=True)
class FeedState:
    """What the parent has read of a feed so far. Losses are None where none was written."""

    header: FeedHeader | None = None
    warmup_s: tuple[float, ...] = ()
    measured_s: tuple[float, ...] = ()
    loss_first: float | None = None
    loss_last: float | None = None
    finite: bool = True  # False once a written loss was not a finite number
    detail: str | None = None

    @property
    def phase(self) -> str:
        if self.measured_s:
            return PHASE_MEASURED
        return PHASE_WARMUP if self.warmup_s else "starting"


def _loss(value: Any) -> float | None:
    if value is None:
        return None
    try:
        return float(value)  # "nan" / "inf" were written as strings: JSON has no such numbers
    except (TypeError, ValueError):
        return math.nan


class FeedReader:
    """The parent's incremental reader: ``poll`` reads what was appended since the last call.

    Only complete lines count (a child killed mid-write leaves at most one torn line, never completed);
    a line that does not parse, or a batch that does not continue where the last one ended, is ignored.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._offset = 0
        self._rest = b""
        self.state = FeedState()

    def poll(self) -> bool:
        """Read new lines; True when the state changed."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                data = f.read()
        except OSError:
            return False
        if not data:
            return False
        self._offset += len(data)
        *lines, self._rest = (self._rest + data).split(b"\n")
        before = self.state
        for raw in lines:
            with contextlib.suppress(ValueError, TypeError, KeyError, AttributeError):
                self._apply(json.loads(raw))
        return self.state != before

    def _apply(self, obj: dict[str, Any]) -> None:
        s = self.state
        if "header" in obj:
            self.state = FeedState(header=FeedHeader.from_dict(obj["header"]))
        elif "detail" in obj:
            self.state = replace(s, detail=str(obj["detail"]))
        elif obj.get("phase") in (PHASE_WARMUP, PHASE_MEASURED):
            times = tuple(float(x) for x in obj["times"])
            loss = _loss(obj.get("loss"))
            finite = s.finite and (loss is None or math.isfinite(loss))
            if obj["phase"] == PHASE_WARMUP and int(obj["first"]) == len(s.warmup_s):
                first = loss if not s.warmup_s else s.loss_first
                self.state = replace(s, warmup_s=s.warmup_s + times, loss_first=first, finite=finite)
            elif obj["phase"] == PHASE_MEASURED and int(obj["first"]) == len(s.measured_s):
                last = loss if loss is not None else s.loss_last
                self.state = replace(s, measured_s=s.measured_s + times, loss_last=last, finite=finite)
