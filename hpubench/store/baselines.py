"""Named baselines kept next to a repository, so ``hpubench gate --baseline NAME`` needs no path.

Layout (the default directory is ``.hpubench/baselines`` under the current directory)::

    .hpubench/baselines/
      index.json            {"version": 1, "baselines": {NAME: {saved_at, source, cells, ...}}}
      NAME/cells.jsonl      the records, one line each, latest per (cell, repeat), as the gate reads them
      NAME/meta.json        the source run's metadata plus a "baseline" entry (name, saved_at, source)

A baseline directory is an ordinary run directory, so every command that reads results reads it. It is
written beside its final place and renamed into it, so a reader sees the old baseline or the new one,
never half of one; the index is replaced atomically under a lock. A save killed between its rename and
the index's would leave the index describing the old baseline, so the new entry is first written beside
it (``.NAME.pending-PID.json``, with an id the new baseline's meta.json holds too): a reader takes a
pending entry whose baseline is in place, and the next save writes it into the index. Commit the
directory to the repository (records are small: a few KB per cell) or keep it in a CI cache keyed by the
branch.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hpubench.errors import UsageError, os_error_text
from hpubench.store.layout import CELLS_FILE, INDEX_FILE, META_FILE, results_dir_of
from hpubench.store.readback import load_results
from hpubench.store.record import CellResult
from hpubench.store.rundir import ResultStore, record_line, write_file_synced, write_json_atomic
from hpubench.store.runmeta import utc_now_iso

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Linux
    fcntl = None  # type: ignore[assignment]

DEFAULT_DIR = Path(".hpubench") / "baselines"
INDEX_VERSION = 1
RUN_TO_RUN = "run_to_run"  # meta.json: per match key, the run-to-run spread per statistic and its runs
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def check_name(name: str) -> str:
    if not _NAME_RE.fullmatch(name or ""):
        raise UsageError(
            f"baseline name {name!r} is not usable; use letters, digits, '.', '_' or '-' (e.g. main, v1.2)"
        )
    if name == INDEX_FILE:  # a baseline of that name would be renamed over the index
        raise UsageError(f"baseline name {name!r} is the index's own file name; fix: choose another name")
    return name


def _run_meta(results_path: Path) -> dict[str, Any]:
    run_dir = results_path if results_path.is_dir() else results_path.parent
    return ResultStore(run_dir).read_meta() or {}


READ_TRIES = 5


def _read_source(source: Path) -> tuple[list[CellResult], dict[str, Any]]:
    """A run's records and metadata as of one moment. A baseline that another save replaces meanwhile
    (renamed over) would otherwise give the records of one run and the metadata of the other; the
    metadata read before and after the records must agree."""
    for _ in range(READ_TRIES):
        meta = _run_meta(source)
        records = load_results([str(source)])
        if _run_meta(source) == meta:
            return records, meta
    raise UsageError(f"{source} was replaced while it was read, {READ_TRIES} times; fix: save it again")


def _summary(records: list[CellResult]) -> dict[str, Any]:
    statuses = Counter(r.status for r in records)
    return {
        "records": len(records),
        "cells": len({r.key for r in records}),
        "repeats": max((r.repeat for r in records), default=-1) + 1,
        "ok": statuses.get("ok", 0),
        "failed": statuses.get("failed", 0),
        "skipped": statuses.get("skipped", 0),
    }


@contextlib.contextmanager
def _locked(directory: Path):
    """An advisory lock on the baselines directory, so two saves cannot lose each other's index entry."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(directory / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise UsageError(
            f"cannot write the baselines directory {directory}: {os_error_text(e)}; "
            "fix: give a writable --dir"
        ) from None
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _restore_interrupted(directory: Path, name: str) -> None:
    """Undo a save that was killed midway (the lock is held): an old copy moved aside goes back where a
    missing baseline was; one beside a whole baseline, and a half-written new copy, are removed."""
    leftovers = sorted(directory.glob(f".{name}.old-*"), key=lambda p: p.stat().st_mtime)
    if leftovers and not (directory / name).exists():
        os.rename(leftovers.pop(), directory / name)
    for path in [*leftovers, *directory.glob(f".{name}.tmp-*")]:
        shutil.rmtree(path, ignore_errors=True)


