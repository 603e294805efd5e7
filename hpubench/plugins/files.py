"""Importing ``--workloads-from`` files within a time limit.

A workload file is arbitrary code, imported in every process that runs or inspects cells: the worker
server (fork isolation), the detection and cell children (spawn), the estimate probe and each rank of a
multi-process cell. One whose import hangs (a network mount, a lock, a ``time.sleep``) used to hold the
run until the worker's start-up timeout, 300 s, which is sized for ``import torch`` on a cold filesystem.
The files are now imported one at a time, each within ``HPUBENCH_PLUGIN_IMPORT_TIMEOUT`` seconds
(default ``DEFAULT_LIMIT_S``; the clock starts after torch is imported). Past it, the import is
interrupted (SIGALRM raises in the importing main thread) and the caller gets a ``UsageError`` naming
the file, the limit and the fix. A backstop thread ends the process ``BACKSTOP_GRACE_S`` later with the
same line on stderr, for an import that swallows the interruption. An import stuck in native code that
holds the GIL is out of reach of both; the launcher's own start-up timeout still ends that one.

Only the limit's parsing is used by the launching process (to refuse a bad value before anything runs);
the loading runs in the children.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Mapping
from types import FrameType

from hpubench.errors import UsageError
from hpubench.plugins.envlimit import env_seconds

ENV_VAR = "HPUBENCH_PLUGIN_IMPORT_TIMEOUT"
DEFAULT_LIMIT_S = 60.0
MAX_LIMIT_S = 86400.0
BACKSTOP_GRACE_S = 5.0


class _ImportTimedOut(BaseException):
    """Raised into a hanging import; a BaseException so the file's own ``except Exception`` lets it by."""


def import_limit_s(env: Mapping[str, str]) -> float:
    """Seconds one workload file's import may take, from ``env``; a bad value is one UsageError line."""
    return env_seconds(
        env, ENV_VAR, DEFAULT_LIMIT_S, MAX_LIMIT_S, "a --workloads-from file's import may take"
    )


def timed_out_message(path: str, limit_s: float) -> str:
    return (
        f"workload file {path!r} did not finish importing within {limit_s:g} s ({ENV_VAR}); "
        f"fix what its import waits for, or raise {ENV_VAR} if it needs longer"
    )


def load_within(path: str, load: Callable[[str], object], limit_s: float, stuck_prefix: str = "") -> object:
    """``load(path)`` within ``limit_s`` seconds, else UsageError (``timed_out_message``).

    Called from the main thread of a process that may use SIGALRM for this while it runs; from any other
    thread only the backstop applies. The backstop writes ``stuck_prefix`` + the message to stderr (the
    prefix the parent looks for) and exits with code 2.
    """
    message = timed_out_message(path, limit_s)
    armed = {"on": True}

    def interrupt(signum: int, frame: FrameType | None) -> None:
        if armed["on"]:
            raise _ImportTimedOut

    def give_up() -> None:
        os.write(2, f"{stuck_prefix}{message}\n".encode(errors="replace"))
        os._exit(2)

    backstop = threading.Timer(limit_s + BACKSTOP_GRACE_S, give_up)
    backstop.daemon = True
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGALRM, interrupt) if in_main else None
    try:
        try:
            backstop.start()
            if in_main:
                signal.setitimer(signal.ITIMER_REAL, limit_s)
            return load(path)
        finally:
            armed["on"] = False  # first: an alarm from here on does nothing
            if in_main:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, signal.SIG_DFL if previous is None else previous)
            backstop.cancel()
            backstop.join()  # no thread left behind: the worker server forks after this
    except _ImportTimedOut:
        raise UsageError(message) from None


def load_files(
    paths: list[str], load: Callable[[str], object], env: Mapping[str, str], stuck_prefix: str = ""
) -> None:
    """Each of ``paths`` through ``load`` (``workloads.load_file``) within the limit ``env`` sets."""
    limit_s = import_limit_s(env)
    for path in paths:
        load_within(path, load, limit_s, stuck_prefix)
