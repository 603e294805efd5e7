"""hpubench.run.oomwatch on the per-cell path: the memory cgroup is looked up once per process.

The zygote reads the OOM-kill counter before every cell and the evidence after it; each lookup of the
cgroup (``/proc/self/cgroup`` and a stat per candidate directory) cost 0.1-0.3 ms and was done three
times a cell. A forked child is a new process and looks it up again (it may have been moved).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from hpubench.run import oomwatch


@pytest.fixture()
def cgroup_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    reads: list[int] = []
    real = Path.read_text

    def counting(self: Path, *a: object, **k: object) -> str:
        if str(self) == "/proc/self/cgroup":
            reads.append(os.getpid())
        return real(self, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "read_text", counting)
    oomwatch.forget_cgroup()
    return reads


def test_cgroup_looked_up_once_for_a_cell(cgroup_reads: list[int]) -> None:
    before = oomwatch.oom_kills()
    oomwatch.evidence(oomwatch.peak_rss_bytes(1024), before)
    oomwatch.memory_limit()
    assert cgroup_reads == [os.getpid()]


def test_a_forked_child_looks_it_up_again(cgroup_reads: list[int]) -> None:
    oomwatch.oom_kills()
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        oomwatch.oom_kills()
        os._exit(0 if len(cgroup_reads) == 2 and cgroup_reads[1] == os.getpid() else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
