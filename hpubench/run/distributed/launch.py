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
from hpubench.run.distributed.spec import (
    AGENT_LOG_FILE,
    AGENT_SUMMARY_FILE,
    ELASTIC_LOG_DIR,
    RESULT_FILE,
    LaunchSpec,
    rank_status_file,
    rendezvous_id,
)
from hpubench.run.executors.wait import killpg
from hpubench.run.exitwords import MemoryEvidence, ended_how
from hpubench.run.procwait import wait_exit
from hpubench.store.record import STATUS_FAILED, STATUS_SKIPPED, CellResult
from hpubench.store.runmeta import utc_now_iso

TOKEN_ENV = "HPUBENCH_CELL_TOKEN"
AGENT_STOP_GRACE_S = 5.0  # SIGTERM -> SIGKILL for the agent: it needs a moment to stop its workers
# Node 0 gives up waiting for the other nodes this long before the cell's timeout, so the agent reports
# who is missing itself instead of being killed mid-wait.
JOIN_MARGIN_S = 3.0
TAIL_LINES = 40
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


# ---- reading what came back ------------------------------------------------------------------------------


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _tail(path: Path, lines: int = TAIL_LINES) -> str | None:
    try:
        text = path.read_bytes()[-64 * 1024 :].decode(errors="replace").rstrip("\n")
    except OSError:
        return None
    return "\n".join(text.splitlines()[-lines:]) or None


def _rank_logs(work_dir: Path) -> dict[int, dict[str, Path]]:
    """local rank -> {"stdout": path, "stderr": path} from torch.distributed.elastic's log layout."""
    out: dict[int, dict[str, Path]] = {}
    for path in sorted((work_dir / ELASTIC_LOG_DIR).glob("*/attempt_*/*/std*.log")):
        with contextlib.suppress(ValueError):
            out.setdefault(int(path.parent.name), {})[path.stem] = path
    return out


def _where(rank: int, node_rank: int | None, local_rank: int | None, multi_node: bool) -> str:
    if not multi_node or node_rank is None:
        return f"rank {rank}"
    return f"rank {rank} (node {node_rank}, local rank {local_rank})"


# Failures by signal, least likely to be the cause last: the agent's own stop of the surviving ranks.
_STOP_ORDER = {"SIGKILL": 1, "SIGTERM": 2}


class Cause(NamedTuple):
    rank: int | None
    reason: str
    tail: str | None  # the traceback tail, where the rank or the agent had one


def root_cause(
    statuses: Sequence[Mapping[str, Any]],
    notes: Sequence[Mapping[str, Any]],
    failures: Sequence[Mapping[str, Any]],
    multi_node: bool = False,
    memory: MemoryEvidence | None = None,
) -> Cause:
    """The failure that started it all. Pure. ``memory``: what ``oomwatch.evidence`` knew once the agent
    ended (a rank killed by SIGKILL while the kernel's OOM killer acted is named likely out of memory).

    One rank's error makes the others fail too (their collectives lose a peer) or be stopped by the
    agent, so the earliest reported failure is the cause: a rank's own report (its status file on this
    node, or its note in node 0's store from another node) first, else the elastic agent's view of a
    process that died without reporting (a crash by signal). The other failed ranks are named after it.
    """
    reports: dict[int, dict[str, Any]] = {}
    for s in statuses:
        if s.get("phase") == "failed":
            reports[int(s["rank"])] = dict(s)
    for n in notes:
        reports.setdefault(int(n["rank"]), dict(n))
    failed = set(reports) | {int(f["rank"]) for f in failures}
    if reports:
        rank = min(reports, key=lambda r: (float(reports[r].get("time") or 0.0), r))
        rep = reports[rank]
        where = _where(rank, rep.get("node_rank"), rep.get("local_rank"), multi_node)
        reason = f"{where} failed: {rep.get('reason') or 'no reason given'}"
        tail = rep.get("traceback_tail")
    elif failures:
        # Once one rank has died the agent stops the rest with SIGTERM: a rank's own end (an exit code, a
        # crash by signal) comes first, then a SIGKILL from outside (the kernel's OOM killer, a user).
        f = min(
            failures, key=lambda f: (_STOP_ORDER.get(f.get("signal"), 0), f.get("timestamp") or 0, f["rank"])
        )
        rank = int(f["rank"])
        where = f"rank {rank}"
        sig = signal.Signals.__members__.get(f.get("signal") or "")
        if sig is not None:
            reason = f"{where} died: {ended_how(None, sig, memory)}"
        elif f.get("signal"):  # a name this Python does not know (another node's platform)
            reason = f"{where} died: killed by {f['signal']}"
        else:
            reason = f"{where} exited with code {f.get('exitcode')}: {f.get('message') or 'no error file'}"
        tail = f.get("callstack")
    else:
        return Cause(None, "the elastic agent reported a failure but no rank reported one", None)
    others = sorted(failed - {rank})
    if others:
        reason += f" (then also failed or stopped: rank{'s' if len(others) > 1 else ''} "
        reason += ", ".join(str(r) for r in others) + ")"
    return Cause(rank, reason, tail)


