"""Errors the CLI turns into one line and exit code 2 (bad input), never a traceback, and the phrase an
OSError becomes in such a line (every layer that writes files words its failures the same way)."""

from __future__ import annotations

import errno


class UsageError(Exception):
    """Bad input from the user: the message names the problem and the fix, on one line."""


class OptionValueError(UsageError, ValueError):
    """A ``--option name=value`` its workload cannot use, raised where the workload reads it. The plan's
    model probe reads it before any cell runs, so the run is refused as bad input, not failed cell by cell."""


class WriteFailed(UsageError):
    """A record or the run's metadata could not be written (disk full, read-only filesystem, I/O error);
    what was written before is intact. ``hpubench.api.run_plan`` adds how to resume."""


class CellSkipped(Exception):
    """Raised inside a worker when a cell turns out not to be runnable here; the message is the reason."""


class ProbeFailed(Exception):
    """The estimate probe gave no result; the message says why, in one line (the run goes on unestimated)."""


def os_error_text(exc: OSError) -> str:
    """An OSError as a short phrase ("No space left on device"), without the errno number."""
    if exc.errno == errno.ENOSPC:
        return "the disk is full (no space left on device)"
    return exc.strerror or str(exc)