def read_index(directory: str | os.PathLike[str] = DEFAULT_DIR) -> dict[str, dict[str, Any]]:
    """Name -> what was saved; an empty dict where nothing was saved yet."""
    path = Path(directory) / INDEX_FILE
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, RecursionError) as e:
        raise UsageError(
            f"{path} is unreadable ({e}); fix: restore it or delete it (baselines stay)"
        ) from None
    entries = data.get("baselines") if isinstance(data, dict) else None
    if not isinstance(entries, dict) or not all(isinstance(e, dict) for e in entries.values()):
        raise UsageError(f"{path} is not a baselines index; fix: restore it or delete it")
    return {**entries, **_published_pending(Path(directory))}


def _pending_files(directory: Path) -> list[Path]:
    return sorted(directory.glob(".*.pending-*.json"), key=lambda p: p.name)


def _published_pending(directory: Path) -> dict[str, dict[str, Any]]:
    """The index entries of saves killed after their baseline was renamed into place (its meta.json holds
    the pending entry's id) but before the index was written; a pending entry whose baseline is not in
    place (the save died earlier, or its old copy was put back) is ignored."""
    found: dict[str, dict[str, Any]] = {}
    for path in _pending_files(directory):
        try:
            pending = json.loads(path.read_text())
            name, save_id, entry = pending["name"], pending["save_id"], pending["entry"]
        except (OSError, ValueError, RecursionError, TypeError, KeyError):
            continue  # gone meanwhile (its save finished), or cut short before it was renamed into place
        if not (isinstance(name, str) and _NAME_RE.fullmatch(name) and isinstance(entry, dict)):
            continue
        try:
            saved = ResultStore(directory / name).read_meta() or {}
        except UsageError:
            continue
        if isinstance(saved.get("baseline"), dict) and saved["baseline"].get("save_id") == save_id:
            found[name] = entry
    return found


def save(
    results: str | os.PathLike[str],
    name: str,
    directory: str | os.PathLike[str] = DEFAULT_DIR,
    *,
    force: bool = False,
    note: str | None = None,
    spreads_of: Callable[[Sequence[CellResult]], dict[str, Any]],
) -> Path:
    """Copy a run's records (latest per cell and repeat) and metadata into ``<directory>/<name>/``, with
    the run-to-run spreads ``spreads_of`` computes from them (``hpubench.analysis.runspread``, handed in
    by the caller: the store keeps figures, analysis makes them)."""
    check_name(name)
    check_store_dir(directory)
    source = Path(results)
    records, meta = _read_source(source)
    if not records:
        raise UsageError(f"{source} holds no result records; fix: save a run that has finished cells")
    directory = Path(directory)
    target = directory / name
    with _locked(directory):
        index = read_index(directory)  # one that cannot be read refuses the save before anything is written
        _restore_interrupted(directory, name)
        if target.exists() and not force:
            raise UsageError(f"baseline {name!r} already exists in {directory}; pass --force to replace it")
        # Cells with repeats keep their run-to-run spread; cells without keep the one the baseline being
        # replaced had, so a CI job that re-saves one run per build keeps what an earlier --repeat measured.
        spreads = {**read_run_to_run(target), **spreads_of(records)} if force else spreads_of(records)
        if spreads:
            meta[RUN_TO_RUN] = spreads
        meta["baseline"] = {
            "name": name,
            "saved_at": utc_now_iso(),
            "source": str(source.resolve()),
            "note": note,
            "save_id": f"{os.getpid()}-{time.time_ns()}",  # what a pending index entry is matched by
        }
        index[name] = _index_entry(meta, records, spreads)
        stale = _pending_files(directory)  # of saves killed earlier: read_index took those in place
        pending = directory / f".{name}.pending-{os.getpid()}.json"
        _publish(directory, name, records, meta, pending, index[name])
        try:
            write_json_atomic(directory / INDEX_FILE, {"version": INDEX_VERSION, "baselines": index})
        except OSError as e:
            raise UsageError(
                f"baseline {name!r} was saved in {target} but the index {directory / INDEX_FILE} could not "
                f"be written: {os_error_text(e)}; fix: free space, then save it again with --force"
            ) from None
        for path in [*stale, pending]:
            with contextlib.suppress(OSError):
                path.unlink()
    return target


