"""Run metadata: the host, the invocation and the checkout that every record of a run shares.

Separate from the run directory's writer (:mod:`hpubench.store.rundir`), which stores whatever dict it
is given: this module gathers the facts (git, platform, inventory) and stamps times.
"""

from __future__ import annotations

import os
import platform
import socket
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from hpubench import __version__
from hpubench.plan.inventory import Inventory
from hpubench.store.record import SCHEMA_VERSION

META_SCHEMA_VERSION = 1


def git_commit(cwd: str | os.PathLike[str] | None) -> dict[str, Any] | None:
    """The checkout being benchmarked, if any: a number without its code version can't be compared."""

    def git(*args: str) -> str | None:
        try:
            p = subprocess.run(
                ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=5, check=False
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return p.stdout.strip() if p.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if not commit:
        return None
    status = git("status", "--porcelain", "--untracked-files=no")
    return {
        "commit": commit,
        "branch": git("rev-parse", "--abbrev-ref", "HEAD"),
        "dirty": None if status is None else bool(status),
    }


def utc_now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def run_metadata(
    *,
    argv: list[str] | None = None,
    inventory: Inventory | None = None,
    started_at: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """Facts about the host and invocation that every record of the run shares.

    torch/habana versions are not here: importing torch would slow every CLI start, and the worker
    records the versions it really ran with in each result's ``runtime``.
    """
    meta: dict[str, Any] = {
        "meta_schema": META_SCHEMA_VERSION,
        "record_schema": SCHEMA_VERSION,
        "hpubench_version": __version__,
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "python_version": platform.python_version(),
        "python_executable": sys.executable,
        "command_line": list(sys.argv if argv is None else argv),
        "cwd": str(Path(cwd) if cwd is not None else Path.cwd()),
        "started_at": started_at or utc_now_iso(),
        "git": git_commit(cwd),
        "inventory": None if inventory is None else inventory.to_dict(),
    }
    meta.update(extra)
    return meta
