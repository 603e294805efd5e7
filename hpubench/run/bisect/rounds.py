"""Measuring one commit for ``hpubench bisect``: its set-up command, then ``hpubench run`` in its worktree.

Each run is a fresh ``python -m hpubench run`` with the worktree as its working directory and at the
front of ``PYTHONPATH``, so the user's modules (and hpubench itself, when the repository is hpubench) are
imported from that commit, and relative paths in the run's options (``--workloads-from``) are read from
the repository root at that commit. Each run adds one repetition (``--repeat K --resume``) to a run
directory of its own, so an interrupted bisect resumes where it stopped. The run's output goes to a log
file beside it; a refusal (exit 2) or a crash stops the bisect with the run's last line.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hpubench.errors import UsageError
from hpubench.run import interrupt
from hpubench.run.bisect.gitrepo import Commit
from hpubench.run.executors.result import last_line

SETUP_TIMEOUT_S = 3600
STOP_GRACE_S = 30
RUN_OK = (0, 1)  # 1: a cell failed, which its record says; the gate reads it as a failure


@dataclass(frozen=True)
class SetupFailed(Exception):
    """The set-up command failed at a commit: the commit is skipped, as ``git bisect skip`` does."""

    line: str


def _env(worktree: Path) -> dict[str, str]:
    env = dict(os.environ)
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(worktree) + (os.pathsep + old if old else "")
    env["HPUBENCH_BISECT_WORKTREE"] = str(worktree)
    return env


def _wait(proc: subprocess.Popen[bytes], timeout: float | None = None) -> int:
    """The child's exit code; on Ctrl-C or SIGTERM the child is stopped first (Ctrl-C reaches it through
    the terminal's process group, SIGTERM does not), then the interruption goes on."""
    try:
        return proc.wait(timeout=timeout)
    except BaseException:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        raise


def set_up(command: str, worktree: Path, commit: Commit, log: Path) -> None:
    """Run the user's set-up command in the worktree; raise SetupFailed with its last line if it fails."""
    with log.open("ab") as out:
        proc = subprocess.Popen(
            ["bash", "-c", command], cwd=worktree, env=_env(worktree), stdout=out, stderr=subprocess.STDOUT
        )
        try:
            code = _wait(proc, SETUP_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            raise SetupFailed(f"--setup ran over {SETUP_TIMEOUT_S} s at {commit.short}") from exc
    if code != 0:
        raise SetupFailed(f"--setup exited with {code} at {commit.short}: {last_line(log)} (log: {log})")


def measure(
    worktree: Path, commit: Commit, run_args: Sequence[str], out: Path, repeat: int, log: Path
) -> None:
    """Add repetition ``repeat`` of the chosen cells at ``commit`` to the run directory ``out``."""
    cmd = [sys.executable, "-m", "hpubench", "run", *run_args, "--repeat", str(repeat), "--resume"]
    cmd += ["--out", str(out)]
    with log.open("ab") as f:
        proc = subprocess.Popen(cmd, cwd=worktree, env=_env(worktree), stdout=f, stderr=subprocess.STDOUT)
        code = _wait(proc)
    if code in RUN_OK:
        return
    if code in (interrupt.SIGINT_EXIT, interrupt.SIGTERM_EXIT, -signal.SIGINT, -signal.SIGTERM):
        raise KeyboardInterrupt
    what = "refused its options" if code == 2 else f"exited with {code}"
    raise UsageError(f"'hpubench run' at {commit.short} {what}: {last_line(log)} (log: {log})")
