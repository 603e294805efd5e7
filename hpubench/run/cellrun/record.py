"""The worker's third step: the cell's record, from what resolution and measurement returned.

The runtime facts each step learned are merged here, once (``hpubench.run.cellrun.facts.runtime_of``), and
the quality verdict is judged here, where every fact it reads is known. A cell that stopped part way gets
its failed or skipped record here too, with the facts learned before it stopped.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Mapping
from typing import Any

from hpubench import accelerators
from hpubench.analysis import numerics
from hpubench.analysis.metrics import build_metrics
from hpubench.analysis.quality import with_quality
from hpubench.errors import CellSkipped
from hpubench.measure.steps import NonFiniteLoss
from hpubench.plan.cell import Cell
from hpubench.run.cellrun.facts import Facts, Learned, runtime_of
from hpubench.run.cellrun.measure import Measured
from hpubench.run.cellrun.resolve import Resolved, Start
from hpubench.store.record import STATUS_FAILED, STATUS_OK, STATUS_SKIPPED, CellResult

TRACEBACK_LINES = 40


def record(cell: Cell, resolved: Resolved, measured: Measured) -> CellResult:
    """The ok record: figures from the measured steps, the runtime facts of both earlier steps merged, the
    observers' fields, and the quality verdict on the figure.

    The strategy is torn down here, once the figures are built (every rank passes its teardown barrier).
    A failure leaves as :class:`~hpubench.run.cellrun.facts.Stopped` with every fact known.
    """
    facts = (*resolved.facts, *measured.facts)
    with Learned(facts).keeping():
        times, volume = measured.times, measured.volume
        metrics = build_metrics(
            warmup_s=times.warmup_s,
            measured_s=times.measured_s,
            loss_first=times.loss_first,
            loss_last=times.loss_last,
            samples_per_step=volume.samples,
            tokens_per_step=volume.tokens,
            flops_per_step=volume.flops,
            world_size=resolved.strategy.world_size,
            peak=volume.peak,
        )
        resolved.strategy.teardown()
        runtime = runtime_of(facts)
        verdict, reasons = numerics.judge_facts(
            runtime.get("numerics"), cell.precision, cell.mode, cell.graphs
        )
        # The verdict on the figure (hpubench.analysis.quality) is judged here, where every fact it reads is
        # known.
        return with_quality(
            CellResult(
                cell,
                STATUS_OK,
                metrics=metrics,
                memory=measured.memory,
                runtime=runtime,
                step_times_s=times.measured_s,
                warmup_times_s=times.warmup_s,
                started_at=resolved.start.started_at,
                wall_s=time.perf_counter() - resolved.start.t0,
                numerics=verdict,
                numerics_reasons=reasons,
                **measured.observed,
            )
        )


def record_stopped(cell: Cell, cause: Exception, facts: Facts, start: Start) -> CellResult:
    """The record of a cell that stopped part way: skipped with the skip's reason, or failed with the
    device's own reading of the failure and the traceback's tail, and the runtime facts learned before it
    stopped (a failed record still says which device and batch size it ran with)."""
    runtime = runtime_of(facts)
    if isinstance(cause, CellSkipped):
        return CellResult(
            cell,
            STATUS_SKIPPED,
            reason=str(cause),
            runtime=runtime,
            started_at=start.started_at,
            wall_s=time.perf_counter() - start.t0,
        )
    tail = "".join(traceback.format_exception(cause)).splitlines()[-TRACEBACK_LINES:]
    return CellResult(
        cell,
        STATUS_FAILED,
        reason=failure_reason(cell, cause),
        traceback_tail="\n".join(tail),
        runtime=runtime,
        **failed_numerics(cell, cause, runtime.get("numerics")),
        started_at=start.started_at,
        wall_s=time.perf_counter() - start.t0,
    )


def failed_numerics(cell: Cell, cause: Exception, facts: Mapping[str, Any] | None) -> dict[str, Any]:
    """The numerics of a failed cell: ``diverged`` where its loss left the finite range (the failure's own
    words as the reason), else ``unchecked``, since no complete trajectory exists to judge."""
    if isinstance(cause, NonFiniteLoss):
        return {"numerics": numerics.DIVERGED, "numerics_reasons": (one_line(cause),)}
    verdict, reasons = numerics.judge_facts(facts, cell.precision, cell.mode, cell.graphs)
    if verdict == numerics.DIVERGED:
        return {"numerics": verdict, "numerics_reasons": reasons}
    why = "the cell failed before its steps could be compared with the reference"
    return {"numerics": numerics.UNCHECKED, "numerics_reasons": (why,)}


def failure_reason(cell: Cell, exc: BaseException) -> str:
    """The device's own reading of the failure (an out-of-memory error that does not say so), else the
    exception's text on one line."""
    try:
        own = accelerators.get(cell.accelerator).failure_reason(exc)
    except Exception:  # an unknown accelerator name: its failure is already the reason
        own = None
    return own or one_line(exc)


def one_line(exc: BaseException) -> str:
    """The exception as one line of at most 500 characters: a record's reason is one line."""
    text = f"{type(exc).__name__}: {exc}".strip()
    return " ".join(text.split())[:500]
