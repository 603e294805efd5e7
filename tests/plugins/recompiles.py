"""A workload whose every step recompiles (``--workloads-from tests/plugins/recompiles.py``): the warm-up
must stop at its bound and the cell come out ``recompiled`` with that reason.

``recompiler``'s loss runs a function compiled with dynamo's ``eager`` backend (cheap to recompile on
any device) that reads a Python string naming the step. Dynamo guards on a string's value and never
makes it dynamic, so each step fails the guard and compiles a new graph; the recompile limits are
raised so that dynamo never gives up and falls back to running the function uncompiled. Steps on the
``meta`` device (FLOP counting) do not count.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import nn

import workloads
from workloads.base import Batch, SizeSpec, Workload

_step = {"n": 0, "tag": "step 0"}


def _raise_recompile_limits() -> None:
    """Let dynamo recompile for ever (its defaults stop after a few recompiles of one function)."""
    import torch._dynamo  # deferred: only the measuring worker needs dynamo

    for name in (
        "recompile_limit",
        "cache_size_limit",
        "accumulated_recompile_limit",
        "accumulated_cache_size_limit",
    ):
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, 1_000_000)


def _scaled(x: torch.Tensor) -> torch.Tensor:
    # The guard on _step["tag"]'s value fails every step: a new graph each time.
    return x * 2.0 if _step["tag"].endswith("7") else x * 1.0


_compiled = torch.compile(_scaled, backend="eager", dynamic=False)


@workloads.register
class Recompiler(Workload):
    name = "recompiler"
    description = "a linear layer whose loss recompiles a small function every step"
    sizes: ClassVar[dict[str, SizeSpec]] = {"tiny": SizeSpec(4, "one 8x8 linear layer")}
    optimizer = "sgd"

    def build_model(self, size: str) -> nn.Module:
        _raise_recompile_limits()
        return nn.Linear(8, 8)

    def make_batch(
        self, size: str, batch_size: int, device: torch.device, generator: torch.Generator | None
    ) -> Batch:
        return (torch.randn(batch_size, 8, generator=generator, device=device),)

    def loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        out = model(batch[0])
        if out.device.type == "meta":
            return out.square().mean()
        _step["n"] += 1
        _step["tag"] = f"step {_step['n']}"
        return _compiled(out).square().mean()