def _index_entry(meta: dict[str, Any], records: list[CellResult], spreads: dict[str, Any]) -> dict[str, Any]:
    """What the index keeps of a baseline: enough to list it and place it in history without reading it."""
    saved, git = meta["baseline"], meta.get("git") or {}
    return {
        "saved_at": saved["saved_at"],
        "source": saved["source"],
        "note": saved["note"],
        "run_started_at": meta.get("started_at"),
        "hostname": meta.get("hostname"),
        "git_commit": git.get("commit"),
        "git_dirty": git.get("dirty"),
        **_summary(records),
        "run_to_run_cells": len(spreads),
    }


def _publish(
    directory: Path,
    name: str,
    records: list[CellResult],
    meta: dict[str, Any],
    pending: Path,
    entry: dict[str, Any],
) -> None:
    """Write the baseline beside its place and rename it in, its index entry pending first (the lock is
    held); on a full disk or a Ctrl-C the old baseline, if any, stays as it was."""
    target = directory / name
    tmp = directory / f".{name}.tmp-{os.getpid()}"
    old = directory / f".{name}.old-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    placed = False
    try:
        write_json_atomic(pending, {"name": name, "save_id": meta["baseline"]["save_id"], "entry": entry})
        tmp.mkdir(parents=True)
        write_file_synced(tmp / CELLS_FILE, b"".join(record_line(r) for r in records))
        write_json_atomic(tmp / META_FILE, meta)
        if target.exists():
            os.rename(target, old)
        os.rename(tmp, target)
        placed = True
        shutil.rmtree(old, ignore_errors=True)
    except BaseException as e:
        shutil.rmtree(tmp, ignore_errors=True)
        if not placed:  # once the new baseline is in place, its pending entry is what the index lacks
            with contextlib.suppress(OSError):
                pending.unlink()
        if old.exists() and not target.exists():
            with contextlib.suppress(OSError):
                os.rename(old, target)
        if not isinstance(e, OSError):
            raise
        raise UsageError(
            f"cannot save baseline {name!r} in {directory}: {os_error_text(e)}; "
            "fix: free space or give a writable --dir"
        ) from None


def check_store_dir(directory: str | os.PathLike[str]) -> None:
    """Refuse a store that lies in a run: the run would gain files beside its records."""
    inside = results_dir_of(Path(os.path.realpath(directory)) / INDEX_FILE)
    if inside is not None:
        raise UsageError(
            f"--dir {directory} is inside the results directory {inside}; fix: give a directory outside it"
        )


def read_run_to_run(path: str | os.PathLike[str]) -> dict[str, dict[str, float]]:
    """The run-to-run spreads stored with a baseline (a run directory or its cells.jsonl); empty where
    none were stored or the path is not a baseline."""
    p = Path(path)
    if not p.exists():
        return {}
    data = ResultStore(p if p.is_dir() else p.parent).read_meta() or {}
    figures = data.get(RUN_TO_RUN)
    return {k: v for k, v in figures.items() if isinstance(v, dict)} if isinstance(figures, dict) else {}


def resolve(ref: str | os.PathLike[str], directory: str | os.PathLike[str] = DEFAULT_DIR) -> Path:
    """A results path as given, or else the baseline of that name in ``directory``."""
    path = Path(ref)
    if path.exists():
        return path
    text = str(ref)
    candidate = Path(directory) / text
    if _NAME_RE.fullmatch(text):
        if not candidate.exists() and any(Path(directory).glob(f".{text}.old-*")):
            with _locked(Path(directory)):
                _restore_interrupted(Path(directory), text)
        if (candidate / CELLS_FILE).is_file():
            return candidate
    known = sorted(read_index(directory)) if Path(directory).is_dir() else []
    listing = f" (saved: {', '.join(known)})" if known else ""
    raise UsageError(
        f"no results at {text!r} and no baseline of that name in {directory}{listing}; fix: give a run "
        "directory, a cells.jsonl file, or a name saved with 'hpubench baseline save'"
    )
