"""Node 0's address must resolve before a multi-node run starts anything.

An unresolvable MASTER_ADDR used to surface only when a cell's rendezvous gave up, a whole cell timeout
later (and again for every multi-node cell). Resolving it up front turns that into one line and exit 2.
A DNS lookup can itself hang (an unreachable resolver), so it runs in a daemon thread that is waited for
at most ``RESOLVE_TIMEOUT_S``: a lookup still running then is abandoned, and the refusal says it timed
out. ``getaddrinfo`` cannot be cancelled; the abandoned thread ends with the lookup or with the process.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable

from hpubench.errors import UsageError

RESOLVE_TIMEOUT_S = 5.0
FIX = "set MASTER_ADDR / --master-addr to node 0's hostname or IP"

# (host, port) -> addresses; raises OSError (socket.gaierror) when the name does not resolve.
Resolver = Callable[[str, int], object]


def _getaddrinfo(host: str, port: int) -> object:
    return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)


def _label(addr: str, source: str) -> str:
    """How the address is named in the error: by the option or variable it came from."""
    if source in ("--master-addr", "MASTER_ADDR"):
        return f"{source} {addr!r}"
    return f"MASTER_ADDR {addr!r} (from {source})"


def check_resolves(
    addr: str,
    source: str,
    port: int,
    *,
    timeout_s: float = RESOLVE_TIMEOUT_S,
    resolver: Resolver | None = None,
) -> None:
    """Raise UsageError (one line: the address, where it came from, why, the fix) unless ``addr``
    resolves within ``timeout_s``; ``source`` is the option or variable it was taken from."""
    lookup = resolver or _getaddrinfo
    outcome: list[BaseException | None] = []

    def resolve() -> None:
        try:
            lookup(addr, port)
            outcome.append(None)
        except BaseException as exc:  # reported by the waiting thread, never raised in this one
            outcome.append(exc)

    worker = threading.Thread(target=resolve, name="hpubench-resolve-master-addr", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if not outcome:
        raise UsageError(
            f"{_label(addr, source)} did not resolve within {timeout_s:g} s (the DNS lookup timed out); "
            f"{FIX}, or fix this host's DNS"
        )
    error = outcome[0]
    if error is None:
        return
    if isinstance(error, (OSError, UnicodeError, ValueError)):
        why = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise UsageError(f"{_label(addr, source)} does not resolve ({' '.join(why.split())}); {FIX}")
    raise error
