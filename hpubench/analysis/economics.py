"""Price/performance of one measured cell: throughput per device and per dollar, cost of a workload, MFU.

Separate from the tables (:mod:`hpubench.analysis.prices`): this turns one record and the tables in force
into the figures a buyer compares. Pure: no torch, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from hpubench.analysis.peaks import PeakFigure, mfu, share_in_tf32
from hpubench.analysis.prices import PriceEntry, Tables
from hpubench.analysis.stats.summary import Estimate
from hpubench.store.record import CellResult


@dataclass(frozen=True)
class CellEconomics:
    """Throughput turned into what a buyer compares: per device, per dollar, per workload of N samples.

    Every dollar figure is None where the device has no price; MFU is None where it has no peak for the
    precision used. Intervals are the throughput interval carried through (cost is inversely
    proportional to throughput, prices being fixed), so they stay bootstrap intervals over step times.
    """

    world_size: int
    samples_per_s: float
    samples_per_s_ci: tuple[float, float]
    samples_per_s_per_device: float
    tokens_per_s: float | None
    price: PriceEntry | None
    usd_per_hour: float | None  # all devices of the cell together
    usd_per_million_samples: float | None
    usd_per_million_samples_ci: tuple[float, float] | None
    usd_per_million_tokens: float | None
    samples_per_usd: float | None
    workload_samples: int | None
    workload_time_s: float | None
    workload_cost_usd: float | None
    peak: PeakFigure | None
    achieved_tflops: float | None
    mfu: float | None


def tf32_share(result: CellResult) -> float:
    """The share of a cell's FLOPs that ran in TF32: all of them where its matmuls did (CUDA's
    ``allow_tf32_matmul``), else its convolutions where cuDNN's own switch was on and the worker counted
    them (``runtime.flops_conv_share``), else none."""
    flags = result.runtime.env_flags
    if not isinstance(flags, dict):
        return 0.0
    share = result.runtime.flops_conv_share
    counted = str(flags.get("allow_tf32_cudnn")) == "True" and isinstance(share, (int, float))
    return share_in_tf32(
        str(flags.get("allow_tf32_matmul")) == "True",
        float(share) if counted and 0.0 <= share <= 1.0 else None,
    )


def device_name(result: CellResult) -> str:
    """The recorded device name, or an empty string where the record has none."""
    name = result.runtime.device_name
    return name if isinstance(name, str) else ""


def economics(
    result: CellResult,
    tables: Tables,
    workload_samples: int | None = None,
    samples_per_s: Estimate | None = None,
) -> CellEconomics | None:
    """Price/performance of one measured cell; None for a cell with no measurement (skipped, failed).

    ``samples_per_s`` replaces the record's own throughput where a cell has several repetitions; tokens
    and achieved TFLOP/s scale with it, since both are fixed amounts of work per sample.
    """
    m = result.metrics
    if m is None:
        return None
    if workload_samples is not None and workload_samples < 1:
        raise ValueError(f"workload_samples must be at least 1, got {workload_samples}")
    world = result.cell.world_size
    acc, name = result.cell.accelerator, device_name(result)
    price = tables.price_for(acc, name)
    peak = tables.peak_for(acc, name, result.cell.precision, tf32_share(result))
    if samples_per_s is None:
        sps, (lo, hi) = m.samples_per_s, m.samples_per_s_ci
    else:
        sps, lo, hi = samples_per_s.value, samples_per_s.lo, samples_per_s.hi
    scale = sps / m.samples_per_s
    tps = m.tokens_per_s * scale if m.tokens_per_s is not None else None
    achieved = m.achieved_tflops * scale if m.achieved_tflops is not None else None
    usd_h = price.usd_per_device_hour * world if price else None
    return CellEconomics(
        world_size=world,
        samples_per_s=sps,
        samples_per_s_ci=(lo, hi),
        samples_per_s_per_device=sps / world,
        tokens_per_s=tps,
        price=price,
        usd_per_hour=usd_h,
        usd_per_million_samples=_usd_per_million(usd_h, sps),
        # The fastest end of the throughput interval is the cheapest end of the cost interval.
        usd_per_million_samples_ci=(usd_h / (hi * 3600) * 1e6, usd_h / (lo * 3600) * 1e6) if usd_h else None,
        usd_per_million_tokens=_usd_per_million(usd_h, tps),
        samples_per_usd=sps * 3600 / usd_h if usd_h else None,
        workload_samples=workload_samples,
        workload_time_s=workload_samples / sps if workload_samples else None,
        workload_cost_usd=workload_samples / sps / 3600 * usd_h if workload_samples and usd_h else None,
        peak=peak,
        achieved_tflops=achieved,
        mfu=mfu(achieved, peak, world) if peak and achieved is not None else None,
    )


def _usd_per_million(usd_per_hour: float | None, units_per_s: float | None) -> float | None:
    if usd_per_hour is None or not units_per_s:
        return None
    return usd_per_hour / (units_per_s * 3600) * 1e6
