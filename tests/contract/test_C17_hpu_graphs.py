"""C17: HPU graphs as the 1.19 bridge's ``hpu/graphs.py`` has them: a replay's outputs are the graph's own
static tensors (kept outputs read the latest step); the cache key is every forward argument with the
autocast flag; ``ModuleCacher`` refuses a forward with ``*args`` at wrap time (so a DDP model) and a
DataParallel/DDP model at its first capture; an hccl collective inside a capture fails unless lazy
collectives are on (``ProcessGroupHCCL.cpp``). hpubench wraps the bare model, before any strategy would
(``Accelerator.graph_module``), and plans no multi-card HPU-graphs cell."""

from __future__ import annotations

import pytest
import torch
from torch import nn


class Flagged(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
        return self.lin(x) * scale


def _cached(bridge):
    core = bridge(PT_HPU_LAZY_MODE="1")
    from habana_frameworks.torch import hpu

    return core, hpu.ModuleCacher(max_graphs=10)(model=Flagged().to("hpu"), inplace=True)


def _captures(core) -> int:
    return sum(1 for c in core.CALLS if c == ("hpu.cached_forward", "capture"))


def test_outputs_kept_across_replays_alias_each_other(bridge) -> None:
    _, model = _cached(bridge)
    first = model(torch.ones(2, 4, device="hpu"))
    kept = first.detach().cpu().clone()
    second = model(torch.full((2, 4), 2.0, device="hpu"))
    assert not torch.equal(kept, second.detach().cpu())
    assert torch.equal(first.detach().cpu(), second.detach().cpu())  # the first now reads the second


def test_the_key_holds_non_tensor_arguments_and_the_autocast_flag(bridge) -> None:
    core, model = _cached(bridge)
    x = torch.ones(2, 4, device="hpu")
    model(x)
    model(x)
    assert _captures(core) == 1
    model(x, scale=2.0)
    assert _captures(core) == 2
    with torch.autocast(device_type="hpu", dtype=torch.bfloat16):
        model(x)
    assert _captures(core) == 3


def test_a_forward_with_star_args_is_refused_at_wrap_time(bridge) -> None:
    bridge(PT_HPU_LAZY_MODE="1")
    from habana_frameworks.torch import hpu

    class StarArgs(nn.Module):
        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            return inputs[0]

    with pytest.raises(AssertionError, match="Unsupported argument type : VAR_POSITIONAL"):
        hpu.ModuleCacher()(model=StarArgs(), inplace=True)


def test_a_collective_inside_a_capture_fails_unless_lazy_collectives_are_on(bridge, tmp_path) -> None:
    import datetime

    import torch.distributed as dist

    core, model = _cached(bridge)
    import habana_frameworks.torch.distributed.hccl  # noqa: F401

    store = dist.FileStore(str(tmp_path / "store"), 1)
    dist.init_process_group("hccl", store=store, rank=0, world_size=1, timeout=datetime.timedelta(seconds=60))
    try:
        out = model(torch.ones(2, 4, device="hpu"))  # the capture stays open until mark_step
        with pytest.raises(
            RuntimeError, match="collective nonSFG is not supported during hpu graph capturing"
        ):
            dist.all_reduce(out.detach())
        core.mark_step()
        dist.all_reduce(out.detach())
    finally:
        dist.destroy_process_group()
