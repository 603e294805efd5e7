"""The worker's second step: the resolved cell's warm-up and measured steps, and what is observed around
them (conditions, compile counts, memory, telemetry, loader, profile and phase passes).

The order is the measurement's own and fixed here: observers start before the warm-up, ride on the steps'
hooks outside every timed bracket, and the extra passes run only after the plain steps and the memory
snapshot. The runtime facts learned on the way come back in :class:`Measured`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from hpubench.analysis import peaks
from hpubench.measure.clocks import WARMUP_NOTE
from hpubench.measure.compilecount import CompileProgress
from hpubench.measure.conditions_probe import InterferenceMeter
from hpubench.measure.loader import host_batches
from hpubench.measure.observe import Observation
from hpubench.measure.ranks import RankSample, merge_ranks
from hpubench.measure.steps import StepTimes, measure_steps
from hpubench.measure.stopping import AutoStop
from hpubench.plan.autosteps import LEAD_IN_STEPS, WarmupAsk, WarmupRule, merge_asks
from hpubench.plan.extrawork import learned_facts
from hpubench.precision import apply as precision
from hpubench.run.cellrun.facts import Facts, Learned, runtime_of
from hpubench.run.cellrun.rankref import multi_rank_numerics
from hpubench.run.cellrun.reference import LossTap, numerics_facts, runtime_numerics
from hpubench.run.cellrun.resolve import SEED, Resolved
from hpubench.run.stepfeed import FeedHeader, StepFeed
from hpubench.strategy import runtime as strategies

if TYPE_CHECKING:
    import torch

    from hpubench.analysis.peaks import PeakFigure
    from hpubench.measure.clocks import StepClock
    from hpubench.measure.memory import MemoryStats


@dataclass(frozen=True)
class StepVolume:
    """What one step of the whole cell (all ranks) processes, and the peak it is measured against: the
    step feed's header and the record's figures are built from the same numbers."""

    samples: int
    tokens: int | None
    flops: int | None
    peak: PeakFigure | None


@dataclass(frozen=True)
class Measured:
    """The steps' times and losses (every rank's, merged, in a distributed cell), the memory after them,
    the step volume, the record fields the observers filled, and the runtime facts measuring learned."""

    times: StepTimes
    memory: MemoryStats | None
    volume: StepVolume
    observed: Mapping[str, Any]  # CellResult fields: memory timeline, telemetry, loader, profile
    facts: Facts


def measure(resolved: Resolved, progress_path: str | None = None) -> Measured:
    """Run and time the resolved cell's steps, with its observers, and gather every rank's figures.

    ``progress_path``: where rank 0 streams its step times as they complete (``hpubench.run.stepfeed``),
    so a cell stopped part way still has its finished steps. A failure leaves as
    :class:`~hpubench.run.cellrun.facts.Stopped` with every fact known, resolution's included.
    """
    cell, acc, strategy = resolved.cell, resolved.acc, resolved.strategy
    learned = Learned(resolved.facts)
    with learned.keeping():
        world = strategy.world_size
        observation = Observation(cell, acc, resolved.options, resolved.batch_size * world, world)
        meter = InterferenceMeter(strategy.cell_root_pid())
        volume = step_volume(resolved)
        feed = open_feed(resolved, volume, progress_path)
        auto, more_warmup = adaptive_steps(resolved, feed)
        clock = acc.step_clock(graphs=cell.graphs)
        tap = LossTap(feed.on_step_time if feed is not None else None)  # the first losses, for numerics
        try:
            times, step_facts = timed_steps(resolved, observation, meter, tap, auto, more_warmup, clock, feed)
            learned.extend(step_facts)
            memory, after_facts = after_steps(resolved, observation, meter, times)
            learned.extend(after_facts)
        finally:
            observation.close()
            if feed is not None:
                feed.close()
        learned.extend(stop_facts(resolved, times, auto, more_warmup))
        # The numerics reference runs last, after every pass: it never touches the figures or the memory.
        if world == 1:
            learned.add("numerics", numerics_facts(resolved, tap.losses, progress_path))
        else:
            observation.phases = strategy.from_rank0(observation.phases)
            known = (learned.get("distributed"), learned.get("compiles_measured"))
            times, memory, rank_facts = gather_ranks(resolved, times, memory, *known)
            learned.extend(rank_facts)
            # After the cell's other collectives: rank 0 computes the reference while the others wait.
            learned.add("numerics", multi_rank_numerics(resolved, tap.losses, progress_path))
        learned.add("timing", f"{clock.method}; {WARMUP_NOTE}")
        learned.add("env_flags", acc.env_flags())
    return Measured(times, memory, volume, observation.record_fields(), learned.new())


def step_volume(resolved: Resolved) -> StepVolume:
    """Samples, tokens and FLOPs of one step over all ranks, and the device's peak for the cell's
    precision (in TF32 where the device runs fp32 so), which MFU is measured against."""
    cell, world = resolved.cell, resolved.strategy.world_size
    samples = resolved.batch_size * world
    tokens_per_sample = resolved.workload.tokens_per_sample(cell.size)
    tokens = samples * tokens_per_sample if tokens_per_sample else None
    flops = resolved.flops_per_step * world if resolved.flops_per_step else None
    peak = peaks.peak_for(
        cell.accelerator,
        resolved.device_name,
        cell.precision,
        tf32_share=peaks.share_in_tf32(resolved.acc.matmul_tf32(), resolved.flops_conv_share),
    )
    return StepVolume(samples, tokens, flops, peak)


def open_feed(resolved: Resolved, volume: StepVolume, progress_path: str | None) -> StepFeed | None:
    """Rank 0's step feed, headed by what resolution learned, or None (no path, or another rank): one
    feed per cell, from which the launcher shows progress and keeps a stopped cell's finished steps."""
    strategy = resolved.strategy
    if progress_path is None or strategy.rank != 0:
        return None
    cell = resolved.cell
    header = FeedHeader(
        cell.steps,
        cell.warmup_steps,
        volume.samples,
        volume.tokens,
        volume.flops,
        strategy.world_size,
        volume.peak,
        "rank 0" if strategy.world_size > 1 else "this process",
        runtime_of(resolved.facts),
    )
    return StepFeed(progress_path, header)


