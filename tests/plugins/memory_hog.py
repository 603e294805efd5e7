"""A workload that takes memory until the kernel stops it (``--workloads-from`` this file): in its first
real step (not the estimates' count on ``meta``) it touches 64 MiB blocks, without end, so only an
out-of-memory kill ends it. Run it only under a memory limit (a cgroup), as tests/e2e/test_oom_reason.py
does.
"""

from typing import ClassVar

import torch
from torch import nn

import workloads
from workloads.base import SizeSpec, Workload

BLOCK = 64 * 2**20


@workloads.register
class MemoryHog(Workload):
    name = "memory_hog"
    description = "a linear model whose first real step takes memory until it is killed"
    sizes: ClassVar[dict[str, SizeSpec]] = {"tiny": SizeSpec(4, "tiny"), "standard": SizeSpec(4, "standard")}
    optimizer = "sgd"

    def build_model(self, size):
        return nn.Linear(4, 1)

    def make_batch(self, size, batch_size, device, generator):
        return (torch.randn(batch_size, 4, generator=generator, device=device),)

    def loss(self, model, batch):
        if batch[0].device.type != "meta":
            held = []
            while True:
                held.append(bytearray(b"\x01") * BLOCK)  # written, so resident
        return model(batch[0]).square().mean()
