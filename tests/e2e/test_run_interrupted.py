"""Ctrl-C or SIGTERM during ``hpubench run``: one line saying what was recorded and the command that
resumes, exit 130 / 143, the records intact, nothing of the running cell left (its escaped grandchild
included), no scratch directory left; and the printed command finishes the run."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

REPO = Path(__file__).resolve().parents[2]
PLUGIN = str(REPO / "tests" / "plugins" / "escapers.py")
# four cells of escape_slow (0.2 s a step; 8 steps with the warm-up, as many as the loss check compares, so
# no reference run is added): long enough to be interrupted in the second or a later one
ARGS = ["run", "-w", "escape_slow", "-b", "1,2,3,4", "--steps", "7", "--warmup-steps", "1", "-a", "cpu"]


def _default_sigint() -> None:
    # As at a terminal: a shell running this suite in the background starts it with SIGINT ignored
    # (POSIX), which the CLI would inherit; Python installs its KeyboardInterrupt handler only over SIG_DFL.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _pids(pidfile: Path) -> list[int]:
    return [int(x) for x in pidfile.read_text().split()] if pidfile.exists() else []


def _records(out: Path) -> list[dict]:
    path = out / "cells.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def _interrupted(
    argv: list[str], env: dict[str, str], cwd: Path, ready: Callable[[], bool], sig: signal.Signals
) -> tuple[int, str]:
    """Start ``hpubench`` with ``argv`` as a terminal would, send ``sig`` once ``ready()``; its exit code
    and stderr."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "hpubench", *argv],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )
    try:
        deadline = time.monotonic() + 240
        while not ready():
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "not ready to be interrupted within 240 s"
            time.sleep(0.05)
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, stderr


@pytest.fixture
def pidfile(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "grandchildren.pids"
    yield path
    for pid in _pids(path):
        if _alive(pid):
            psutil.Process(pid).kill()


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_run_says_how_to_resume_and_the_resume_finishes_it(
    tmp_path: Path, pidfile: Path, sig: signal.Signals, code: int
) -> None:
    out = tmp_path / "run"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch), "HPUBENCH_TEST_PIDFILE": str(pidfile)}
    argv = [*ARGS, "--workloads-from", PLUGIN, "-o", str(out)]
    # one cell recorded and the next one's grandchild started: interrupt in the middle of a cell
    returncode, stderr = _interrupted(
        argv, env, tmp_path, lambda: len(_records(out)) >= 1 and len(_pids(pidfile)) >= 2, sig
    )

    assert returncode == code, stderr[-3000:]
    recorded = _records(out)  # every line whole and loadable
    assert 1 <= len(recorded) < 4
    last = stderr.strip().splitlines()[-1]
    head, _, command = last.partition("; resume with: ")
    assert head == f"interrupted: {len(recorded)} of 4 cells recorded", last
    assert "Traceback" not in stderr
    resume = shlex.split(command)
    assert resume[0] == "hpubench" and resume[1:] == [*argv, "--resume"], command
    assert [p for p in _pids(pidfile) if _alive(p)] == []  # the interrupted cell's grandchild too
    assert list(scratch.glob("hpubench-launch-*")) == []

    done = subprocess.run(
        [sys.executable, "-m", *resume], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    keys = [r["key"] for r in _records(out)]
    assert len(keys) == len(set(keys)) == 4  # the resume ran exactly the missing cells
    assert [p for p in _pids(pidfile) if _alive(p)] == []
    assert list(scratch.glob("hpubench-launch-*")) == []


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupt_while_the_plan_is_made_says_so_and_exits_with_the_signals_code(
    tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    # typer turns a KeyboardInterrupt outside the run's loop into a silent 130, SIGTERM's included
    started = tmp_path / "importing"
    plugin = tmp_path / "slow_import.py"
    plugin.write_text(f"import pathlib, time\npathlib.Path({str(started)!r}).touch()\ntime.sleep(120)\n")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    # interrupted while the workload file is being imported: the plan is not made yet
    argv = ["run", "-w", "mlp", "--workloads-from", str(plugin), "-o", "run"]
    env = {**os.environ, "TMPDIR": str(scratch)}
    returncode, stderr = _interrupted(argv, env, tmp_path, started.exists, sig)
    assert returncode == code, stderr[-3000:]
    assert stderr.strip().splitlines()[-1] == "interrupted", stderr[-3000:]
    assert "Traceback" not in stderr
    assert list(scratch.glob("hpubench-launch-*")) == []  # the zygote stopped, its scratch removed
