"""Errors the CLI turns into one line and exit code 2 (bad input), never a traceback."""


class UsageError(Exception):
    """Bad input from the user: the message names the problem and the fix, on one line."""


class WriteFailed(UsageError):
    """A record or the run's metadata could not be written (disk full, read-only filesystem, I/O error);
    what was written before is intact. ``hpubench.api.run_plan`` adds how to resume."""


class CellSkipped(Exception):
    """Raised inside a worker when a cell turns out not to be runnable here; the message is the reason."""


class ProbeFailed(Exception):
    """The estimate probe gave no result; the message says why, in one line (the run goes on unestimated)."""
