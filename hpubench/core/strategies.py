"""Strategies: how many processes train one model and how they talk.

The worker only sees this interface, so the data-parallel strategy slots in beside the single-device one
without the training step or the measurement changing.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from torch import nn

from hpubench.core.accelerators.base import Accelerator


class Strategy(ABC):
    world_size: int = 1
    rank: int = 0
    local_rank: int = 0

    @property
    def is_global_zero(self) -> bool:
        return self.rank == 0

    @abstractmethod
    def setup(self, acc: Accelerator) -> None: ...

    def wrap_model(self, model: nn.Module) -> nn.Module:
        return model

    @abstractmethod
    def gather(self, obj: Any) -> list[Any]:
        """Every rank's ``obj`` on every rank, in rank order."""

    def barrier(self) -> None:
        """Wait for every rank."""

    def teardown(self) -> None:
        """Release what setup took (process groups)."""


class SingleDevice(Strategy):
    name = "single"

    def setup(self, acc: Accelerator) -> None:
        acc.setup()

    def gather(self, obj: Any) -> list[Any]:
        return [obj]
