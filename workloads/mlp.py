"""``mlp``: the MNIST-shaped classifier of Lightning's HPU examples, the smallest end-to-end check.

It exercises only linear layers and cross-entropy, so when it misbehaves the harness (not a kernel) is
the first suspect. The data is MNIST-shaped noise: shapes and the loss matter for timing, pixels do not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from workloads.base import Batch, SizeSpec, Workload
from workloads.registry import register

IMAGE_SHAPE = (1, 28, 28)
NUM_CLASSES = 10


@dataclass(frozen=True)
class _Config:
    hidden: tuple[int, ...]


_CONFIGS = {
    "tiny": _Config(hidden=(128,)),
    "standard": _Config(hidden=(2048, 2048, 2048)),
}


def _config(size: str) -> _Config:
    try:
        return _CONFIGS[size]
    except KeyError:
        raise ValueError(f"unknown size {size!r} for workload 'mlp'; known: {', '.join(_CONFIGS)}") from None


def build_mlp(hidden: tuple[int, ...]) -> nn.Sequential:
    """Flatten, then Linear+ReLU per hidden width, then the 10-way classifier."""
    in_features = IMAGE_SHAPE[0] * IMAGE_SHAPE[1] * IMAGE_SHAPE[2]
    layers: list[nn.Module] = [nn.Flatten()]
    for width in hidden:
        layers += [nn.Linear(in_features, width), nn.ReLU()]
        in_features = width
    layers.append(nn.Linear(in_features, NUM_CLASSES))
    return nn.Sequential(*layers)


@register
class MLP(Workload):
    name = "mlp"
    description = "MNIST-shaped MLP classifier (28x28 grayscale, 10 classes), as in Lightning's HPU examples"
    sizes: ClassVar[dict[str, SizeSpec]] = {
        "tiny": SizeSpec(64, "MLP 784-128-10: 0.10M params, 28x28"),
        "standard": SizeSpec(256, "MLP 784-2048x3-10: 10.0M params, 28x28"),
    }

    def build_model(self, size: str) -> nn.Module:
        return build_mlp(_config(size).hidden)

    def make_batch(
        self, size: str, batch_size: int, device: torch.device, generator: torch.Generator | None
    ) -> Batch:
        _config(size)
        images = torch.randn((batch_size, *IMAGE_SHAPE), generator=generator, device=device)
        labels = torch.randint(0, NUM_CLASSES, (batch_size,), generator=generator, device=device)
        return images, labels

    def loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        images, labels = batch
        return F.cross_entropy(model(images), labels)
