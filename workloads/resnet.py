"""``resnet``: the convolutional reference, a ResNet written here because torchvision is not a dependency.

The standard size reproduces ResNet-50 v1.5 (stride on the 3x3 conv of the bottleneck) parameter for
parameter, so its throughput can be set beside published ResNet-50 figures. The tiny size keeps the same
ingredients (conv, batch norm, residual adds, pooling) at CIFAR scale so CI exercises them in milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from workloads.base import Batch, SizeSpec, Workload
from workloads.registry import register


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_ch: int, width: int, stride: int) -> None:
        super().__init__()
        out_ch = width * self.expansion
        self.conv1 = nn.Conv2d(in_ch, width, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, out_ch, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_ch)
        self.shortcut = _shortcut(in_ch, out_ch, stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, in_ch: int, width: int, stride: int) -> None:
        super().__init__()
        out_ch = width * self.expansion
        self.conv1 = nn.Conv2d(in_ch, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out_ch, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_ch)
        self.shortcut = _shortcut(in_ch, out_ch, stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return F.relu(out + self.shortcut(x))


def _shortcut(in_ch: int, out_ch: int, stride: int) -> nn.Module:
    """Identity when shapes match, else a strided 1x1 projection (ResNet option B)."""
    if stride == 1 and in_ch == out_ch:
        return nn.Identity()
    return nn.Sequential(nn.Conv2d(in_ch, out_ch, 1, stride=stride, bias=False), nn.BatchNorm2d(out_ch))


@dataclass(frozen=True)
class _Config:
    block: type[BasicBlock] | type[Bottleneck]
    layers: tuple[int, ...]  # blocks per stage
    widths: tuple[int, ...]  # inner width per stage
    image_size: int
    num_classes: int
    imagenet_stem: bool  # 7x7/2 conv + 3x3/2 max-pool, else one 3x3 conv for small images


_CONFIGS = {
    "tiny": _Config(BasicBlock, (1, 1, 1), (16, 32, 64), image_size=32, num_classes=10, imagenet_stem=False),
    "standard": _Config(
        Bottleneck, (3, 4, 6, 3), (64, 128, 256, 512), image_size=224, num_classes=1000, imagenet_stem=True
    ),
}


def _config(size: str) -> _Config:
    try:
        return _CONFIGS[size]
    except KeyError:
        raise ValueError(
            f"unknown size {size!r} for workload 'resnet'; known: {', '.join(_CONFIGS)}"
        ) from None


class ResNet(nn.Module):
    def __init__(self, cfg: _Config) -> None:
        super().__init__()
        stem_ch = cfg.widths[0]
        if cfg.imagenet_stem:
            self.stem = nn.Sequential(
                nn.Conv2d(3, stem_ch, 7, stride=2, padding=3, bias=False),
                nn.BatchNorm2d(stem_ch),
                nn.ReLU(),
                nn.MaxPool2d(3, stride=2, padding=1),
            )
        else:
            self.stem = nn.Sequential(
                nn.Conv2d(3, stem_ch, 3, padding=1, bias=False), nn.BatchNorm2d(stem_ch), nn.ReLU()
            )
        stages: list[nn.Module] = []
        in_ch = stem_ch
        for i, (n_blocks, width) in enumerate(zip(cfg.layers, cfg.widths, strict=True)):
            blocks: list[nn.Module] = []
            for j in range(n_blocks):
                stride = 2 if i > 0 and j == 0 else 1
                blocks.append(cfg.block(in_ch, width, stride))
                in_ch = width * cfg.block.expansion
            stages.append(nn.Sequential(*blocks))
        self.stages = nn.Sequential(*stages)
        self.fc = nn.Linear(in_ch, cfg.num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stages(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


@register
class ResNetWorkload(Workload):
    name = "resnet"
    description = "ResNet CNN image classifier (batch norm, residual blocks), SGD with momentum"
    sizes: ClassVar[dict[str, SizeSpec]] = {
        "tiny": SizeSpec(16, "ResNet-8-class (basic blocks 16/32/64): 0.08M params, 32x32, 10 classes"),
        "standard": SizeSpec(
            128, "ResNet-50-class (bottlenecks 3-4-6-3): 25.6M params, 224x224, 1000 classes"
        ),
    }
    optimizer = "sgd"
    lr = 0.1

    def build_model(self, size: str) -> nn.Module:
        return ResNet(_config(size))

    def make_batch(
        self, size: str, batch_size: int, device: torch.device, generator: torch.Generator | None
    ) -> Batch:
        cfg = _config(size)
        shape = (batch_size, 3, cfg.image_size, cfg.image_size)
        images = torch.randn(shape, generator=generator, device=device)
        labels = torch.randint(0, cfg.num_classes, (batch_size,), generator=generator, device=device)
        return images, labels

    def loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        images, labels = batch
        return F.cross_entropy(model(images), labels)
