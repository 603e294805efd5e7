"""Runs one cell in the current process and returns its record. Never raises for a cell's own problems.

The launcher calls this in an isolated child whose environment already holds what must be set before
device frameworks are imported. Everything here goes through the core's interfaces (accelerator,
strategy, precision, mode) so the same code serves CPU, CUDA and HPU, one device or many.

A cell runs in three named steps (``hpubench.run.cellrun``): resolve its strings into the objects that
train it, measure its steps, record the result. Each returns the runtime facts it learned; the record
merges them once.

This module imports torch and the workloads at import: the processes that run cells import it only once
their pre-import environment is in force (``hpubench.run.forkserver.child``,
``hpubench.run.distributed.worker``).
"""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Mapping

from hpubench.plan.cell import Cell
from hpubench.plan.runoptions import RunOptions
from hpubench.run.cellrun.facts import Stopped
from hpubench.run.cellrun.measure import measure
from hpubench.run.cellrun.record import TRACEBACK_LINES, record, record_stopped
from hpubench.run.cellrun.resolve import N_BATCHES, SEED, Start, resolve
from hpubench.store.record import CellResult

# N_BATCHES and SEED are read here by benchmarks/bareloop.py, which must draw what the worker draws.
__all__ = ["N_BATCHES", "SEED", "TRACEBACK_LINES", "run_cell"]


def _utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


def run_cell(
    cell: Cell,
    dispatched_at: float | None = None,
    options: RunOptions | None = None,
    flops_hints: Mapping[str, int] | None = None,
    progress_path: str | None = None,
) -> CellResult:
    """Run ``cell``; ``dispatched_at`` (time.time() when the launcher sent it) measures fixed cost.

    ``options`` say what to record beside the figures (profile, telemetry, memory timeline, loader
    pass); they never change the cell or its plain figures. ``flops_hints`` are FLOP counts earlier cells
    of the same run made, by :func:`hpubench.plan.cell.flops_key`: counting on meta is most of a small cell's
    fixed cost, and the count depends only on the workload, its size and the batch.
    ``progress_path``: where rank 0 streams its step times as they complete (``hpubench.run.stepfeed``).
    """
    start = Start(_utc_now(), time.perf_counter(), dispatched_at)
    try:
        resolved = resolve(cell, start, options or RunOptions(), flops_hints or {})
        measured = measure(resolved, progress_path)
        return record(cell, resolved, measured)
    except Stopped as stop:  # a skip or a failure, with the facts learned before it
        return record_stopped(cell, stop.cause, stop.facts, start)
    except Exception as exc:  # outside the three steps: nothing was learned yet
        return record_stopped(cell, exc, (), start)
