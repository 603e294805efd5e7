"""The launcher's side of a distributed cell: start torch's elastic agent, bound it in time, read the outcome.

No torch here (the launcher never imports it). The agent runs in a child process in its own session, so
a timeout can stop the whole tree: SIGTERM first (the agent then stops its workers itself, the way
torchrun does), SIGKILL after a grace to the agent and to every process of its tree. Every process of
the cell carries one token in its environment, and after the cell any process still holding it is
killed: whatever a worker spawned and orphaned cannot outlive its cell.

What happened is read from files, never from logs: the agent's summary (how the launch ended, which
ranks failed with which error file), each local rank's status file (started / done / failed with the
cell's own reason and traceback), and the merged record of local rank 0. The logs of the agent and of
every local rank are concatenated into the cell's log in the store.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

import psutil

from hpubench.plan.cell import Cell, PlannedCell
from hpubench.run import oomwatch, proctree
from hpubench.run.cluster import ClusterEnv
from hpubench.run.distributed.causes import (
    log_tail,
    rank_logs,
    read_json,
    root_cause,
    signal_name,
    timeout_reason,
)
from hpubench.run.distributed.spec import (
    AGENT_LOG_FILE,
    AGENT_SUMMARY_FILE,
    RESULT_FILE,
    LaunchSpec,
    rank_status_file,
    rendezvous_id,
)
from hpubench.run.executors.wait import killpg
from hpubench.run.procwait import wait_exit
from hpubench.store.record import STATUS_FAILED, STATUS_SKIPPED, CellResult
from hpubench.store.runmeta import utc_now_iso

TOKEN_ENV = "HPUBENCH_CELL_TOKEN"
AGENT_STOP_GRACE_S = 5.0  # SIGTERM -> SIGKILL for the agent: it needs a moment to stop its workers
# Node 0 gives up waiting for the other nodes this long before the cell's timeout, so the agent reports
# who is missing itself instead of being killed mid-wait.
JOIN_MARGIN_S = 3.0
SINGLE_NODE_ADDR = "127.0.0.1"


@dataclass(frozen=True)
class Slot:
    """Where a multi-process cell sits in this node's run: what it may wait for, and what comes later."""

    cells_before: int  # runnable cells node 0 runs between this node's previous slot and this one
    ahead_ids: tuple[str, ...]  # rendezvous ids of this node's later slots


def schedule(
    planned: Sequence[PlannedCell], repeat: int, cluster: ClusterEnv | None
) -> dict[tuple[int, int], Slot]:
    """Slots of the multi-process cells this node runs, keyed by (position in plan, repeat).

    A node other than 0 runs only the cells that span it, so between two of them node 0 may run many
    single-node cells; each could take up to the timeout, and the join wait allows for that.
    """
    order: list[tuple[int, int, str]] = []
    gaps: list[int] = []
    gap = 0
    for rep in range(repeat):
        for i, pc in enumerate(planned):
            if not pc.runnable:
                continue
            cell = pc.cell
            mine = cluster is None or cluster.takes_part(cell)
            if cell.world_size > 1 and mine:
                order.append((i, rep, rendezvous_id(cell.key, rep)))
                gaps.append(gap)
                gap = 0
            elif not mine:
                gap += 1
    return {
        (i, rep): Slot(gaps[n], tuple(rid for _, _, rid in order[n + 1 :]))
        for n, (i, rep, _) in enumerate(order)
    }


@dataclass(frozen=True)
class DistOutcome:
    result: CellResult
    node0_moved_on: bool = False  # node 0 was already past this cell (this node's record: skipped)


# ---- processes -------------------------------------------------------------------------------------------


