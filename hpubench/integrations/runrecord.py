"""A recorded training run as one hpubench record in a run directory, written by global rank 0.

The cell names the run as the trainer configured it (workload ``lightning:<module class>`` or
``hf:<model class>``, size ``trainer``, the trainer's device, precision, mode and strategy); the condition is
``plain``: the user's own process, with whatever heap and threads it has. Every recorded run of the same
configuration into the same directory is one more repetition of that cell, so ``gate`` and ``compare``
read several trainings as repeats.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from hpubench.accelerators.base import Accelerator
from hpubench.analysis import numerics
from hpubench.analysis.metrics import build_metrics
from hpubench.analysis.peaks import peak_for
from hpubench.analysis.quality import with_quality
from hpubench.integrations.recorder import (
    DEFAULT_WARMUP_STEPS,
    WHAT_A_STEP_IS,
    StepRecorder,
    Steps,
    TrainerFacts,
)
from hpubench.measure.conditions_probe import thread_facts
from hpubench.measure.heap import user_allocator
from hpubench.plan.cell import Cell
from hpubench.store.record import STATUS_FAILED, STATUS_OK, CellResult
from hpubench.store.rundir import ResultStore
from hpubench.store.runmeta import run_metadata

SIZE = "trainer"  # a recorded run's size: the model as the user's code builds it
SPEC_NAME = "trainer callback"
UNCHECKED = (
    "a trainer's own run: no 32-true reference is retrained beside it; benchmark the module as a "
    "cell (--workload lightning:FILE.py:CLASS or hf:...) for a numerics verdict"
)


def rank() -> int:
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def global_samples(samples: list[int]) -> tuple[list[int], int]:
    """Each measured step's samples over every rank (one gather, at the end), and the ranks counted."""
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return list(samples), 1
    gathered: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, list(samples))
    steps = min(len(g) for g in gathered)
    return [sum(int(g[i]) for g in gathered) for i in range(steps)], len(gathered)


def cell_of(facts: TrainerFacts, batch_size: int | None, steps: Steps) -> Cell:
    extra = {"condition": "plain"}
    if facts.strategy != "single":
        extra["strategy"] = facts.strategy
    return Cell(
        workload=facts.workload,
        size=SIZE,
        accelerator=facts.accelerator,
        devices=facts.devices,
        nodes=facts.nodes,
        precision=facts.precision,
        mode=facts.mode,
        batch_size=batch_size,
        warmup_steps=max(1, len(steps.warmup_s)),
        steps=max(2, len(steps.measured_s)),
        extra=tuple(extra.items()),
    )


def runtime_facts(facts: TrainerFacts, steps: Steps, acc: Accelerator, ranks: int) -> dict[str, Any]:
    """The record's runtime facts: the recorder's own, the device's (read from the recorder's accelerator)
    and the trainer's."""
    user = user_allocator(os.environ)
    out = {k: v for k, v in steps.facts.items() if k != "memory"}
    out.update(
        accelerator=facts.accelerator,
        device_name=acc.device_name(),
        device_index=facts.device_index,
        strategy=facts.strategy,
        world_size=facts.world_size,
        software={**acc.software_versions(), "torch": torch.__version__, "trainer": facts.framework},
        env_flags=acc.env_flags(),
        threads=thread_facts("the trainer's process: hpubench sets nothing"),
        heap={"policy": f"user: {user}" if user else "system"},
        condition={"name": "plain", "what": "the user's own training process", "process": "the trainer's"},
        mode_requested=facts.mode,
        mode_in_force=facts.mode,
        timing=f"{acc.step_clock().method}; a step is {WHAT_A_STEP_IS}",
        steps_stop="the training run ended",
        trainer={
            "framework": facts.framework,
            "class": facts.trainer,
            "accumulate_grad_batches": facts.accumulate,
            "ranks_counted": ranks,
            **dict(facts.extra),
        },
    )
    return out


