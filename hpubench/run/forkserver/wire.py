"""What crosses between the launcher and its worker processes: JSON lines on raw file descriptors.

The fork server's protocol (``hpubench.run.forkserver.server`` documents it) is one JSON object a line each
way; the
launcher and the server both read it with ``LineChannel`` (select-able, so a wait can watch the pipe
and a child at once) and write it with ``send``. A worker that refuses its input says so on stderr in
one line starting with ``USAGE_ERROR_PREFIX``, which the launcher turns back into a usage error.
"""

from __future__ import annotations

import json
import os
import select
import time
from typing import Any

USAGE_ERROR_PREFIX = "hpubench-zygote: usage error: "


class LineChannel:
    """JSON-lines reader on a raw fd, select-able: a buffered file object would hide pending lines."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buf = b""
        self.eof = False

    def has_line(self) -> bool:
        return b"\n" in self.buf

    def fill(self) -> None:
        """Read what is available now (call only when select says readable)."""
        try:
            data = os.read(self.fd, 65536)
        except OSError:
            data = b""
        if not data:
            self.eof = True
        self.buf += data

    def pop_line(self) -> bytes | None:
        if b"\n" not in self.buf:
            return None
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def read_line(self, timeout_s: float | None = None) -> bytes | None:
        """The next line; None at end of input; TimeoutError when nothing complete came in time."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while not self.has_line():
            if self.eof:
                return None
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.fd], [], [], wait)
            if not ready:
                raise TimeoutError
            self.fill()
        return self.pop_line()


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def send(fd: int, msg: dict[str, Any]) -> None:
    write_all(fd, (json.dumps(msg, separators=(",", ":"), default=str) + "\n").encode())


def usage_line(stderr_text: str | None) -> str | None:
    """The worker's one-line usage error in ``stderr_text`` (its last such line), or None."""
    for line in reversed((stderr_text or "").splitlines()):
        if line.startswith(USAGE_ERROR_PREFIX):
            return line[len(USAGE_ERROR_PREFIX) :]
    return None
