"""hpubench.run.proctree.reap_adopted after every cell: nothing to scan when nothing is left below.

The zygote calls it once per cell. Listing descendants reads every process of the machine from /proc
(about 0.5 ms on a quiet machine, 4 ms with a loaded one), which showed in the per-cell fixed cost;
a process with no child at all has no descendant, and one syscall says so.
"""

from __future__ import annotations

import os
import subprocess
import sys

import psutil

from hpubench.run import proctree


def _in_fork(body) -> int:  # type: ignore[no-untyped-def]
    """Run ``body`` in a forked child (a process with no children of its own); its exit code."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            code = body()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_no_children_means_no_process_scan() -> None:
    def body() -> int:
        def scan(*_a: object, **_k: object) -> list[psutil.Process]:
            raise AssertionError("scanned /proc although this process has no child")

        psutil.Process.children = scan  # type: ignore[method-assign]
        return 0 if proctree.reap_adopted() == [] else 1

    assert _in_fork(body) == 0


def test_a_live_child_is_still_killed_and_reaped() -> None:
    def body() -> int:
        proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        killed = proctree.reap_adopted()
        if killed != [proc.pid]:
            return 1
        try:
            os.kill(proc.pid, 0)
        except ProcessLookupError:
            return 0  # killed and reaped: the pid is gone
        return 2

    assert _in_fork(body) == 0


def test_a_dead_unreaped_child_is_reaped() -> None:
    def body() -> int:
        proc = subprocess.Popen([sys.executable, "-c", "pass"])
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # exited, still a zombie
        proctree.reap_adopted()
        try:
            os.waitpid(proc.pid, os.WNOHANG)
        except ChildProcessError:
            return 0  # reaped by reap_adopted
        return 1

    assert _in_fork(body) == 0
