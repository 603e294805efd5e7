"""FLOPs of one training step, counted on the ``meta`` device.

Counting on meta costs no memory and no compute, so it works for the standard sizes on any machine,
and it gives the same number whatever accelerator runs the step: fused kernels of real backends
(CPU flash attention, for one) are invisible to ``FlopCounterMode``, while on meta attention falls back
to plain matmuls, which it counts. The count is the model's arithmetic (matmuls and convolutions,
forward and backward), not what any particular kernel executes; MFU is computed from it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.utils.flop_counter import FlopCounterMode

from workloads.base import Workload

META = torch.device("meta")


@dataclass(frozen=True)
class StepFlops:
    """One step's FLOPs, and those of them in convolutions (which a device may run at another rate:
    cuDNN's TF32 switch covers convolutions apart from matmuls)."""

    total: int
    conv: int

    @property
    def conv_share(self) -> float:
        return self.conv / self.total if self.total else 0.0


def conv_flops(counts_by_op: dict[object, int]) -> int:
    """Of ``FlopCounterMode``'s per-operator counts, those of convolutions (forward and backward)."""
    return int(sum(n for op, n in counts_by_op.items() if "convolution" in str(op)))


def count_step_flops(workload: Workload, size: str, batch_size: int) -> StepFlops:
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
    by_op = counter.get_flop_counts().get("Global", {})
    return StepFlops(int(counter.get_total_flops()), conv_flops(by_op))


def count_flops(workload: Workload, size: str, batch_size: int) -> int:
    """The total of :func:`count_step_flops`."""
    return count_step_flops(workload, size, batch_size).total
