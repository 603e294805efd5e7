"""The worker's first step: a cell's strings become the objects that train it.

Accelerator, strategy, prepared precision, workload and model, optimizer, training step and batches, in
the order each needs the ones before it (Lightning Fabric's connector does the same for its user's
strings). What resolution learns about the run (device name, batch size, mode in force, FLOP count, setup
time) comes back as facts in :class:`Resolved`, never written anywhere else.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

import workloads
from hpubench import accelerators
from hpubench.errors import CellSkipped
from hpubench.measure.conditions_probe import thread_facts
from hpubench.measure.heap import heap_policy, plan_heap
from hpubench.measure.heap_probe import apply_heap_plan
from hpubench.measure.phases import PhasePlan
from hpubench.plan.cell import Cell, flops_key
from hpubench.plan.extrawork import apply_options
from hpubench.plan.runoptions import RunOptions
from hpubench.precision import apply as precision
from hpubench.precision import spec as precisions
from hpubench.run.batches import synthetic_batches
from hpubench.run.cellrun.facts import Facts, Learned
from hpubench.run.hostcondition import condition_facts
from hpubench.run.trainstep import build_phases, build_step, make_optimizer, phase_factory, step_factory
from hpubench.strategy import runtime as strategies
from workloads.flops import count_step_flops

if TYPE_CHECKING:
    from torch import nn

    from hpubench.accelerators.base import Accelerator, StepFn
    from hpubench.precision.apply import PreparedPrecision
    from workloads.base import Batch, Workload

N_BATCHES = 4  # distinct synthetic batches cycled through, so no step sees the same data twice in a row
SEED = 1234


@dataclass(frozen=True)
class Start:
    """When the cell's run began: the record's start time, the zero of its fixed-cost clock
    (``time.perf_counter``) and, when the launcher says, when it sent the cell (``time.time``)."""

    started_at: str
    t0: float
    dispatched_at: float | None = None


@dataclass(frozen=True)
class Placement:
    """Where the cell runs: its accelerator and strategy, set up, and the facts that say so."""

    acc: Accelerator
    strategy: Any  # hpubench.strategy.runtime.Strategy: single device, DDP or FSDP
    device_name: str
    device: torch.device
    facts: Facts


@dataclass(frozen=True)
class Resolved:
    """Everything the measurement needs, built once, and the runtime facts resolution learned."""

    cell: Cell
    start: Start
    options: RunOptions
    acc: Accelerator
    strategy: Any  # hpubench.strategy.runtime.Strategy
    device_name: str
    device: torch.device
    workload: Workload
    batch_size: int  # per device
    prepared: PreparedPrecision
    model: nn.Module  # as the strategy wrapped it
    optimizer: torch.optim.Optimizer
    step: StepFn  # with the mode, graph capture and harness options applied
    phases: PhasePlan  # the step as separate phases, for the split after the measured steps
    batches: tuple[Batch, ...]
    flops_per_step: int  # per device
    flops_conv_share: float | None  # counted only where convolutions may run at another rate
    facts: Facts


def resolve(cell: Cell, start: Start, options: RunOptions, flops_hints: Mapping[str, int]) -> Resolved:
    """Build the cell's training from its strings, through the core's interfaces only, so the same code
    serves every device, precision, mode and strategy.

    A skip (``CellSkipped``: a cell this process cannot run) or any failure leaves as
    :class:`~hpubench.run.cellrun.facts.Stopped` with the facts learned before it.
    """
    learned = Learned()
    with learned.keeping():
        place = place_cell(cell)
        learned.extend(place.facts)
        acc, strategy = place.acc, place.strategy
        workload = workloads.get(cell.workload, dict(cell.options))  # seq_len=... and the like reach it
        if cell.size not in workload.sizes:
            raise ValueError(f"workload {cell.workload!r} has no size {cell.size!r}")
        batch_size = cell.batch_size or workload.sizes[cell.size].batch_size
        learned.add("batch_size", batch_size)

        torch.manual_seed(SEED)
        prepared, model = build_model(cell, workload, place)
        if strategy.world_size > 1:
            learned.add("distributed", {**learned.get("distributed"), **strategy.facts()})
        learned.add("precision", prepared.describe)
        batches = draw_batches(workload, cell, batch_size, place, prepared)

        optimizer = make_optimizer(workload, model, capturable=acc.optimizer_capturable(cell.graphs))
        make_step = step_factory(workload, optimizer, prepared, acc)
        step, step_facts, stepped = build_step(cell, model, make_step, acc, batches[0])
        learned.extend(step_facts)
        make_phases = phase_factory(workload, optimizer, prepared, acc)
        phases = build_phases(cell, stepped, make_phases, acc, strategy.name, strategy.world_size)
        # Workload options the harness implements (extra_work: a planted, calibrated slowdown).
        step = apply_options(
            dict(cell.options), workload, step, cell.warmup_steps, acc.synchronize, place.device
        )

        flops_per_step, conv_share, flops_facts = count_flops(cell, workload, batch_size, acc, flops_hints)
        learned.extend(flops_facts)
        learned.extend(setup_facts(start, options))
    return Resolved(
        cell=cell,
        start=start,
        options=options,
        acc=acc,
        strategy=strategy,
        device_name=place.device_name,
        device=place.device,
        workload=workload,
        batch_size=batch_size,
        prepared=prepared,
        model=model,
        optimizer=optimizer,
        step=step,
        batches=batches,
        flops_per_step=flops_per_step,
        flops_conv_share=conv_share,
        facts=learned.new(),
        phases=phases,
    )


def place_cell(cell: Cell) -> Placement:
    """The cell's accelerator and strategy, set up, or ``CellSkipped`` where this process cannot run it.

    The matrix already applied the skip rules; a cell handed straight to the worker must obey them too, or
    a "lazy" CPU cell would run eager under the wrong label.
    """
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
    device_name = acc.device_name()
    reason = acc_cls.skip_reason(cell, device_name)
    if reason:
        raise CellSkipped(reason)
    # Before anything big is allocated: the model, batches and steps all come from the heap it settles.
    heap = apply_heap_plan(plan_heap(heap_policy(os.environ), os.environ))
    strategy.setup(acc)
    device = acc.torch_device()
    facts: Facts = (
        ("accelerator", acc.name),
        ("device_name", device_name),
        ("device_index", index),
        ("strategy", strategy.name),
        ("world_size", strategy.world_size),
        ("software", acc.software_versions()),
        ("threads", thread_facts(strategy.thread_policy or "unknown")),
        ("heap", heap),
        ("condition", condition_facts(cell)),
    )
    if strategy.world_size > 1:
        facts += (("distributed", distributed_facts(cell, strategy)),)
    return Placement(acc, strategy, device_name, device, facts)


def distributed_facts(cell: Cell, strategy: Any) -> dict[str, Any]:
    """How a distributed cell is laid out, recorded so its figures say how many ranks made them and how
    each drew its data; the strategy's and the ranks' own facts join these later."""
    return {
        "backend": getattr(strategy, "backend", None),
        "world_size": strategy.world_size,
        "nodes": cell.nodes,
        "local_world_size": cell.devices,
        "threads_per_rank": strategy.threads,
        "data": "each rank draws its own batches (generator seed + rank)",
    }


def build_model(cell: Cell, workload: Workload, place: Placement) -> tuple[PreparedPrecision, nn.Module]:
    """The workload's model on the device, under the cell's precision, graph-wrapped where the cell asks,
    wrapped by the strategy and in training mode: the one model every step trains."""
    model = workload.build_model(cell.size).to(place.device)
    prepared = precision.prepare(cell.precision, model, place.acc)
    inner = place.acc.graph_module(prepared.model) if cell.graphs else prepared.model
    model = place.strategy.wrap_model(inner, workload.blocks(prepared.model))
    model.train()
    return prepared, model


def draw_batches(
    workload: Workload, cell: Cell, batch_size: int, place: Placement, prepared: PreparedPrecision
) -> tuple[Batch, ...]:
    """The synthetic batches the steps cycle through, cast as the precision wants its inputs.

    Own data per rank, as a sharded dataset gives: the all-reduce then averages different gradients.
    Drawn where the accelerator keeps its generator (the host on HPU: contract C1), then moved.
    """
    seed = SEED + place.strategy.rank
    generator_device = place.acc.generator_device()
    drawn = synthetic_batches(
        workload, cell.size, batch_size, place.device, generator_device, seed, N_BATCHES
    )
    return tuple(precision.cast_batch(b, prepared.input_dtype) for b in drawn)


def count_flops(
    cell: Cell, workload: Workload, batch_size: int, acc: Accelerator, flops_hints: Mapping[str, int]
) -> tuple[int, float | None, Facts]:
    """FLOPs per device step, the convolutions' share where it is counted, and the facts of how it was
    counted. An earlier cell's count serves (counting on meta is most of a small cell's fixed cost)
    unless convolutions may run at another rate than the precision's peak says (fp32 convolutions in
    TF32 while matmuls are not): then the count, with its share, is made here, hint or not.
    """
    split = acc.conv_tf32() and not acc.matmul_tf32() and precisions.peak_dtype(cell.precision) == "fp32"
    known = None if split else flops_hints.get(flops_key(cell.workload, cell.size, batch_size, cell.options))
    facts: Facts = ()
    conv_share = None
    if known is None:
        t_flops = time.perf_counter()
        counted = count_step_flops(workload, cell.size, batch_size)
        flops_per_step = counted.total
        facts += (("flops_count_s", time.perf_counter() - t_flops),)
        if split:
            conv_share = counted.conv_share
            facts += (("flops_conv_share", conv_share),)
    else:
        flops_per_step = int(known)
    facts += (
        ("flops_counted", "here" if known is None else "by an earlier cell of this run"),
        ("flops_per_device_step", flops_per_step),
    )
    return flops_per_step, conv_share, facts


def setup_facts(start: Start, options: RunOptions) -> Facts:
    """The cell's fixed cost up to its first step, and the run options that were not the defaults (they
    say what was recorded beside the figures)."""
    facts: Facts = (("setup_s", time.perf_counter() - start.t0),)
    if start.dispatched_at is not None:
        facts += (("dispatch_to_first_step_s", time.time() - start.dispatched_at),)
    if options != RunOptions():
        facts += (("run_options", options.to_dict()),)
    return facts
