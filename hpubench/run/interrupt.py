"""Ctrl-C and SIGTERM during a run: stop like Ctrl-C does, then say what was kept and how to go on.

SIGTERM (a scheduler's stop, ``kill``, ``timeout``) raises ``Terminated`` in the main thread, a
``KeyboardInterrupt``, so every cleanup Ctrl-C runs (the running cell's tree killed, the zygotes stopped,
the scratch directory removed) runs for it too. A run that was interrupted ends with one line: ``interrupted:
7 of 15 cells recorded; resume with: hpubench run ... --resume``, exit 130 (SIGINT) or 143 (SIGTERM).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Collection, Iterator
from types import FrameType

SIGINT_EXIT = 128 + signal.SIGINT
SIGTERM_EXIT = 128 + signal.SIGTERM


class Terminated(KeyboardInterrupt):
    """The process got SIGTERM."""


# Whether SIGTERM interrupted this process: typer turns any KeyboardInterrupt raised outside a run's loop
# (while the plan is made, say) into exit code 130 and drops the exception, so the CLI asks here.
_terminated = threading.Event()


def was_terminated() -> bool:
    """Whether a SIGTERM was raised as ``Terminated`` since ``sigterm_raises`` was entered."""
    return _terminated.is_set()


class RunInterrupted(BaseException):
    """A run stopped by Ctrl-C or SIGTERM, with its last words; a BaseException, so that nothing on the way
    out mistakes it for an error of its own."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


def exit_code(exc: BaseException | None) -> int:
    """143 for SIGTERM, 130 for Ctrl-C (and anything else that interrupted)."""
    return SIGTERM_EXIT if isinstance(exc, Terminated) else SIGINT_EXIT


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    # Once: a second SIGTERM while the first one's cleanup runs must not cut that cleanup short.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _terminated.set()
    raise Terminated


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """Within: SIGTERM raises ``Terminated`` in the main thread (elsewhere, or where SIGTERM is ignored
    on purpose, nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    if previous == signal.SIG_IGN:
        yield
        return
    _terminated.clear()
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def recorded_count(expected: Collection[tuple[str, int]], stored: Collection[tuple[str, int]]) -> int:
    """How many of the plan's (cell key, repeat) entries have a record."""
    return len(set(expected) & set(stored))


def summary(recorded: int, total: int, resume: str) -> str:
    return f"interrupted: {recorded} of {total} cells recorded; resume with: {resume}"
