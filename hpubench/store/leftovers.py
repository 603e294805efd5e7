"""What a killed process leaves behind, and how the next one clears it.

A file is written under a temporary name beside its target and renamed over it, and a run or a bisect
passes files through a scratch folder. A ``kill -9`` (the OOM killer, a CI job's timeout) skips the cleanup
of both, so the next writer of the same target, and the next scratch folder's maker, remove what a process
that has gone left: a scratch folder whose lock no process holds (a lock dies with its holder, whatever PID
namespace it ran in), a temporary file whose writer on this host has exited, or one older than any write
takes. Nothing a live process may still use is touched.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time
from pathlib import Path

try:  # the lock that tells a live scratch folder from a dead one
    import fcntl
except ImportError:  # pragma: no cover - not on Linux: folders are made, never swept
    fcntl = None  # type: ignore[assignment]

STALE_TEMP_S = 600.0  # no whole-file write takes this long: an older temporary file's writer is gone
SCRATCH_LOCK = ".owner.lock"
TEMP_SUFFIX = ".tmp"
HOST = socket.gethostname()


def temp_beside(target: Path) -> Path:
    """The hidden name ``target`` is written under before its rename, naming its writer (host and pid)."""
    return target.with_name(f".{target.name}.{HOST}-{os.getpid()}{TEMP_SUFFIX}")


def claim_temp(target: Path) -> Path:
    """``temp_beside(target)``, after removing what killed writers of ``target`` left (``sweep_temps``)."""
    sweep_temps(target)
    return temp_beside(target)


def writer_gone(owner: str) -> bool:
    """Whether the writer ``owner`` ("host-pid") is known to have exited: only a process of this host can
    be asked, so any other owner is not known gone."""
    host, _, pid = owner.rpartition("-")
    if host != HOST or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # another user's live process
        pass
    return False


def sweep_temps(target: Path) -> list[Path]:
    """Remove the temporary files that killed writers of ``target`` left beside it; the ones removed."""
    prefix, removed, now = f".{target.name}.", [], time.time()
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return removed
    for entry in entries:
        name = entry.name
        if not (name.startswith(prefix) and name.endswith(TEMP_SUFFIX)):
            continue
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
            age = now - entry.stat(follow_symlinks=False).st_mtime
            if writer_gone(name[len(prefix) : -len(TEMP_SUFFIX)]) or age > STALE_TEMP_S:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:  # gone already, or not ours to remove
            continue
    return removed


class Scratch:
    """A scratch folder under the temp directory, locked for as long as its maker lives.

    Making one first removes the folders of the same prefix whose makers have died without cleaning up.
    The lock file is locked under a temporary name and then renamed into place, so a folder is never seen
    with an unheld lock.
    """

    def __init__(self, prefix: str) -> None:
        sweep_scratch(prefix)
        self.path = Path(tempfile.mkdtemp(prefix=prefix))
        self._lock: int | None = None
        if fcntl is not None:
            pending = self.path / (SCRATCH_LOCK + TEMP_SUFFIX)
            self._lock = os.open(pending, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            fcntl.flock(self._lock, fcntl.LOCK_EX)
            os.rename(pending, self.path / SCRATCH_LOCK)

    def __enter__(self) -> Scratch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

    def remove(self) -> None:
        """Remove the folder and everything in it, then let go of the lock."""
        shutil.rmtree(self.path, ignore_errors=True)
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None


def sweep_scratch(prefix: str) -> list[Path]:
    """Remove the scratch folders of ``prefix`` whose lock no process holds; the ones removed. A folder
    without a lock file (still being made, or made by an older hpubench) is left alone."""
    removed: list[Path] = []
    if fcntl is None:
        return removed
    for folder in Path(tempfile.gettempdir()).glob(prefix + "*"):
        try:
            fd = os.open(folder / SCRATCH_LOCK, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: its maker is alive
            os.close(fd)
            continue
        shutil.rmtree(folder, ignore_errors=True)
        os.close(fd)
        removed.append(folder)
    return removed
