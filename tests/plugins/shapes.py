"""Test workloads for the steady-state proof (``--workloads-from tests/plugins/shapes.py``).

``shapeshift`` changes its input shape inside the measured window: the worker makes 4 batches and cycles
through them, warm-up steps first (2 in the tests, then the lead-in step, ``hpubench.measure.steps``), so
the 4th batch, the only long one, is the first measured step. Under ``--mode compile`` that step
recompiles (a dynamo guard on the sequence length fails); on HPU lazy mode it compiles a new graph.
``shapefixed`` is the same model with one shape. Batches are counted per process, only real ones (FLOPs
are counted on ``meta`` with no generator).
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import nn

import workloads
from workloads.base import Batch, SizeSpec, Workload

SHORT, LONG, VOCAB, WIDTH = 8, 12, 64, 32


class _Sequences(Workload):
    description = "embedding, linear, mean over the sequence: any sequence length runs"
    sizes: ClassVar[dict[str, SizeSpec]] = {"tiny": SizeSpec(4, "embedding 64x32 and one 32x32 linear layer")}
    shift = False

    def __init__(self) -> None:
        self.made = 0

    def build_model(self, size: str) -> nn.Module:
        return nn.Sequential(nn.Embedding(VOCAB, WIDTH), nn.Linear(WIDTH, WIDTH))

    def make_batch(
        self, size: str, batch_size: int, device: torch.device, generator: torch.Generator | None
    ) -> Batch:
        length = SHORT
        if generator is not None:
            if self.shift and self.made % 4 == 3:
                length = LONG
            self.made += 1
        return (torch.randint(0, VOCAB, (batch_size, length), generator=generator, device=device),)

    def loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        return model(batch[0]).mean(dim=1).square().mean()


@workloads.register
class ShapeShift(_Sequences):
    name = "shapeshift"
    shift = True


@workloads.register
class ShapeFixed(_Sequences):
    name = "shapefixed"
