"""C6: ``PT_HPU_LAZY_MODE`` is read once at import ("0" eager, anything else lazy); the graph APIs
(``ModuleCacher``, ``wrap_in_hpu_graph``) need lazy mode; ``torch.compile(backend="hpu_backend")`` needs
eager mode."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from hpubench.accelerators.hpu.accelerator import HPUAccelerator
from hpubench.plan.cell import Cell

GRAPH_APIS = ("ModuleCacher", "wrap_in_hpu_graph")


@pytest.mark.parametrize(("raw", "lazy"), [("0", False), ("1", True), ("2", True)])
def test_the_mode_is_read_once_at_import(bridge, monkeypatch, raw: str, lazy: bool) -> None:
    core = bridge(PT_HPU_LAZY_MODE=raw)
    assert core.is_lazy() is lazy
    monkeypatch.setenv("PT_HPU_LAZY_MODE", "1" if raw == "0" else "0")
    assert core.is_lazy() is lazy  # changing the variable later changes nothing


def test_graph_apis_exist_only_in_lazy_mode(bridge) -> None:
    bridge(PT_HPU_LAZY_MODE="1")
    from habana_frameworks.torch import hpu

    assert all(hasattr(hpu, name) for name in GRAPH_APIS)
    bridge(PT_HPU_LAZY_MODE="0")
    from habana_frameworks.torch import hpu as eager_hpu

    assert not any(hasattr(eager_hpu, name) for name in GRAPH_APIS)


@pytest.mark.parametrize(("raw", "works"), [("0", True), ("1", False)])
def test_hpu_backend_compiles_only_in_eager_mode(bridge, raw: str, works: bool) -> None:
    bridge(PT_HPU_LAZY_MODE=raw)
    torch._dynamo.reset()
    model = torch.compile(nn.Linear(4, 2), backend="hpu_backend")
    if works:
        assert model(torch.ones(3, 4)).shape == (3, 2)
    else:
        with pytest.raises(RuntimeError, match="eager mode"):
            model(torch.ones(3, 4))
    torch._dynamo.reset()


@pytest.mark.parametrize(("mode", "flag"), [("lazy", "1"), ("eager", "0"), ("compile", "0")])
def test_hpubench_sets_the_mode_before_the_bridge_loads(mode: str, flag: str) -> None:
    assert (
        HPUAccelerator.env_before_import(Cell("mlp", accelerator="hpu", mode=mode))["PT_HPU_LAZY_MODE"]
        == flag
    )
