"""The run directory as written: run metadata beside one append-only JSON Lines file of records.

A benchmark run can be killed at any moment (Ctrl-C, OOM killer, a lost node), and a later ``--resume``
must trust what is on disk. So every record is one ``os.write`` of a whole line on an ``O_APPEND``
descriptor followed by ``fsync``; a line without its newline can only be a torn write and is dropped
(and cut off before the next append), and the metadata is replaced atomically, never edited in place.
The same durable writes (:func:`write_json_atomic`, :func:`write_file_synced`) serve every other file
hpubench replaces whole. Reading records back is :mod:`hpubench.store.readback`'s job.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path
from typing import Any

from hpubench.errors import UsageError, WriteFailed, os_error_text
from hpubench.store.layout import CELLS_FILE, LOGS_DIR, META_FILE
from hpubench.store.leftovers import claim_temp, temp_beside
from hpubench.store.metacheck import MetaError, check_meta
from hpubench.store.readback import latest_per_key, parse_records
from hpubench.store.record import STATUS_FAILED, STATUS_OK, CellResult

try:  # advisory lock so two runs pointed at the same directory cannot interleave repair and append
    import fcntl
except ImportError:  # pragma: no cover - not on Linux
    fcntl = None  # type: ignore[assignment]


def _fsync_dir(path: Path) -> None:
    """Make a rename or a new file durable: the directory entry lives in the directory, not the file."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_all(fd: int, payload: bytes) -> None:
    """Every byte, then fsync; the loop only matters for a short write (disk full)."""
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view) :]
    os.fsync(fd)


def write_file_synced(path: str | os.PathLike[str], payload: bytes) -> None:
    """Create or replace ``path`` with ``payload``, on disk before returning (not atomic by itself)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        _write_all(fd, payload)
    finally:
        os.close(fd)


def write_json_atomic(
    path: str | os.PathLike[str], data: Any, *, indent: int | None = 2, durable: bool = True
) -> None:
    """Write JSON so a reader sees the old file or the new one, never half of either (temp + replace).

    ``durable=False`` is for a child's result that its live parent reads back at once: still whole or
    absent, but not forced to disk, which would cost 1-4 ms of every cell here and protects nothing (a
    machine crash takes the waiting parent with it).
    """
    path = Path(path)
    # A durable file outlives its run: clear what a killed writer left beside it. A child's result for its
    # waiting parent is not swept: most live in the run's scratch folder, which goes whole.
    tmp = claim_temp(path) if durable else temp_beside(path)
    if indent is None:
        text = json.dumps(data, separators=(",", ":"), default=str)
    else:
        text = json.dumps(data, indent=indent, sort_keys=True, default=str)
    try:
        if durable:
            write_file_synced(tmp, (text + "\n").encode())
        else:
            tmp.write_text(text + "\n")
        os.replace(tmp, path)
    except BaseException:  # a full disk or a Ctrl-C must not also leave the half-written copy
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    if durable:
        _fsync_dir(path.parent)


def record_line(result: CellResult) -> bytes:
    # json.dumps escapes newlines inside strings, so one record is always exactly one line.
    return (json.dumps(result.to_dict(), separators=(",", ":"), default=str) + "\n").encode()


class ResultStore:
    """One run directory: ``meta.json``, ``cells.jsonl`` and the per-cell worker logs."""

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self.run_dir = Path(run_dir)

    @property
    def cells_path(self) -> Path:
        return self.run_dir / CELLS_FILE

    @property
    def meta_path(self) -> Path:
        return self.run_dir / META_FILE

    def log_path(self, key: str, repeat: int = 0) -> Path:
        """Where the worker's stdout/stderr for ``key`` goes; kept so a failure can be read in full."""
        safe = re.sub(r"[^A-Za-z0-9._=+-]", "_", key.replace("/", "__"))
        suffix = f".r{repeat}" if repeat else ""  # repetitions of a cell keep their own logs
        return self.run_dir / LOGS_DIR / f"{safe}{suffix}.log"

    def write_meta(self, meta: dict[str, Any]) -> None:
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            write_json_atomic(self.meta_path, meta)
        except OSError as e:
            raise WriteFailed(f"cannot write {self.meta_path}: {os_error_text(e)}") from None

    def exists(self) -> bool:
        """Whether a run already wrote here (a new run must not silently mix with an old one)."""
        return self.meta_path.exists() or self.cells_path.exists()

    def read_meta(self) -> dict[str, Any] | None:
        """The run's metadata, or None where none was written yet (a run killed before its first write)."""
        try:
            data = self.meta_path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as e:
            raise UsageError(f"cannot read {self.meta_path}: {e.strerror or e}") from None
        try:
            meta = json.loads(data)
        except (ValueError, RecursionError) as e:  # not UTF-8, not JSON, or nested deeper than any meta
            raise UsageError(f"{self.meta_path} is not valid JSON ({e}); fix: restore or delete it") from None
        if not isinstance(meta, dict):
            raise UsageError(f"{self.meta_path} is not a JSON object; fix: restore or delete it")
        try:
            check_meta(meta)
        except MetaError as e:
            raise UsageError(
                f"{self.meta_path}: {e}; fix: correct that field, or delete the file (the records stay "
                "readable without it)"
            ) from None
        return meta

    def append(self, result: CellResult) -> None:
        """Add one record durably; cut off a torn tail first so the new line starts on a line boundary.

        A write that fails (disk full, read-only filesystem) is undone (the file is cut back to where it
        ended) and raised as WriteFailed: the records before it stay intact, no torn line is left.
        """
        line = record_line(result)
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.cells_path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as e:
            raise WriteFailed(f"cannot write a record to {self.cells_path}: {os_error_text(e)}") from None
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            self._repair_tail(fd)
            end = os.fstat(fd).st_size
            try:
                _write_all(fd, line)
            except OSError as e:
                with contextlib.suppress(OSError):  # shrinking needs no space
                    os.ftruncate(fd, end)
                    os.fsync(fd)
                raise WriteFailed(
                    f"{os_error_text(e)}: could not write a record to {self.cells_path}; "
                    "the records written before it are intact"
                ) from None
        finally:
            os.close(fd)  # also releases the lock

    @staticmethod
    def _repair_tail(fd: int) -> None:
        size = os.fstat(fd).st_size
        if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
            return
        # Find the last newline, reading backwards in blocks (records are small; this is rare anyway).
        end = size
        block = 65536
        while end > 0:
            start = max(0, end - block)
            chunk = os.pread(fd, end - start, start)
            i = chunk.rfind(b"\n")
            if i >= 0:
                os.ftruncate(fd, start + i + 1)
                return
            end = start
        os.ftruncate(fd, 0)

    def load(self) -> list[CellResult]:
        """The latest record of every (key, repeat); an empty list for a run that stored nothing yet."""
        if not self.cells_path.exists():
            return []
        return latest_per_key(parse_records(self.cells_path))

    def done_keys(self) -> set[str]:
        """Keys with a finished repetition; skipped cells are not here: the matrix re-derives them."""
        return {key for key, _ in self.done_runs()}

    def done_runs(self) -> set[tuple[str, int]]:
        """(key, repeat) pairs that need not run again: what ``--resume`` keeps."""
        return {r.run_id for r in self.load() if r.status in (STATUS_OK, STATUS_FAILED)}
