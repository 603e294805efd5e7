"""The conditions a measurement ran under, the pure half: no torch, no I/O.

A cell whose threads wait on a descheduled sibling is uniformly slow, so its interval stays tight and the
figures alone cannot tell it from a good one. Two facts can: how the cell's threads were set up (the
thread policy, here), and how much CPU time *other* processes took on the cell's CPUs while it measured
(``interference``, from two samples the reader in :mod:`hpubench.measure.conditions_probe` takes).
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
    """One reading: a monotonic time, busy ticks per CPU, and CPU seconds the cell's own tree used so far."""

    wall_s: float
    busy_ticks: Mapping[int, int]
    own_cpu_s: float


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

    def detail(self) -> dict[str, Any]:
        return {
            "window_s": self.window_s,
            "cpus": list(self.cpus),
            "busy_core_s": self.busy_core_s,
            "own_core_s": self.own_core_s,
            "resolution": self.resolution,
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
    if capacity <= 0:
        return Interference(0.0, window, chosen, busy, own, tick_s, resolution=1.0)
    fraction = min(1.0, max(0.0, (busy - own) / capacity))
    # Each CPU's busy delta is known to +-1 tick (start and end each round down).
    resolution = min(1.0, 2 * len(chosen) * tick_s / capacity)
    return Interference(fraction, window, chosen, busy, own, tick_s, resolution)


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
    ``pinned`` drops the first CPU (the one interrupts and housekeeping favour) and, for several ranks,
    gives each its own slice of the rest when there are enough CPUs for one each.
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
        usable = ordered[1:] if len(ordered) > 1 else ordered
        if len(usable) >= ranks:
            share = len(usable) // ranks
            mine = tuple(usable[local_rank * share : (local_rank + 1) * share])
            return ThreadPlan(policy, len(mine), mine)
        return ThreadPlan(policy, 1, tuple(usable))
    raise ValueError(f"unknown thread policy {policy!r}; known: {', '.join(THREAD_POLICIES)}")
