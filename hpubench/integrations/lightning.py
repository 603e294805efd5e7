"""``HpubenchCallback`` for Lightning's ``Trainer`` (``lightning.pytorch`` and ``pytorch_lightning``).

``Trainer(callbacks=[HpubenchCallback(out="results/my-run")])`` records the run as one hpubench record
(:mod:`hpubench.integrations.recorder` says how steps are timed). A step is one optimizer step: every
micro-batch of ``accumulate_grad_batches``, its samples counted batch by batch (variable and short
batches count as they are). Validation, the sanity check and epoch ends (checkpoints) are left out. FLOPs
come from the module's ``flops_per_batch`` (as Lightning's ``ThroughputMonitor`` reads it), where set.
With several ranks every rank runs the callback; rank 0 writes the record, samples summed over ranks.

The class derives from the ``Callback`` of every Lightning package installed, so either package's
``Trainer`` takes it. Without Lightning, importing this module raises ImportError naming the install.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
from collections.abc import Mapping
from typing import Any

import torch

from hpubench import accelerators
from hpubench.integrations import runrecord
from hpubench.integrations.recorder import DEFAULT_WARMUP_STEPS, StepRecorder, TrainerFacts, batch_samples
from hpubench.precision import spec as precisions

PACKAGES = ("lightning", "pytorch_lightning")  # distribution names; lightning's module is lightning.pytorch
INSTALL = "pip install 'hpubench[lightning]' (or pip install pytorch-lightning)"
# Lightning's precision names -> hpubench's (Lightning 2 spells most of them the same way)
PRECISIONS = {
    "32": "32-true",
    "32-true": "32-true",
    "bf16": "bf16-mixed",
    "bf16-mixed": "bf16-mixed",
    "16": "16-mixed",
    "16-mixed": "16-mixed",
    "bf16-true": "bf16-true",
    "transformer-engine": "fp8",
}
STRATEGIES = {"SingleDeviceStrategy": "single", "SingleHPUStrategy": "single", "FSDPStrategy": "fsdp"}


def _callback_bases() -> tuple[type, ...]:
    bases = []
    for module in ("lightning.pytorch", "pytorch_lightning"):
        try:
            bases.append(importlib.import_module(module).Callback)
        except ImportError:
            continue
    if not bases:
        raise ImportError(f"hpubench.integrations.lightning needs Lightning: {INSTALL}")
    return tuple(dict.fromkeys(bases))


def precision_name(trainer_precision: Any) -> str:
    """hpubench's name for the Trainer's precision; ValueError naming the known ones."""
    name = PRECISIONS.get(str(trainer_precision))
    if name is None or name not in precisions.names():
        known = ", ".join(sorted(PRECISIONS))
        raise ValueError(
            f"HpubenchCallback: the Trainer's precision {trainer_precision!r} has no hpubench counterpart; "
            f"use one of {known}, or drop the callback for this run"
        )
    return name


def strategy_name(strategy: object) -> str:
    cls = type(strategy).__name__
    if cls in STRATEGIES:
        return STRATEGIES[cls]
    if "DDP" in cls or "Parallel" in cls:
        return "ddp"
    return cls.removesuffix("Strategy").lower() or cls


def framework_of(trainer: Any) -> str:
    """``pytorch_lightning 2.6.6`` or ``lightning 2.6.6``: the package whose Trainer runs, and its version."""
    package = type(trainer).__module__.split(".")[0]
    try:
        version = importlib.metadata.version(
            "pytorch-lightning" if package == "pytorch_lightning" else package
        )
    except importlib.metadata.PackageNotFoundError:
        version = "version unknown"
    return f"{package} {version}"


def trainer_facts(trainer: Any, module: Any) -> TrainerFacts:
    root = trainer.strategy.root_device
    kind = root.type if root.type in accelerators.names() else "cpu"
    index = root.index or 0
    compiled = getattr(module, "_compiler_ctx", None) is not None
    mode = "compile" if compiled else accelerators.get(kind)(index).mode_in_force("eager")
    accumulate = int(getattr(trainer, "accumulate_grad_batches", 1) or 1)
    flops = getattr(module, "flops_per_batch", None)
    return TrainerFacts(
        workload=f"lightning:{type(module).__name__}",
        framework=framework_of(trainer),
        trainer=f"{type(trainer).__module__}.{type(trainer).__name__}",
        accelerator=kind,
        device_index=index,
        devices=int(trainer.num_devices),
        nodes=int(trainer.num_nodes),
        precision=precision_name(trainer.precision),
        mode=mode,
        strategy=strategy_name(trainer.strategy),
        accumulate=accumulate,
        flops_per_step=int(flops) * accumulate if isinstance(flops, (int, float)) and flops > 0 else None,
        extra={"lightning_accelerator": type(trainer.accelerator).__name__},
    )


class _Recording(runrecord.Recording):
    """The hook logic; combined with Lightning's ``Callback`` class(es) below."""

    def __init__(self, out: str | os.PathLike[str], warmup_steps: int = DEFAULT_WARMUP_STEPS) -> None:
        super().__init__(out, warmup_steps)
        self._samples = 0
        self._global_step = 0
        self._in_step = False

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        self.recorder = StepRecorder(trainer_facts(trainer, pl_module), self.warmup_steps)
        self._global_step = trainer.global_step
        self._samples, self._in_step = 0, False

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
        if self.recorder is None:
            return
        if not self._in_step:
            self.recorder.step_begin()
            self._in_step = True
        self._samples += max(1, batch_samples(batch))

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        if self.recorder is None or trainer.global_step == self._global_step:
            return  # a micro-batch inside an accumulation cycle: the optimizer has not stepped
        self._global_step = trainer.global_step
        loss = outputs.get("loss") if isinstance(outputs, Mapping) else outputs
        self.recorder.step_end(loss if isinstance(loss, torch.Tensor) else None, self._samples)
        self._samples, self._in_step = 0, False

    def _pause(self, *args: Any) -> None:
        if self.recorder is not None:
            self.recorder.pause()
            self._samples, self._in_step = 0, False

    on_validation_start = _pause
    on_train_epoch_end = _pause

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self.finish()


HpubenchCallback = type("HpubenchCallback", (_Recording, *_callback_bases()), {"__module__": __name__})
HpubenchCallback.__doc__ = __doc__
