"""CUDA graphs for whole training steps: capture once on static inputs, replay each step.

``CUDAAccelerator.graphed_step`` calls here; kept apart from ``cuda.py`` so the hook surface stays one
short class. torch is imported only when called (the accelerator modules stay torch-free at import).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from hpubench.accelerators.base import StepFn
from hpubench.measure.compilecount import EventCounter

if TYPE_CHECKING:
    import torch

CAPTURE_WARMUP_STEPS = 3


def captured_step(
    make_step: Callable[[torch.nn.Module], StepFn],
    model: torch.nn.Module,
    sample_batch: tuple[torch.Tensor, ...],
    captures: EventCounter,
) -> StepFn:
    """Whole-step capture (forward, backward, optimizer step) replayed on static input buffers.

    Follows PyTorch's documented recipe: warm up on a side stream, capture once, then each step copies
    the new batch into the static inputs and replays. The optimizer must be capturable. Each capture
    is counted on ``captures``.
    """
    import torch  # deferred: accelerator modules stay torch-free at import (base.py)

    step = make_step(model)
    static = tuple(t.clone() for t in sample_batch)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(CAPTURE_WARMUP_STEPS):
            step(static)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_loss = step(static)
    captures.add()

    def replay(batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
        for dst, src in zip(static, batch, strict=True):
            dst.copy_(src, non_blocking=True)
        graph.replay()
        return static_loss

    return replay
