"""Cells in a fresh interpreter each (``isolation="spawn"``), for stacks where forking a process that
imported torch is unsafe; and the doctor's detection, which must see what a fresh process sees.

Each child pays ``import torch`` itself; it says when its imports are done (a byte on a pipe), and the
cell's timeout starts there, so a timeout means the same under both isolations. The wait is the
zygote's own (``hpubench.run.executors.wait``): the timeout on the whole process group, leftovers killed.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hpubench.errors import ProbeFailed, UsageError
from hpubench.run import exitwords
from hpubench.run.executors.base import (
    DETECT_TIMEOUT_S,
    WORKER_START_TIMEOUT_S,
    CellRequest,
    ChildReply,
    EnvSignature,
    LocalExecutor,
    WorkerSetup,
    server_signature,
)
from hpubench.run.executors.result import Detected, detected, detection_failed, last_line, read_out, tail
from hpubench.run.executors.wait import killpg, wait_child
from hpubench.run.forkserver.wire import usage_line


class SpawnExecutor(LocalExecutor):
    """Each cell in ``python -m hpubench.run.forkserver.server --once``, its own session."""

    def __init__(self, setup: WorkerSetup) -> None:
        super().__init__(setup)
        self._proc: subprocess.Popen[bytes] | None = None  # the child running now

    def _args(self, *args: str) -> list[str]:
        argv = [self.setup.python, "-m", "hpubench.run.forkserver.server", *args]
        for f in self.setup.workload_files:
            argv += ["--workloads-from", f]
        return argv

    def run_child(
        self, request: CellRequest, signature: EnvSignature, out: Path, started_at: str
    ) -> ChildReply:
        cell, log = request.cell, request.log
        sent = time.time()
        args = self._args(
            "--once", json.dumps(cell.to_dict()), str(out), str(log), "--dispatched-at", repr(sent)
        )
        if request.options is not None:
            args += ["--options", json.dumps(request.options.to_dict())]
        if request.feed is not None:
            args += ["--feed", str(request.feed)]
        ready_r, ready_w = os.pipe()
        args += ["--ready-fd", str(ready_w)]
        try:
            with open(log, "wb") as logf:  # interpreter start-up errors land in the log too
                self._proc = subprocess.Popen(
                    args,
                    stdin=subprocess.DEVNULL,
                    stdout=logf,
                    stderr=logf,
                    env=self.setup.env(signature),
                    start_new_session=True,
                    pass_fds=(ready_w,),
                )
        finally:
            os.close(ready_w)
        try:
            reply = self._wait(self._proc, request.timeout_s, log, ready_r)
        finally:
            os.close(ready_r)
            self._proc = None
            self.setup.sweep()  # what the cell started outside its process group
        return ChildReply(reply, sent)

    def _wait(
        self, proc: subprocess.Popen[bytes], timeout_s: float, log: Path, ready_fd: int | None = None
    ) -> dict[str, Any]:
        """Wait for a spawned child; with ``ready_fd`` the timeout starts once its imports are done."""
        if ready_fd is not None:
            ready, _, _ = select.select([ready_fd], [], [], WORKER_START_TIMEOUT_S)
            # Nothing in time: the imports hang, so the cell's budget is spent. Empty read: it exited
            # before getting ready, and the wait below sees how.
            if not ready:
                timeout_s = 0.0
            else:
                os.read(ready_fd, 1)
        reply = wait_child(proc.pid, timeout_s, str(log), None)
        assert reply is not None  # only a control channel can end the wait early
        # We reaped it ourselves; tell Popen so it neither waits again nor warns.
        proc.returncode = -reply["signal"] if reply["signal"] else reply["exitcode"]
        return reply

    def detect(self) -> Detected:
        out = self.setup.path("detect.json")
        log = self.setup.path("detect.log")
        data, reply = self._detect_child(out, log, [])
        if data is None or "inventory" not in data:
            raise UsageError(detection_failed(reply, log))
        return detected(data, {k: tuple(v) for k, v in data.get("workloads", {}).items()})

    def detect_for_doctor(self, meanwhile: Callable[[], None] = lambda: None) -> dict[str, Any]:
        """What ``detect`` learns plus ``hpubench doctor``'s facts (``"doctor"``). Raises ProbeFailed with
        the reason and the log's last line when the child gave no result; a bad workload is a
        UsageError. ``meanwhile`` runs while the child imports (``_detect_child``)."""
        out = self.setup.path("doctor.json")
        log = self.setup.path("doctor.log")
        data, reply = self._detect_child(out, log, ["--doctor"], meanwhile)
        if data is None or "inventory" not in data:
            raise ProbeFailed(f"{exitwords.reply_reason(reply)}; last log line: {last_line(log)}")
        return data

    def _detect_child(
        self, out: Path, log: Path, extra_args: list[str], meanwhile: Callable[[], None] = lambda: None
    ) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        """``python -m hpubench.run.forkserver.server --detect``: its JSON (None when it wrote none) and
        how it ended.

        The child times nothing (a telemetry reading, the host's steadiness) until ``meanwhile`` has
        returned: it holds the read end of a pipe (``--quiet-fd``) whose write end is closed then. So the
        launcher can start its other processes while the child imports, without their start-up in any
        figure."""
        quiet_r, quiet_w = os.pipe()
        try:
            try:
                with open(log, "wb") as logf:
                    proc = subprocess.Popen(
                        self._args("--detect", str(out), *extra_args, "--quiet-fd", str(quiet_r)),
                        stdin=subprocess.DEVNULL,
                        stdout=logf,
                        stderr=logf,
                        env=self.setup.env(server_signature()),
                        start_new_session=True,
                        pass_fds=(quiet_r,),
                    )
            finally:
                os.close(quiet_r)  # the child's now
            self._proc = proc
            meanwhile()
        finally:
            os.close(quiet_w)
        reply = self._wait(proc, DETECT_TIMEOUT_S, log)
        self._proc = None
        usage = usage_line(tail(log))
        if usage:
            raise UsageError(usage)
        return read_out(out), reply

    def probe(self, args: list[str], timeout_s: float) -> dict[str, Any]:
        raise ProbeFailed("no pre-warmed worker under spawn isolation")

    def abort(self) -> None:
        self.close()
        self.setup.sweep()

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
