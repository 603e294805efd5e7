"""The training step every cell runs, assembled from the core's parts.

One function builds it for every device, precision and mode: zero grads, forward under the precision's
context, (scaled) backward, the accelerator's post-backward hook (HPU lazy: mark_step), optimizer step,
the post-step hook. Graph capture and compilation wrap this same step, so they cannot change its meaning.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from hpubench.accelerators.base import Accelerator, StepFn
from hpubench.measure.phases import PhasedStep, PhasePlan, phase_notes, why_not_separable
from hpubench.plan.cell import Cell
from hpubench.plan.extrawork import EXTRA_WORK
from hpubench.precision.apply import PreparedPrecision
from hpubench.run.cellrun.facts import Facts, Learned
from workloads.base import Batch, Workload


def make_optimizer(workload: Workload, model: nn.Module, capturable: bool) -> torch.optim.Optimizer:
    """The workload's one optimizer (several optimizers are a known HPU limitation): its own where it makes
    one (``Workload.make_optimizer``), else AdamW or SGD at its ``lr``."""
    own = workload.make_optimizer(model, capturable)
    if own is not None:
        return own
    params = [p for p in model.parameters() if p.requires_grad]
    if workload.optimizer == "sgd":
        return torch.optim.SGD(params, lr=workload.lr, momentum=0.9)
    return torch.optim.AdamW(params, lr=workload.lr, capturable=capturable)


def step_factory(
    workload: Workload, optimizer: torch.optim.Optimizer, prepared: PreparedPrecision, acc: Accelerator
) -> Callable[[nn.Module], StepFn]:
    """The step for one model; the bare one where the precision and the device add nothing to it.

    A precision without autocast or scaler (32-true, bf16-true) on a device without step hooks (CPU,
    CUDA) gets a step of the four calls a hand-written loop makes. Measured on mlp tiny (0.9 ms CPU
    steps) against a bare loop, interleaved: the general step 0.982-0.984, this one 0.993-0.994 (forked
    children), 0.986 vs 0.994 in one process. The general step's extra calls take ~1 us of the ~8 us it
    cost, so most of it is indirect (code and memory placement), but it held in both methods.

    Both return the loss as autograd left it, not ``loss.detach()``: the caller reads it with ``.item()``
    outside the timed bracket, and a detach inside the step is a dispatched op in every timed step. Measured
    on mlp tiny in one process (200 interleaved blocks of 200 steps after a 2 s warm-up, per-step timing as
    ``measure_steps`` does it): with the detach 0.992 (quartiles 0.977-1.004) of a loop timed as one block,
    without it 1.001 (0.989-1.011). Captured graphs keep the loss their capture produced, as PyTorch's CUDA
    graphs recipe does.
    """
    loss_of = workload.loss

    def make_plain_step(net: nn.Module) -> StepFn:
        def step(batch: Batch) -> torch.Tensor:
            optimizer.zero_grad(set_to_none=True)
            loss = loss_of(net, batch)
            loss.backward()
            optimizer.step()
            return loss

        return step

    parts = step_parts(workload, optimizer, prepared, acc)

    def make_step(net: nn.Module) -> StepFn:
        forward, backward, update = parts(net)

        def step(batch: Batch) -> torch.Tensor:
            optimizer.zero_grad(set_to_none=True)
            loss = forward(batch)
            backward(loss)
            update()
            return loss

        return step

    return make_plain_step if prepared.plain and not acc.has_step_hooks() else make_step


StepParts = tuple[Callable[[Batch], torch.Tensor], Callable[[torch.Tensor], None], Callable[[], None]]


def step_parts(
    workload: Workload, optimizer: torch.optim.Optimizer, prepared: PreparedPrecision, acc: Accelerator
) -> Callable[[nn.Module], StepParts]:
    """The general step's three parts for a model: the loss under the precision's context; the (scaled)
    backward and the device's post-backward hook; the (scaler's) optimizer step and the post-step hook.
    One definition serves the measured step and the phase split, so the split times the step it explains."""
    scaler = prepared.scaler
    loss_of = workload.loss

    def parts(net: nn.Module) -> StepParts:
        def forward(batch: Batch) -> torch.Tensor:
            with prepared.context():
                return loss_of(net, batch)

        def backward(loss: torch.Tensor) -> None:
            if scaler is not None:
                scaler.scale(loss).backward()
            else:
                loss.backward()
            acc.after_backward()

        def update() -> None:
            if scaler is not None:
                scaler.step(optimizer)
                scaler.update()
            else:
                optimizer.step()
            acc.after_optimizer_step()

        return forward, backward, update

    return parts


def phase_factory(
    workload: Workload, optimizer: torch.optim.Optimizer, prepared: PreparedPrecision, acc: Accelerator
) -> Callable[[nn.Module], PhasedStep]:
    """The general step of :func:`step_factory` as separate calls, for the phase split
    (``hpubench.measure.phases``): the same parts in the same order, with ``zero_grad`` moved to the end of
    the optimizer phase (the measured step's next start)."""
    parts = step_parts(workload, optimizer, prepared, acc)

    def zero_grad() -> None:
        optimizer.zero_grad(set_to_none=True)

    def make(net: nn.Module) -> PhasedStep:
        forward, backward, update = parts(net)

        def optimizer_phase() -> None:
            update()
            zero_grad()

        return PhasedStep(forward, backward, optimizer_phase, zero_grad)

    return make


def build_phases(
    cell: Cell,
    stepped: nn.Module,
    make_phases: Callable[[nn.Module], PhasedStep],
    acc: Accelerator,
    strategy: str,
    world_size: int,
) -> PhasePlan:
    """The phased step over the model the measured step trains (compiled, under --mode compile), or why
    its step cannot be split (a captured graph, lazy mode), with what the phases include."""
    why = why_not_separable(cell.mode, cell.graphs, acc.graph_capture_name)
    notes = phase_notes(cell.mode, strategy, world_size, EXTRA_WORK in dict(cell.options))
    return PhasePlan(None if why is not None else make_phases(stepped), why, notes)


def build_step(
    cell: Cell,
    model: nn.Module,
    make_step: Callable[[nn.Module], StepFn],
    acc: Accelerator,
    sample_batch: Batch,
) -> tuple[StepFn, Facts, nn.Module]:
    """Apply the cell's mode and graph capture; refuse to run a mode the device is not really in.

    Returns the step, the facts that say how it runs (mode asked for and in force, torch.compile's
    options, the graph capture), for the record to label its figures with what ran, and the model the
    step trains (compiled under --mode compile), for the phase split. A failure part way
    (the wrong mode, a capture the device lacks) leaves as :class:`~hpubench.run.cellrun.facts.Stopped`
    with the facts learned before it.
    """
    learned = Learned()
    with learned.keeping():
        learned.add("mode_requested", cell.mode)
        in_force = acc.mode_in_force(cell.mode)
        learned.add("mode_in_force", in_force)
        if in_force != cell.mode:
            raise RuntimeError(
                f"requested mode {cell.mode!r} but the device runs {in_force!r}; check PT_HPU_LAZY_MODE"
            )
        if cell.mode == "compile":
            options = acc.compile_options(cell.graphs)
            learned.add("compile", {k: str(v) for k, v in options.items()})
            model = compiled(model, options)
            if cell.graphs:
                learned.add("graphs", f"{acc.graph_capture_name} (inside torch.compile)")
            step = make_step(model)
        elif cell.graphs:
            learned.add("graphs", acc.graph_capture_name)
            step = acc.graphed_step(make_step, model, sample_batch)
        else:
            step = make_step(model)
    return step, learned.new(), model


def compiled(model: nn.Module, options: dict[str, Any]) -> nn.Module:
    """``torch.compile`` of the model; under DDP, of the module DDP wraps, in place.

    Dynamo does not trace DDP's own forward (it breaks at DDP's logger and its forward context), and it
    never starts a frame in torch's own modules: a DDP-wrapped ``nn.Sequential`` (mlp) compiled as a whole
    compiled no graph at all, and its "compile" cell ran eagerly (docs/measurements.md, 2026-11-27).
    Compiled inside DDP's forward the module still gets DDP's bucket-split graphs (dynamo's DDPOptimizer
    sees the active DDP module), as the whole-wrapper compile gives a model with its own forward.
    """
    if isinstance(model, DistributedDataParallel):
        model.module = torch.compile(model.module, **options)
        return model
    return torch.compile(model, **options)
