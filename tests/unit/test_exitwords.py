"""One wording for how a cell's process ended, from its wait status, whichever isolation ran it; a SIGKILL
is called out of memory only where the evidence says so."""

from __future__ import annotations

import os
import signal

import pytest

from hpubench.run.exitwords import (
    MemoryEvidence,
    ended_how,
    from_wait_status,
    likely_out_of_memory,
    no_result_reason,
)

GIB = 2**30


@pytest.mark.parametrize(
    ("exitcode", "sig", "memory", "expected"),
    [
        (0, None, None, "exited with code 0"),
        (3, None, None, "exited with code 3"),
        (None, signal.SIGSEGV, None, "crashed with signal SIGSEGV"),
        (None, signal.SIGABRT, None, "crashed with signal SIGABRT"),
        (None, signal.SIGBUS, None, "crashed with signal SIGBUS"),
        (None, signal.SIGTERM, None, "killed by SIGTERM"),
        (None, signal.SIGINT, None, "killed by SIGINT"),
        (None, signal.SIGKILL, None, "killed by SIGKILL"),
        (None, 99, None, "crashed with signal 99"),
        # a small peak of a large limit says nothing about memory
        (None, signal.SIGKILL, MemoryEvidence(GIB // 2, 16 * GIB), "killed by SIGKILL"),
        # near the limit: likely out of memory, with the figures
        (
            None,
            signal.SIGKILL,
            MemoryEvidence(int(15.2 * GIB), 16 * GIB),
            "killed by SIGKILL, likely out of memory (peak RSS 15.2 GiB of 16.0 GiB)",
        ),
        # the kernel says so: its OOM killer acted in the cell's cgroup while it ran
        (
            None,
            signal.SIGKILL,
            MemoryEvidence(int(0.8 * GIB), int(1.5 * GIB), oom_kills=1),
            "killed by SIGKILL, likely out of memory (peak RSS 0.8 GiB of 1.5 GiB)",
        ),
        (
            None,
            signal.SIGKILL,
            MemoryEvidence(None, None, oom_kills=2),
            "killed by SIGKILL, likely out of memory (the kernel's OOM killer acted in its cgroup)",
        ),
        # no limit known and no kernel evidence: no guess
        (None, signal.SIGKILL, MemoryEvidence(15 * GIB, None), "killed by SIGKILL"),
        # memory is named only for SIGKILL: the OOM killer sends nothing else
        (None, signal.SIGSEGV, MemoryEvidence(int(15.9 * GIB), 16 * GIB, 1), "crashed with signal SIGSEGV"),
    ],
)
def test_ended_how(
    exitcode: int | None, sig: int | None, memory: MemoryEvidence | None, expected: str
) -> None:
    assert ended_how(exitcode, sig, memory) == expected


def test_the_wait_status_gives_the_same_words() -> None:
    # a real wait status of each kind, from real children
    pid = os.fork()
    if pid == 0:
        os._exit(3)
    _, exited = os.waitpid(pid, 0)
    pid = os.fork()
    if pid == 0:
        os.kill(os.getpid(), signal.SIGKILL)
    _, killed = os.waitpid(pid, 0)
    assert from_wait_status(exited) == "exited with code 3"
    assert from_wait_status(killed) == "killed by SIGKILL"


def test_no_result_reason() -> None:
    assert no_result_reason(3, None) == "worker exited with code 3 without writing a result"
    assert no_result_reason(None, signal.SIGKILL) == "killed by SIGKILL"
    assert no_result_reason(None, signal.SIGSEGV) == "crashed with signal SIGSEGV"


def test_likely_out_of_memory_needs_evidence() -> None:
    assert not likely_out_of_memory(None)
    assert not likely_out_of_memory(MemoryEvidence(None, 16 * GIB))
    assert likely_out_of_memory(MemoryEvidence(int(14.5 * GIB), 16 * GIB))
    assert not likely_out_of_memory(MemoryEvidence(int(14.0 * GIB), 16 * GIB))
    assert likely_out_of_memory(MemoryEvidence(None, None, oom_kills=1))
