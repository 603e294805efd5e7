"""Every rank's measurements merged into one record of a data-parallel cell. Pure: no torch, no I/O.

The record's step times are *global*: they are the slowest rank's own series (the rank whose measured
steps took longest in all), so their sum is the wall time the ranks took together, and global samples/s =
(batch x world size) per step over it. DDP's all-reduce holds every rank within a step of the others, but
each rank reads its clock at its own step boundaries, which drift against the others' from step to step:
a per-step maximum over ranks would add up each rank's lagging steps and read slower than the wall time.
Each rank's own series, memory peak, host and loss stay in ``runtime["distributed"]["ranks"]`` so a
straggler or an outlier rank can be found.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from hpubench.measure.memory import MemoryStats

STEP_TIME_REDUCTION = "the slowest rank's own steps (the rank whose measured steps took longest in all)"


@dataclass(frozen=True)
class RankSample:
    """What one rank measured; sent to every rank with ``all_gather_object``."""

    rank: int
    local_rank: int
    node_rank: int
    host: str
    pid: int
    device_index: int
    threads: int | None
    warmup_s: tuple[float, ...]
    measured_s: tuple[float, ...]
    loss_first: float
    loss_last: float
    memory: dict[str, Any] = field(default_factory=dict)  # MemoryStats.to_dict()


@dataclass(frozen=True)
class MergedRanks:
    warmup_s: tuple[float, ...]
    measured_s: tuple[float, ...]
    loss_first: float
    loss_last: float
    memory: MemoryStats | None
    runtime: dict[str, Any]


def _slowest(series: Sequence[Sequence[float]], what: str) -> int:
    """The index of the series whose sum is largest (the lowest of a tie): that rank's window is the ranks'
    wall."""
    lengths = {len(s) for s in series}
    if len(lengths) != 1:
        raise ValueError(f"ranks measured different numbers of {what} steps: {sorted(lengths)}")
    return max(range(len(series)), key=lambda i: sum(series[i]))


def merge_ranks(samples: Sequence[RankSample]) -> MergedRanks:
    """Global step times, the worst memory peak and the per-rank detail, from every rank's sample.

    The loss is the mean over ranks: with equal per-rank batches that is the loss of the global batch.
    The memory reported is that of the rank with the highest peak, since a device's capacity is what a
    peak is compared with; the sum over ranks is kept too (all ranks of a CPU cell share one host).
    """
    if not samples:
        raise ValueError("no rank samples to merge")
    ranks = sorted(samples, key=lambda s: s.rank)
    if [s.rank for s in ranks] != list(range(len(ranks))):
        raise ValueError(f"rank samples are not ranks 0..{len(ranks) - 1}: {[s.rank for s in ranks]}")
    slowest = _slowest([s.measured_s for s in ranks], "measured")
    warmup = ranks[_slowest([s.warmup_s for s in ranks], "warm-up")].warmup_s
    peaks = [s.memory.get("peak_allocated_bytes") for s in ranks]
    known = [(p, s.rank) for p, s in zip(peaks, ranks, strict=True) if p is not None]
    worst = max(known)[1] if known else 0
    memory = MemoryStats.from_dict(ranks[worst].memory) if ranks[worst].memory else None
    means = [sum(s.measured_s) / len(s.measured_s) for s in ranks]
    runtime: dict[str, Any] = {
        "step_time_reduction": STEP_TIME_REDUCTION,
        "ranks": [
            {
                **{k: v for k, v in asdict(s).items() if k not in ("memory", "warmup_s", "measured_s")},
                "step_times_s": list(s.measured_s),
                "warmup_times_s": list(s.warmup_s),
                "peak_memory_bytes": s.memory.get("peak_allocated_bytes"),
                "memory_source": s.memory.get("source"),
            }
            for s in ranks
        ],
        "peak_memory_per_rank_bytes": peaks,  # each rank's own peak, in rank order (None: not measured)
        "peak_memory_max_bytes": max(p for p, _ in known) if known else None,
        "peak_memory_max_rank": worst if known else None,
        "peak_memory_sum_bytes": sum(p for p, _ in known) if known else None,
        "slowest_rank": slowest,  # whose step times are the record's
        "rank_step_time_mean_s": means,
        "hosts": sorted({s.host for s in ranks}),
    }
    return MergedRanks(
        warmup_s=tuple(warmup),
        measured_s=tuple(ranks[slowest].measured_s),
        loss_first=sum(s.loss_first for s in ranks) / len(ranks),
        loss_last=sum(s.loss_last for s in ranks) / len(ranks),
        memory=memory,
        runtime=runtime,
    )


def rank_peaks(runtime: Mapping[str, Any]) -> list[int | None] | None:
    """Each rank's peak memory, in rank order, from a record's runtime; None for a one-process cell.

    Records written before ``peak_memory_per_rank_bytes`` existed keep the same figures per rank entry.
    """
    dist = runtime.get("distributed")  # a record's runtime or its JSON: both are mappings
    if not isinstance(dist, dict):
        return None
    if isinstance(dist.get("peak_memory_per_rank_bytes"), list):
        return list(dist["peak_memory_per_rank_bytes"])
    ranks = dist.get("ranks")
    if not isinstance(ranks, list) or not ranks:
        return None
    return [r.get("peak_memory_bytes") if isinstance(r, dict) else None for r in ranks]
