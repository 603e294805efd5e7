"""The conditions a measurement ran under, read from the live process and host (the I/O half).

Thin readers around :mod:`hpubench.measure.conditions`: the thread facts in force, the thread plan applied,
and two samples of /proc/stat and of the cell's own process tree (its CPU time, and every thread's
schedstat counters) bracketing the measured steps.

Which processes count as the cell's own: the tree under the cell's root process. A single-process cell's
root is its own process (a forked or spawned child made for the cell); a multi-process cell's root is the
elastic agent that started its ranks (every rank's parent), so each rank counts the agent and all ranks of
its node as its own and only outsiders as interference. Processes that ended inside the window count
through their parent's reaped-children time.
"""

from __future__ import annotations

import contextlib
import os
import resource
import time
from collections.abc import Callable, Mapping
from typing import Any

import psutil
import torch

from hpubench.measure.children import has_children
from hpubench.measure.conditions import (
    HostSample,
    Interference,
    RunQueueWait,
    ThreadPlan,
    busy_ticks_per_cpu,
    interference,
    procs_running,
    run_queue_wait,
    schedstat_times,
    self_contended,
    thread_state,
)

PROC_STAT = "/proc/stat"


def affinity(pid: int = 0) -> list[int]:
    """CPUs the process may run on (all CPUs where the platform cannot say)."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(pid))
    return list(range(os.cpu_count() or 1))


def thread_facts(policy: str) -> dict[str, Any]:
    """``runtime["threads"]``: the threads, OpenMP wait policy and affinity in force in this process."""
    try:
        load: float | None = os.getloadavg()[0]
    except OSError:
        load = None
    return {
        "intra_op": torch.get_num_threads(),
        "inter_op": torch.get_num_interop_threads(),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "affinity": affinity(),
        "load_avg_start": load,
        "policy": policy,
    }


def apply_plan(plan: ThreadPlan) -> str:
    """Set the plan's affinity on every thread of this process (new threads inherit it), then its threads."""
    if plan.affinity is not None and hasattr(os, "sched_setaffinity"):
        try:
            tids = [int(t) for t in os.listdir("/proc/self/task")]
        except OSError:
            tids = [0]
        for tid in tids:
            # A thread may end meanwhile, or be one we may not move.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.sched_setaffinity(tid, plan.affinity)
    if plan.threads is not None:
        torch.set_num_threads(plan.threads)
    return plan.policy


def tree(root_pid: int) -> list[psutil.Process]:
    """``root_pid`` and all its descendants (empty when it has ended). This process with no child is the
    whole tree, known without scanning every process of the machine (``has_children``); another root (a
    distributed cell's agent) is always scanned."""
    try:
        root = psutil.Process(root_pid)
        if root_pid == os.getpid() and not has_children():
            return [root]
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def tree_cpu_s(root_pid: int, procs: list[psutil.Process] | None = None) -> float:
    """CPU seconds (user + system, with reaped children) of ``root_pid`` and all its descendants."""
    procs = tree(root_pid) if procs is None else procs
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
        except psutil.Error:
            continue  # ended between listing and reading: its time is in its parent's children_* now
        total += t.user + t.system + t.children_user + t.children_system
    return total


def tree_threads(
    procs: list[psutil.Process], proc_root: str = "/proc"
) -> tuple[dict[int, tuple[int, int]] | None, int | None]:
    """Every thread's (ns on CPU, ns waiting on a run queue) of these processes by thread id, and how many of
    them are runnable now (state R); None for either where no file of its kind could be read (no /proc, a
    kernel built without schedstat). A process or thread that ends while it is read is left out."""
    times: dict[int, tuple[int, int]] = {}
    running = 0
    readable = [False, False]
    for p in procs:
        base = os.path.join(proc_root, str(p.pid), "task")
        try:
            tids = os.listdir(base)
        except OSError:
            continue
        for tid in tids:
            for i, name in enumerate(("schedstat", "stat")):
                try:
                    with open(os.path.join(base, tid, name)) as f:
                        text = f.read()
                except OSError:
                    continue
                readable[i] = True
                if name == "stat":
                    running += thread_state(text) == "R"
                elif (t := schedstat_times(text)) is not None and tid.isdigit():
                    times[int(tid)] = t
    return (times if readable[0] else None), (running if readable[1] else None)


