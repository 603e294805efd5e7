"""Cells forked from pre-warmed zygotes: the default executor, and the cheapest per cell.

A fresh interpreter would pay ``import torch`` (1-2 s) for every cell; a zygote
(``hpubench.run.forkserver.server``)
pays it once and forks a child per cell, which costs milliseconds. A zygote that dies with its cell is
that cell's failure, and a fresh one serves the next; one that cannot start at all fails every cell that
needs its environment, with the reason, instead of ending the run.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

from hpubench.errors import ProbeFailed, UsageError
from hpubench.plan.cell import flops_key
from hpubench.run import exitwords
from hpubench.run.executors.base import (
    DETECT_TIMEOUT_S,
    CellOutcome,
    CellRequest,
    ChildReply,
    EnvSignature,
    LocalExecutor,
    WorkerSetup,
    server_signature,
)
from hpubench.run.executors.result import (
    Detected,
    detected,
    detection_failed,
    failed,
    last_line,
    probe_usage,
    read_out,
    tail,
)
from hpubench.run.executors.wait import KILL_GRACE_S
from hpubench.run.forkserver.client import ZygoteDied, ZygotePool, ZygoteStartFailed
from hpubench.store.record import CellResult

# How long past a cell's own timeout the zygote may take to answer before it is declared wedged.
ZYGOTE_REPLY_SLACK_S = 30.0


class ForkExecutor(LocalExecutor):
    """Each cell in a child forked from the zygote that serves its pre-import environment."""

    def __init__(self, setup: WorkerSetup) -> None:
        super().__init__(setup)
        self.pool = ZygotePool(setup)
        self._broken: dict[EnvSignature, str] = {}  # signature -> why its zygote cannot start
        # FLOP counts cells of this run made, by hpubench.plan.cell.flops_key, handed to later cells.
        self._flops: dict[str, int] = {}

    def run_child(
        self, request: CellRequest, signature: EnvSignature, out: Path, started_at: str
    ) -> ChildReply | CellOutcome:
        cell, log = request.cell, request.log
        if signature in self._broken:
            return CellOutcome(failed(cell, self._broken[signature], started_at=started_at))
        try:
            z = self.pool.get(signature)
        except ZygoteStartFailed as exc:
            self._broken[signature] = f"the pre-warmed worker process could not start: {exc}"
            return CellOutcome(failed(cell, self._broken[signature], started_at=started_at))
        sent = time.time()
        msg = {
            "op": "run",
            "cell": cell.to_dict(),
            "out": str(out),
            "log": str(log),
            "timeout_s": request.timeout_s,
            "dispatched_at": sent,
            "options": None if request.options is None else request.options.to_dict(),
            "flops_hints": dict(self._flops),
            "feed": None if request.feed is None else str(request.feed),
        }
        try:
            reply = z.request(msg, request.timeout_s + KILL_GRACE_S + ZYGOTE_REPLY_SLACK_S)
        except ZygoteDied as exc:
            zygote_tail = z.stderr_tail()
            self.pool.drop(signature)
            return CellOutcome(
                failed(
                    cell,
                    f"the pre-warmed worker process died while running this cell ({exc}); "
                    "it was restarted for the next cell",
                    tail(log) or zygote_tail,
                    started_at=started_at,
                    wall_s=time.time() - sent,
                )
            )
        return ChildReply(reply, sent)

    def learn(self, result: CellResult) -> None:
        """Keep a cell's own FLOP count for the cells after it (same code, same run)."""
        rt = result.runtime
        count, batch = rt.flops_per_device_step, rt.batch_size
        if rt.flops_counted == "here" and isinstance(count, int) and isinstance(batch, int):
            self._flops[flops_key(result.cell.workload, result.cell.size, batch, result.cell.options)] = count

    def detect(self) -> Detected:
        out = self.setup.path("detect.json")
        log = self.setup.path("detect.log")
        signature = server_signature()
        try:
            z = self.pool.get(signature)
        except ZygoteStartFailed as exc:
            raise UsageError(f"cannot start the hpubench worker process: {exc}") from None
        try:
            reply = z.request(
                {"op": "detect", "out": str(out), "log": str(log), "timeout_s": DETECT_TIMEOUT_S},
                DETECT_TIMEOUT_S + ZYGOTE_REPLY_SLACK_S,
            )
        except ZygoteDied as exc:
            self.pool.drop(signature)
            raise UsageError(f"accelerator detection failed: the worker process died ({exc})") from None
        data = read_out(out)
        if data is None or "inventory" not in data:
            raise UsageError(detection_failed(reply, log))
        return detected(data, dict(z.catalog))

    def warm(self) -> None:
        """The probe's zygote, started now (``probe`` meets a start that failed, and says why)."""
        with contextlib.suppress(ZygoteStartFailed, UsageError):
            self.pool.get(server_signature())

    def probe(self, args: list[str], timeout_s: float) -> dict[str, Any]:
        """In a child forked from the zygote, which has torch and the workload files loaded already: a
        fresh interpreter would pay ``import torch`` again."""
        out = self.setup.path("probe.json")
        log = self.setup.path("probe.log")
        signature = server_signature()
        try:
            z = self.pool.get(signature)
            reply = z.request(
                {"op": "probe", "argv": args, "out": str(out), "log": str(log), "timeout_s": timeout_s},
                timeout_s + ZYGOTE_REPLY_SLACK_S,
            )
        except (ZygoteStartFailed, ZygoteDied) as exc:
            self.pool.drop(signature)
            raise ProbeFailed(f"the worker process died ({exc})") from None
        data = read_out(out)
        if data is None:
            usage = probe_usage(log.read_text(errors="replace")) if log.exists() else None
            if usage is not None:
                raise UsageError(usage)
            raise ProbeFailed(f"{exitwords.reply_reason(reply)}; last log line: {last_line(log)}")
        return data

    def abort(self) -> None:
        self.pool.close(timeout_s=1.0)
        self.setup.sweep()

    def close(self) -> None:
        self.pool.close()