def adaptive_steps(resolved: Resolved, feed: StepFeed | None) -> tuple[AutoStop | None, WarmupRule]:
    """The warm-up's end on every cell (until the compiler is done, :class:`WarmupRule`) and, under
    ``--steps auto``, the stop condition (None otherwise) and the warm-up's minimum time.

    In a distributed cell every rank adopts the same decisions: the warm-up's from every rank's ask merged
    (a compile on any rank keeps all warming up), the stop condition's from rank 0 at round ends; a rank
    still warming up or measuring would meet the others' all-reduce.
    """
    cell, strategy = resolved.cell, resolved.strategy

    def agree_warmup(ask: WarmupAsk) -> WarmupAsk:
        return merge_asks(strategy.gather(ask))

    min_warmup_s = cell.auto_steps.min_time_s if cell.auto_steps is not None else 0.0
    rule = WarmupRule(cell.warmup_steps, min_warmup_s, agree_warmup if strategy.world_size > 1 else None)
    if cell.auto_steps is None:
        return None, rule
    agree = strategy.from_rank0 if strategy.world_size > 1 else None
    return AutoStop(cell.auto_steps, agree, on_round=feed.note if feed is not None else None), rule


def timed_steps(
    resolved: Resolved,
    observation: Observation,
    meter: InterferenceMeter,
    tap: LossTap,
    auto: AutoStop | None,
    more_warmup: WarmupRule,
    clock: StepClock,
    feed: StepFeed | None = None,
) -> tuple[StepTimes, Facts]:
    """The warm-up and measured steps, with the observers on their hooks, and what the step itself
    learned while running (the extra work's calibration), which a failure in the steps keeps too."""
    cell, acc, strategy = resolved.cell, resolved.acc, resolved.strategy

    def warmup_done() -> None:
        # Before the warm-up's lead-in step (hpubench.measure.steps), so their pause lands on it: the peak
        # then spans that step too, as any step's; the feed's buffered warm-up steps are written here, not
        # from inside the window; every rank starts its lead-in, and so its measured steps, together.
        acc.reset_peak_memory_stats()
        if feed is not None:
            feed.flush()
        strategy.barrier()

    learned = Learned()
    with learned.keeping():
        try:
            times = measure_steps(
                resolved.step,
                resolved.batches,
                acc.synchronize,
                cell.warmup_steps,
                auto if auto is not None else cell.steps,
                on_warmup_done=warmup_done,
                on_step_time=tap.on_step_time,  # passes each step on to the feed
                more_warmup=more_warmup,
                clock=clock,
                compiles=CompileProgress(observation.compiles.sources),
                **meter.hooks(observation.measure_hooks()),
            )
        finally:
            learned.extend(learned_facts(resolved.step))
            # The losses so far: a cell whose loss turned non-finite keeps them in its failed record.
            learned.add("numerics", runtime_numerics(tap.losses, None, None))
    return times, learned.new()


