"""The launcher's end of the pre-warmed fork servers (``hpubench.run.forkserver.server``): start one, send
it requests,
read its replies, stop it; and the pool of them, one per distinct pre-import environment."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from hpubench.errors import UsageError
from hpubench.run import exitwords, oomwatch
from hpubench.run.executors.base import WORKER_START_TIMEOUT_S, EnvSignature, WorkerSetup
from hpubench.run.executors.result import tail
from hpubench.run.executors.wait import killpg
from hpubench.run.forkserver.wire import LineChannel, send, usage_line


class ZygoteDied(Exception):
    """The zygote process ended or stopped answering; the message says how."""


class ZygoteStartFailed(Exception):
    """A zygote could not get ready for a reason that is not the user's input."""


class ZygoteClient:
    """The launcher's end of one zygote process."""

    def __init__(self, python: str, files: list[str], env: dict[str, str], stderr_path: Path) -> None:
        self.stderr_path = stderr_path
        self.oom_before: int | None = None
        self.child_pid: int | None = None  # the cell child currently running, once announced
        args = [python, "-m", "hpubench.run.forkserver.server"]
        for f in files:
            args += ["--workloads-from", f]
        t0 = time.perf_counter()
        with open(stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                args,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                env=env,
                bufsize=0,
                # Own session: a terminal's Ctrl-C reaches only the launcher, which then stops the
                # zygotes deliberately instead of having them die mid-reply.
                start_new_session=True,
            )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.channel = LineChannel(self.proc.stdout.fileno())
        try:
            ready = self._read(WORKER_START_TIMEOUT_S, starting=True)
        except BaseException:  # a Ctrl-C during the warm-up included: never leave it running
            self.kill()
            raise
        if not ready.get("ready"):
            self.kill()
            msg = str(ready.get("error") or "unknown error")
            if ready.get("usage"):
                raise UsageError(msg)
            raise ZygoteStartFailed(f"{msg} (see {self.stderr_tail_line()})")
        self.start_s = time.perf_counter() - t0
        self.import_s = float(ready.get("import_s") or 0.0)
        self.catalog: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in ready["workloads"].items()}

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stderr_tail(self) -> str | None:
        return tail(self.stderr_path)

    def stderr_tail_line(self) -> str:
        end = self.stderr_tail()
        return end.splitlines()[-1] if end else "no output on stderr"

    def _ended_how(self) -> str:
        code = self.proc.poll()
        if code is None:
            return "stopped responding"
        return exitwords.from_returncode(code, oomwatch.evidence(None, self.oom_before))

    def _read(self, timeout_s: float, starting: bool = False) -> dict[str, Any]:
        try:
            line = self.channel.read_line(timeout_s)
        except TimeoutError:
            self.kill()
            raise (ZygoteStartFailed if starting else ZygoteDied)(
                f"no answer within {timeout_s:g} s"
            ) from None
        if line is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
            usage = usage_line(self.stderr_tail())
            if starting and usage:
                raise UsageError(usage)
            how = self._ended_how()
            if starting:
                raise ZygoteStartFailed(f"worker pool process {how}: {self.stderr_tail_line()}")
            raise ZygoteDied(how)
        try:
            return json.loads(line)
        except ValueError:
            raise ZygoteDied(f"sent a malformed reply {line[:200]!r}") from None

    def request(self, msg: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Send one request and wait for its final reply (a status or an error)."""
        self.child_pid = None
        self.oom_before = oomwatch.oom_kills()  # the zygote itself may be the OOM killer's choice
        try:
            send(self.proc.stdin.fileno(), msg)  # type: ignore[union-attr]
        except OSError:
            raise ZygoteDied(self._ended_how()) from None
        deadline = time.monotonic() + timeout_s
        while True:
            reply = self._read(max(0.0, deadline - time.monotonic()))
            if "forked" in reply:
                self.child_pid = int(reply["forked"])
                continue
            self.child_pid = None
            return reply

    def close(self, timeout_s: float = 5.0) -> None:
        """Ask politely (the zygote kills a running child on end of input), then insist."""
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                send(self.proc.stdin.fileno(), {"op": "exit"})  # type: ignore[union-attr]
            with contextlib.suppress(OSError):
                self.proc.stdin.close()  # type: ignore[union-attr]
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=timeout_s)
        if self.proc.returncode == 0:
            self.child_pid = None  # it killed and reaped its child itself; that pid may be reused now
        self.kill()

    def kill(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
        if self.child_pid is not None:  # the zygote can no longer clean up after its child
            killpg(self.child_pid, signal.SIGKILL)
            self.child_pid = None
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(Exception):
                stream.close()  # type: ignore[union-attr]


class ZygotePool:
    """One zygote per distinct pre-import environment, started when first needed, restarted when dead."""

    def __init__(self, setup: WorkerSetup) -> None:
        self.setup = setup
        self.start_s: list[float] = []  # one entry per zygote started: the warm-up we pay
        self._zygotes: dict[EnvSignature, ZygoteClient] = {}

    def get(self, signature: EnvSignature) -> ZygoteClient:
        """The live zygote for ``signature``. Raises ZygoteStartFailed, or UsageError for bad input."""
        z = self._zygotes.get(signature)
        if z is not None and z.alive():
            return z
        if z is not None:  # died between cells: start a fresh one
            z.kill()
            del self._zygotes[signature]
        s = self.setup
        z = ZygoteClient(s.python, s.workload_files, s.env(signature), s.path("zygote.stderr"))
        self.start_s.append(z.start_s)
        self._zygotes[signature] = z
        return z

    def drop(self, signature: EnvSignature) -> None:
        """Kill the zygote for ``signature`` (dead or wedged), and its cell's orphans no subreaper took."""
        z = self._zygotes.pop(signature, None)
        if z is not None:
            z.kill()
            self.setup.sweep(spare={z.proc.pid for z in self._zygotes.values()})

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop every zygote (each kills its running child), waiting ``timeout_s`` for each to exit."""
        zygotes, self._zygotes = list(self._zygotes.values()), {}
        for z in zygotes:
            z.close(timeout_s=timeout_s)
