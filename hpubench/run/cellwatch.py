"""The launcher's view of one running cell: its step feed, read once a second for the live display and
once more at the end, to keep the finished steps of a cell that came back without a record.

One thread, waking every ``every_s`` (1 s): the launcher's own wait for the child stays a single blocking
call (select on the zygote's pipe, a pidfd, or the elastic agent's pidfd), and the display refreshes only
from these ticks, so the parent wakes about once a second while a cell measures instead of competing
with it for a core.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from hpubench.run.eta import StepProgress, step_progress
from hpubench.run.partial import with_partial
from hpubench.run.stepfeed import FeedReader
from hpubench.store.record import CellResult

TICK_S = 1.0


class CellWatch:
    """Context manager around one cell's run. ``path`` None: nothing to follow (the feed is elsewhere)."""

    def __init__(
        self,
        path: Path | None,
        on_progress: Callable[[StepProgress], None] | None = None,
        every_s: float = TICK_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = path
        self.on_progress = on_progress
        self.every_s = every_s
        self.clock = clock
        self.reader = FeedReader(path) if path is not None else None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0

    def __enter__(self) -> CellWatch:
        if self.path is not None:
            # A resumed or repeated cell must not show (or keep) an earlier attempt's steps.
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_bytes(b"")
        self._t0 = self.clock()
        if self.reader is not None and self.on_progress is not None:
            self._thread = threading.Thread(target=self._loop, name="hpubench-cellwatch", daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _loop(self) -> None:
        assert self.reader is not None and self.on_progress is not None
        while not self._stop.wait(self.every_s):
            self.reader.poll()
            self.on_progress(step_progress(self.reader.state, self.clock() - self._t0))

    def keep_partial(self, result: CellResult) -> CellResult:
        """``result``, with the steps the feed holds when it is a failure that kept none (call after the
        cell's processes are gone, so every line they wrote is read)."""
        if self.reader is None:
            return result
        self.__exit__(None, None, None)
        self.reader.poll()  # a missing or unreadable feed reads as no steps
        return with_partial(result, self.reader.state)
