"""Thread policies and interference on real CPU cells run through the CLI, as a user runs them.

Each cell runs in hpubench's own child process (the pre-warmed fork server), so the threads and affinity a
policy sets never leak into the test process, and a neighbour this test starts is an outsider to the cell.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from hpubench.measure.conditions import DEFAULT_THREAD_POLICY, THREADS_ENV, plan_threads

pytestmark = pytest.mark.slow

CPUS = sorted(os.sched_getaffinity(0))
HOG = "while True: pass"


def _run(tmp_path: Path, *args: str, **env: str) -> dict[str, Any]:
    full = {
        k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", THREADS_ENV)
    }
    full.update(env)
    out = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
    cmd = [sys.executable, "-m", "hpubench", "run", "-w", "mlp", "--size", "tiny", "-a", "cpu"]
    cmd += ["--precision", "32-true", "--no-telemetry", *args, "-o", str(out)]
    proc = subprocess.run(cmd, env=full, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    record = json.loads((out / "cells.jsonl").read_text().splitlines()[-1])
    assert record["status"] == "ok", record["reason"]
    return record["runtime"]


@contextmanager
def _hogs(cpus: list[int], per_cpu: int) -> Iterator[None]:
    """``per_cpu`` busy loops pinned to each of ``cpus``: neighbours the cell cannot escape."""
    procs = []
    try:
        for cpu in cpus:
            for _ in range(per_cpu):
                p = subprocess.Popen([sys.executable, "-c", HOG])
                os.sched_setaffinity(p.pid, {cpu})
                procs.append(p)
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_the_default_policy_is_applied_and_recorded(tmp_path: Path) -> None:
    rt = _run(tmp_path, "--steps", "5", "--warmup-steps", "1")
    threads = rt["threads"]
    plan = plan_threads(DEFAULT_THREAD_POLICY, CPUS, 1, 0, {})
    assert threads["policy"] == DEFAULT_THREAD_POLICY
    assert threads["intra_op"] == (plan.threads or len(CPUS))
    assert threads["affinity"] == list(plan.affinity or CPUS)
    assert threads["inter_op"] >= 1 and threads["load_avg_start"] >= 0
    assert 0.0 <= rt["interference"] <= 1.0
    assert rt["interference_detail"]["cpus"] == threads["affinity"]
    # the existing records stay as they were
    assert rt["env_flags"]["torch_num_threads"] == str(threads["intra_op"])


@pytest.mark.skipif(len(CPUS) < 2, reason="needs a count the pinned policy would not choose")
def test_a_users_omp_num_threads_is_respected(tmp_path: Path) -> None:
    n = len(CPUS)  # pinned would take one fewer (torch caps OMP_NUM_THREADS at the cores anyway)
    rt = _run(
        tmp_path, "--steps", "3", "--warmup-steps", "1", OMP_NUM_THREADS=str(n), **{THREADS_ENV: "pinned"}
    )
    assert rt["threads"]["policy"] == f"user: OMP_NUM_THREADS={n}"
    assert rt["threads"]["intra_op"] == n
    assert rt["threads"]["affinity"] == CPUS  # pinned asked for, but the user's setting wins: nothing moved
    assert rt["env_flags"]["OMP_NUM_THREADS"] == str(n)


@pytest.mark.skipif(len(CPUS) < 2, reason="pinning leaves the first CPU free: needs two")
def test_pinned_and_passive_policies_take_effect_in_the_cell(tmp_path: Path) -> None:
    pinned = _run(tmp_path, "--steps", "3", "--warmup-steps", "1", **{THREADS_ENV: "pinned"})["threads"]
    assert pinned["policy"] == "pinned"
    assert pinned["affinity"] == CPUS[1:] and pinned["intra_op"] == len(CPUS) - 1
    passive = _run(tmp_path, "--steps", "3", "--warmup-steps", "1", **{THREADS_ENV: "all-passive"})["threads"]
    # set before torch loaded OpenMP (the fork server's environment), seen by the cell
    assert passive["policy"] == "all-passive" and passive["omp_wait_policy"] == "PASSIVE"


@pytest.mark.skipif(len(CPUS) != 2, reason="two ranks on exactly two CPUs: the case that once stacked them")
def test_pinned_gives_two_ranks_on_two_cpus_one_each(tmp_path: Path) -> None:
    args = ("--devices", "2", "--steps", "3", "--warmup-steps", "1")
    rt = _run(tmp_path, *args, **{THREADS_ENV: "pinned"})
    # rank 0's facts: the first CPU, not the second one both ranks once shared
    assert rt["threads"]["policy"] == "pinned" and rt["threads"]["affinity"] == CPUS[:1]
    assert rt["threads"]["intra_op"] == 1 and rt["distributed"]["world_size"] == 2


@pytest.mark.serial
def test_busy_neighbours_on_the_cells_cpus_show_as_interference(tmp_path: Path) -> None:
    """Quiet, busy, busy, quiet (ABBA: a drift in the machine's own load cancels out of the means).

    Three busy loops pinned to each of the cell's CPUs outnumber whatever else a shared machine runs, so
    their runs' interference must stand above the quiet runs' even when the machine is far from quiet.
    """
    args = ("--steps", "300", "--warmup-steps", "5")
    runs: dict[bool, list[dict[str, Any]]] = {False: [], True: []}
    cpus: list[int] | None = None
    for busy in (False, True, True, False):
        if not busy:
            runs[busy].append(_run(tmp_path, *args))
            cpus = runs[busy][-1]["threads"]["affinity"]
            continue
        assert cpus is not None
        with _hogs(cpus, per_cpu=3):
            runs[busy].append(_run(tmp_path, *args))
    for rt in runs[True]:
        assert rt["threads"]["affinity"] == cpus
        detail = rt["interference_detail"]
        assert detail["busy_core_s"] > detail["own_core_s"] > 0
        assert rt["interference"] > 0.2, detail
    quiet = [rt["interference"] for rt in runs[False]]
    busy = [rt["interference"] for rt in runs[True]]
    assert sum(busy) / 2 > sum(quiet) / 2, (quiet, busy)
