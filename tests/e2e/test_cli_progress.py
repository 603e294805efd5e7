"""The CLI while a cell measures: a log gets plain progress lines, and the parent stays asleep."""

from __future__ import annotations

import glob
import subprocess
import sys
import time
from pathlib import Path

import pytest

PLUGIN = str(Path(__file__).resolve().parents[1] / "plugins" / "slow_steps.py")
FEED = "logs/sleepy__tiny__cpu__1x1__32-true__eager__nographs__bsdefault.steps.jsonl"


def _cli(out: Path, steps: int, *extra: str) -> subprocess.Popen[str]:
    args = ["run", "-w", "sleepy", "--steps", str(steps), "--warmup-steps", "1", "-o", str(out)]
    return subprocess.Popen(
        [sys.executable, "-m", "hpubench", *args, "--workloads-from", PLUGIN, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wakeups(pid: int) -> int:
    """Times the process's threads blocked so far (each sleep ends in one wake-up)."""
    total = 0
    for status in glob.glob(f"/proc/{pid}/task/*/status"):
        try:
            with open(status) as f:
                total += sum(int(x.split()[1]) for x in f if x.startswith("voluntary_ctxt_switches"))
        except OSError:
            pass  # a thread that just ended
    return total


@pytest.mark.slow
@pytest.mark.serial
def test_without_a_terminal_a_running_cell_prints_progress_lines(tmp_path: Path) -> None:
    # 30 steps of 0.1 s; lines every second instead of every 10 s (the hidden --progress-every)
    proc = _cli(tmp_path / "run", 30, "--progress-every", "1")
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    lines = [x for x in stderr.splitlines() if x.startswith("[1/1] sleepy/tiny")]
    assert len(lines) >= 2, stderr
    measured = [x for x in lines if ": step " in x]
    assert measured and all("/30, " in x and "samples/s" in x and "cell ~" in x for x in measured)
    assert "(estimate)" in measured[-1]


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts wake-ups in /proc (Linux)")
@pytest.mark.serial
def test_the_parent_wakes_about_once_a_second_while_a_cell_measures(tmp_path: Path) -> None:
    """Rich's default refresh (10/s from its own thread) or a polling wait would fail this."""
    out = tmp_path / "run"
    proc = _cli(out, 60)  # 6 s of measured steps
    try:
        deadline = time.monotonic() + 240
        while not ((out / FEED).exists() and b'"measured"' in (out / FEED).read_bytes()):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1]
            time.sleep(0.1)
        before, t0 = _wakeups(proc.pid), time.monotonic()
        time.sleep(3.0)
        wakeups, window = _wakeups(proc.pid) - before, time.monotonic() - t0
        assert proc.poll() is None, "the cell ended inside the window: nothing was measured"
    finally:
        _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    assert wakeups <= 2 * window, f"{wakeups} wake-ups in {window:.1f} s"
