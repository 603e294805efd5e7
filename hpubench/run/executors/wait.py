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
    deadline = t0 + timeout_s
    oom_before = oomwatch.oom_kills()
    pidfd = None
    with contextlib.suppress(AttributeError, OSError):
        pidfd = os.pidfd_open(pid)  # Linux >= 5.3: wake exactly when the child exits, no polling
    timed_out = False
    killed = False
    kill_at = 0.0
    try:
        while True:
            # Look without reaping: while the child is an unreaped zombie its pid (= its process group
            # id) cannot be reused, so the group kill below cannot hit an unrelated process.
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                break
            now = time.monotonic()
            if not timed_out and now >= deadline:
                timed_out = True
                note(
                    log, f"timed out after {timeout_s:g} s: SIGTERM to the process group, stack dump follows"
                )
                killpg(pid, signal.SIGTERM)
                kill_at = now + KILL_GRACE_S
            if timed_out and not killed and now >= kill_at:
                note(log, f"still alive {KILL_GRACE_S:g} s after SIGTERM: SIGKILL to the process group")
                killpg(pid, signal.SIGKILL)
                killed = True
            if not timed_out:
                wake = deadline
            elif not killed:
                wake = kill_at
            else:
                wake = now + 1.0
            wait = max(0.0, wake - now)
            fds = []
            if pidfd is not None:
                fds.append(pidfd)
            else:
                wait = min(wait, POLL_S)
            if control is not None and not control.eof:
                fds.append(control.fd)
            if fds:
                ready, _, _ = select.select(fds, [], [], wait)
            else:
                time.sleep(wait)
                ready = []
            if control is not None and control.fd in ready:
                control.fill()
                if control.eof or exit_requested(control):
                    killpg(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    return None
    finally:
        if pidfd is not None:
            os.close(pidfd)
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
