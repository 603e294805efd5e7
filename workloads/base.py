"""The workload interface: a model, deterministic synthetic batches, a loss, and what a step processes.

A workload knows nothing of devices, precision or modes: the core applies those. Batches are generated
on the device from a seeded generator (no downloads, identical across runs), and every method must also
work on the ``meta`` device with ``generator=None``, which is how FLOPs are counted without computing.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar

import torch
from torch import nn

from hpubench.errors import OptionValueError

Batch = tuple[torch.Tensor, ...]


@dataclass(frozen=True)
class SizeSpec:
    batch_size: int
    description: str  # e.g. "ResNet-50-class: 25.6M parameters, 224x224 images"


class Workload(ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    sizes: ClassVar[dict[str, SizeSpec]]  # must have "tiny" (CI-fast) and "standard" (realistic)
    optimizer: ClassVar[str] = "adamw"  # "adamw" or "sgd": one optimizer (several are an HPU limitation)
    lr: ClassVar[float] = 1e-3
    # Option name -> what it does: the names a cell may set with ``--option name=value`` (or ``options`` in
    # a matrix file). A cell's values reach the instance as ``self.options`` (``workloads.get(name, opts)``),
    # so every method (on meta too) sees them; read them with ``int_option``.
    workload_options: ClassVar[dict[str, str]] = {}
    # Why this workload cannot run on this installation (a missing optional package), or None: its cells
    # are then skipped with this reason, before anything runs, instead of failing one by one.
    unavailable: ClassVar[str | None] = None
    # Whether ``make_batch`` draws only from the generator it is given, so the seed alone fixes the data:
    # the numerics check (hpubench.analysis.numerics) retrains a 32-true reference on the same batches. A
    # workload that reads a dataset or draws from the global RNG sets False: its numerics are "unchecked".
    data_from_seed: ClassVar[bool] = True
    options: Mapping[str, str] = MappingProxyType({})

    def int_option(self, name: str, default: int) -> int:
        """The positive integer value of option ``name`` for this cell, or ``default`` when it is not set."""
        raw = self.options.get(name)
        if raw is None:
            return default
        try:
            value = int(str(raw))
        except ValueError:
            value = 0
        if value < 1:
            raise OptionValueError(
                f"workload {self.name!r}: option {name} takes a positive integer, got {raw!r}; "
                f"fix: e.g. --option {name}=128"
            )
        return value

    @abstractmethod
    def build_model(self, size: str) -> nn.Module:
        """The model for ``size``, created on the current default device (meta works)."""

    @abstractmethod
    def make_batch(
        self, size: str, batch_size: int, device: torch.device, generator: torch.Generator | None
    ) -> Batch:
        """One synthetic batch on ``device``; deterministic for a given generator state."""

    @abstractmethod
    def loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        """Forward pass and scalar loss for one batch."""

    def make_optimizer(self, model: nn.Module, capturable: bool) -> torch.optim.Optimizer | None:
        """The workload's own optimizer over ``model`` (as the strategy wrapped it), or None: the core's,
        from ``optimizer`` and ``lr``. A LightningModule's ``configure_optimizers`` comes in here."""
        return None

    def blocks(self, model: nn.Module) -> list[nn.Module]:
        """The model's repeated blocks (transformer layers), in order: a sharding strategy (fsdp) shards
        each one on its own, then the rest of the model. Default: the entries of the model's top-level
        ``nn.ModuleList`` attributes (gpt's ``blocks``, bert's ``layers``); none for other models."""
        return [m for child in model.children() if isinstance(child, nn.ModuleList) for m in child]

    def fingerprint(self) -> bytes:
        """What decides the model beyond this class's source file (a configuration file it reads): the
        estimate probe's cached counts are reused only while both are unchanged."""
        return b""

    def tokens_per_sample(self, size: str) -> int | None:
        """Tokens in one sample for sequence workloads (tokens/s is then reported), else None."""
        return None
