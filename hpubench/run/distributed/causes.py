"""Why a distributed cell ended as it did, read from the files its processes left: the agent's summary,
each rank's status file and log. The root cause is the earliest failure that explains the rest (a rank that
crashed, not the ranks the agent then stopped), a timeout names the phase it hit. Pure reading: no process
is started or stopped here (``hpubench.run.distributed.launch`` does that).
"""

from __future__ import annotations

import contextlib
import json
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from hpubench.run.distributed.spec import ELASTIC_LOG_DIR
from hpubench.run.exitwords import MemoryEvidence, ended_how

TAIL_LINES = 40


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def log_tail(path: Path, lines: int = TAIL_LINES) -> str | None:
    try:
        text = path.read_bytes()[-64 * 1024 :].decode(errors="replace").rstrip("\n")
    except OSError:
        return None
    return "\n".join(text.splitlines()[-lines:]) or None


def rank_logs(work_dir: Path) -> dict[int, dict[str, Path]]:
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


def signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"
