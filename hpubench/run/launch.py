"""The launcher: every cell in its own process, so a crash, a hang or a leaked device costs one cell.

Isolation is what makes a several-hundred-cell matrix finish: a segfault in a kernel, a hung collective
or a cell that never releases device memory is recorded as that cell's failure and the run goes on. Its
price is a process per cell, kept small by forking from pre-warmed zygotes (``hpubench.run.executors.fork``)
that imported torch once; ``isolation="spawn"`` pays for a fresh interpreter per cell instead
(``hpubench.run.executors.spawn``), for stacks where forking after ``import torch`` is unsafe. Cells of
several processes go to torch's elastic agent (``hpubench.run.executors.distributed``).

``Launcher`` puts these executors together behind the API the CLI and ``hpubench.api`` use: detection,
the estimates' probe, and ``run``, which is the scheduler's (``hpubench.run.scheduler``). It owns every
process they start and the scratch folder their files pass through; leave it (``with``) and nothing of
them is left.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from hpubench.errors import UsageError
from hpubench.plan.cell import PlannedCell
from hpubench.plan.inventory import Inventory
from hpubench.plan.runoptions import RunOptions
from hpubench.plugins.files import import_limit_s
from hpubench.run.cluster import ClusterEnv
from hpubench.run.events import Event
from hpubench.run.executors import ISOLATIONS
from hpubench.run.executors.base import LocalExecutor, WorkerSetup
from hpubench.run.executors.distributed import DistExecutor
from hpubench.run.executors.fork import ForkExecutor
from hpubench.run.executors.spawn import SpawnExecutor
from hpubench.run.scheduler import Adjust, Scheduler
from hpubench.store.record import CellResult
from hpubench.store.rundir import ResultStore

__all__ = ["Event", "Launcher"]  # Event: where its watchers have always imported it


class Launcher:
    """Runs cells in isolated processes; owns the worker processes. Use as a context manager.

    ``base_env`` is the whole environment workers start from (default: this process's); each cell's
    ``env_before_import`` variables are added on top, one zygote per distinct set.
    """

    def __init__(
        self,
        workload_files: list[str] | None = None,
        isolation: str = "fork",
        base_env: dict[str, str] | None = None,
        python: str | None = None,
        cluster: ClusterEnv | None = None,
    ) -> None:
        if isolation not in ISOLATIONS:
            raise UsageError(f"isolation must be one of {', '.join(ISOLATIONS)}, got {isolation!r}")
        if isolation == "fork" and not hasattr(os, "fork"):
            isolation = "spawn"
        self.isolation = isolation
        env = dict(os.environ if base_env is None else base_env)
        import_limit_s(env)  # a bad HPUBENCH_PLUGIN_IMPORT_TIMEOUT is refused before any worker
        # Multi-node: this node's place (hpubench.run.cluster). A node other than 0 runs only the cells that
        # span it; its caller gives it a store that writes nothing (node 0 keeps the records).
        self.cluster = cluster
        # Workload name -> accepted option names, learnt by detect(); None until then (or from a worker
        # too old to say), when unknown options are left to the worker to refuse.
        self.workload_options: dict[str, tuple[str, ...]] | None = None
        self.workload_unavailable: dict[str, str] = {}  # workload -> why it cannot run here
        self.setup = WorkerSetup(python or sys.executable, workload_files or [], env)
        self._spawn = SpawnExecutor(self.setup)  # also the doctor's fresh-interpreter detection
        self._fork = ForkExecutor(self.setup) if isolation == "fork" else None
        self.local: LocalExecutor = self._fork or self._spawn
        self.dist = DistExecutor(self.setup, cluster)
        self.scheduler = Scheduler(self.local, self.dist, cluster, fresh=self._spawn)

    @property
    def workload_files(self) -> list[str]:
        return self.setup.workload_files

    @property
    def base_env(self) -> dict[str, str]:
        """The workers' environment, the launcher's token included (``hpubench.run.proctree``)."""
        return self.setup.base_env

    @property
    def python(self) -> str:
        return self.setup.python

    @property
    def zygote_start_s(self) -> list[float]:
        """One entry per zygote started: the warm-up paid (none under spawn isolation)."""
        return self._fork.pool.start_s if self._fork is not None else []

    # ---- lifecycle ----------------------------------------------------------------------------------
    def __enter__(self) -> Launcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop every worker process and forget the scratch files (records are already in the store)."""
        try:
            for executor in {id(e): e for e in (self.local, self._spawn, self.dist)}.values():
                executor.close()
            self.setup.sweep()
        finally:
            self.setup.remove_scratch()

    # ---- detection ----------------------------------------------------------------------------------
    def detect(self) -> tuple[Inventory, dict[str, tuple[str, ...]]]:
        """What devices this machine has and which workloads are registered, learnt in a child.

        Detection imports the device frameworks, which fixes their modes for the whole process, so it
        runs in a throw-away child and never in the launcher or a zygote.
        """
        found = self.local.detect()
        if found.workload_options is not None:
            self.workload_options = found.workload_options
        self.workload_unavailable = dict(found.workload_unavailable)
        return found.inventory, found.catalog

    def probe(self, args: list[str], timeout_s: float) -> dict[str, Any]:
        """``hpubench.run.probe`` (estimates' model facts and rates) with ``args``, in a child forked from
        the pre-warmed server. Raises ProbeFailed with the reason (spawn isolation included: the caller then
        runs the probe on its own)."""
        return self.local.probe(args, timeout_s)

    def detect_for_doctor(self) -> dict[str, Any]:
        """What ``detect`` learns plus ``hpubench doctor``'s facts (``"doctor"``), from a fresh interpreter
        whatever the isolation: the doctor must see what a process starting here sees (a bridge that
        ``import torch`` loads, a mode read at import), not a fork of a warm one. The probe's worker starts
        while that child imports (``LocalExecutor.warm``): the two start-ups overlap, and the child times
        nothing until the worker is up."""
        return self._spawn.detect_for_doctor(meanwhile=self.local.warm)

    # ---- running ------------------------------------------------------------------------------------
    def run(
        self,
        planned: list[PlannedCell],
        store: ResultStore,
        timeout_s: float,
        resume: bool = False,
        on_event: Callable[[Event], None] | None = None,
        repeat: int = 1,
        options: RunOptions | None = None,
        adjust: Adjust | None = None,
    ) -> list[CellResult]:
        """``hpubench.run.scheduler.Scheduler.run``: the plan in order, each record stored as it exists."""
        return self.scheduler.run(planned, store, timeout_s, resume, on_event, repeat, options, adjust)
