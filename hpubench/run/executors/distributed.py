"""Cells spanning several processes (devices x nodes > 1): torch.distributed's elastic agent starts one
rank per device, each running the same worker code (``hpubench.run.distributed``).

Always a fresh interpreter per rank (the agent spawns them), whatever the isolation of single-process
cells. In a multi-node run each node runs the cells spanning it, in the plan's order; ``prepare`` works
out, for each, how long this node may wait for node 0 to reach it
(``hpubench.run.distributed.launch.schedule``).
"""

from __future__ import annotations

from collections.abc import Sequence

from hpubench.plan.cell import PlannedCell
from hpubench.run.cluster import ClusterEnv
from hpubench.run.distributed.launch import Slot, run_distributed_cell, schedule
from hpubench.run.executors.base import CellOutcome, CellRequest, Executor, WorkerSetup, signature_or_failure
from hpubench.store.record import STATUS_SKIPPED, CellResult


class DistExecutor(Executor):
    """Each cell under its own elastic agent, on this node's share of its ranks."""

    def __init__(self, setup: WorkerSetup, cluster: ClusterEnv | None) -> None:
        self.setup = setup
        self.cluster = cluster
        self._slots: dict[tuple[int, int], Slot] = {}  # (plan position, repeat) -> its slot here

    def prepare(self, planned: Sequence[PlannedCell], repeat: int) -> None:
        self._slots = schedule(planned, repeat, self.cluster)

    def run(self, request: CellRequest) -> CellOutcome:
        cell, log = request.cell, request.log
        signature = signature_or_failure(cell)
        if isinstance(signature, CellResult):
            return CellOutcome(signature)
        if self.cluster is not None and self.cluster.node_rank > 0:
            # Another node's log must not replace node 0's when --out is on a shared filesystem.
            log = log.with_name(f"{log.stem}.node{self.cluster.node_rank}{log.suffix}")
        outcome = run_distributed_cell(
            cell,
            repeat=request.repeat,
            cluster=self.cluster,
            slot=self._slots.get((request.position, request.repeat), Slot(0, ())),
            env=self.setup.env(signature),
            python=self.setup.python,
            workload_files=self.setup.workload_files,
            options=None if request.options is None else request.options.to_dict(),
            work_dir=self.setup.path("dist"),
            log=log,
            timeout_s=request.timeout_s,
            feed=request.feed,
        )
        # Node 0 already past it, or a worker's own "cannot run here": one skip, recorded once.
        return CellOutcome(outcome.result, as_skip=outcome.result.status == STATUS_SKIPPED)
