"""A cap on each cell's log: a chatty cell keeps its first and last lines, and the log says what was cut.

A cell's stdout and stderr go straight into its log file (the cell writes it itself, so a crash loses
nothing). Once the cell has ended, a log over ``LOG_CAP_BYTES`` is rewritten as its head
(``HEAD_BYTES``), one line saying how many bytes were cut, and its tail (the rest of the cap), each cut
on a line boundary; the rewrite goes through a temporary file and a rename, so a failure leaves the
whole log. The tail is where a failure's traceback is, so it gets the larger share.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from hpubench.store.leftovers import claim_temp

LOG_CAP_BYTES = 4 * 2**20
HEAD_BYTES = 1 * 2**20


def cap_log(path: str | os.PathLike[str], cap: int = LOG_CAP_BYTES, head: int = HEAD_BYTES) -> int:
    """Cut the middle of the log at ``path`` down to ``cap`` bytes; returns the bytes cut (0: none)."""
    log = Path(path)
    try:
        size = log.stat().st_size
    except OSError:
        return 0
    if size <= cap:
        return 0
    tail = cap - head
    tmp = claim_temp(log)
    try:
        with open(log, "rb") as f:
            first = f.read(head)
            first = first[: first.rfind(b"\n") + 1] or first  # end on a whole line where there is one
            f.seek(size - tail)
            last = f.read(tail)
            nl = last.find(b"\n")
            last = last[nl + 1 :] if 0 <= nl < len(last) - 1 else last
        cut = size - len(first) - len(last)
        note = (
            f"\n[hpubench: {cut} bytes cut from the middle of this log (a cell's log keeps its first "
            f"{head // 2**20} MiB and last {tail // 2**20} MiB)]\n\n"
        ).encode()
        with open(tmp, "wb") as f:
            f.write(first + note + last)
        os.replace(tmp, log)
    except OSError:  # a full disk included: the whole log stays, which is what it was
        with contextlib.suppress(OSError):
            tmp.unlink()
        return 0
    return cut
