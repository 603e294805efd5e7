"""Runs one cell in the current process and returns its record. Never raises for a cell's own problems.

The launcher calls this in an isolated child whose environment already holds what must be set before
device frameworks are imported. Everything here goes through the core's interfaces (accelerator,
strategy, precision, mode) so the same code serves CPU, CUDA and HPU, one device or many.

This module imports torch and the workloads at import: the processes that run cells import it only once
their pre-import environment is in force (``hpubench.run.forkserver.child``,
``hpubench.run.distributed.worker``).
"""

from __future__ import annotations

import datetime as _dt
import os
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import torch

import workloads
from hpubench import accelerators
from hpubench.analysis import peaks
from hpubench.analysis.metrics import build_metrics
from hpubench.analysis.quality import with_quality
from hpubench.errors import CellSkipped
from hpubench.measure.autosteps import warmup_extension
from hpubench.measure.clocks import WARMUP_NOTE
from hpubench.measure.conditions_probe import InterferenceMeter, thread_facts
from hpubench.measure.heap import heap_policy, plan_heap
from hpubench.measure.heap_probe import apply_heap_plan
from hpubench.measure.loader import host_batches
from hpubench.measure.observe import Observation
from hpubench.measure.ranks import RankSample, merge_ranks
from hpubench.measure.stepfeed import FeedHeader, StepFeed
from hpubench.measure.steps import measure_steps
from hpubench.measure.stopping import AutoStop
from hpubench.plan.cell import Cell, flops_key
from hpubench.plan.extrawork import apply_options
from hpubench.plan.runoptions import RunOptions
from hpubench.precision import apply as precision
from hpubench.precision import spec as precisions
from hpubench.run.batches import synthetic_batches
from hpubench.run.trainstep import build_step, make_optimizer, step_factory
from hpubench.store.record import STATUS_FAILED, STATUS_OK, STATUS_SKIPPED, CellResult
from hpubench.strategy import runtime as strategies
from workloads.flops import count_step_flops

TRACEBACK_LINES = 40
N_BATCHES = 4  # distinct synthetic batches cycled through, so no step sees the same data twice in a row
SEED = 1234


def _utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return " ".join(text.split())[:500]


