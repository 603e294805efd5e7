"""Whether this process has a child, in one system call.

Listing a process's descendants through psutil reads every process of the machine from /proc (milliseconds
on a busy host), once per cell in the fork server and twice per cell in the interference meter. The common
answer (no child at all) needs none of it. Children made by ``clone`` with an exit signal other than SIGCHLD
are not seen (fork, subprocess and multiprocessing all use SIGCHLD).
"""

from __future__ import annotations

import os


def has_children() -> bool:
    """Whether any process (alive or a zombie) is this one's child; one syscall, no /proc scan.

    Every descendant hangs below some child, so no child means nothing below at all.
    """
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True
