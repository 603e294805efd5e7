"""How one cell gets run in processes of its own: the executor interface and what every executor shares.

The scheduler (``hpubench.run.scheduler``) hands each runnable cell to an executor and gets a
``CellOutcome`` back; an executor never raises for a cell's own problem (a crash, a hang, a bad result:
all are the cell's failed record). Three implement it:

- ``hpubench.run.executors.fork.ForkExecutor``: a child forked from a pre-warmed zygote per cell (the
default);
- ``hpubench.run.executors.spawn.SpawnExecutor``: a fresh interpreter per cell (``isolation="spawn"``);
- ``hpubench.run.executors.distributed.DistExecutor``: cells of several processes, under torch's elastic
agent.

The two single-process executors share their run loop (``LocalExecutor.run``), and also detect the
machine (``LocalExecutor.detect``) and run the estimates' probe. All three start their processes from
one ``WorkerSetup``: the same interpreter, workload files and environment (with the launcher's token,
``hpubench.run.proctree``), one scratch folder.
"""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hpubench import accelerators
from hpubench.plan.cell import Cell, PlannedCell
from hpubench.plan.runoptions import RunOptions
from hpubench.run import proctree
from hpubench.run.executors.result import Detected, collect, failed
from hpubench.run.hostcondition import condition_env
from hpubench.run.sourceroot import with_source_root
from hpubench.store.leftovers import Scratch
from hpubench.store.record import CellResult
from hpubench.store.runmeta import utc_now_iso

EnvSignature = tuple[tuple[str, str], ...]
SCRATCH_PREFIX = "hpubench-launch-"
WORKER_START_TIMEOUT_S = 300.0  # importing torch (and a device bridge) on a cold, networked filesystem
DETECT_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class CellRequest:
    """One cell to run now: where its log and step feed go, how long it may take, what to observe."""

    cell: Cell
    log: Path
    timeout_s: float
    options: RunOptions | None = None
    feed: Path | None = None  # where the cell streams its steps (``hpubench.run.stepfeed``); None: nowhere
    repeat: int = 0  # the pass of the plan it belongs to
    position: int = 0  # its place in the plan (0-based), within the pass


@dataclass(frozen=True)
class CellOutcome:
    """What came of a ``CellRequest``.

    ``dispatch_s``: request sent -> the cell's code entered in its child, where known (the fixed cost).
    ``as_skip``: the cell was not run here after all; the scheduler reports it as a skip and records it
    once, on the plan's first pass (a node other than 0 that node 0 had already passed by).
    """

    result: CellResult
    dispatch_s: float | None = None
    as_skip: bool = False


@dataclass(frozen=True)
class ChildReply:
    """How a cell's child ended (the wait's reply: ``hpubench.run.exitwords``) and when it was sent the
    cell (``time.time()``), for the dispatch time."""

    reply: dict[str, Any]
    sent: float


class Executor(ABC):
    """Runs cells, each in processes of its own, and owns those processes."""

    def prepare(self, planned: Sequence[PlannedCell], repeat: int) -> None:
        """The whole plan, before any cell of it runs (default: nothing to do)."""

    @abstractmethod
    def run(self, request: CellRequest) -> CellOutcome:
        """Run one cell to its end or its timeout; never raises for the cell's own problems."""

    def abort(self) -> None:
        """Interrupted: stop whatever runs now, without waiting for it, and leave nothing of it."""

    def close(self) -> None:
        """Stop the long-lived processes (if any); nothing runs any more."""


