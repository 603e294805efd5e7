"""What the launcher tells the agent and the workers of one distributed cell, as one JSON file. Pure.

The same file is read by the agent (how to launch and rendezvous) and by every worker (which cell, which
workload files, where to report), so all processes of a cell agree on it by construction.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

# Files in a cell's work directory.
SPEC_FILE = "spec.json"
AGENT_SUMMARY_FILE = "agent.json"  # written by the agent: how the launch ended
RESULT_FILE = "result.json"  # the merged record, written by local rank 0
AGENT_LOG_FILE = "agent.log"
ELASTIC_LOG_DIR = "elastic"  # torch.distributed.elastic's per-rank stdout/stderr/error files


def rank_status_file(rank: int) -> str:
    return f"rank-{rank}.json"


def rendezvous_id(key: str, repeat: int) -> str:
    """Identical on every node for the same cell and repetition, different for anything else.

    Nodes tell cells apart by it: a node that reaches node 0 while node 0 still serves an earlier cell (or
    has moved on past one it skipped) sees a different id and does not join the wrong group.
    """
    return "hpubench-" + hashlib.sha1(f"{key}#{repeat}".encode()).hexdigest()[:16]


@dataclass(frozen=True)
class LaunchSpec:
    cell: dict[str, Any]
    cell_key: str
    rdzv_id: str
    node_rank: int
    nnodes: int
    nproc_per_node: int
    master_addr: str
    master_port: int  # 0 on a single node: node 0's store picks a free port, no race
    join_deadline: float  # epoch seconds: stop waiting for the other nodes then
    timeout_s: float  # the cell's timeout, for messages and the process-group timeout
    work_dir: str
    python: str
    workload_files: tuple[str, ...] = ()
    options: dict[str, Any] | None = None
    ahead_ids: tuple[str, ...] = field(default=())  # rendezvous ids this node runs later, in order
    launched_at: float = 0.0  # epoch seconds when the launcher started the agent (for messages)
    feed: str | None = None  # where rank 0 streams its step times (hpubench.run.stepfeed); None: nowhere

    @property
    def world_size(self) -> int:
        return self.nnodes * self.nproc_per_node

    def path(self, name: str) -> Path:
        return Path(self.work_dir) / name

    def save(self) -> Path:
        path = self.path(SPEC_FILE)
        path.write_text(json.dumps(asdict(self)))
        return path

    @classmethod
    def load(cls, path: str | Path) -> LaunchSpec:
        data = json.loads(Path(path).read_text())
        known = {f.name for f in fields(cls)}
        d = {k: v for k, v in data.items() if k in known}
        d["workload_files"] = tuple(d.get("workload_files") or ())
        d["ahead_ids"] = tuple(d.get("ahead_ids") or ())
        return cls(**d)
