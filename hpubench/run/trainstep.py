"""The training step every cell runs, assembled from the core's parts.

One function builds it for every device, precision and mode: zero grads, forward under the precision's
context, (scaled) backward, the accelerator's post-backward hook (HPU lazy: mark_step), optimizer step,
the post-step hook. Graph capture and compilation wrap this same step, so they cannot change its meaning.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from hpubench.accelerators.base import Accelerator, StepFn
from hpubench.plan.cell import Cell
from hpubench.precision.apply import PreparedPrecision
from hpubench.run.cellrun.facts import Facts, Learned
from workloads.base import Batch, Workload


def make_optimizer(workload: Workload, model: nn.Module, capturable: bool) -> torch.optim.Optimizer:
    """The workload's one optimizer (several optimizers are a known HPU limitation)."""
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
    scaler = prepared.scaler
    loss_of = workload.loss

    def make_plain_step(net: nn.Module) -> StepFn:
        def step(batch: Batch) -> torch.Tensor:
            optimizer.zero_grad(set_to_none=True)
            loss = loss_of(net, batch)
            loss.backward()
            optimizer.step()
            return loss

        return step

    def make_step(net: nn.Module) -> StepFn:
        def step(batch: Batch) -> torch.Tensor:
            optimizer.zero_grad(set_to_none=True)
            with prepared.context():
                loss = loss_of(net, batch)
            if scaler is not None:
                scaler.scale(loss).backward()
            else:
                loss.backward()
            acc.after_backward()
            if scaler is not None:
                scaler.step(optimizer)
                scaler.update()
            else:
                optimizer.step()
            acc.after_optimizer_step()
            return loss

        return step

    return make_plain_step if prepared.plain and not acc.has_step_hooks() else make_step


def build_step(
    cell: Cell,
    model: nn.Module,
    make_step: Callable[[nn.Module], StepFn],
    acc: Accelerator,
    sample_batch: Batch,
) -> tuple[StepFn, Facts]:
    """Apply the cell's mode and graph capture; refuse to run a mode the device is not really in.

    Returns the step and the facts that say how it runs (mode asked for and in force, torch.compile's
    options, the graph capture), for the record to label its figures with what ran. A failure part way
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
            model = torch.compile(model, **options)
            if cell.graphs:
                learned.add("graphs", f"{acc.graph_capture_name} (inside torch.compile)")
            step = make_step(model)
        elif cell.graphs:
            learned.add("graphs", acc.graph_capture_name)
            step = acc.graphed_step(make_step, model, sample_batch)
        else:
            step = make_step(model)
    return step, learned.new()
