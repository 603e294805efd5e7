"""The heap policy on real CPU cells run through the CLI: applied in the cell's own process and recorded.

resnet tiny is the workload whose steps churn glibc's heap when its thresholds move (1,200-2,200 page
faults a step on the dev VM under glibc's own policy); under the default policy a cell
of it must measure with a small fraction of that.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hpubench.measure.heap import HEAP_ENV, MMAP_THRESHOLD, TRIM_THRESHOLD, USER_MALLOC_ENV
from hpubench.measure.heap_probe import glibc

pytestmark = [pytest.mark.slow, pytest.mark.skipif(glibc() is None, reason="mallopt is glibc's")]

STEPS = 60


def _record(tmp_path: Path, **env: str) -> dict[str, Any]:
    full = {k: v for k, v in os.environ.items() if k not in (HEAP_ENV, *USER_MALLOC_ENV, "GLIBC_TUNABLES")}
    full.update(env)
    out = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
    cmd = [sys.executable, "-m", "hpubench", "run", "-w", "resnet", "--size", "tiny", "-a", "cpu"]
    cmd += ["--precision", "32-true", "--no-telemetry", "--steps", str(STEPS), "-o", str(out)]
    proc = subprocess.run(cmd, env=full, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    record = json.loads((out / "cells.jsonl").read_text().splitlines()[-1])
    assert record["status"] == "ok", record["reason"]
    return record


def test_the_default_holds_the_heap_in_the_cell_and_records_it(tmp_path: Path) -> None:
    record = _record(tmp_path)
    heap = record["runtime"]["heap"]
    assert heap["policy"] == "steady" and heap["applied"] is True, heap
    assert heap["mmap_threshold"] == MMAP_THRESHOLD and heap["trim_threshold"] == TRIM_THRESHOLD
    assert heap["allocator"].startswith("glibc ")
    # Held: 6-20 a step (first touches spread over the window). Churning: 1,200-2,200 a step.
    faults = record["runtime"]["page_faults_measured"]["minor"] / record["metrics"]["measured_steps"]
    assert faults < 200, f"{faults:.0f} page faults a measured step: the heap is still trimmed and regrown"


def test_system_and_a_users_own_setting_leave_glibc_alone(tmp_path: Path) -> None:
    system = _record(tmp_path, **{HEAP_ENV: "system"})["runtime"]["heap"]
    assert system["policy"] == "system" and system["applied"] is False
    assert "trim_threshold" not in system
    user = _record(tmp_path, MALLOC_TRIM_THRESHOLD_="262144")["runtime"]["heap"]
    assert user["policy"] == "user: MALLOC_TRIM_THRESHOLD_=262144" and user["applied"] is False