class LocalExecutor(Executor):
    """A single-process executor, which also learns what this machine has and runs the estimates' probe.

    The run loop is this class's: the cell's environment signature, its result file, then the
    subclass's child (``run_child``), then the record read back from what the child left."""

    def __init__(self, setup: WorkerSetup) -> None:
        self.setup = setup

    def run(self, request: CellRequest) -> CellOutcome:
        cell, log = request.cell, request.log
        log.parent.mkdir(parents=True, exist_ok=True)
        signature = signature_or_failure(cell)
        if isinstance(signature, CellResult):
            return CellOutcome(signature)
        out = self.setup.path("result.json")
        started_at = utc_now_iso()
        child = self.run_child(request, signature, out, started_at)
        if isinstance(child, CellOutcome):
            return child
        result, dispatch_s = collect(cell, child.reply, out, log, request.timeout_s, started_at, child.sent)
        self.learn(result)
        return CellOutcome(result, dispatch_s)

    @abstractmethod
    def run_child(
        self, request: CellRequest, signature: EnvSignature, out: Path, started_at: str
    ) -> ChildReply | CellOutcome:
        """Run the cell in a child of environment ``signature`` that writes its result to ``out``, to its
        end or its timeout; the cell's failed outcome when no child could run it."""

    def learn(self, result: CellResult) -> None:
        """What a finished cell teaches the cells after it (default: nothing)."""

    @abstractmethod
    def detect(self) -> Detected:
        """Devices and workloads, learnt in a child (detection fixes device modes for the process that
        runs it). Raises UsageError, with the fix, when no child could say."""

    @abstractmethod
    def probe(self, args: list[str], timeout_s: float) -> dict[str, Any]:
        """``hpubench.run.probe`` with ``args`` in a child; its JSON. Raises ProbeFailed with the
        reason."""

    def warm(self) -> None:
        """Start what ``probe`` runs in now, so that its start overlaps whatever the caller waits on next;
        a start that fails is left for ``probe`` to meet and report (default: nothing to start)."""


class WorkerSetup:
    """How every process of one launcher starts, and the scratch folder their files pass through.

    ``base_env`` is the whole environment workers start from; each cell's ``env_before_import`` variables
    are added on top. The launcher's token is set in it: every process started from here carries it,
    and so does everything they start (``sweep``).
    """

    def __init__(self, python: str, workload_files: Sequence[str], base_env: dict[str, str]) -> None:
        self.python = python
        self.workload_files = [str(f) for f in workload_files]
        self.base_env = base_env
        self.token = base_env[proctree.TOKEN_ENV] = uuid.uuid4().hex
        self._scratch = Scratch(SCRATCH_PREFIX)
        self.scratch = self._scratch.path
        self._seq = 0

    def path(self, stem: str) -> Path:
        """A fresh path in the scratch folder, numbered in order of use."""
        self._seq += 1
        return self.scratch / f"{self._seq:05d}-{stem}"

    def env(self, signature: EnvSignature) -> dict[str, str]:
        """A worker's environment: the base one, ``signature`` on top, this hpubench first on the path."""
        env = dict(self.base_env)
        env.update(signature)
        return with_source_root(env)  # the children run this very hpubench, installed or not

    def sweep(self, spare: Collection[int] = ()) -> list[int]:
        """Kill what this launcher's processes left running anywhere, but the pids in ``spare``."""
        return proctree.sweep(self.token, spare=spare)

    def remove_scratch(self) -> None:
        self._scratch.remove()


def cell_signature(cell: Cell) -> EnvSignature:
    """The pre-import environment ``cell`` needs; one zygote serves each. KeyError: unknown accelerator."""
    env = accelerators.fork_server_env()
    env.update(accelerators.get(cell.accelerator).env_before_import(cell))
    env.update(condition_env(cell))
    return tuple(sorted(env.items()))


def server_signature() -> EnvSignature:
    """The environment of a worker that serves no particular cell (detection, probes)."""
    return tuple(sorted(accelerators.fork_server_env().items()))


def signature_or_failure(cell: Cell) -> EnvSignature | CellResult:
    """``cell_signature``, or the cell's failed record when its accelerator is unknown."""
    try:
        return cell_signature(cell)
    except KeyError as exc:
        return failed(cell, str(exc.args[0]) if exc.args else str(exc))
