"""git for the bisect tests: throwaway repositories with a fixed author, so commits work on a machine with
no git identity configured."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

IDENTITY = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
}


def git(repo: Path, *args: str) -> str:
    """``git ARGS`` in ``repo``: its stdout, raising on failure."""
    env = {**os.environ, **IDENTITY}
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout
