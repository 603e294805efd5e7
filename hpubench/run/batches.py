"""The synthetic batches a cell trains on: drawn with a seeded generator, then placed on the device.

The generator lives where the accelerator says (``Accelerator.generator_device``): the device itself on
CPU and CUDA, the host on HPU, where torch refuses a Generator (contract C1). Batches drawn on the host
are moved to the device, so every device kind trains on the same data for a given seed, and CPU cells
draw exactly what they drew before this hook existed.
"""

from __future__ import annotations

import torch

from workloads.base import Batch, Workload


def synthetic_batches(
    workload: Workload,
    size: str,
    batch_size: int,
    device: torch.device,
    generator_device: torch.device,
    seed: int,
    count: int,
) -> list[Batch]:
    """``count`` batches of ``workload`` at ``size`` on ``device``, drawn in order from one generator, so
    the seed alone fixes the data every step trains on, whatever the device."""
    generator = torch.Generator(device=generator_device)
    generator.manual_seed(seed)
    batches: list[Batch] = []
    for _ in range(count):
        batch = workload.make_batch(size, batch_size, generator_device, generator)
        if generator_device != device:
            batch = tuple(t.to(device) for t in batch)
        batches.append(batch)
    return batches
