"""``HpubenchCallback`` for Hugging Face's ``transformers.Trainer`` (and its subclasses: optimum-habana's
``GaudiTrainer``).

``Trainer(..., callbacks=[HpubenchCallback(out="results/my-run")])`` records the run as one hpubench record
(:mod:`hpubench.integrations.recorder` says how steps are timed). A step is one optimizer step, from
``on_step_begin`` to ``on_step_end`` (every micro-batch of ``gradient_accumulation_steps``). The Trainer's
callbacks are given no batch and no loss, so a forward hook on the model reads both from the forward
calls inside each step: the samples are the leading size of the first input tensor of every micro-batch
(a short last batch counts as it is), the loss the model's own ``.loss``. Evaluation and checkpoint saves
are left out. With several processes rank 0 writes the record, samples summed over ranks.
"""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Mapping
from typing import Any

import torch

from hpubench import accelerators
from hpubench.integrations import runrecord
from hpubench.integrations.recorder import DEFAULT_WARMUP_STEPS, StepRecorder, TrainerFacts, batch_samples

try:
    from transformers import TrainerCallback
except ImportError as exc:  # pragma: no cover - exercised by the extras test in a bare environment
    raise ImportError(
        "hpubench.integrations.transformers needs transformers: pip install 'hpubench[hf]' "
        "(or pip install transformers)"
    ) from exc


TRAINER = "transformers.Trainer or a subclass (its callbacks are not told which)"


def precision_name(args: Any, model: torch.nn.Module) -> str:
    """hpubench's name for what the Trainer runs: autocast by ``bf16`` / ``fp16``, else the weights' type."""
    if getattr(args, "bf16", False):
        return "bf16-mixed"
    if getattr(args, "fp16", False):
        return "16-mixed"
    dtype = next((p.dtype for p in model.parameters()), torch.float32)
    return "bf16-true" if dtype == torch.bfloat16 else "32-true"


def strategy_name(args: Any) -> str:
    if getattr(args, "deepspeed", None):
        return "deepspeed"
    if getattr(args, "fsdp", None):
        return "fsdp"
    return "ddp" if int(getattr(args, "world_size", 1) or 1) > 1 else "single"


def trainer_facts(args: Any, model: torch.nn.Module, trainer_class: str) -> TrainerFacts:
    device = args.device
    kind = device.type if device.type in accelerators.names() else "cpu"
    index = device.index or 0
    world = int(getattr(args, "world_size", 1) or 1)
    per_node = int(os.environ.get("LOCAL_WORLD_SIZE", world) or world)
    config = getattr(model, "config", None)
    name = getattr(config, "model_type", None) or type(model).__name__
    acc = accelerators.get(kind)(index)
    mode = "compile" if getattr(args, "torch_compile", False) else acc.mode_in_force("eager")
    return TrainerFacts(
        workload=f"hf:{name}",
        framework=f"transformers {importlib.metadata.version('transformers')}",
        trainer=trainer_class,
        accelerator=kind,
        device_index=index,
        devices=per_node,
        nodes=max(1, world // per_node),
        precision=precision_name(args, model),
        mode=mode,
        strategy=strategy_name(args),
        accumulate=int(getattr(args, "gradient_accumulation_steps", 1) or 1),
        extra={"model_class": f"{type(model).__module__}.{type(model).__name__}"},
    )


class HpubenchCallback(runrecord.Recording, TrainerCallback):  # type: ignore[misc]  # transformers: untyped
    """Records the Trainer's run; see the module docstring."""

    def __init__(self, out: str | os.PathLike[str], warmup_steps: int = DEFAULT_WARMUP_STEPS) -> None:
        super().__init__(out, warmup_steps)
        self._hook: Any = None
        self._samples = 0
        self._loss: torch.Tensor | None = None

    def _forward(self, module: Any, args: tuple[Any, ...], kwargs: dict[str, Any], output: Any) -> None:
        if not module.training:
            return  # evaluation
        self._samples += batch_samples((args, kwargs))
        loss = getattr(output, "loss", None)
        if loss is None and isinstance(output, Mapping):
            loss = output.get("loss")
        self._loss = loss if isinstance(loss, torch.Tensor) else None

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        self.recorder = StepRecorder(trainer_facts(args, model, TRAINER), self.warmup_steps)
        self._hook = model.register_forward_hook(self._forward, with_kwargs=True)

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.recorder is not None:
            self._samples, self._loss = 0, None
            self.recorder.step_begin()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.recorder is not None:
            self.recorder.step_end(self._loss, max(1, self._samples))
            self._loss = None

    def _pause(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.recorder is not None:
            self.recorder.pause()

    on_evaluate = _pause
    on_save = _pause
    on_epoch_end = _pause

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._hook is not None:
            self._hook.remove()
            self._hook = None
        self.finish()
