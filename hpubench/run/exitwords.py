"""How a process ended, in one wording: a cell's child under fork or spawn isolation, a zygote, an agent.

A signal sent from outside (SIGKILL, SIGTERM, SIGINT, SIGHUP, SIGQUIT) is a kill; any other signal is
the process's own crash. A SIGKILL is called likely out of memory only on evidence: the kernel's OOM
killer acted in the cgroup while the process ran, or its peak RSS came within ``NEAR_LIMIT`` of the
memory it could have had. Pure logic: the evidence is gathered elsewhere (``hpubench.run.oomwatch``).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

NEAR_LIMIT = 0.9  # peak RSS at least this share of the limit reads as "ran out of memory"
GIB = 2**30
KILLS = frozenset({signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT})


@dataclass(frozen=True)
class MemoryEvidence:
    """What is known about a process's memory when it ended; None where unknown."""

    peak_rss_bytes: int | None
    limit_bytes: int | None  # the smaller of its cgroup's limit and the machine's memory
    oom_kills: int = 0  # kernel OOM kills in its cgroup while it ran


def signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"{sig}"


def likely_out_of_memory(memory: MemoryEvidence | None) -> bool:
    if memory is None:
        return False
    if memory.oom_kills > 0:
        return True
    peak, limit = memory.peak_rss_bytes, memory.limit_bytes
    return peak is not None and bool(limit) and peak >= NEAR_LIMIT * limit  # type: ignore[operator]


def _memory_words(memory: MemoryEvidence) -> str:
    if memory.peak_rss_bytes is not None and memory.limit_bytes:
        return f"peak RSS {memory.peak_rss_bytes / GIB:.1f} GiB of {memory.limit_bytes / GIB:.1f} GiB"
    return "the kernel's OOM killer acted in its cgroup"


def ended_how(exitcode: int | None, sig: int | None, memory: MemoryEvidence | None = None) -> str:
    """``exited with code 3``, ``crashed with signal SIGSEGV``, ``killed by SIGTERM``, ``killed by SIGKILL``
    or ``killed by SIGKILL, likely out of memory (peak RSS X GiB of Y GiB)``."""
    if sig is None:
        return f"exited with code {exitcode}"
    if sig not in KILLS:
        return f"crashed with signal {signal_name(sig)}"
    words = f"killed by {signal_name(sig)}"
    if sig == signal.SIGKILL and likely_out_of_memory(memory):
        words += f", likely out of memory ({_memory_words(memory)})"  # type: ignore[arg-type]
    return words


def from_wait_status(status: int, memory: MemoryEvidence | None = None) -> str:
    """``ended_how`` from a raw wait status (``os.waitpid``)."""
    if os.WIFSIGNALED(status):
        return ended_how(None, os.WTERMSIG(status), memory)
    return ended_how(os.waitstatus_to_exitcode(status), None, memory)


def from_returncode(code: int, memory: MemoryEvidence | None = None) -> str:
    """``ended_how`` from ``subprocess.Popen.returncode`` (negative: the signal)."""
    return ended_how(None, -code, memory) if code < 0 else ended_how(code, None, memory)


def no_result_reason(exitcode: int | None, sig: int | None, memory: MemoryEvidence | None = None) -> str:
    """A cell's reason when its process ended without writing a result."""
    how = ended_how(exitcode, sig, memory)
    return how if sig is not None else f"worker {how} without writing a result"


def reply_reason(reply: Mapping[str, Any], timeout_s: float | None = None) -> str:
    """A cell's reason from the wait's reply (``hpubench.run.executors.wait.wait_child``: the zygote's
    under fork
    isolation, the launcher's own under spawn) when the child left no result."""
    if "error" in reply:
        return f"internal error in the worker pool: {reply['error']}"
    if reply.get("status") == "timeout":
        return f"timed out after {timeout_s:g} s" if timeout_s is not None else "timed out"
    memory = MemoryEvidence(
        reply.get("peak_rss_bytes"), reply.get("memory_limit_bytes"), int(reply.get("oom_kills") or 0)
    )
    return no_result_reason(reply.get("exitcode"), reply.get("signal"), memory)