def _tree(pid: int) -> list[Any]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def _stop(proc: subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGTERM to the agent (it stops its workers), then SIGKILL to it and to its whole tree."""
    tree = _tree(proc.pid)  # before any signal: an agent killed first would orphan its workers
    killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)
    tree += _tree(proc.pid) if proc.poll() is None else []
    killpg(proc.pid, signal.SIGKILL)
    for p in tree:
        with contextlib.suppress(psutil.Error):
            p.kill()  # psutil checks the process is still the one it saw: no pid-reuse accident
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)
    psutil.wait_procs(tree, timeout=5)


def sweep(token: str) -> list[int]:
    """Kill every process of ours still carrying the cell's token; the pids found (normally none)."""
    return proctree.sweep(token, name=TOKEN_ENV)


# ---- one cell --------------------------------------------------------------------------------------------


def run_distributed_cell(
    cell: Cell,
    *,
    repeat: int,
    cluster: ClusterEnv | None,
    slot: Slot,
    env: Mapping[str, str],
    python: str,
    workload_files: Sequence[str],
    options: dict[str, Any] | None,
    work_dir: Path,
    log: Path,
    timeout_s: float,
    feed: Path | None = None,
) -> DistOutcome:
    """Run ``cell`` (world size > 1) on this node under torch's elastic agent; never raises for the cell.

    ``timeout_s`` bounds the whole cell on node 0, process start-up and rendezvous included. A node
    other than 0 may first wait for node 0 to reach the cell (``slot.cells_before`` cells of up to
    ``timeout_s`` each), then gets the same budget again: node 0 enforces the cell's own timeout.
    """
    started_at = utc_now_iso()
    multi_node = cell.nodes > 1
    if multi_node and cluster is None:
        return _no_cluster(cell, started_at)
    node_rank, addr, port = _endpoint(cluster if multi_node else None)
    work_dir.mkdir(parents=True, exist_ok=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    join_deadline, hard_s = _budget(node_rank, slot, t0, timeout_s)
    spec = LaunchSpec(
        cell=cell.to_dict(),
        cell_key=cell.key,
        rdzv_id=rendezvous_id(cell.key, repeat),
        node_rank=node_rank,
        nnodes=cell.nodes,
        nproc_per_node=cell.devices,
        master_addr=addr,
        master_port=port,
        join_deadline=join_deadline,
        timeout_s=timeout_s,
        work_dir=str(work_dir),
        python=python,
        workload_files=tuple(workload_files),
        options=options,
        ahead_ids=slot.ahead_ids,
        launched_at=t0,
        feed=None if feed is None else str(feed),
    )
    agent = _run_agent(spec, env, hard_s)
    summary = read_json(work_dir / AGENT_SUMMARY_FILE)
    statuses = _rank_statuses(work_dir, node_rank, cell.devices)
    launch_info = _launch_info(spec, addr, port, summary, agent)
    _write_log(log, spec, launch_info, work_dir / AGENT_LOG_FILE, work_dir, agent.timed_out, hard_s)
    return _outcome(
        _Ran(
            cell=cell,
            started_at=started_at,
            work_dir=work_dir,
            hard_s=hard_s,
            agent=agent,
            summary=summary,
            statuses=statuses,
            launch_info=launch_info,
        )
    )


def _no_cluster(cell: Cell, started_at: str) -> DistOutcome:
    """A multi-node cell with no multi-node setup fails at once; the reason names the settings to give."""
    return DistOutcome(
        CellResult(
            cell,
            STATUS_FAILED,
            reason=f"cell spans {cell.nodes} nodes but no multi-node setup was given "
            "(NODE_RANK, MASTER_ADDR, MASTER_PORT or --node-rank/--master-addr/--master-port)",
            started_at=started_at,
        )
    )


def _endpoint(cluster: ClusterEnv | None) -> tuple[int, str, int]:
    """(node rank, node 0's address, port) for a cell: a single-node cell is node 0 on loopback, any port."""
    if cluster:
        return cluster.node_rank, cluster.master_addr, cluster.master_port
    return 0, SINGLE_NODE_ADDR, 0


def _budget(node_rank: int, slot: Slot, t0: float, timeout_s: float) -> tuple[float, float]:
    """(join deadline, hard limit in seconds) for the agent on this node.

    Node 0 owns the cell's timeout and stops waiting for the others just before it; another node may
    first wait for node 0 to get through ``slot.cells_before`` cells, each of up to the timeout.
    """
    if node_rank == 0:
        return t0 + max(1.0, timeout_s - JOIN_MARGIN_S), timeout_s
    return t0 + (slot.cells_before + 1) * timeout_s, (slot.cells_before + 2) * timeout_s


class _AgentRun(NamedTuple):
    """How the agent's process ended, and what the launcher saw around it (its OOM kills, leftovers)."""

    proc: subprocess.Popen[bytes]  # ended (or stopped): its returncode says how the agent itself ended
    timed_out: bool
    wall_s: float
    oom_before: int | None  # the cgroup's OOM kills before the agent started
    leftovers: list[int]  # processes still carrying the cell's token afterwards, killed


def _run_agent(spec: LaunchSpec, env: Mapping[str, str], hard_s: float) -> _AgentRun:
    """Start the agent in its own session, wait up to ``hard_s`` and stop its whole tree past it.

    Every process of the cell carries one token, so whatever outlived the agent is swept afterwards; on
    Ctrl-C (any exception while waiting) the tree is stopped and swept at once before it propagates.
    """
    spec_path = spec.save()
    token = uuid.uuid4().hex
    child_env = {**env, TOKEN_ENV: token}
    timed_out = False
    agent_log = spec.path(AGENT_LOG_FILE)
    oom_before = oomwatch.oom_kills()  # the ranks are the agent's children, in this process's cgroup
    start = time.monotonic()
    with open(agent_log, "wb") as logf:
        proc = subprocess.Popen(
            [spec.python, "-m", "hpubench.run.distributed.agent", str(spec_path)],
            stdin=subprocess.DEVNULL,
            stdout=logf,
            stderr=logf,
            env=child_env,
            start_new_session=True,
        )
    try:
        if not wait_exit(proc, hard_s):
            timed_out = True
            _stop(proc, AGENT_STOP_GRACE_S)
    except BaseException:  # Ctrl-C: nothing of this cell may survive the launcher
        _stop(proc, 0.5)
        sweep(token)
        raise
    wall_s = time.monotonic() - start
    return _AgentRun(proc, timed_out, wall_s, oom_before, sweep(token))


def _rank_statuses(work_dir: Path, node_rank: int, devices: int) -> list[dict[str, Any]]:
    """The status files the ranks of this node left (started / done / failed), in rank order."""
    return [
        s
        for r in range(node_rank * devices, (node_rank + 1) * devices)
        if (s := read_json(work_dir / rank_status_file(r))) is not None
    ]


def _launch_info(
    spec: LaunchSpec,
    addr: str,
    port: int,
    summary: Mapping[str, Any] | None,
    agent: _AgentRun,
) -> dict[str, Any]:
    """How the cell was launched, for its record and its log (the port is the one the agent bound)."""
    launch_info: dict[str, Any] = {
        "launcher": "torch.distributed.launcher.api.elastic_launch (torchrun's agent), max_restarts=0",
        "rendezvous": f"hpubench-cell: TCPStore on node 0 at {addr}:"
        f"{(summary or {}).get('master_port', port)}",
        "rendezvous_id": spec.rdzv_id,
        "node_rank": spec.node_rank,
        "nnodes": spec.nnodes,
        "nproc_per_node": spec.nproc_per_node,
        "agent_wall_s": agent.wall_s,
    }
    if agent.leftovers:
        launch_info["leftover_processes_killed"] = agent.leftovers
    return launch_info


@dataclass(frozen=True)
class _Ran:
    """What one launch left behind once the agent ended: everything the cell's outcome is read from."""

    cell: Cell
    started_at: str
    work_dir: Path
    hard_s: float
    agent: _AgentRun
    summary: dict[str, Any] | None
    statuses: list[dict[str, Any]]
    launch_info: dict[str, Any]

    @property
    def multi_node(self) -> bool:
        return self.cell.nodes > 1

    @property
    def agent_log(self) -> Path:
        return self.work_dir / AGENT_LOG_FILE

    def failed(self, reason: str, tail: str | None = None) -> DistOutcome:
        """The cell failed on this node: the record keeps the launch and every rank's status with it."""
        runtime = {"distributed": {"launch": self.launch_info, "rank_status": self.statuses}}
        return DistOutcome(
            CellResult(
                self.cell,
                STATUS_FAILED,
                reason=reason,
                traceback_tail=tail,
                runtime=runtime,
                started_at=self.started_at,
                wall_s=self.agent.wall_s,
            )
        )


def _outcome(ran: _Ran) -> DistOutcome:
    """The cell's outcome, from the agent's summary first (how the launch ended), then the ranks' files."""
    summary = ran.summary
    if ran.agent.timed_out:
        if summary and summary.get("status") == "rendezvous":
            return ran.failed(str(summary.get("reason")))
        reason = timeout_reason(ran.hard_s, ran.statuses, ran.cell.devices, ran.multi_node)
        return ran.failed(reason, log_tail(ran.agent_log))
    if summary is None:
        code = ran.agent.proc.returncode or 0
        how = f"exited with code {code}" if code >= 0 else f"was killed by {signal_name(-code)}"
        return ran.failed(
            f"the torch.distributed elastic agent {how} without a summary", log_tail(ran.agent_log)
        )
    status = summary.get("status")
    if status == "rendezvous":
        if summary.get("node0_at"):
            return DistOutcome(
                CellResult(
                    ran.cell,
                    STATUS_SKIPPED,
                    reason=str(summary.get("reason")),
                    runtime={"distributed": {"launch": ran.launch_info}},
                    started_at=ran.started_at,
                ),
                node0_moved_on=True,
            )
        return ran.failed(str(summary.get("reason")))
    if status == "failed":
        return ran.failed(*_failure(ran, summary))
    if status != "ok":
        return ran.failed(
            str(summary.get("reason") or f"the elastic agent ended with status {status!r}"),
            summary.get("traceback"),
        )
    return _merged(ran)


def _failure(ran: _Ran, summary: Mapping[str, Any]) -> tuple[str, str | None]:
    """(reason, traceback tail) of a launch the agent reports failed: the root cause, not its echoes.

    A rank that died without a traceback of its own (a crash by signal) gets the end of its stderr.
    """
    failures = summary.get("failures") or []
    memory = oomwatch.evidence(None, ran.agent.oom_before)  # the ranks' own peaks are the agent's to know
    cause = root_cause(ran.statuses, summary.get("failure_notes") or [], failures, ran.multi_node, memory)
    tail = cause.tail
    crashed = next((f for f in failures if f.get("rank") == cause.rank), None)
    if tail is None and crashed is not None:  # no traceback of its own: the end of its stderr
        stderr = rank_logs(ran.work_dir).get(crashed.get("local_rank"), {}).get("stderr")
        tail = log_tail(stderr) if stderr is not None else None
    return cause.reason, tail


def _merged(ran: _Ran) -> DistOutcome:
    """Every rank finished: local rank 0's merged record, with this launch's facts added to it."""
    data = read_json(ran.work_dir / RESULT_FILE)
    if data is None or "result" not in data:
        return ran.failed(
            "every rank finished, but local rank 0 wrote no result (a harness bug)", log_tail(ran.agent_log)
        )
    try:
        result = CellResult.from_dict(data["result"])
    except (KeyError, TypeError, ValueError) as exc:
        return ran.failed(f"local rank 0 wrote an unreadable result ({type(exc).__name__}: {exc})")
    dist = {**(result.runtime.distributed or {}), "launch": ran.launch_info}
    return DistOutcome(replace(result, runtime=result.runtime.with_facts(distributed=dist)))


def _write_log(
    log: Path,
    spec: LaunchSpec,
    launch_info: Mapping[str, Any],
    agent_log: Path,
    work_dir: Path,
    timed_out: bool,
    timeout_s: float,
) -> None:
    """The cell's log in the store: the agent's output, then each local rank's stdout and stderr."""
    parts = [
        f"[hpubench] distributed cell {spec.cell_key}: node {spec.node_rank} of {spec.nnodes}, "
        f"{spec.nproc_per_node} process(es) here, rendezvous {spec.rdzv_id}\n",
        f"[hpubench] launch: {json.dumps(dict(launch_info), default=str)}\n",
    ]
    if timed_out:
        parts.append(f"[hpubench] timed out after {timeout_s:g} s: the agent and its workers were stopped\n")
    parts.append("\n===== elastic agent =====\n")
    with contextlib.suppress(OSError):
        parts.append(agent_log.read_bytes()[-256 * 1024 :].decode(errors="replace"))
    for local_rank, files in sorted(rank_logs(work_dir).items()):
        for stream in ("stdout", "stderr"):
            path = files.get(stream)
            if path is None:
                continue
            with contextlib.suppress(OSError):
                text = path.read_bytes()[-256 * 1024 :].decode(errors="replace")
                if text.strip():
                    parts.append(f"\n===== local rank {local_rank}: {stream} =====\n{text}")
    with contextlib.suppress(OSError):
        log.write_text("".join(parts))
