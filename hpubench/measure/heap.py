"""The host heap policy of a cell's processes: glibc malloc's trim and mmap thresholds, held fixed.

Why: glibc's malloc moves both thresholds while a process runs. Until they settle, a CPU training step
that frees megabytes of activations at the top of the heap has the heap trimmed and regrown every step, and
every regrown page faults in again. Measured on the 2-core dev VM (torch 2.13 CPU, resnet tiny, bare
training loop in fresh processes): under glibc's own behaviour the processes took 1,200-2,200 minor page
faults a step and 8-14% of their CPU in the kernel, at 617-686 samples/s. The fast processes seen before
(719-765) match the speed of a heap that does not churn (inferred: none was caught with its fault count),
so whether a process's heap settles is the per-process draw that made resnet tiny's run-to-run CV reach 6.7%.

``steady`` (the default) holds both from the process's start where glibc would end up: the mmap threshold
at 32 MiB, its ceiling for the dynamic threshold on 64-bit, and the trim threshold far above any step's
churn. Every process then starts settled: 725-756 samples/s and 0-8 faults a step in the same test. Both
are needed: a fixed trim threshold alone keeps the default 128 KiB mmap threshold (390 samples/s, 14,800
faults a step), and a fixed mmap threshold alone keeps trimming (600). ``system`` leaves glibc's own
behaviour. A user's own allocator settings always win: ``MALLOC_*_`` variables, glibc malloc tunables in
``GLIBC_TUNABLES``, or another allocator in ``LD_PRELOAD``. PyTorch's own CPU launcher
(``torch/backends/xeon/run_cpu.py``) preloads TCMalloc or JeMalloc for the same reason; its docstring
says they "reduce page fault to improve performance".

Pure: the plan from the environment. Applying it is :mod:`hpubench.measure.heap_probe`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from hpubench.measure.conditions import policy_from_env, refuse_bad_policy

HEAP_ENV = "HPUBENCH_MALLOC"
HEAP_POLICIES = ("steady", "system")
DEFAULT_HEAP_POLICY = "steady"

# glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit (4 MiB x sizeof(long)): the highest value mallopt accepts.
MMAP_THRESHOLD = 32 * 2**20
# Far above what a step frees at the top of the heap; still an int for mallopt.
TRIM_THRESHOLD = 2**30
STEADY_ENV: Mapping[str, str] = MappingProxyType(
    {"MALLOC_MMAP_THRESHOLD_": str(MMAP_THRESHOLD), "MALLOC_TRIM_THRESHOLD_": str(TRIM_THRESHOLD)}
)
"""What a user exports so that their own training's glibc holds the thresholds the steady policy holds."""

# glibc reads these at start-up: a user who set any of them has chosen the allocator's behaviour.
USER_MALLOC_ENV = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_")
USER_TUNABLES = (
    "glibc.malloc.trim_threshold",
    "glibc.malloc.mmap_threshold",
    "glibc.malloc.top_pad",
    "glibc.malloc.mmap_max",
)


@dataclass(frozen=True)
class HeapPlan:
    """What a cell's process sets: malloc's two thresholds (None: leave the allocator as it is)."""

    policy: str
    trim_threshold: int | None = None
    mmap_threshold: int | None = None


def heap_policy(environ: Mapping[str, str]) -> str:
    """The policy ``HPUBENCH_MALLOC`` asks for (default ``steady``); ValueError names the fix."""
    return policy_from_env(environ, HEAP_ENV, HEAP_POLICIES, DEFAULT_HEAP_POLICY, "heap")


def check_heap_env(environ: Mapping[str, str]) -> None:
    """Refuse a bad ``HPUBENCH_MALLOC`` before any worker starts (one line, exit 2 from the CLI)."""
    refuse_bad_policy(heap_policy, environ)


def user_allocator(environ: Mapping[str, str]) -> str | None:
    """The user's own allocator setting in ``environ``, named as the record shows it (None: there is none)."""
    for name in USER_MALLOC_ENV:
        if environ.get(name, "").strip():
            return f"{name}={environ[name].strip()}"
    tunables = environ.get("GLIBC_TUNABLES", "")
    if any(t in tunables for t in USER_TUNABLES):
        return f"GLIBC_TUNABLES={tunables}"
    preload = environ.get("LD_PRELOAD", "")
    if "malloc" in preload:  # libjemalloc, libtcmalloc, libmimalloc: another allocator, not glibc's
        return f"LD_PRELOAD={preload}"
    return None


def plan_heap(policy: str, environ: Mapping[str, str]) -> HeapPlan:
    """One process's heap plan under ``policy``; a user's own allocator setting wins and nothing is set."""
    user = user_allocator(environ)
    if user is not None:
        return HeapPlan(f"user: {user}")
    if policy == "steady":
        return HeapPlan(policy, TRIM_THRESHOLD, MMAP_THRESHOLD)
    if policy == "system":
        return HeapPlan(policy)
    raise ValueError(f"unknown heap policy {policy!r}; known: {', '.join(HEAP_POLICIES)}")
