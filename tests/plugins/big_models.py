"""Workloads too big for this machine, for the estimator's tests: they are counted on meta and skipped,
never built on a real device (``hpubench.preflight``)."""

from __future__ import annotations

from typing import ClassVar

import torch
import torch.nn.functional as F
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
        return F.mse_loss(model(batch[0]), torch.zeros((), device=batch[0].device))


@workloads.register
class HugeMemory(_Linear):
    """2e10 parameters: ~400 GB with AdamW at fp32, more than any machine here has."""

    name = "hugemem"
    sizes: ClassVar[dict[str, SizeSpec]] = {"tiny": SizeSpec(2, "one 100000 x 200000 linear layer")}
    features = (100_000, 200_000)


@workloads.register
class HugeFlops(_Linear):
    """Small in memory (~2 GB) but ~6.6 TFLOP per step: hours per step on a CPU, minutes at best."""

    name = "hugeflops"
    sizes: ClassVar[dict[str, SizeSpec]] = {
        "tiny": SizeSpec(8192, "one 8192 x 8192 linear layer, batch 8192")
    }
    features = (8192, 8192)