def after_steps(
    resolved: Resolved, observation: Observation, meter: InterferenceMeter, times: StepTimes
) -> tuple[MemoryStats | None, Facts]:
    """The conditions of the measured window, the memory after it, the observers' facts, then the loader,
    profile and phase passes, which run last so they touch neither the figures nor the peak memory."""
    cell, acc, prepared = resolved.cell, resolved.acc, resolved.prepared
    learned = Learned()
    with learned.keeping():
        learned.extend(meter.record().items())
        memory = acc.memory_stats()
        plain_step_mean_s = sum(times.measured_s) / len(times.measured_s)
        learned.extend(observation.window_facts())
        learned.extend(observation.summarise(len(times.measured_s)))
        observation.extra_passes(
            resolved.step,
            resolved.batches,
            lambda: host_batches(
                resolved.workload,
                cell.size,
                resolved.batch_size,
                resolved.device,
                lambda b: precision.cast_batch(b, prepared.input_dtype),
                SEED + 1,
                pin_memory=acc.pin_host_batches,
            ),
            plain_step_mean_s,
            measured_steps=len(times.measured_s),
        )
        observation.phase_pass(resolved.phases, resolved.batches, times.measured_s)
    return memory, learned.new()


def stop_facts(resolved: Resolved, times: StepTimes, auto: AutoStop | None, warmup: WarmupRule) -> Facts:
    """Why the measured steps stopped, and how long the warm-up ran and why it stopped: a figure says
    what decided its length."""
    ruled = warmup.facts(times.warmup_s, times.warmup_compiles, LEAD_IN_STEPS)
    facts: Facts = (("steps_stop", times.stop_reason), *ruled)
    if auto is not None:
        facts += (("steps_auto", auto.summary(times.measured_s)),)
    return facts


def gather_ranks(
    resolved: Resolved,
    times: StepTimes,
    memory: MemoryStats | None,
    distributed: Mapping[str, Any],
    compiles_measured: int | None,
) -> tuple[StepTimes, MemoryStats | None, Facts]:
    """Every rank's figures merged (``merge_rank_figures``), the cell's compile count, and with
    ``HPUBENCH_DDP_CHECK=1`` the replica check: what a distributed record says of all its ranks.

    ``distributed`` and ``compiles_measured`` are the facts so far, which the merged ones refine.
    """
    strategy = resolved.strategy
    learned = Learned()
    with learned.keeping():
        times, memory, merged = merge_rank_figures(resolved, times, memory)
        distributed = {**distributed, **merged}
        learned.add("distributed", distributed)
        # A compile on any rank slowed the synchronised steps of all: the cell's count is the largest.
        counts = [c for c in strategy.gather(compiles_measured) if c is not None]
        if counts:
            learned.add("compiles_measured", max(counts))
        if os.environ.get(strategies.REPLICA_CHECK_ENV) == "1":

            def loss_of(net: torch.nn.Module) -> torch.Tensor:
                with resolved.prepared.context():
                    return resolved.workload.loss(net, resolved.batches[0])

            check = strategy.gather(strategy.replica_check(resolved.model, loss_of))
            learned.add("distributed", {**distributed, "replica_check": check})
    return times, memory, learned.new()


def merge_rank_figures(
    resolved: Resolved, times: StepTimes, memory: MemoryStats | None
) -> tuple[StepTimes, MemoryStats | None, dict[str, Any]]:
    """Every rank's step times and memory, gathered onto every rank and merged (``hpubench.measure.ranks``),
    with the merge's facts for the ``distributed`` record.

    All ranks hold the merged record afterwards, so whichever rank writes it writes the same thing.
    """
    strategy = resolved.strategy
    sample = RankSample(
        **strategy.describe(),
        device_index=resolved.acc.index,
        warmup_s=tuple(times.warmup_s),
        measured_s=tuple(times.measured_s),
        loss_first=float(times.loss_first),
        loss_last=float(times.loss_last),
        memory=memory.to_dict() if memory is not None else {},
    )
    merged = merge_ranks(strategy.gather(sample))
    times = replace(
        times,
        warmup_s=merged.warmup_s,
        measured_s=merged.measured_s,
        loss_first=merged.loss_first,
        loss_last=merged.loss_last,
    )
    return times, merged.memory if merged.memory is not None else memory, merged.runtime
