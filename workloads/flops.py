"""FLOPs of one training step, counted on the ``meta`` device.

Counting on meta costs no memory and no compute, so it works for the standard sizes on any machine,
and it gives the same number whatever accelerator runs the step: fused kernels of real backends
(CPU flash attention, for one) are invisible to ``FlopCounterMode``, while on meta attention falls back
to plain matmuls, which it counts. The count is the model's arithmetic (matmuls and convolutions,
forward and backward), not what any particular kernel executes; MFU is computed from it.
"""

from __future__ import annotations

import torch
from torch.utils.flop_counter import FlopCounterMode

from workloads.base import Workload

META = torch.device("meta")


def count_flops(workload: Workload, size: str, batch_size: int) -> int:
    """Forward plus backward FLOPs of one step of ``workload`` at ``size`` with ``batch_size`` samples."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if size not in workload.sizes:
        raise ValueError(
            f"workload {workload.name!r} has no size {size!r}; known: {', '.join(workload.sizes)}"
        )
    with META:
        model = workload.build_model(size)
    model.train()
    batch = workload.make_batch(size, batch_size, META, None)
    with FlopCounterMode(display=False) as counter:
        loss = workload.loss(model, batch)
        loss.backward()
    return int(counter.get_total_flops())
