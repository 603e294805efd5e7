"""``hpubench results merge DIR... -o DIR``: read the inputs, decide (``hpubench.store.merge``), then write.

Everything is read and checked before the output exists: a refused merge (a conflict, a missing input,
an output that already holds a run) leaves the file system as it was. The output is claimed as a run
directory is (``hpubench.store.runlock``), so a run cannot write into it meanwhile. Everything is written
into a hidden staging directory inside the output first, then renamed into place with the records last:
a merge killed midway leaves no records, so no reader takes it for a finished one, and the same command
run again clears what it left and merges.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from hpubench.errors import UsageError, WriteFailed, os_error_text
from hpubench.store import runlock
from hpubench.store.layout import CELLS_FILE, LOGS_DIR, META_FILE, baseline_store_of, results_dir_of
from hpubench.store.merge import Merged, Source, combine
from hpubench.store.rundir import ResultStore, record_line, write_file_synced
from hpubench.store.runmeta import utc_now_iso

STAGING_PREFIX = ".merge-"  # + pid: the staging directory inside the output


def _read(path: Path) -> Source:
    run_dir = path.parent if path.name == CELLS_FILE and path.is_file() else path
    if not run_dir.is_dir():
        raise UsageError(f"{path} is not a run directory; fix: give the directories 'hpubench run' wrote")
    store = ResultStore(run_dir)
    if not store.exists():
        raise UsageError(
            f"no {CELLS_FILE} or {META_FILE} in {run_dir}; fix: give the directories 'hpubench run' wrote"
        )
    return Source(str(run_dir), store.read_meta(), tuple(store.load()))


def _check_out(out: Path, inputs: Sequence[Source]) -> list[Path]:
    """Refuse an unusable output; what an unfinished merge left there, to be cleared once it is claimed."""
    try:
        return _check_out_path(out, inputs)
    except OSError as exc:  # a name too long, a parent that is a file: the path itself is unusable
        raise UsageError(f"-o {out}: {os_error_text(exc)}; fix: give a new directory") from None


def _check_out_path(out: Path, inputs: Sequence[Source]) -> list[Path]:
    real = out.resolve()
    for src in inputs:
        if Path(src.path).resolve() == real:
            raise UsageError(f"-o {out} is one of the inputs; fix: merge into a new directory")
    unfinished = _unfinished_merge(out)
    if ResultStore(out).exists() and not unfinished:
        raise UsageError(f"-o {out} already holds a run; fix: merge into a new directory")
    inside = results_dir_of(real)
    if inside is not None:
        raise UsageError(f"-o {out} is inside the results directory {inside}; fix: give a path outside it")
    if out.exists() and not out.is_dir():
        raise UsageError(f"-o {out} is a file; fix: give a new directory")
    store = baseline_store_of(real / CELLS_FILE)
    if store is not None:
        raise UsageError(f"-o {out} is inside the baseline store {store}; fix: give a path outside it")
    if out.is_dir() and any(p.name != runlock.LOCK_FILE and p not in unfinished for p in out.iterdir()):
        raise UsageError(f"-o {out} already holds other files; fix: merge into a new or empty directory")
    return unfinished


def _unfinished_merge(out: Path) -> list[Path]:
    """What a merge killed midway left in ``out``: its staging directories and, once it had renamed them
    into place, its meta.json (which says it is a merge) and logs; never records, which come last. Empty
    where ``out`` holds anything else."""
    if not out.is_dir() or (out / CELLS_FILE).exists():
        return []
    left = [p for p in out.iterdir() if p.name.startswith(STAGING_PREFIX) and p.is_dir()]
    if (out / META_FILE).exists():
        try:
            meta = ResultStore(out).read_meta()
        except UsageError:
            return []
        if not (isinstance(meta, dict) and "merged" in meta):
            return []
        left += [p for p in (out / META_FILE, out / LOGS_DIR) if p.exists()]
    return left


def merge_dirs(paths: Sequence[Path], out: Path, argv: Sequence[str]) -> Merged:
    """Merge ``paths`` into the new run directory ``out``; returns what was written."""
    sources = [_read(Path(p)) for p in paths]
    merged = combine(sources, argv, utc_now_iso())
    _check_out(out, sources)
    runlock.check_free(out)
    runlock.acquire(out)
    try:
        left = _check_out(out, sources)  # again: a run may have written there between the check and the claim
    except UsageError:
        runlock.abandon(out)
        raise
    try:
        for path in left:  # ours to clear now: the claim is held, its writer is gone
            _remove(path)
        _write(out, merged, sources)
    except (OSError, WriteFailed) as exc:
        for path in out.iterdir():  # everything but the claim is this merge's: the output had nothing else
            if path.name != runlock.LOCK_FILE:
                _remove(path)
        runlock.abandon(out)
        why = os_error_text(exc) if isinstance(exc, OSError) else str(exc)
        raise UsageError(f"cannot write the merged run to {out}: {why}") from None
    runlock.release(out)
    return merged


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink()


def _write(out: Path, merged: Merged, sources: Sequence[Source]) -> None:
    staging = out / f"{STAGING_PREFIX}{os.getpid()}"
    staging.mkdir()
    stage = ResultStore(staging)
    for r, i in zip(merged.records, merged.origins, strict=True):
        log = ResultStore(sources[i].path).log_path(r.key, r.repeat)
        if log.is_file():
            dest = stage.log_path(r.key, r.repeat)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(log, dest)
    stage.write_meta(merged.meta)
    write_file_synced(staging / CELLS_FILE, b"".join(record_line(r) for r in merged.records))
    for name in (LOGS_DIR, META_FILE, CELLS_FILE):  # the records last: until then, no reader takes it
        if (staging / name).exists():
            os.rename(staging / name, out / name)
    staging.rmdir()
