"""The conditions a measurement ran under, the pure half: no torch, no I/O.

A cell whose threads wait on a descheduled sibling is uniformly slow, so its interval stays tight and the
figures alone cannot tell it from a good one. Three facts can: how the cell's threads were set up (the
thread policy, here), how long the cell's own busy threads waited on a run queue while it measured
(``run_queue_wait``, from the kernel's per-thread schedstat, in nanoseconds: fine enough for a window of a
few milliseconds), and how much CPU time *other* processes took on the cell's CPUs (``interference``, from
/proc/stat, counted in ticks: coarse over a short window). Both come from two samples the reader in
:mod:`hpubench.measure.conditions_probe` takes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hpubench.errors import UsageError

# /proc/stat cpuN columns: user nice system idle iowait irq softirq steal guest guest_nice. Busy is every
# column but idle and iowait; guest time is already inside user (the kernel adds it there too).
BUSY_COLUMNS = (0, 1, 2, 5, 6, 7)

THREADS_ENV = "HPUBENCH_CPU_THREADS"
# all: torch's default, one intra-op thread per core of the affinity (divided among a cell's ranks);
# all-passive: the same with OMP_WAIT_POLICY=PASSIVE (idle OpenMP threads sleep instead of spinning);
# cores-1: one core left free for everything else; pinned: cores-1 threads, affinity limited to them.
THREAD_POLICIES = ("all", "all-passive", "cores-1", "pinned")
DEFAULT_THREAD_POLICY = "cores-1"


def busy_ticks_per_cpu(proc_stat: str) -> dict[int, int]:
    """Busy clock ticks per CPU from the text of /proc/stat (its ``cpuN`` lines; not the total line)."""
    busy: dict[int, int] = {}
    for line in proc_stat.splitlines():
        name, _, rest = line.partition(" ")
        if not name.startswith("cpu") or name == "cpu":
            continue
        cols = [int(x) for x in rest.split()]
        busy[int(name[3:])] = sum(cols[i] for i in BUSY_COLUMNS if i < len(cols))
    return busy


@dataclass(frozen=True)
class HostSample:
    """One reading: a monotonic time, busy ticks per CPU, and CPU seconds the cell's own tree used so far;
    ``threads``: every thread of the tree's (ns on CPU, ns waiting on a run queue) by thread id, None where
    schedstat could not be read."""

    wall_s: float
    busy_ticks: Mapping[int, int]
    own_cpu_s: float
    threads: Mapping[int, tuple[int, int]] | None = None
    runnable: int | None = None  # threads runnable on the host (/proc/stat procs_running), the reader's too
    own_runnable: int | None = None  # of them, the cell's own (its threads in state R)


@dataclass(frozen=True)
class Interference:
    """The share of the window's core-seconds on the cell's CPUs that other processes took.

    ``tick_s`` is /proc/stat's resolution: each CPU's busy time is only known to one tick per sample, so
    on a window shorter than a few hundred ticks per CPU the fraction is coarse (``resolution`` says how).
    """

    fraction: float
    window_s: float
    cpus: tuple[int, ...]
    busy_core_s: float
    own_core_s: float
    tick_s: float
    resolution: float = field(default=0.0)
    # Runnable threads on the host and of them the cell's, at the window's start and end, and the CPUs online:
    # where the ticks are too coarse, a host with more runnable threads than CPUs at both ends had a
    # neighbour queued beside the cell all along (or nearly).
    runnable: tuple[int, int] | None = None
    own_runnable: tuple[int, int] | None = None
    cpus_online: int = 0

    def detail(self) -> dict[str, Any]:
        edges = {}
        if self.runnable is not None and self.own_runnable is not None:
            edges = {
                "runnable_at_edges": {
                    "host": list(self.runnable),
                    "own": list(self.own_runnable),
                    "cpus_online": self.cpus_online,
                }
            }
        return {
            "window_s": self.window_s,
            "cpus": list(self.cpus),
            "busy_core_s": self.busy_core_s,
            "own_core_s": self.own_core_s,
            "resolution": self.resolution,
            **edges,
            "method": (
                "/proc/stat busy ticks (user+nice+system+irq+softirq+steal) of the cell's CPUs minus the "
                "CPU time of the cell's own process tree (several ranks: their agent and all its ranks on "
                "this host), over measured-window wall time x CPUs"
            ),
        }


def interference(start: HostSample, end: HostSample, cpus: Sequence[int], tick_s: float) -> Interference:
    """(busy on ``cpus`` - own tree's CPU time) / (window x len(cpus)), clamped to [0, 1].

    Own time can exceed the busy ticks by a tick or two per CPU (the two counters round differently),
    hence the clamp; a window of zero length or no CPUs gives 0 with resolution 1 (it says nothing).
    """
    chosen = tuple(sorted(c for c in cpus if c in start.busy_ticks and c in end.busy_ticks))
    window = max(0.0, end.wall_s - start.wall_s)
    busy = sum(end.busy_ticks[c] - start.busy_ticks[c] for c in chosen) * tick_s
    own = max(0.0, end.own_cpu_s - start.own_cpu_s)
    capacity = window * len(chosen)
    edges: dict[str, Any] = {"cpus_online": len(end.busy_ticks)}
    if None not in (start.runnable, end.runnable, start.own_runnable, end.own_runnable):
        edges.update(
            runnable=(start.runnable, end.runnable), own_runnable=(start.own_runnable, end.own_runnable)
        )
    if capacity <= 0:
        return Interference(0.0, window, chosen, busy, own, tick_s, resolution=1.0, **edges)
    fraction = min(1.0, max(0.0, (busy - own) / capacity))
    # Each CPU's busy delta is known to +-1 tick (start and end each round down).
    resolution = min(1.0, 2 * len(chosen) * tick_s / capacity)
    return Interference(fraction, window, chosen, busy, own, tick_s, resolution, **edges)


def procs_running(proc_stat: str) -> int | None:
    """Threads runnable on the host when /proc/stat was read (its ``procs_running`` line, which counts the
    reading thread too); None where the line is missing."""
    for line in proc_stat.splitlines():
        name, _, rest = line.partition(" ")
        if name == "procs_running" and rest.strip().isdigit():
            return int(rest)
    return None


def thread_state(task_stat: str) -> str | None:
    """A thread's state letter (R running or runnable, S sleeping, ...) from its
    ``/proc/<pid>/task/<tid>/stat`` line: the field after the name, which is in parentheses and may itself
    hold spaces or parentheses."""
    _, paren, rest = task_stat.rpartition(")")
    fields = rest.split()
    return fields[0] if paren and fields else None


BUSY_THREAD_SHARE = 0.05
"""Least share of the window a thread must have been running or runnable to count as one of the cell's busy
threads. Sleeping threads (a passive OpenMP pool, the loader's idle workers, a timer) accrue neither
counter; one that wakes for a moment can wait longer than it runs, so counting it would let a wake-up
latency stand for the cell's contention."""


def schedstat_times(text: str) -> tuple[int, int] | None:
    """(ns on CPU, ns waiting on a run queue) from a ``/proc/<pid>/task/<tid>/schedstat`` line (its first
    two fields; the third is the count of timeslices); None where the line is not that."""
    fields = text.split()
    if len(fields) < 2 or not all(f.isdigit() for f in fields[:2]):
        return None
    return int(fields[0]), int(fields[1])


@dataclass(frozen=True)
class RunQueueWait:
    """How long the cell's busy threads waited for a CPU, as a share of the time they wanted one.

    ``fraction`` = wait / (on-CPU + wait), summed over the busy threads (:data:`BUSY_THREAD_SHARE`) of the
    window. A thread that has a CPU to itself waits almost never; beside two busy neighbours on two cores
    it waits a third of the time or more, whatever the window's length, because the counters are in
    nanoseconds. Threads that ended inside the window are not counted (their counters are gone).
    """

    fraction: float
    window_s: float
    busy_threads: int
    threads: int
    on_cpu_s: float
    wait_s: float

    def detail(self) -> dict[str, Any]:
        return {
            "window_s": self.window_s,
            "busy_threads": self.busy_threads,
            "threads": self.threads,
            "on_cpu_s": self.on_cpu_s,
            "wait_s": self.wait_s,
            "method": (
                "/proc/<pid>/task/*/schedstat of every thread of the cell's process tree (several ranks: "
                "their agent and all its ranks on this host): run-queue wait / (on-CPU + wait) of the "
                f"threads running or runnable for >= {BUSY_THREAD_SHARE:.0%} of the measured window"
            ),
        }


def run_queue_wait(
    start: Mapping[int, tuple[int, int]], end: Mapping[int, tuple[int, int]], window_s: float
) -> RunQueueWait | None:
    """The busy threads' wait share between two schedstat samples by thread id; None where the kernel keeps
    no counts (every thread reads 0 ns on CPU at the end: a kernel without sched_info prints zeros).

    A thread first seen at the end started inside the window: all its time is the window's. A thread id
    whose counters went backwards was reused by a new thread: the same. With no busy thread (every thread
    slept) nothing waited: the share is 0.
    """
    if not end or all(cpu == 0 for cpu, _ in end.values()):
        return None
    busy_cpu = busy_wait = 0
    busy = 0
    for tid, (cpu1, wait1) in end.items():
        cpu0, wait0 = start.get(tid, (0, 0))
        if cpu1 < cpu0 or wait1 < wait0:
            cpu0 = wait0 = 0
        cpu, wait = cpu1 - cpu0, wait1 - wait0
        if window_s > 0 and (cpu + wait) / 1e9 >= BUSY_THREAD_SHARE * window_s:
            busy += 1
            busy_cpu += cpu
            busy_wait += wait
    total = busy_cpu + busy_wait
    fraction = busy_wait / total if total > 0 else 0.0
    return RunQueueWait(fraction, max(0.0, window_s), busy, len(end), busy_cpu / 1e9, busy_wait / 1e9)


def self_contended(rq: RunQueueWait, cpus: int) -> str | None:
    """Why the run-queue figure says nothing of other processes, or None where it does: a cell whose own busy
    threads outnumber its CPUs (several ranks on a few cores, their communication threads) queues behind
    itself, and schedstat cannot tell whose thread held the CPU; /proc/stat's share, which subtracts the
    cell's own CPU time, is the one to read then."""
    if rq.busy_threads <= cpus:
        return None
    return (
        f"the cell's own {rq.busy_threads} busy threads outnumber its {cpus} CPUs, so they wait for each "
        f"other ({rq.fraction:.0%} of their runnable time): not a measure of other processes"
    )


def policy_from_env(
    environ: Mapping[str, str], var: str, policies: Sequence[str], default: str, kind: str
) -> str:
    """The ``kind`` policy named by ``var`` (``default`` when unset or blank); ValueError names the fix."""
    value = environ.get(var, "").strip()
    if not value:
        return default
    if value not in policies:
        raise ValueError(
            f"{var}={value!r} is not a {kind} policy; use one of {', '.join(policies)} (or unset it)"
        )
    return value


def refuse_bad_policy(read: Callable[[Mapping[str, str]], str], environ: Mapping[str, str]) -> None:
    """Read a policy with ``read`` (``thread_policy``, ``heap_policy``) before any worker starts, turning its
    ValueError into a UsageError: one line and exit 2 from the CLI."""
    try:
        read(environ)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def thread_policy(environ: Mapping[str, str]) -> str:
    """The policy asked for by ``HPUBENCH_CPU_THREADS`` (default ``cores-1``); ValueError names the fix."""
    return policy_from_env(environ, THREADS_ENV, THREAD_POLICIES, DEFAULT_THREAD_POLICY, "thread")


@dataclass(frozen=True)
class ThreadPlan:
    """What one process of a cell sets: intra-op threads and CPU affinity (None: leave as it is)."""

    policy: str
    threads: int | None
    affinity: tuple[int, ...] | None = None


def plan_threads(
    policy: str, cpus: Sequence[int], local_world_size: int, local_rank: int, environ: Mapping[str, str]
) -> ThreadPlan:
    """One process's threads under ``policy``, sharing ``cpus`` (its affinity) with its node's ranks.

    A user's ``OMP_NUM_THREADS`` always wins: nothing is set and the policy is recorded as the user's.
    ``pinned`` gives each rank its own slice of the CPUs, leaving the first (the one interrupts and
    housekeeping favour) free where the ranks still get one CPU each without it. Two ranks on two CPUs
    therefore get one each: stacked on one CPU they would halve their speed, and unpinned their threads
    take turns on both and the step time wanders for stretches (``docs/measurements.md``). More ranks than
    CPUs share them all.
    """
    user = environ.get("OMP_NUM_THREADS", "").strip()
    if user:
        return ThreadPlan(f"user: OMP_NUM_THREADS={user}", None)
    ranks = max(1, local_world_size)
    ordered = sorted(cpus)
    n = max(1, len(ordered))
    if policy in ("all", "all-passive"):
        # One rank keeps torch's own default (one thread per core); several divide the cores.
        return ThreadPlan(policy, None if ranks == 1 else max(1, n // ranks))
    if policy == "cores-1":
        return ThreadPlan(policy, max(1, (n - 1) // ranks))
    if policy == "pinned":
        usable = ordered[1:] if len(ordered) > ranks else ordered
        if len(usable) >= ranks:
            share = len(usable) // ranks
            mine = tuple(usable[local_rank * share : (local_rank + 1) * share])
            return ThreadPlan(policy, len(mine), mine)
        return ThreadPlan(policy, 1, tuple(usable))
    raise ValueError(f"unknown thread policy {policy!r}; known: {', '.join(THREAD_POLICIES)}")
