"""A cell the kernel's OOM killer stops is recorded as "killed by SIGKILL, likely out of memory (peak RSS
X GiB of Y GiB)", under both isolation modes: the run is started inside a memory cgroup of its own with a
limit, and a workload takes memory until it is killed. Needs permission to create a cgroup (root, or a
delegated cgroup v2 subtree); skipped where there is none."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PLUGIN = str(REPO / "tests" / "plugins" / "memory_hog.py")
LIMIT = 2 * 2**30  # room for the zygote's torch and the cell's own start, then the hog hits it
RANKS_LIMIT = 4 * 2**30  # the same for the elastic agent and two ranks


def _own_memory_cgroup() -> tuple[Path, str] | None:
    """This process's memory cgroup directory and its version, where a child group can be made."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, rel = line.split(":", 2)
        if controllers == "" and Path("/sys/fs/cgroup/cgroup.controllers").is_file():
            d = Path("/sys/fs/cgroup") / rel.lstrip("/")
            if "memory" in (d / "cgroup.subtree_control").read_text().split():
                return d, "v2"
        elif "memory" in controllers.split(","):
            return Path("/sys/fs/cgroup/memory") / rel.lstrip("/"), "v1"
    return None


@pytest.fixture
def memory_cgroup() -> Iterator[Path]:
    with _memory_cgroup(LIMIT) as group:
        yield group


@pytest.fixture
def memory_cgroup_ranks() -> Iterator[Path]:
    with _memory_cgroup(RANKS_LIMIT) as group:
        yield group


@contextlib.contextmanager
def _memory_cgroup(limit: int) -> Iterator[Path]:
    found = _own_memory_cgroup()
    if found is None:
        pytest.skip("no memory cgroup controller here")
    parent, kind = found
    group = parent / f"hpubench-oom-{uuid.uuid4().hex[:8]}"
    try:
        group.mkdir()
        (group / ("memory.max" if kind == "v2" else "memory.limit_in_bytes")).write_text(str(limit))
        if kind == "v2":
            (group / "memory.swap.max").write_text("0")
        else:
            with contextlib.suppress(OSError):
                (group / "memory.memsw.limit_in_bytes").write_text(str(limit))
    except OSError as exc:
        with contextlib.suppress(OSError):
            group.rmdir()
        pytest.skip(f"cannot make a memory cgroup here: {exc}")
    yield group
    deadline = time.monotonic() + 10
    while True:  # empty once every process of the run has gone
        try:
            group.rmdir()
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@pytest.mark.slow
def test_an_out_of_memory_kill_is_named_with_its_evidence(tmp_path: Path, memory_cgroup: Path) -> None:
    procs = memory_cgroup / "cgroup.procs"

    def enter() -> None:
        procs.write_text(str(os.getpid()))

    reasons = {}
    for isolation in ("fork", "spawn"):
        out = tmp_path / isolation
        args = ["run", "-w", "memory_hog", "-a", "cpu", "--steps", "3", "--warmup-steps", "1"]
        args += ["--isolation", isolation, "--workloads-from", PLUGIN, "-o", str(out), "--timeout", "120"]
        done = subprocess.run(
            [sys.executable, "-m", "hpubench", *args],
            capture_output=True,
            text=True,
            timeout=300,
            preexec_fn=enter,
        )
        assert done.returncode == 1, done.stderr[-3000:]
        (record,) = [json.loads(x) for x in (out / "cells.jsonl").read_text().splitlines()]
        reasons[isolation] = record["reason"]
    for reason in reasons.values():
        m = re.fullmatch(
            r"killed by SIGKILL, likely out of memory \(peak RSS ([\d.]+) GiB of 2\.0 GiB\)", reason
        )
        assert m, reasons
        assert 0.5 < float(m.group(1)) <= 2.0


@pytest.mark.slow
def test_a_rank_killed_for_memory_is_named_not_the_rank_the_agent_stopped(
    tmp_path: Path, memory_cgroup_ranks: Path
) -> None:
    """Both ranks take memory; the kernel kills one (SIGKILL), then the agent stops the other (SIGTERM).
    The cause is the killed rank, with the kernel's OOM kill as evidence (2026-11-27, --matrix full: this
    read "rank 0 died: killed by SIGTERM" for a rank 1 the OOM killer had taken)."""
    procs = memory_cgroup_ranks / "cgroup.procs"
    out = tmp_path / "run"
    args = ["run", "-w", "memory_hog", "-a", "cpu", "-d", "2", "--steps", "3", "--warmup-steps", "1"]
    args += ["--workloads-from", PLUGIN, "-o", str(out), "--timeout", "180"]
    done = subprocess.run(
        [sys.executable, "-m", "hpubench", *args],
        capture_output=True,
        text=True,
        timeout=400,
        preexec_fn=lambda: procs.write_text(str(os.getpid())),
    )
    assert done.returncode == 1, done.stderr[-3000:]
    (record,) = [json.loads(x) for x in (out / "cells.jsonl").read_text().splitlines()]
    m = re.fullmatch(
        r"rank (\d) died: killed by SIGKILL, likely out of memory \(the kernel's OOM killer acted in its "
        r"cgroup\)( \(then also failed or stopped: rank (\d)\))?",
        record["reason"],
    )
    assert m, record["reason"]
    assert m.group(3) is None or m.group(3) != m.group(1)
