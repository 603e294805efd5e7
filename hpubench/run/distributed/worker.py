"""``python -m hpubench.run.distributed.worker SPEC``: one rank of a distributed cell, started by the elastic
agent.

It runs the very same ``hpubench.run.worker.run_cell`` as a single-device cell; the rank variables the agent
set (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, ...) make it pick the DDP strategy. Before importing
torch it sets the accelerator's per-rank variables (on HPU: HLS_MODULE_ID / HABANA_VISIBLE_MODULES, which
the bridge reads at import).

Reporting: local rank 0 writes the merged record (every rank holds it after the gather); each rank keeps
a small status file (started / done / failed with reason and traceback) for the launcher's messages; a
failing rank also leaves a note in node 0's store, then exits non-zero through torch's ``@record`` so
the agent's error file names the failure too, and the agent stops the other ranks at once.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
import socket
import sys
import time
import traceback
from dataclasses import replace
from typing import Any

from hpubench import accelerators
from hpubench.accelerators import release_all
from hpubench.plan.cell import Cell
from hpubench.plan.runoptions import RunOptions
from hpubench.run.distributed.agent import die_with_parent
from hpubench.run.distributed.spec import RESULT_FILE, LaunchSpec, rank_status_file
from hpubench.run.forkserver import child as zygotechild
from hpubench.store.record import STATUS_FAILED
from hpubench.store.rundir import write_json_atomic
from hpubench.strategy import pgtimeout


class RankFailed(RuntimeError):
    """This rank's cell failed; the message is its one-line reason."""


def _status(spec: LaunchSpec, rank: int, phase: str, **extra: Any) -> None:
    data = {
        "rank": rank,
        "local_rank": int(os.environ.get("LOCAL_RANK", "0")),
        "node_rank": spec.node_rank,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "phase": phase,
        "time": time.time(),
        **extra,
    }
    with contextlib.suppress(OSError):
        write_json_atomic(spec.path(rank_status_file(rank)), data, indent=None)


def _options(spec: LaunchSpec, rank: int) -> Any:
    if not spec.options:
        return None
    options = RunOptions.from_dict(spec.options)
    if rank > 0 and options.profile is not None and options.trace_relpath:
        # Every rank runs the profiled steps (they contain collectives); each keeps its own trace.
        stem = options.trace_relpath.removesuffix(".json")
        options = replace(options, trace_relpath=f"{stem}.rank{rank}.json")
    return options


def _record_main(spec: LaunchSpec) -> int:
    cell = Cell.from_dict(spec.cell)
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ["LOCAL_RANK"])
    print(
        f"[hpubench] rank {rank} of {os.environ.get('WORLD_SIZE')} (node {spec.node_rank}, local rank "
        f"{local_rank}, pid {os.getpid()}) on {socket.gethostname()}: {spec.cell_key}",
        flush=True,
    )
    _status(spec, rank, "started")

    zygotechild.prepare(list(spec.workload_files))
    # deferred: imports torch, which must come after main() set this rank's device variables
    from hpubench.run.worker import run_cell

    # Rank 0's steps only (run_cell checks the rank): one feed, and rank 0 runs on node 0, the node
    # whose launcher keeps a partial record. Merging every rank's steps live would need the ranks'
    # gather, which a rank that died or hung never joins.
    result = run_cell(cell, options=_options(spec, rank), progress_path=spec.feed)
    if result.status != STATUS_FAILED:
        from hpubench.strategy.runtime import DDP  # deferred: imports torch (see run_cell above)

        DDP.destroy()  # every rank passed the teardown barrier; the model is gone with run_cell's frame
    if result.status == STATUS_FAILED:
        note = {
            "rank": rank,
            "node_rank": spec.node_rank,
            "host": socket.gethostname(),
            "reason": result.reason,
            "time": time.time(),
        }
        _status(spec, rank, "failed", reason=result.reason, traceback_tail=result.traceback_tail)
        from hpubench.run.distributed.rendezvous import note_failure  # deferred: imports torch.distributed

        note_failure(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), rank, note)
        raise RankFailed(f"rank {rank}: {result.reason}")
    if local_rank == 0:
        write_json_atomic(spec.path(RESULT_FILE), {"result": result.to_dict()}, indent=None, durable=False)
    _status(spec, rank, "done", status=result.status)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    spec = LaunchSpec.load(args[0])
    cell = Cell.from_dict(spec.cell)
    # Before torch: the device framework reads its module selection when it is first imported.
    local_rank = int(os.environ["LOCAL_RANK"])
    os.environ.update(accelerators.get(cell.accelerator).rank_env(cell, local_rank, os.environ))
    os.environ.setdefault(pgtimeout.ENV_VAR, str(spec.timeout_s))
    # deferred: torch only now, with this rank's device variables set
    from torch.distributed.elastic.multiprocessing.errors import record

    return record(_record_main)(spec)


if __name__ == "__main__":
    # The agent is our parent: if it dies (killed on a timeout), so do we, instead of holding a device.
    die_with_parent(signal.SIGKILL)
    # The agent stops ranks with SIGTERM (a timeout, or another rank failed): leave where this one was.
    faulthandler.enable(file=sys.stderr, all_threads=True)
    faulthandler.register(signal.SIGTERM, file=sys.stderr, all_threads=True, chain=True)
    code = 1
    try:
        code = main()
    except BaseException:
        traceback.print_exc()
    finally:
        # After the status and the result: a device that will not let go costs the exit, not the record.
        with contextlib.suppress(Exception):
            for line in release_all():
                print(f"[hpubench] {line}", file=sys.stderr)
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
