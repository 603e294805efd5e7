"""``hpubench doctor``'s two children start together: the detection child (a fresh interpreter, which must
see what a process starting here sees) and the fork server that the memory-fit probe runs in. Their
imports overlap; the detection child's timed facts (a telemetry reading, the host's steadiness) wait until
the launcher has finished starting the server, so neither start-up is inside a figure."""

from __future__ import annotations

import os
import sys
import time

import pytest

from hpubench.run.executors.base import WorkerSetup
from hpubench.run.executors.spawn import SpawnExecutor
from hpubench.run.launch import Launcher

pytestmark = pytest.mark.slow

# Longer than the detection child's own imports on any host this runs on, so a child that did not wait
# would have begun its steadiness blocks before this returned.
MEANWHILE_S = 6.0


def test_the_detection_child_times_nothing_until_the_launcher_has_started_its_worker() -> None:
    returned: list[float] = []

    def meanwhile() -> None:
        time.sleep(MEANWHILE_S)
        returned.append(time.time())

    executor = SpawnExecutor(WorkerSetup(sys.executable, [], dict(os.environ)))
    try:
        data = executor.detect_for_doctor(meanwhile)
    finally:
        executor.close()
        executor.setup.remove_scratch()
    steadiness = data["doctor"]["steadiness"]
    assert len(steadiness["rates"]) == 15 and returned
    assert steadiness["started_at"] >= returned[0]


def test_the_probe_worker_is_up_once_detection_is_done_and_the_probe_reuses_it() -> None:
    with Launcher() as launcher:
        assert launcher.isolation == "fork"
        launcher.detect_for_doctor()
        assert len(launcher.local.pool.start_s) == 1  # started while the child imported
        launcher.probe(["--cell", "mlp|tiny|0"], 120)
        assert len(launcher.local.pool.start_s) == 1  # the same worker, not a second start
