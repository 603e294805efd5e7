"""A cell's whole process tree, and nothing of it left once the cell is over.

A cell's process leads its own process group, and killing the group takes whatever the cell started in
it. A process that starts a new session (``setsid``, ``start_new_session=True``: a daemon, a compile
server, a badly behaved tool) leaves the group, and when its parent dies it would be re-parented to init
and live on. Two nets catch it:

- the zygote is a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``, Linux): orphans below it are
  re-parented to it instead of init, so once its cell's child is reaped, any process still below it is
  a leftover of that cell, killed and reaped by ``reap_adopted``;
- every process the launcher starts carries the launcher's token in its environment (inherited by all
  it starts in turn), and ``sweep`` kills every process of this user holding it: after a cell run in a
  fresh interpreter (spawn isolation), after a zygote died, and when the launcher closes.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import time
from collections.abc import Collection

import psutil

from hpubench.measure.children import has_children

TOKEN_ENV = "HPUBENCH_LAUNCH_TOKEN"
PR_SET_CHILD_SUBREAPER = 36
REAP_ROUNDS = 20  # a tree that keeps forking while it is killed is re-read this many times at most
WAIT_S = 5.0


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux >= 3.4); False where it cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _kill_all(procs: list[psutil.Process]) -> None:
    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.kill()  # psutil checks the process is still the one it listed: no pid-reuse accident


def reap_adopted() -> list[int]:
    """Kill and reap every process below this one; the pids killed. Call in a subreaper that has no
    child of its own running (its cell's child reaped already): all that is below it is left over.

    Called after every cell, so the common case (nothing left) costs one syscall: listing descendants
    reads every process of the machine from /proc (0.5 ms quiet, 4 ms on a loaded machine).
    """
    if not has_children():
        return []
    me = psutil.Process()
    killed: list[int] = []
    for _ in range(REAP_ROUNDS):
        try:
            tree = me.children(recursive=True)
        except psutil.Error:
            break
        if not tree:
            break
        _kill_all(tree)
        killed += [p.pid for p in tree if p.pid not in killed]
        # The direct children are ours to reap; a killed grandchild's own children come up to us and
        # are found by the next round.
        deadline = time.monotonic() + WAIT_S
        for p in me.children():
            with contextlib.suppress(psutil.Error, ChildProcessError):
                p.wait(timeout=max(0.0, deadline - time.monotonic()))
    return killed


def sweep(token: str, spare: Collection[int] = (), name: str = TOKEN_ENV) -> list[int]:
    """Kill every process of this user whose environment holds ``name=token`` (but this one and the pids in
    ``spare``), and wait for them; the pids killed (normally none)."""
    me = os.getpid()
    uid = os.getuid()
    found: list[psutil.Process] = []
    for p in psutil.process_iter(["pid", "uids"]):
        try:
            if p.pid == me or p.pid in spare or p.info["uids"] is None or p.info["uids"].real != uid:
                continue
            if p.environ().get(name) == token:
                p.kill()
                found.append(p)
        except psutil.Error:
            continue
    psutil.wait_procs(found, timeout=WAIT_S)
    return [p.pid for p in found]