def read_sample(root_pid: int) -> HostSample:
    procs = tree(root_pid)
    own = tree_cpu_s(root_pid, procs)
    threads, own_running = tree_threads(procs)
    with open(PROC_STAT) as f:
        text = f.read()
    return HostSample(
        time.monotonic(), busy_ticks_per_cpu(text), own, threads, procs_running(text), own_running
    )


class InterferenceMeter:
    """Samples at the start and end of the measured steps; ``record()`` gives the runtime fields.

    Where /proc cannot be read (not Linux) it records nothing rather than a made-up zero; where the
    threads' schedstat cannot, ``run_queue_detail`` says so (the verdict then knows the finer source is
    missing).
    """

    def __init__(self, root_pid: int) -> None:
        self.root_pid = root_pid
        self.cpus = affinity(root_pid) if psutil.pid_exists(root_pid) else affinity()
        self.tick_s = 1.0 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 0.01
        self._start: HostSample | None = None
        self.result: Interference | None = None
        self.run_queue: RunQueueWait | None = None
        self.error: str | None = None
        self._faults: tuple[int, int] | None = None
        self.page_faults: dict[str, int] | None = None

    def open_window(self) -> None:
        """The first /proc sample, before the warm-up's lead-in step: the slow part of the meter, kept out
        of the step right before the window (``hpubench.measure.steps``). Its shares then span that step
        too, which is the cell's own work."""
        try:
            self._start = read_sample(self.root_pid)
        except OSError as exc:
            self.error = f"{type(exc).__name__}: {exc}"

    def start(self) -> None:
        """The page-fault count at the window's exact start (a ``getrusage`` call, which costs nothing
        measurable to the next step); opens the /proc window too where :meth:`open_window` was not called."""
        if self._start is None and self.error is None:
            self.open_window()
        self._faults = _own_faults()

    def stop(self) -> None:
        if self._faults is not None and self.page_faults is None:
            minor, major = _own_faults()
            self.page_faults = {"minor": minor - self._faults[0], "major": major - self._faults[1]}
        if self._start is None or self.result is not None:
            return
        try:
            end = read_sample(self.root_pid)
        except OSError as exc:
            self.error = f"{type(exc).__name__}: {exc}"
            return
        self.result = interference(self._start, end, self.cpus, self.tick_s)
        if self._start.threads is not None and end.threads is not None:
            self.run_queue = run_queue_wait(self._start.threads, end.threads, end.wall_s - self._start.wall_s)

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.page_faults is not None:
            out["page_faults_measured"] = self.page_faults
        if self.result is None:
            return {**out, "interference_error": self.error} if self.error else out
        out.update(interference=self.result.fraction, interference_detail=self.result.detail())
        if self.run_queue is None:
            why = "no per-thread schedstat on this host (no /proc/<pid>/task/*/schedstat, or all zeros)"
            return {**out, "run_queue_detail": {"available": False, "reason": why}}
        own = self_contended(self.run_queue, len(self.cpus))
        if own is not None:
            return {**out, "run_queue_detail": {**self.run_queue.detail(), "available": False, "reason": own}}
        return {**out, "run_queue_wait": self.run_queue.fraction, "run_queue_detail": self.run_queue.detail()}

    def hooks(self, hooks: Mapping[str, Callable[..., None]]) -> dict[str, Callable[..., None]]:
        """``measure_steps`` hooks with this meter's samples innermost around the measured steps, its /proc
        window opened before the warm-up's lead-in step."""
        before, after = hooks.get("on_measured_start"), hooks.get("on_measured_end")
        opened = hooks.get("on_window_open")

        def on_open() -> None:
            if opened is not None:
                opened()
            self.open_window()

        def on_start() -> None:
            if before is not None:
                before()
            self.start()

        def on_end() -> None:
            self.stop()
            if after is not None:
                after()

        return {
            **hooks,
            "on_window_open": on_open,
            "on_measured_start": on_start,
            "on_measured_end": on_end,
        }


def _own_faults() -> tuple[int, int]:
    """This process's (minor, major) page faults so far. A step that keeps faulting is touching memory
    for the first time (a heap regrown after a trim, a page shared with the fork server copied on
    write): a cost a steady loop does not have, recorded so a slow figure can be told apart."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_minflt, usage.ru_majflt
