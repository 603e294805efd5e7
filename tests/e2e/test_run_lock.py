"""One writer per run directory (issue 14 item 2): two `hpubench run` on one --out, real processes.

Exactly one runs; the other prints one line naming the holder's pid and host and exits 2, and every cell
is recorded once. A `--resume` started while the run is active is refused the same way.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

PLUGIN = str(Path(__file__).resolve().parents[1] / "plugins" / "slow_steps.py")
# Four cells of 8 measured steps of 0.1 s (about 1.5 s a cell with the warm-up and the phase split's sampled
# steps, after the zygote's start): long enough that a second process starts while the first runs.
ARGS = ["run", "-w", "sleepy", "--size", "tiny,standard", "-p", "32-true,bf16-mixed"]
ARGS += ["--steps", "8", "--warmup-steps", "1", "--workloads-from", PLUGIN]


def start(run: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "hpubench", *ARGS, "-o", str(run), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def keys(run: Path) -> list[str]:
    return [json.loads(line)["key"] for line in (run / "cells.jsonl").read_text().splitlines()]


def refused_line(err: str, holder: subprocess.Popen[str]) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert f"pid {holder.pid}" in lines[0] and socket.gethostname() in lines[0], err
    assert "Traceback" not in err


@pytest.mark.slow
@pytest.mark.serial
def test_two_runs_started_together_one_runs_each_cell_recorded_once(tmp_path: Path) -> None:
    run = tmp_path / "run"
    a, b = start(run), start(run)
    (_, err_a), (_, err_b) = a.communicate(timeout=300), b.communicate(timeout=300)
    codes = sorted([a.returncode, b.returncode])
    assert codes == [0, 2], (err_a[-2000:], err_b[-2000:])
    winner, loser_err = (a, err_b) if a.returncode == 0 else (b, err_a)
    refused_line(loser_err, winner)
    got = keys(run)
    assert len(got) == len(set(got)) == 4


@pytest.mark.slow
@pytest.mark.serial
def test_resume_while_the_run_is_active_is_refused(tmp_path: Path) -> None:
    run = tmp_path / "run"
    first = start(run)
    cells = run / "cells.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and not (cells.exists() and cells.read_text().count("\n") >= 1):
        time.sleep(0.05)
    assert first.poll() is None, "the first run should still be going"
    second = subprocess.run(
        [sys.executable, "-m", "hpubench", *ARGS, "-o", str(run), "--resume"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert second.returncode == 2, second.stderr[-2000:]
    refused_line(second.stderr, first)
    _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err[-2000:]
    got = keys(run)
    assert len(got) == len(set(got)) == 4
