"""The evidence for "out of memory" around one child process: the kernel's OOM-kill counter of this
process's memory cgroup (v2 ``memory.events``, v1 ``memory.oom_control``), the cgroup's memory limit,
the machine's memory, and the child's peak RSS from ``wait4``. Anything unreadable is unknown (None),
never an error: the wording (``hpubench.run.exitwords``) then makes no memory claim.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from hpubench.run.exitwords import MemoryEvidence

CGROUP_ROOT = Path("/sys/fs/cgroup")
_UNLIMITED = 2**60  # v1 writes "no limit" as a page-rounded 2**63 - 1


# This process's memory cgroup, looked up once per process (the zygote asks before and after every cell):
# (pid, dirs). A forked child has another pid, so it looks again.
_CGROUP: tuple[int, list[tuple[Path, str]]] | None = None


def forget_cgroup() -> None:
    """Look the cgroup up again at the next question (for tests, and for a process that was moved)."""
    global _CGROUP
    _CGROUP = None


def _cgroup_dirs() -> list[tuple[Path, str]]:
    """(directory, "v1"|"v2") of this process's memory cgroup, most specific first."""
    global _CGROUP
    if _CGROUP is None or _CGROUP[0] != os.getpid():
        _CGROUP = (os.getpid(), _find_cgroup_dirs())
    return _CGROUP[1]


def _find_cgroup_dirs() -> list[tuple[Path, str]]:
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return []
    found: list[tuple[Path, str]] = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, rel = parts
        rel = rel.lstrip("/")
        if controllers == "":
            bases = [CGROUP_ROOT, CGROUP_ROOT / "unified"]
            kind = "v2"
        elif "memory" in controllers.split(","):
            bases = [CGROUP_ROOT / "memory"]
            kind = "v1"
        else:
            continue
        for base in bases:
            # Inside a cgroup namespace the path may be shown as "/" while the mount is the group itself.
            for d in (base / rel, base):
                if (d / ("memory.events" if kind == "v2" else "memory.oom_control")).is_file():
                    found.append((d, kind))
                    break
    found.sort(key=lambda dk: dk[1] != "v2")  # v2 first: where both exist, v2 is the one in charge
    return found


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def oom_kills() -> int | None:
    """The kernel's OOM kills so far in this process's memory cgroup; None when unreadable."""
    for d, kind in _cgroup_dirs():
        text = _read(d / ("memory.events" if kind == "v2" else "memory.oom_control"))
        for line in (text or "").splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
    return None


def memory_limit() -> int | None:
    """The memory this process's children can have: its cgroup's limit or the machine's, the smaller."""
    limits = []
    with contextlib.suppress(ValueError, OSError, AttributeError):
        limits.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    for d, kind in _cgroup_dirs():
        text = (_read(d / ("memory.max" if kind == "v2" else "memory.limit_in_bytes")) or "").strip()
        if text.isdigit() and int(text) < _UNLIMITED:
            limits.append(int(text))
    return min(limits) if limits else None


def peak_rss_bytes(ru_maxrss: int) -> int:
    """``ru_maxrss`` in bytes: kibibytes on Linux, bytes on macOS."""
    return ru_maxrss if sys.platform == "darwin" else ru_maxrss * 1024


def evidence(peak_rss: int | None, kills_before: int | None) -> MemoryEvidence:
    """What is known once a child has ended, given the OOM-kill count read before it started."""
    after = oom_kills()
    delta = after - kills_before if after is not None and kills_before is not None else 0
    return MemoryEvidence(peak_rss, memory_limit(), max(0, delta))
