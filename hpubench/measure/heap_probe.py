"""Apply a :class:`hpubench.measure.heap.HeapPlan` to this process through glibc's ``mallopt`` (the I/O half).

mallopt changes the allocator of the running process, so the plan works in a child forked from the fork
server as well as in a fresh one (``GLIBC_TUNABLES`` would be read only at a process's start). Setting a
threshold through mallopt also turns off glibc's dynamic adjustment of both, which is the point.
"""

from __future__ import annotations

import ctypes
from typing import Any

from hpubench.measure.heap import HeapPlan

# mallopt's parameter numbers (glibc malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3


def glibc() -> tuple[ctypes.CDLL, str] | None:
    """This process's C library and its version, where it is glibc (None elsewhere: musl, macOS)."""
    try:
        libc = ctypes.CDLL(None)
        version = libc.gnu_get_libc_version
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return None
    version.restype = ctypes.c_char_p
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return libc, version().decode()


def apply_heap_plan(plan: HeapPlan) -> dict[str, Any]:
    """Set the plan's thresholds in this process; ``runtime["heap"]``: the policy and what was set."""
    facts: dict[str, Any] = {"policy": plan.policy}
    found = glibc()
    facts["allocator"] = f"glibc {found[1]}" if found else "not glibc"
    if plan.trim_threshold is None and plan.mmap_threshold is None:
        facts["applied"] = False
        return facts
    if found is None:
        facts["applied"] = False
        facts["why_not"] = "mallopt needs glibc's malloc; this process's C library is another"
        return facts
    libc = found[0]
    ok = True
    for param, name, value in (
        (M_MMAP_THRESHOLD, "mmap_threshold", plan.mmap_threshold),
        (M_TRIM_THRESHOLD, "trim_threshold", plan.trim_threshold),
    ):
        if value is not None:
            accepted = libc.mallopt(param, value) == 1
            ok = ok and accepted
            facts[name] = value if accepted else None
    facts["applied"] = ok
    if not ok:
        facts["why_not"] = "mallopt refused a threshold"
    return facts
