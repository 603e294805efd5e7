"""``python -m hpubench.run.distributed.agent SPEC``: torch's elastic agent for one distributed cell on this
node.

Runs ``torch.distributed.launcher.api.elastic_launch`` (what torchrun runs) with one worker process per
device, no restarts (a benchmark cell that fails must be reported, not retried into a different
measurement), and the rendezvous of ``hpubench.run.distributed.rendezvous``. The agent owns the workers: it
starts them, watches them, and stops them all as soon as one fails. How it ended goes to the work directory as
one JSON summary, so the launcher never parses logs to learn what happened.

This process is started in its own session by the launcher, which kills the whole tree on the cell's
timeout; if the launcher itself dies, the kernel sends this process SIGTERM (the agent then stops its
workers), and the workers get SIGKILL when this process dies (see ``die_with_parent``).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
import traceback
from typing import Any

from hpubench.run.distributed.spec import AGENT_SUMMARY_FILE, ELASTIC_LOG_DIR, LaunchSpec
from hpubench.store.rundir import write_json_atomic

# Seconds the agent gives its workers between SIGTERM and SIGKILL when it stops them.
WORKER_STOP_GRACE_S = 2
_PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int) -> None:
    """Ask Linux to send ``sig`` to this process when its parent dies: no orphan outlives its launcher.

    A no-op where prctl is unavailable; the launcher's sweep of the cell's processes still applies there.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before prctl took effect
        os.kill(os.getpid(), sig)


def _one_line(text: object, limit: int = 500) -> str:
    return " ".join(str(text).split())[:limit]


def _failure(rank: int, f: Any) -> dict[str, Any]:
    """A ``ProcessFailure`` as plain data, with the @record error file's message and stack if written."""
    message = f.message
    callstack = None
    if isinstance(message, dict):
        callstack = (message.get("extraInfo") or {}).get("py_callstack")
        message = message.get("message", "")
    signal_name = None
    if f.exitcode is not None and f.exitcode < 0:
        with contextlib.suppress(ValueError):
            signal_name = signal.Signals(-f.exitcode).name
    return {
        "rank": rank,
        "local_rank": f.local_rank,
        "pid": f.pid,
        "exitcode": f.exitcode,
        "signal": signal_name,
        "message": _one_line(message),
        "callstack": callstack,
        "timestamp": f.timestamp,
    }


def run(spec: LaunchSpec, spec_path: str) -> dict[str, Any]:
    # Each rank's worker imports this module (die_with_parent) before it may import torch (its device
    # variables come first), so torch is imported only here. deferred: see above
    from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs, Std
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError  # deferred: as above
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch  # deferred: as above

    from hpubench.run.distributed import rendezvous  # deferred: imports torch.distributed (see above)

    rendezvous.register()
    config = LaunchConfig(
        min_nodes=spec.nnodes,
        max_nodes=spec.nnodes,
        nproc_per_node=spec.nproc_per_node,
        run_id=spec.rdzv_id,
        role="hpubench",
        rdzv_backend=rendezvous.BACKEND,
        rdzv_endpoint=f"{spec.master_addr}:{spec.master_port}",
        rdzv_configs={
            "node_rank": spec.node_rank,
            "deadline": spec.join_deadline,
            "timeout_s": spec.timeout_s,
            "cell_key": spec.cell_key,
            "world_size": spec.world_size,
            "ahead_ids": list(spec.ahead_ids),
            "launched_at": spec.launched_at,
        },
        max_restarts=0,
        monitor_interval=0.1,
        start_method="spawn",
        logs_specs=DefaultLogsSpecs(log_dir=str(spec.path(ELASTIC_LOG_DIR)), redirects=Std.ALL),
        shutdown_timeout=WORKER_STOP_GRACE_S,
    )
    t0 = time.time()
    summary: dict[str, Any]
    try:
        elastic_launch(config, entrypoint=spec.python)("-m", "hpubench.run.distributed.worker", spec_path)
        summary = {"status": "ok"}
    except ChildFailedError as exc:
        summary = {
            "status": "failed",
            "failures": [_failure(rank, f) for rank, f in sorted(exc.failures.items())],
        }
    except rendezvous.RendezvousFailed as exc:
        summary = {"status": "rendezvous", "reason": str(exc), "node0_at": exc.node0_at}
    except Exception as exc:
        traceback.print_exc()
        summary = {
            "status": "error",
            "reason": "the torch.distributed elastic agent failed: "
            + _one_line(f"{type(exc).__name__}: {exc}"),
            "traceback": traceback.format_exc()[-4000:],
        }
    summary["agent_wall_s"] = time.time() - t0
    handler = rendezvous.last_handler()
    if handler is not None:
        summary["master_port"] = handler.master_port
        summary["failure_notes"] = handler.failure_notes()
    return summary


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    die_with_parent(signal.SIGTERM)
    spec_path = args[0]
    spec = LaunchSpec.load(spec_path)
    summary = run(spec, spec_path)
    write_json_atomic(spec.path(AGENT_SUMMARY_FILE), summary, indent=None)
    return 0


if __name__ == "__main__":
    code = main()
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    # Skip interpreter teardown: the store and device frameworks have been seen to hang or crash there.
    os._exit(code)
