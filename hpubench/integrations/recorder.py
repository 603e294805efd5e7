"""A trainer's optimizer steps in, timed the way a cell's are: what both trainer callbacks share.

A step is one optimizer step (every micro-batch of a gradient-accumulation cycle), timed from one step's
end to the next's, so the trainer's loop, its data loading and its hooks are in it: the figure is the one
the training run gets. Validation and other pauses the callback reports (``pause``; the next step's
``step_begin`` resumes) are left out. The warm-up follows a cell's rule
(:class:`hpubench.plan.autosteps.WarmupRule`): the planned steps, then more while the compiler still
compiles, bounded; its steps are timed on the host with a device sync at each end. The measured steps are
timed by the device's own step clock (``Accelerator.step_clock``): the host's time around a sync on the
CPU and the HPU, device events on CUDA, so no sync is added between a CUDA run's steps.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._pytree import tree_leaves

from hpubench import accelerators
from hpubench.accelerators.base import Accelerator
from hpubench.measure.clocks import StepClock
from hpubench.measure.compilecount import CompileProgress, CompileWindow
from hpubench.measure.conditions_probe import InterferenceMeter
from hpubench.plan.autosteps import WarmupRule

DEFAULT_WARMUP_STEPS = 3  # as a cell's (hpubench.plan.cell.Cell.warmup_steps)
WHAT_A_STEP_IS = (
    "one optimizer step of the trainer, end to end (its loop, data loading and hooks included; "
    "validation and checkpoint pauses the callback sees are left out)"
)


def batch_samples(batch: Any) -> int:
    """A batch's samples: the leading size of its first tensor of rank 1 or more (Lightning's own rule when
    it logs), 0 where it holds none."""
    for leaf in tree_leaves(batch):
        if isinstance(leaf, torch.Tensor) and leaf.dim() > 0:
            return int(leaf.shape[0])
    return 0


@dataclass(frozen=True)
class TrainerFacts:
    """What the trainer says about the run, for the record's cell and runtime facts."""

    workload: str  # "lightning:<module class>" or "hf:<model class>"
    framework: str  # e.g. "pytorch_lightning 2.6.6"
    trainer: str  # the trainer's class
    accelerator: str  # an hpubench accelerator name: cpu, cuda, hpu
    device_index: int
    devices: int  # per node
    nodes: int
    precision: str  # an hpubench precision name
    mode: str  # eager or compile (lazy where the HPU runs lazily)
    strategy: str  # single, ddp, fsdp, or the trainer's own name
    accumulate: int = 1  # micro-batches per optimizer step
    flops_per_step: int | None = None  # one device's, where the module or trainer gives it
    tokens_per_sample: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def world_size(self) -> int:
        return self.devices * self.nodes


@dataclass
class Steps:
    """What the recorder gathered; rank 0's becomes the record (:mod:`hpubench.integrations.runrecord`)."""

    warmup_s: list[float] = field(default_factory=list)
    warmup_compiles: list[int] = field(default_factory=list)
    measured_s: list[float] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    samples: list[int] = field(default_factory=list)  # this rank's, per measured step
    pending_samples: list[int] = field(default_factory=list)  # measured steps begun, not yet read
    facts: dict[str, Any] = field(default_factory=dict)
    started_at: float = field(default_factory=time.time)


