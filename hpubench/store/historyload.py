"""Reading saved baselines for ``hpubench history``: records, metadata, and when each commit was made.

The commit time comes from git in the current directory (``git show -s --format=%ct``); a commit git does
not know here (another clone, a squashed branch) has none, and ``hpubench.analysis.history`` orders it by
date.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from hpubench.analysis.history import Point
from hpubench.store import baselines
from hpubench.store.readback import load_results
from hpubench.store.rundir import ResultStore

GIT_TIMEOUT_S = 5


def commit_time(commit: str | None, cwd: str | Path | None = None) -> int | None:
    """Seconds since the epoch of ``commit`` as git here knows it; None where it does not."""
    if not commit:
        return None
    try:
        p = subprocess.run(
            ["git", "show", "-s", "--format=%ct", commit, "--"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    text = p.stdout.strip().splitlines()
    return int(text[0]) if p.returncode == 0 and text and text[0].isdigit() else None


def load_points(refs: Sequence[str], directory: Path, cwd: str | Path | None = None) -> list[Point]:
    """Each named baseline (or run directory) as a history point; every saved baseline when none is named."""
    names = list(refs) or sorted(baselines.read_index(directory))
    points = []
    for ref in names:
        path = baselines.resolve(ref, directory)
        meta = ResultStore(path if path.is_dir() else path.parent).read_meta() or {}
        saved = meta.get("baseline") if isinstance(meta.get("baseline"), dict) else {}
        git = meta.get("git") if isinstance(meta.get("git"), dict) else {}
        points.append(
            Point(
                name=str(saved.get("name") or ref),
                records=tuple(load_results([str(path)])),
                commit=git.get("commit"),
                dirty=git.get("dirty"),
                commit_time=commit_time(git.get("commit"), cwd),
                started_at=meta.get("started_at"),
                saved_at=saved.get("saved_at"),
                spreads=baselines.read_run_to_run(path),
            )
        )
    return points
