"""One writer per run directory: ``hpubench run`` holds an advisory lock on its ``--out`` for its life.

Two runs on one directory would run every cell twice and record it twice, and a ``--resume`` beside a
live run would re-run the cells in flight. So the writer takes ``flock(LOCK_EX | LOCK_NB)`` on a lock file
in the run directory before it writes anything, and keeps the descriptor open until the process ends:
the kernel drops the lock on any death (kill -9 included), so a stale lock cannot outlive its holder.
The descriptor is close-on-exec and the cells run in exec'd processes (zygotes, spawned children), so no
cell keeps the lock alive after the run is gone. A second writer reads who holds it (pid, host, start
time, written into the lock file) and stops with one line, having written nothing.

Readers (``results``, ``report``, ``gate``) never take this lock: records are whole lines appended in one
write, so a reader never sees a torn one. In a multi-node run only node 0 takes it: node 0 alone writes
records and metadata, and the other nodes may share its directory (they read it to keep ``--resume`` in
step) or run on the same host.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from pathlib import Path

from hpubench.errors import UsageError, os_error_text

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Linux
    fcntl = None  # type: ignore[assignment]

LOCK_FILE = ".hpubench-run.lock"
_HOLDER_WAIT_S = 1.0  # the holder writes its name just after locking: give a loser that long to read it

# Run directory (resolved) -> the open descriptor holding its lock, for the life of this process.
_held: dict[Path, int] = {}
# Run directory (resolved) -> what acquire() created there (the directory, the lock file), for abandon().
_created: dict[Path, tuple[bool, bool]] = {}


def _holder(fd: int) -> str:
    """Who holds the lock, from what it wrote into the lock file ("pid 123 on host, since ...")."""
    deadline = time.monotonic() + _HOLDER_WAIT_S
    while True:
        try:
            data = json.loads(os.pread(fd, 4096, 0) or b"null")
        except (OSError, ValueError, RecursionError):
            data = None
        if isinstance(data, dict) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    if not isinstance(data, dict):
        return "another process (its pid was not written yet)"
    return f"pid {data.get('pid')} on {data.get('host')}, since {data.get('since')}"


def _busy_error(path: Path, who: str) -> UsageError:
    return UsageError(
        f"run directory {path} is being written by another hpubench process ({who}); fix: wait for it "
        "to end (a run it held then continues with --resume) or write to another directory"
    )


def check_free(run_dir: str | os.PathLike[str]) -> None:
    """UsageError naming the holder if another process holds ``run_dir``'s lock; creates nothing."""
    path = Path(run_dir)
    if fcntl is None:  # pragma: no cover - no advisory locks on this platform
        return
    try:
        fd = os.open(path / LOCK_FILE, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return  # no lock file: nobody ever locked it; acquire() reports an unusable path
    try:
        if path.resolve() in _held:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            raise _busy_error(path, _holder(fd)) from None
        except OSError:
            return
    finally:
        os.close(fd)


def acquire(run_dir: str | os.PathLike[str]) -> None:
    """Create ``run_dir`` if needed and lock it for this process's life; UsageError if another holds it.

    Idempotent within one process (an in-process caller may claim the same directory twice).
    """
    path = Path(run_dir)
    try:
        made_dir = not path.exists()
        path.mkdir(parents=True, exist_ok=True)
        key = path.resolve()
        if key in _held:
            return
        made_file = not (key / LOCK_FILE).exists()
        fd = os.open(key / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise UsageError(
            f"cannot create the run directory {path}: {os_error_text(exc)}; fix: give a writable --out"
        ) from None
    if fcntl is None:  # pragma: no cover - no advisory locks on this platform
        _held[key] = fd
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        who = _holder(fd)
        os.close(fd)
        raise _busy_error(path, who) from None
    except OSError as exc:  # a filesystem without flock: say so rather than run unguarded silently
        os.close(fd)
        raise UsageError(
            f"cannot lock the run directory {path}: {os_error_text(exc)}; fix: give an --out on a local disk"
        ) from None
    _held[key] = fd
    _created[key] = (made_dir, made_file)
    me = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.strftime("%Y-%m-%d %H:%M:%S")}
    with contextlib.suppress(OSError):  # who holds it is for the message only; the lock is what counts
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(me).encode(), 0)


def release(run_dir: str | os.PathLike[str]) -> None:
    """Give the lock up before the process ends (API callers that run several times in one process)."""
    fd = _held.pop(Path(run_dir).resolve(), None)
    if fd is not None:
        os.close(fd)


def abandon(run_dir: str | os.PathLike[str]) -> None:
    """Give the lock up and remove what :func:`acquire` created, when the run stops on bad input before
    writing anything: a refused command leaves the file system as it found it."""
    key = Path(run_dir).resolve()
    fd = _held.pop(key, None)
    made_dir, made_file = _created.pop(key, (False, False))
    if fd is None:
        return
    if made_file:
        with contextlib.suppress(OSError):
            (key / LOCK_FILE).unlink()
    os.close(fd)
    if made_dir:
        with contextlib.suppress(OSError):  # not empty: something else was written, keep it
            key.rmdir()
