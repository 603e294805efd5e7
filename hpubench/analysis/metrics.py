"""From measured step times to the figures a report shows. Pure: no torch, no I/O.

Kept apart from the worker so the arithmetic behind every published number (global throughput, the
interval, achieved TFLOP/s, MFU) is unit-tested directly rather than only through a training run.
"""

from __future__ import annotations

from collections.abc import Sequence

from hpubench.analysis.peaks import PeakFigure, mfu
from hpubench.analysis.stats import summary as stats
from hpubench.store.record import Metrics


def build_metrics(
    *,
    warmup_s: Sequence[float],
    measured_s: Sequence[float],
    loss_first: float,
    loss_last: float,
    samples_per_step: int,
    tokens_per_step: int | None,
    flops_per_step: int | None,
    world_size: int,
    peak: PeakFigure | None,
    samples_each: Sequence[int] | None = None,
) -> Metrics:
    """``samples_per_step``, ``tokens_per_step`` and ``flops_per_step`` are global (all ranks together).

    ``samples_each``: each measured step's own sample count, where steps differ (a trainer's short last
    batch, variable batches): the figures are then total samples over total time (tokens in proportion),
    and ``samples_per_step`` is their mean, rounded, for display; ``tokens_per_step`` is a mean step's."""
    desc = stats.describe(measured_s)
    each = [float(n) for n in samples_each] if samples_each and len(set(samples_each)) > 1 else None
    if each is not None:
        samples_per_step = round(sum(each) / len(each))
    sps = stats.throughput(measured_s, each if each is not None else samples_per_step)
    tps = stats.throughput(measured_s, _scaled(tokens_per_step, each)) if tokens_per_step else None
    achieved = flops_per_step * len(measured_s) / sum(measured_s) / 1e12 if flops_per_step else None
    return Metrics(
        measured_steps=len(measured_s),
        warmup_steps=len(warmup_s),
        samples_per_step=samples_per_step,
        tokens_per_step=tokens_per_step,
        samples_per_s=sps.value,
        samples_per_s_ci=(sps.lo, sps.hi),
        tokens_per_s=tps.value if tps else None,
        tokens_per_s_ci=(tps.lo, tps.hi) if tps else None,
        confidence=sps.confidence,
        step_time_mean_s=desc.mean,
        step_time_std_s=desc.std,
        step_time_p50_s=desc.p50,
        step_time_p90_s=desc.p90,
        step_time_p99_s=desc.p99,
        first_step_s=warmup_s[0],
        warmup_total_s=sum(warmup_s),
        loss_first=loss_first,
        loss_last=loss_last,
        flops_per_step=flops_per_step,
        achieved_tflops=achieved,
        peak_tflops=peak.tflops if peak else None,
        peak_source=peak.source if peak else None,
        mfu=mfu(achieved, peak, world_size) if (peak and achieved) else None,
    )


def _scaled(per_mean_step: float, each: Sequence[float] | None) -> float | list[float]:
    """A mean step's figure, or each step's share of it in proportion to its samples."""
    if each is None:
        return per_mean_step
    mean = sum(each) / len(each)
    return [per_mean_step * n / mean for n in each]
