"""A workload whose bf16 loss is finite but wrong (``--workloads-from tests/plugins/numerics_wrong.py``).

``bf16wrong`` scales its loss by 1.5 whenever the model computed in bfloat16 (bf16 autocast or bf16
weights): the run still trains, every loss is finite, and the step time is unchanged, so only the numerics
check can tell. At 32-true it is a plain small network and must come out ``ok``.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import nn

import workloads
from workloads.base import Batch, SizeSpec, Workload

WIDTH = 32
WRONG_BY = 1.5


@workloads.register
class Bf16Wrong(Workload):
    name = "bf16wrong"
    description = "two linear layers; the loss is 1.5x too large when computed in bf16"
    sizes: ClassVar[dict[str, SizeSpec]] = {"tiny": SizeSpec(8, "two 32x32 linear layers")}

    def build_model(self, size: str) -> nn.Module:
        return nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.Tanh(), nn.Linear(WIDTH, WIDTH))

    def make_batch(
        self, size: str, batch_size: int, device: torch.device, generator: torch.Generator | None
    ) -> Batch:
        x = torch.randn((batch_size, WIDTH), generator=generator, device=device)
        return (x, x.flip(-1))

    def loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        out = model(batch[0])
        scale = WRONG_BY if out.dtype == torch.bfloat16 else 1.0
        return scale * (out.float() - batch[1].float()).square().mean()