def build_record(recorder: StepRecorder) -> CellResult:
    """Rank 0's record of the recorder's run, closed first (every rank must call it: the samples are
    gathered)."""
    facts, steps = recorder.facts, recorder.close()
    samples, ranks = global_samples(steps.samples)
    n = min(len(samples), len(steps.measured_s))
    measured, samples = steps.measured_s[:n], samples[:n]
    per_device = round(sum(samples) / n / facts.world_size) if n else None
    cell = cell_of(facts, per_device, steps)
    runtime = runtime_facts(facts, steps, recorder.acc, ranks)
    started = datetime.fromtimestamp(steps.started_at, timezone.utc).isoformat(timespec="seconds")
    why_not = _why_no_figure(steps, n)
    if why_not is not None:
        diverged = "non_finite_loss" in steps.facts
        return CellResult(
            cell,
            STATUS_FAILED,
            reason=why_not,
            runtime=runtime,
            warmup_times_s=tuple(steps.warmup_s),
            started_at=started,
            numerics=numerics.DIVERGED if diverged else numerics.UNCHECKED,
            numerics_reasons=(why_not if diverged else UNCHECKED,),
        )
    mean_samples = sum(samples) / n
    metrics = build_metrics(
        warmup_s=steps.warmup_s,
        measured_s=measured,
        loss_first=steps.losses[0],
        loss_last=steps.losses[n - 1],
        samples_per_step=round(mean_samples),
        tokens_per_step=round(mean_samples * facts.tokens_per_sample) if facts.tokens_per_sample else None,
        flops_per_step=facts.flops_per_step * facts.world_size if facts.flops_per_step else None,
        world_size=facts.world_size,
        peak=peak_for(facts.accelerator, str(runtime["device_name"]), facts.precision),
        samples_each=samples,
    )
    return with_quality(
        CellResult(
            cell,
            STATUS_OK,
            metrics=metrics,
            memory=steps.facts.get("memory"),
            runtime=runtime,
            step_times_s=tuple(measured),
            warmup_times_s=tuple(steps.warmup_s),
            started_at=started,
            numerics=numerics.UNCHECKED,
            numerics_reasons=(UNCHECKED,),
        )
    )


def _why_no_figure(steps: Steps, measured: int) -> str | None:
    if "non_finite_loss" in steps.facts:
        return f"non-finite loss: {steps.facts['non_finite_loss']}; the figures would describe a broken run"
    if measured < 2:
        warm = len(steps.warmup_s)
        return (
            f"the run ended after {warm + measured} optimizer step(s), {warm} of them warm-up: no figure "
            "needs at least 2 measured steps; train for more steps or pass a smaller warmup_steps"
        )
    return None


def write(out: str | os.PathLike[str], result: CellResult) -> Path:
    """Append the record to the run directory ``out`` (created with its metadata where new); a cell already
    there gets the record as its next repetition. Returns the directory."""
    store = ResultStore(out)
    if store.read_meta() is None:
        store.write_meta(run_metadata(argv=list(sys.argv), spec_name=SPEC_NAME, repeat=1))
    repeat = sum(1 for r in store.load() if r.key == result.key)
    final = result if repeat == 0 else replace(result, repeat=repeat)
    store.append(final)
    return store.run_dir


class Recording:
    """What both callbacks hold: where the run goes, the warm-up asked for, the recorder of the run in
    progress, and where its record went; ``finish`` ends the run (every rank) and writes it (rank 0)."""

    def __init__(self, out: str | os.PathLike[str], warmup_steps: int = DEFAULT_WARMUP_STEPS) -> None:
        if warmup_steps < 1:
            raise ValueError(f"HpubenchCallback: warmup_steps must be at least 1, got {warmup_steps}")
        self.out = os.fspath(out)
        self.warmup_steps = warmup_steps
        self.recorder: StepRecorder | None = None
        self.record_written: Path | None = None

    def finish(self) -> None:
        if self.recorder is None:
            return
        record = build_record(self.recorder)
        if rank() == 0:
            self.record_written = write(self.out, record)
        self.recorder = None