def _failure_reason(cell: Cell, exc: BaseException) -> str:
    """The device's own reading of the failure (an out-of-memory error that does not say so), else the
    exception's text on one line."""
    try:
        own = accelerators.get(cell.accelerator).failure_reason(exc)
    except Exception:  # an unknown accelerator name: its failure is already the reason
        own = None
    return own or _one_line(exc)


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
    ``progress_path``: where rank 0 streams its step times as they complete (``hpubench.measure.stepfeed``).
    """
    started_at = _utc_now()
    t0 = time.perf_counter()
    runtime: dict[str, Any] = {}
    try:
        return _run(
            cell,
            runtime,
            started_at,
            t0,
            dispatched_at,
            options or RunOptions(),
            flops_hints or {},
            progress_path,
        )
    except CellSkipped as exc:
        return CellResult(
            cell,
            STATUS_SKIPPED,
            reason=str(exc),
            runtime=runtime,
            started_at=started_at,
            wall_s=time.perf_counter() - t0,
        )
    except Exception as exc:
        tail = "".join(traceback.format_exception(exc)).splitlines()[-TRACEBACK_LINES:]
        return CellResult(
            cell,
            STATUS_FAILED,
            reason=_failure_reason(cell, exc),
            traceback_tail="\n".join(tail),
            runtime=runtime,
            started_at=started_at,
            wall_s=time.perf_counter() - t0,
        )


def _run(
    cell: Cell,
    runtime: dict[str, Any],
    started_at: str,
    t0: float,
    dispatched_at: float | None,
    options: RunOptions,
    flops_hints: Mapping[str, int],
    progress_path: str | None = None,
) -> CellResult:
    acc_cls = accelerators.get(cell.accelerator)
    if not acc_cls.is_available():
        why = acc_cls.unavailable_reason()
        raise CellSkipped(
            f"no {cell.accelerator} device is available in this process" + (f" ({why})" if why else "")
        )
    # SingleDevice, or DDP / FSDP joining the process group torch.distributed's elastic agent started us in.
    strategy = strategies.for_cell(cell)
    index = acc_cls.rank_device_index(cell, strategy.local_rank)
    acc = acc_cls(index)
    # The matrix already applied these rules; a cell handed straight to the worker must obey them too,
    # or a "lazy" CPU cell would run eager under the wrong label.
    device_name = acc.device_name()
    reason = acc_cls.skip_reason(cell, device_name)
    if reason:
        raise CellSkipped(reason)
    # Before anything big is allocated: the model, batches and steps all come from the heap it settles.
    heap = apply_heap_plan(plan_heap(heap_policy(os.environ), os.environ))
    strategy.setup(acc)
    device = acc.torch_device()
    runtime.update(
        accelerator=acc.name,
        device_name=device_name,
        device_index=index,
        strategy=strategy.name,
        world_size=strategy.world_size,
        software=acc.software_versions(),
        threads=thread_facts(strategy.thread_policy or "unknown"),
        heap=heap,
    )
    if strategy.world_size > 1:
        runtime["distributed"] = {
            "backend": getattr(strategy, "backend", None),
            "world_size": strategy.world_size,
            "nodes": cell.nodes,
            "local_world_size": cell.devices,
            "threads_per_rank": strategy.threads,
            "data": "each rank draws its own batches (generator seed + rank)",
        }

    workload = workloads.get(cell.workload, dict(cell.options))  # seq_len=... and the like reach it
    if cell.size not in workload.sizes:
        raise ValueError(f"workload {cell.workload!r} has no size {cell.size!r}")
    batch_size = cell.batch_size or workload.sizes[cell.size].batch_size
    runtime["batch_size"] = batch_size

    torch.manual_seed(SEED)
    model = workload.build_model(cell.size).to(device)
    prepared = precision.prepare(cell.precision, model, acc)
    inner = acc.graph_module(prepared.model) if cell.graphs else prepared.model
    model = strategy.wrap_model(inner, workload.blocks(prepared.model))
    model.train()
    if strategy.world_size > 1:
        runtime["distributed"].update(strategy.facts())
    runtime["precision"] = prepared.describe

    # Own data per rank, as a sharded dataset gives: the all-reduce then averages different gradients.
    # Drawn where the accelerator keeps its generator (the host on HPU: contract C1), then moved.
    drawn = synthetic_batches(
        workload, cell.size, batch_size, device, acc.generator_device(), SEED + strategy.rank, N_BATCHES
    )
    batches = [precision.cast_batch(b, prepared.input_dtype) for b in drawn]

    optimizer = make_optimizer(workload, model, capturable=acc.optimizer_capturable(cell.graphs))
    make_step = step_factory(workload, optimizer, prepared, acc)
    step = build_step(cell, model, make_step, acc, batches[0], runtime)
    # Workload options the harness implements (extra_work: a planted, calibrated slowdown).
    step = apply_options(
        dict(cell.options), workload, step, cell.warmup_steps, acc.synchronize, device, runtime
    )

    # Convolutions count apart only where they may run at another rate than the precision's peak says
    # (fp32 convolutions in TF32 while matmuls are not): then the count is made here, hint or not.
    split = acc.conv_tf32() and not acc.matmul_tf32() and precisions.peak_dtype(cell.precision) == "fp32"
    known = None if split else flops_hints.get(flops_key(cell.workload, cell.size, batch_size, cell.options))
    if known is None:
        t_flops = time.perf_counter()
        counted = count_step_flops(workload, cell.size, batch_size)
        flops_per_step = counted.total
        runtime["flops_count_s"] = time.perf_counter() - t_flops
        if split:
            runtime["flops_conv_share"] = counted.conv_share
    else:
        flops_per_step = int(known)
    runtime["flops_counted"] = "here" if known is None else "by an earlier cell of this run"
    runtime["flops_per_device_step"] = flops_per_step

    setup_s = time.perf_counter() - t0
    runtime["setup_s"] = setup_s
    if dispatched_at is not None:
        runtime["dispatch_to_first_step_s"] = time.time() - dispatched_at
    if options != RunOptions():
        runtime["run_options"] = options.to_dict()
    observation = Observation(cell, acc, options, batch_size * strategy.world_size, strategy.world_size)
    meter = InterferenceMeter(strategy.cell_root_pid())
    samples_per_step = batch_size * strategy.world_size
    tokens_per_sample = workload.tokens_per_sample(cell.size)
    tokens_per_step = samples_per_step * tokens_per_sample if tokens_per_sample else None
    global_flops = flops_per_step * strategy.world_size if flops_per_step else None
    peak = peaks.peak_for(
        cell.accelerator,
        runtime["device_name"],
        cell.precision,
        tf32_share=peaks.share_in_tf32(acc.matmul_tf32(), runtime.get("flops_conv_share")),
    )
    feed = None
    if progress_path is not None and strategy.rank == 0:  # one feed per cell: rank 0's steps
        source = "rank 0" if strategy.world_size > 1 else "this process"
        feed = StepFeed(
            progress_path,
            FeedHeader(
                cell.steps,
                cell.warmup_steps,
                samples_per_step,
                tokens_per_step,
                global_flops,
                strategy.world_size,
                peak,
                source,
                dict(runtime),
            ),
        )

    def warmup_done() -> None:
        acc.reset_peak_memory_stats()
        strategy.barrier()  # every rank starts its measured steps together

    # --steps auto: in a distributed cell every rank adopts rank 0's decision, taken at round ends.
    auto = None
    more_warmup = None
    if cell.auto_steps is not None:
        agree = (lambda reason: strategy.gather(reason)[0]) if strategy.world_size > 1 else None
        auto = AutoStop(cell.auto_steps, agree, on_round=feed.note if feed is not None else None)
        min_warmup_s = cell.auto_steps.min_time_s

        def more_warmup(warmup_s: Sequence[float]) -> int:
            extra = warmup_extension(warmup_s, min_warmup_s)
            # Every rank runs rank 0's count: a rank still warming up would meet the others' all-reduce.
            return strategy.gather(extra)[0] if strategy.world_size > 1 else extra

    clock = acc.step_clock()
    try:
        times = measure_steps(
            step,
            batches,
            acc.synchronize,
            cell.warmup_steps,
            auto if auto is not None else cell.steps,
            on_warmup_done=warmup_done,
            on_step_time=feed.on_step_time if feed is not None else None,
            more_warmup=more_warmup,
            clock=clock,
            **meter.hooks(observation.measure_hooks()),
        )
        runtime.update(meter.record())
        memory = acc.memory_stats()
        observation.after_measured(
            step,
            batches,
            lambda: host_batches(
                workload,
                cell.size,
                batch_size,
                device,
                lambda b: precision.cast_batch(b, prepared.input_dtype),
                SEED + 1,
                pin_memory=acc.pin_host_batches,
            ),
            sum(times.measured_s) / len(times.measured_s),
            runtime,
            measured_steps=len(times.measured_s),
        )
    finally:
        observation.close()
        if feed is not None:
            feed.close()
    runtime["steps_stop"] = times.stop_reason
    if len(times.warmup_s) > cell.warmup_steps:
        runtime["warmup_extended"] = (
            f"{cell.warmup_steps} warm-up steps + {len(times.warmup_s) - cell.warmup_steps} more to reach "
            f"{cell.auto_steps.min_time_s if cell.auto_steps else 0:g} s after the first (--steps auto)"
        )
    if auto is not None:
        runtime["steps_auto"] = auto.summary(times.measured_s)
    if strategy.world_size > 1:
        times, memory = _merge_ranks(strategy, acc, times, memory, runtime)
        # A compile on any rank slowed the synchronised steps of all: the cell's count is the largest.
        counts = [c for c in strategy.gather(runtime.get("compiles_measured")) if c is not None]
        if counts:
            runtime["compiles_measured"] = max(counts)
        if os.environ.get(strategies.REPLICA_CHECK_ENV) == "1":

            def loss_of(net: torch.nn.Module) -> torch.Tensor:
                with prepared.context():
                    return workload.loss(net, batches[0])

            runtime["distributed"]["replica_check"] = strategy.gather(strategy.replica_check(model, loss_of))
    runtime["timing"] = f"{clock.method}; {WARMUP_NOTE}"
    runtime["env_flags"] = acc.env_flags()

    metrics = build_metrics(
        warmup_s=times.warmup_s,
        measured_s=times.measured_s,
        loss_first=times.loss_first,
        loss_last=times.loss_last,
        samples_per_step=samples_per_step,
        tokens_per_step=tokens_per_step,
        flops_per_step=global_flops,
        world_size=strategy.world_size,
        peak=peak,
    )
    strategy.teardown()
    # The verdict on the figure (hpubench.analysis.quality) is judged here, where every fact it reads is
    # known.
    return with_quality(
        CellResult(
            cell,
            STATUS_OK,
            metrics=metrics,
            memory=memory,
            runtime=runtime,
            step_times_s=times.measured_s,
            warmup_times_s=times.warmup_s,
            started_at=started_at,
            wall_s=time.perf_counter() - t0,
            **observation.record_fields(),
        )
    )


def _merge_ranks(
    strategy: Any, acc: Any, times: Any, memory: Any, runtime: dict[str, Any]
) -> tuple[Any, Any]:
    """Every rank's step times and memory, gathered onto every rank and merged (``hpubench.measure.ranks``).

    All ranks hold the merged record afterwards, so whichever rank writes it writes the same thing.
    """
    sample = RankSample(
        **strategy.describe(),
        device_index=acc.index,
        warmup_s=tuple(times.warmup_s),
        measured_s=tuple(times.measured_s),
        loss_first=float(times.loss_first),
        loss_last=float(times.loss_last),
        memory=memory.to_dict() if memory is not None else {},
    )
    merged = merge_ranks(strategy.gather(sample))
    runtime["distributed"].update(merged.runtime)
    times = replace(
        times,
        warmup_s=merged.warmup_s,
        measured_s=merged.measured_s,
        loss_first=merged.loss_first,
        loss_last=merged.loss_last,
    )
    return times, merged.memory if merged.memory is not None else memory
