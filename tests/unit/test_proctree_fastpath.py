"""Nothing to scan when nothing is below: hpubench.run.proctree.reap_adopted after every cell, and the
interference meter's list of the cell's own processes right before the first measured step.

The zygote calls ``reap_adopted`` once per cell. Listing descendants reads every process of the machine from
/proc (about 0.5 ms on a quiet machine, 4 ms with a loaded one), which showed in the per-cell fixed cost;
the meter did it twice a cell as well. A process with no child at all has no descendant, and one syscall
says so.
"""

from __future__ import annotations

import os
import subprocess
import sys

import psutil

from hpubench.measure import conditions_probe
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


def test_the_meters_tree_of_a_childless_cell_is_itself_without_a_scan() -> None:
    def body() -> int:
        def scan(*_a: object, **_k: object) -> list[psutil.Process]:
            raise AssertionError("scanned /proc although this process has no child")

        psutil.Process.children = scan  # type: ignore[method-assign]
        return 0 if [p.pid for p in conditions_probe.tree(os.getpid())] == [os.getpid()] else 1

    assert _in_fork(body) == 0


def test_the_meters_tree_of_another_root_is_scanned_though_this_process_has_no_child() -> None:
    def body() -> int:  # a rank of a distributed cell: its root is the agent above it
        return 0 if os.getpid() in [p.pid for p in conditions_probe.tree(os.getppid())] else 1

    assert _in_fork(body) == 0


def test_the_meters_tree_still_lists_a_live_child_and_a_zombie() -> None:
    def body() -> int:
        proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        try:
            live = [p.pid for p in conditions_probe.tree(os.getpid())]
        finally:
            proc.kill()
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # exited, still a zombie
        zombie = [p.pid for p in conditions_probe.tree(os.getpid())]
        proc.wait()
        return 0 if live == zombie == [os.getpid(), proc.pid] else 1

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
