"""``hpubench results merge DIR... -o DIR``: read the inputs, decide (``hpubench.store.merge``), then write.

Everything is read and checked before the output exists: a refused merge (a conflict, a missing input,
an output that already holds a run) leaves the file system as it was. The output is claimed as a run
directory is (``hpubench.store.runlock``), so a run cannot write into it meanwhile; records are written to a
temporary file and renamed into place, then meta.json (atomically), then the kept records' worker logs.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from hpubench.errors import UsageError, WriteFailed, os_error_text
from hpubench.store import runlock
from hpubench.store.layout import CELLS_FILE, META_FILE, baseline_store_of, results_dir_of
from hpubench.store.merge import Merged, Source, combine
from hpubench.store.rundir import ResultStore, record_line, write_file_synced
from hpubench.store.runmeta import utc_now_iso


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


def _check_out(out: Path, inputs: Sequence[Source]) -> None:
    try:
        _check_out_path(out, inputs)
    except OSError as exc:  # a name too long, a parent that is a file: the path itself is unusable
        raise UsageError(f"-o {out}: {os_error_text(exc)}; fix: give a new directory") from None


def _check_out_path(out: Path, inputs: Sequence[Source]) -> None:
    real = out.resolve()
    for src in inputs:
        if Path(src.path).resolve() == real:
            raise UsageError(f"-o {out} is one of the inputs; fix: merge into a new directory")
    if ResultStore(out).exists():
        raise UsageError(f"-o {out} already holds a run; fix: merge into a new directory")
    inside = results_dir_of(real)
    if inside is not None:
        raise UsageError(f"-o {out} is inside the results directory {inside}; fix: give a path outside it")
    if out.exists() and not out.is_dir():
        raise UsageError(f"-o {out} is a file; fix: give a new directory")
    store = baseline_store_of(real / CELLS_FILE)
    if store is not None:
        raise UsageError(f"-o {out} is inside the baseline store {store}; fix: give a path outside it")
    if out.is_dir() and any(p.name != runlock.LOCK_FILE for p in out.iterdir()):
        raise UsageError(f"-o {out} already holds other files; fix: merge into a new or empty directory")


def merge_dirs(paths: Sequence[Path], out: Path, argv: Sequence[str]) -> Merged:
    """Merge ``paths`` into the new run directory ``out``; returns what was written."""
    sources = [_read(Path(p)) for p in paths]
    merged = combine(sources, argv, utc_now_iso())
    _check_out(out, sources)
    runlock.check_free(out)
    runlock.acquire(out)
    try:
        _check_out(out, sources)  # again: a run may have written there between the check and the claim
    except UsageError:
        runlock.abandon(out)
        raise
    try:
        _write(out, merged, sources)
    except (OSError, WriteFailed) as exc:
        for name in (CELLS_FILE, META_FILE):
            with contextlib.suppress(OSError):
                (out / name).unlink()
        runlock.abandon(out)
        why = os_error_text(exc) if isinstance(exc, OSError) else str(exc)
        raise UsageError(f"cannot write the merged run to {out}: {why}") from None
    runlock.release(out)
    return merged


def _write(out: Path, merged: Merged, sources: Sequence[Source]) -> None:
    tmp = out / f".{CELLS_FILE}.{os.getpid()}.tmp"
    try:
        write_file_synced(tmp, b"".join(record_line(r) for r in merged.records))
        os.replace(tmp, out / CELLS_FILE)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    ResultStore(out).write_meta(merged.meta)
    target = ResultStore(out)
    for r, i in zip(merged.records, merged.origins, strict=True):
        log = ResultStore(sources[i].path).log_path(r.key, r.repeat)
        if log.is_file():
            dest = target.log_path(r.key, r.repeat)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(log, dest)
