"""Waiting for a cell's child, the same way under fork and spawn isolation: its timeout enforced on its
whole process group (SIGTERM, a grace for faulthandler's stack dump, then SIGKILL), whatever it left in
its group killed, and how it ended (with its peak RSS and the cgroup's OOM kills) in one reply.

The zygote waits for its forked children with it; the launcher waits for a spawned child with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import time
from dataclasses import dataclass
from typing import Any

from hpubench.run import oomwatch
from hpubench.run.exitwords import MemoryEvidence
from hpubench.run.forkserver.wire import LineChannel

KILL_GRACE_S = 2.0  # between SIGTERM (faulthandler dumps the stack) and SIGKILL on a timeout
POLL_S = 0.005  # child-exit polling interval where pidfd is not available


def killpg(pgid: int, sig: int) -> None:
    """Signal a process group that may already be gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def note(log: str | None, text: str) -> None:
    """A line from the harness into the cell's log, so the log tail says what the harness did."""
    if not log:
        return
    with contextlib.suppress(OSError), open(log, "a") as f:
        f.write(f"\n[hpubench] {text}\n")


def status_of(wait_status: int) -> tuple[str, int | None, int | None]:
    if os.WIFSIGNALED(wait_status):
        return "signaled", None, os.WTERMSIG(wait_status)
    return "exited", os.waitstatus_to_exitcode(wait_status), None


def wait_child(
    pid: int, timeout_s: float, log: str | None, control: LineChannel | None
) -> dict[str, Any] | None:
    """Wait for a child that leads its own process group; enforce the timeout on the whole group.

    Returns the reply for the launcher, or None when the launcher went away meanwhile (end of input or
    an exit request on ``control``): the child's group is then killed and the caller should exit.
    Other messages arriving meanwhile stay buffered in ``control``.
    """
    t0 = time.monotonic()
    timeout = _Timeout(pid, log, timeout_s, deadline=t0 + timeout_s)
    oom_before = oomwatch.oom_kills()
    pidfd = _open_pidfd(pid)
    try:
        while True:
            # Look without reaping: while the child is an unreaped zombie its pid (= its process group
            # id) cannot be reused, so the group kill below cannot hit an unrelated process.
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                break
            ready = _wait_ready(timeout.escalate(time.monotonic()), pidfd, control)
            if control is not None and control.fd in ready:
                control.fill()
                if control.eof or exit_requested(control):
                    killpg(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    return None
    finally:
        if pidfd is not None:
            os.close(pidfd)
    return _reap(pid, t0, oom_before, timeout.timed_out)


def _open_pidfd(pid: int) -> int | None:
    """A pidfd for the child where the kernel has them (Linux >= 5.3), so the wait wakes exactly when it
    exits instead of polling; None elsewhere."""
    with contextlib.suppress(AttributeError, OSError):
        return os.pidfd_open(pid)
    return None


@dataclass
class _Timeout:
    """A child's timeout, escalated on its process group: SIGTERM at the deadline (faulthandler dumps the
    stack), SIGKILL a grace later if it is still there."""

    pid: int
    log: str | None
    timeout_s: float
    deadline: float
    timed_out: bool = False
    killed: bool = False
    kill_at: float = 0.0

    def escalate(self, now: float) -> float:
        """Send whichever signal is due at ``now``; the seconds until the next one (or a second, once both
        are sent)."""
        if not self.timed_out and now >= self.deadline:
            self.timed_out = True
            note(
                self.log,
                f"timed out after {self.timeout_s:g} s: SIGTERM to the process group, stack dump follows",
            )
            killpg(self.pid, signal.SIGTERM)
            self.kill_at = now + KILL_GRACE_S
        if self.timed_out and not self.killed and now >= self.kill_at:
            note(self.log, f"still alive {KILL_GRACE_S:g} s after SIGTERM: SIGKILL to the process group")
            killpg(self.pid, signal.SIGKILL)
            self.killed = True
        if not self.timed_out:
            wake = self.deadline
        elif not self.killed:
            wake = self.kill_at
        else:
            wake = now + 1.0
        return max(0.0, wake - now)


def _wait_ready(wait: float, pidfd: int | None, control: LineChannel | None) -> list[Any]:
    """Sleep up to ``wait`` seconds, woken early by the child's exit (pidfd) or a message on ``control``;
    the file descriptors that are ready. Without a pidfd the child is polled every POLL_S."""
    fds = []
    if pidfd is not None:
        fds.append(pidfd)
    else:
        wait = min(wait, POLL_S)
    if control is not None and not control.eof:
        fds.append(control.fd)
    if fds:
        ready, _, _ = select.select(fds, [], [], wait)
        return ready
    time.sleep(wait)
    return []


def _reap(pid: int, t0: float, oom_before: int | None, timed_out: bool) -> dict[str, Any]:
    """Reap the ended child, killing what it left in its group, and word the reply for the launcher."""
    # Whatever the child left in its group (a grandchild it spawned and did not reap) dies with it.
    killpg(pid, signal.SIGKILL)
    _, wstatus, usage = os.wait4(pid, 0)
    status, exitcode, sig = status_of(wstatus)
    peak = oomwatch.peak_rss_bytes(usage.ru_maxrss)
    # The memory evidence only ever words a kill (hpubench.run.exitwords): read the cgroup for a signal only.
    memory = oomwatch.evidence(peak, oom_before) if sig is not None else MemoryEvidence(peak, None, 0)
    return {
        "status": "timeout" if timed_out else status,
        "exitcode": exitcode,
        "signal": sig,
        "wall_s": time.monotonic() - t0,
        "pid": pid,
        "peak_rss_bytes": memory.peak_rss_bytes,
        "memory_limit_bytes": memory.limit_bytes,
        "oom_kills": memory.oom_kills,
    }


def exit_requested(control: LineChannel) -> bool:
    for raw in control.buf.split(b"\n")[:-1]:
        with contextlib.suppress(ValueError):
            if json.loads(raw).get("op") == "exit":
                return True
    return False