class StepRecorder:
    """``step_begin`` / ``step_end`` at each optimizer step's edges, ``pause`` where work that is not
    training begins, ``close`` at the end; then :attr:`steps` holds the figures."""

    def __init__(self, facts: TrainerFacts, warmup_steps: int = DEFAULT_WARMUP_STEPS) -> None:
        if warmup_steps < 1:
            raise ValueError(f"warmup_steps must be at least 1, got {warmup_steps}")
        self.facts = facts
        self.acc: Accelerator = accelerators.get(facts.accelerator)(facts.device_index)
        self.rule = WarmupRule(warmup_steps)
        self.warmup_left = warmup_steps
        self.steps = Steps()
        self._progress = CompileProgress(self.acc.compile_counters())
        self._window = CompileWindow(self.acc.compile_counters())
        self._meter = InterferenceMeter(os.getpid())
        self._clock: StepClock | None = None
        self._measuring = False
        self._edge: float | None = None  # host time of the current warm-up step's start
        self._placeholder: torch.Tensor | None = None
        self._closed = False

    def step_begin(self) -> None:
        """A step starts: only the first after the start or a pause opens a boundary (contiguous)."""
        if self._measuring:
            if self._clock is None:
                self._clock = self.acc.step_clock()
                self._clock.begin()
        elif self._edge is None:
            self.acc.synchronize()
            self._edge = time.perf_counter()
            self._progress()

    def step_end(self, loss: torch.Tensor | None, samples: int) -> None:
        """An optimizer step ended, having trained ``samples`` samples on this rank (all micro-batches)."""
        if self._closed:
            return
        if not self._measuring:
            self._warmup_end(loss)
            return
        if self._clock is None:  # a step whose start the trainer did not report: open here
            self.step_begin()
            return
        self._clock.end(self._loss(loss))
        self.steps.pending_samples.append(int(samples))
        self._clock.begin()
        self._take(self._clock.ready())

    def _warmup_end(self, loss: torch.Tensor | None) -> None:
        if self._edge is None:
            self.step_begin()
            return
        self.acc.synchronize()
        now = time.perf_counter()
        self.steps.warmup_s.append(now - self._edge)
        self.steps.warmup_compiles.append(self._progress())
        self._edge = now
        if loss is not None:
            self._check_finite(float(loss.detach().float().item()))
        self.warmup_left -= 1
        if self.warmup_left > 0:
            return
        self.warmup_left = self.rule(self.steps.warmup_s, self.steps.warmup_compiles)
        if self.warmup_left == 0:
            self._open_window()

    def _open_window(self) -> None:
        """The measured window opens where the last warm-up step ended (the device synchronised)."""
        self.steps.facts.update(dict(self.rule.facts(self.steps.warmup_s, self.steps.warmup_compiles)))
        self._measuring = True
        self.acc.reset_peak_memory_stats()
        self._window.start()
        self._meter.start()
        self._clock = self.acc.step_clock()
        self._clock.begin()

    def pause(self) -> None:
        """Work that is not a training step begins (validation): the steps so far are read, the window's
        clock stops; the next step opens a new boundary."""
        if self._measuring and self._clock is not None:
            self._take(self._clock.finish())
            self._clock = None
            self.steps.pending_samples.clear()  # a step begun and never ended is no step
        self._edge = None

    def close(self) -> Steps:
        """The run ended: the last steps read, the window's probes closed. Idempotent."""
        if not self._closed:
            self.pause()
            if self._measuring:
                self._meter.stop()
                self._window.stop()
                self.steps.facts.update(self._meter.record())
                result = self._window.result()
                if result is not None:
                    self.steps.facts.update(result.runtime_fields())
                self.steps.facts["memory"] = self.acc.memory_stats()
            self._closed = True
        return self.steps

    def _take(self, done: list[tuple[float, float]]) -> None:
        for seconds, loss in done:
            self._check_finite(loss)
            self.steps.measured_s.append(seconds)
            self.steps.losses.append(loss)
            self.steps.samples.append(self.steps.pending_samples.pop(0))

    def _loss(self, loss: torch.Tensor | None) -> torch.Tensor:
        """The step's loss for the clock; a step whose loss the callback could not see (a model that
        returns no ``.loss``) gets a zero held on the device, which the record states."""
        if loss is not None:
            return loss
        if self._placeholder is None:
            self._placeholder = torch.zeros((), device=self.acc.torch_device())
            self.steps.facts["loss_source"] = "none: the trainer's model computed no loss of its own"
        return self._placeholder

    def _check_finite(self, loss: float) -> None:
        if not math.isfinite(loss) and "non_finite_loss" not in self.steps.facts:
            step = len(self.steps.warmup_s) + len(self.steps.measured_s)
            self.steps.facts["non_finite_loss"] = f"the loss was {loss} at step {step}"
