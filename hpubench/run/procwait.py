"""Waiting for a child process with a timeout, without waking up while it runs.

``subprocess.Popen.wait(timeout=...)`` polls (sleeps growing to 50 ms, then 20 wake-ups a second for as
long as the child runs): a launcher waiting on a cell that measures for minutes would keep taking the
CPU from it. A pidfd (Linux >= 5.3) becomes readable exactly when the process exits, so one ``select``
covers the whole wait; elsewhere this falls back to Popen's own wait.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess


def wait_exit(proc: subprocess.Popen[bytes], timeout_s: float) -> bool:
    """Wait up to ``timeout_s`` for ``proc`` to exit; True when it did (and it is then reaped)."""
    pidfd = None
    with contextlib.suppress(AttributeError, OSError):
        pidfd = os.pidfd_open(proc.pid)
    if pidfd is None:  # no pidfd on this platform, or the child is already reaped
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return False
        return True
    try:
        ready, _, _ = select.select([pidfd], [], [], max(0.0, timeout_s))
    finally:
        os.close(pidfd)
    if not ready:
        return False
    proc.wait()
    return True