def timeout_reason(
    timeout_s: float, statuses: Sequence[Mapping[str, Any]], nproc: int, multi_node: bool
) -> str:
    """Why a cell that hit its timeout did not finish, from the ranks' status files on this node. Pure."""
    started = {int(s["rank"]) for s in statuses}
    done = {int(s["rank"]) for s in statuses if s.get("phase") == "done"}
    head = f"timed out after {timeout_s:g} s"
    if not started:
        if multi_node:
            return f"{head} waiting for the other nodes to join; no rank started on this node"
        return f"{head} before any of the {nproc} ranks started (process start-up or rendezvous hung)"
    running = sorted(started - done)
    if not running:
        return f"{head}: every rank on this node finished, but the agent did not (waiting for other nodes)"
    names = ", ".join(str(r) for r in running)
    if done:
        return (
            f"{head}: rank{'s' if len(running) > 1 else ''} {names} never finished while "
            f"rank{'s' if len(done) > 1 else ''} {', '.join(str(r) for r in sorted(done))} did"
        )
    return (
        f"{head}: rank{'s' if len(running) > 1 else ''} {names} still running "
        "(a hung collective, or the cell needs more than --timeout)"
    )


def _signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


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
        return DistOutcome(
            CellResult(
                cell,
                STATUS_FAILED,
                reason=f"cell spans {cell.nodes} nodes but no multi-node setup was given "
                "(NODE_RANK, MASTER_ADDR, MASTER_PORT or --node-rank/--master-addr/--master-port)",
                started_at=started_at,
            )
        )
    node_rank = cluster.node_rank if (multi_node and cluster) else 0
    addr = cluster.master_addr if (multi_node and cluster) else SINGLE_NODE_ADDR
    port = cluster.master_port if (multi_node and cluster) else 0
    work_dir.mkdir(parents=True, exist_ok=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    if node_rank == 0:
        join_deadline = t0 + max(1.0, timeout_s - JOIN_MARGIN_S)
        hard_s = timeout_s
    else:
        join_deadline = t0 + (slot.cells_before + 1) * timeout_s
        hard_s = (slot.cells_before + 2) * timeout_s
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
    spec_path = spec.save()
    token = uuid.uuid4().hex
    child_env = {**env, TOKEN_ENV: token}
    timed_out = False
    agent_log = work_dir / AGENT_LOG_FILE
    oom_before = oomwatch.oom_kills()  # the ranks are the agent's children, in this process's cgroup
    start = time.monotonic()
    with open(agent_log, "wb") as logf:
        proc = subprocess.Popen(
            [python, "-m", "hpubench.run.distributed.agent", str(spec_path)],
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
    leftovers = sweep(token)

    summary = _read_json(work_dir / AGENT_SUMMARY_FILE)
    statuses = [
        s
        for r in range(node_rank * cell.devices, (node_rank + 1) * cell.devices)
        if (s := _read_json(work_dir / rank_status_file(r))) is not None
    ]
    launch_info: dict[str, Any] = {
        "launcher": "torch.distributed.launcher.api.elastic_launch (torchrun's agent), max_restarts=0",
        "rendezvous": f"hpubench-cell: TCPStore on node 0 at {addr}:"
        f"{(summary or {}).get('master_port', port)}",
        "rendezvous_id": spec.rdzv_id,
        "node_rank": node_rank,
        "nnodes": cell.nodes,
        "nproc_per_node": cell.devices,
        "agent_wall_s": wall_s,
    }
    if leftovers:
        launch_info["leftover_processes_killed"] = leftovers
    _write_log(log, spec, launch_info, agent_log, work_dir, timed_out, hard_s)

    def failed(reason: str, tail: str | None = None) -> DistOutcome:
        runtime = {"distributed": {"launch": launch_info, "rank_status": statuses}}
        return DistOutcome(
            CellResult(
                cell,
                STATUS_FAILED,
                reason=reason,
                traceback_tail=tail,
                runtime=runtime,
                started_at=started_at,
                wall_s=wall_s,
            )
        )

    if timed_out:
        if summary and summary.get("status") == "rendezvous":
            return failed(str(summary.get("reason")))
        return failed(timeout_reason(hard_s, statuses, cell.devices, multi_node), _tail(agent_log))
    if summary is None:
        code = proc.returncode or 0
        how = f"exited with code {code}" if code >= 0 else f"was killed by {_signal_name(-code)}"
        return failed(f"the torch.distributed elastic agent {how} without a summary", _tail(agent_log))
    status = summary.get("status")
    if status == "rendezvous":
        if summary.get("node0_at"):
            return DistOutcome(
                CellResult(
                    cell,
                    STATUS_SKIPPED,
                    reason=str(summary.get("reason")),
                    runtime={"distributed": {"launch": launch_info}},
                    started_at=started_at,
                ),
                node0_moved_on=True,
            )
        return failed(str(summary.get("reason")))
    if status == "failed":
        failures = summary.get("failures") or []
        memory = oomwatch.evidence(None, oom_before)  # the ranks' own peaks are the agent's to know
        cause = root_cause(statuses, summary.get("failure_notes") or [], failures, multi_node, memory)
        tail = cause.tail
        crashed = next((f for f in failures if f.get("rank") == cause.rank), None)
        if tail is None and crashed is not None:  # no traceback of its own: the end of its stderr
            stderr = _rank_logs(work_dir).get(crashed.get("local_rank"), {}).get("stderr")
            tail = _tail(stderr) if stderr is not None else None
        return failed(cause.reason, tail)
    if status != "ok":
        return failed(
            str(summary.get("reason") or f"the elastic agent ended with status {status!r}"),
            summary.get("traceback"),
        )
    data = _read_json(work_dir / RESULT_FILE)
    if data is None or "result" not in data:
        return failed(
            "every rank finished, but local rank 0 wrote no result (a harness bug)", _tail(agent_log)
        )
    try:
        result = CellResult.from_dict(data["result"])
    except (KeyError, TypeError, ValueError) as exc:
        return failed(f"local rank 0 wrote an unreadable result ({type(exc).__name__}: {exc})")
    dist = {**(result.runtime.distributed or {}), "launch": launch_info}
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
    for local_rank, files in sorted(_rank_logs(work_dir).items()):
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
