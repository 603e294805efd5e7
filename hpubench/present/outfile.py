"""Where a command may write its output file (``report``, ``compare``, ``export`` ``-o``), and the write.

An output is built in memory, written to a temporary file beside the target and renamed over it, so a
reader sees the old file or the new one. A rename replaces whatever entry the path names, so the path is
checked first: it must be new, or an existing regular file (a symlink is judged by what it points to)
that is not part of a results directory. A device node, a FIFO, a directory, a run's own ``cells.jsonl``
or any file inside a run directory is refused with one line; so is a suffix that names no known format.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from hpubench.errors import UsageError, os_error_text
from hpubench.store.layout import baseline_store_of, results_dir_of
from hpubench.store.leftovers import claim_temp


def check_suffix(path: Path, known: Sequence[str]) -> None:
    """An output whose suffix names no format of ``known`` (without dots) is an error listing them."""
    if not path.name:
        raise UsageError(f"output {str(path)!r} names no file; give a file name, e.g. out.{known[0]}")
    suffix = path.suffix.lower().lstrip(".")
    if suffix not in known:
        shown = f"'.{suffix}'" if suffix else "no suffix"
        raise UsageError(
            f"output {path} has {shown}; the known suffixes are {', '.join(known)} "
            f"(e.g. {path.with_suffix('.' + known[0]).name})"
        )


def check_target(path: str | os.PathLike[str], make_parent: bool = False) -> Path:
    """``path`` if a new output file may be renamed onto it; else UsageError with one line and a fix.
    ``make_parent`` creates a missing folder first (CI files such as ``gate --junit`` name one that a job
    has not made yet), but never one inside a results directory."""
    target = Path(path)
    real = Path(os.path.realpath(target))  # a symlink is judged by what it points to
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {os_error_text(exc)}; fix: give another -o path") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise UsageError(f"output {target} is a directory; give a file name, e.g. {target / 'report.html'}")
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise UsageError(
            f"output {target} is not a regular file (a device, FIFO or socket); fix: give a file path"
        )
    run_dir = results_dir_of(real)
    if run_dir is not None:
        raise UsageError(
            f"output {target} is inside the results directory {run_dir}; an output never goes there "
            "(it could replace a record file); fix: give a path outside it"
        )
    store = baseline_store_of(real)
    if store is not None:
        raise UsageError(
            f"output {target} is inside the baseline store {store}; an output never goes there (it could "
            "replace its index); fix: give a path outside it"
        )
    if make_parent and not target.parent.is_dir():
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(
                f"cannot create {target.parent}: {os_error_text(exc)}; fix: give another path"
            ) from None
    if not target.parent.is_dir():
        raise UsageError(f"cannot write {target}: directory {target.parent} does not exist; create it first")
    return target


def write_output(path: str | os.PathLike[str], data: bytes, make_parent: bool = False) -> None:
    """Check ``path`` (``check_target``), then replace it with ``data`` in one step; a failure leaves the
    old file (or none) in place and is one line."""
    target = check_target(path, make_parent)
    tmp = claim_temp(target)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException as exc:  # a full disk or a Ctrl-C: the old file stays, the temporary one goes
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise UsageError(f"cannot write {target}: {os_error_text(exc)}") from None
        raise
