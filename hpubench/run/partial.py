"""A partial record: what a cell stopped by its timeout or a crash still measured. Pure: no torch, no I/O.

A cell that dies at measured step 140 of 200 has 140 honest step times. Throwing them away makes a long
cell all or nothing; keeping them silently as a normal record would let a truncated run pass for a whole
one. So the record stays ``failed`` with its reason, and carries the finished steps, figures computed
from them exactly as a whole cell's are (:func:`hpubench.analysis.metrics.build_metrics`), and
``runtime["partial"] = {"steps_done", "reason", ...}``, which the quality verdict reads.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hpubench.analysis.metrics import build_metrics
from hpubench.analysis.quality import with_quality
from hpubench.run.stepfeed import FeedHeader, FeedState
from hpubench.store.record import STATUS_FAILED, CellResult, Metrics

MIN_STEPS_FOR_METRICS = (
    2  # one step has no spread, and the statistics refuse it (hpubench.analysis.stats.summary)
)


def why_no_metrics(feed: FeedState) -> str | None:
    """Why the steps of ``feed`` cannot make figures; None when they can."""
    if len(feed.measured_s) < MIN_STEPS_FOR_METRICS:
        return f"fewer than {MIN_STEPS_FOR_METRICS} measured steps"
    if not feed.finite:
        return "a loss was not a finite number"  # the figures would describe a broken run
    if not feed.warmup_s or feed.loss_first is None or feed.loss_last is None:
        return "the warm-up steps or the losses did not reach the parent"
    return None


def partial_metrics(header: FeedHeader, feed: FeedState) -> Metrics | None:
    """Figures from the steps a feed holds, as a whole cell's are built; None where :func:`why_no_metrics`
    says they cannot be."""
    if why_no_metrics(feed) is not None:
        return None
    assert feed.loss_first is not None and feed.loss_last is not None
    return build_metrics(
        warmup_s=feed.warmup_s,
        measured_s=feed.measured_s,
        loss_first=feed.loss_first,
        loss_last=feed.loss_last,
        samples_per_step=header.samples_per_step,
        tokens_per_step=header.tokens_per_step,
        flops_per_step=header.flops_per_step,
        world_size=header.world_size,
        peak=header.peak,
    )


def with_partial(result: CellResult, feed: FeedState) -> CellResult:
    """``result`` with the steps ``feed`` holds, when it is a failure that kept none of its own.

    Anything else comes back unchanged: an ok or skipped record, a failure that already has figures, a
    failure before the first measured step. The failure's reason stays the record's reason; the runtime
    facts the child reported at warm-up fill in what the failure could not (device name, batch size),
    and the failure's own facts win where both have one.
    """
    header = feed.header
    if result.status != STATUS_FAILED or result.metrics is not None or header is None:
        return result
    if not feed.measured_s:
        return result
    metrics = partial_metrics(header, feed)
    partial = partial_facts(result, header, feed, metrics)
    return with_quality(
        replace(
            result,
            metrics=metrics,
            step_times_s=feed.measured_s,
            warmup_times_s=feed.warmup_s,
            runtime={**header.runtime, **result.runtime, "partial": partial},
        )
    )


def partial_facts(
    result: CellResult, header: FeedHeader, feed: FeedState, metrics: Metrics | None
) -> dict[str, Any]:
    """The record's ``runtime["partial"]``, which the quality verdict reads: how many steps were done of
    how many planned, why the cell stopped, whose steps they are, and why there are no figures if none."""
    return {
        "steps_done": len(feed.measured_s),
        "reason": result.reason or "stopped before its last step",
        "steps_planned": header.steps,
        **({"steps_from": header.source} if header.source != "this process" else {}),
        **({"no_metrics": why_no_metrics(feed)} if metrics is None else {}),
    }
