"""Workloads too big for this machine, for the estimator's tests: they are counted on meta and skipped,
never built on a real device (``hpubench.run.preflight``)."""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import nn

import workloads
from workloads.base import SizeSpec, Workload


class _Linear(Workload):
    description = "one linear layer on noise"
    features = (8, 8)

    def build_model(self, size):
        return nn.Linear(*self.features)

    def make_batch(self, size, batch_size, device, generator):
        return (torch.randn((batch_size, self.features[0]), generator=generator, device=device),)

    def loss(self, model, batch):
        return model(batch[0]).square().mean()


@workloads.register
class HugeMemory(_Linear):
    """2e10 parameters: ~400 GB with AdamW at fp32, more than any machine here has."""

    name = "hugemem"
    sizes: ClassVar[dict[str, SizeSpec]] = {"tiny": SizeSpec(2, "one 100000 x 200000 linear layer")}
    features = (100_000, 200_000)


@workloads.register
class HugeFlops(_Linear):
    """Small in memory (~0.4 GB) but ~26 TFLOP per step: the same 4096 x 4096 layer applied 64 times to
    one batch (nothing new is saved for backward), minutes per step on any CPU."""

    name = "hugeflops"
    sizes: ClassVar[dict[str, SizeSpec]] = {"tiny": SizeSpec(4096, "one 4096 x 4096 linear layer, 64 times")}
    features = (4096, 4096)

    def loss(self, model, batch):
        x = batch[0]
        return sum(model(x).mean() for _ in range(64))
