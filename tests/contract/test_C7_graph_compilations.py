"""C7: ``metric_global("graph_compilation")`` returns stats (TotalNumber, TotalTime, AvgTime);
``metric_localcontext(name)`` measures a block; a lazy-mode input shape change compiles a new graph and
increments TotalNumber."""

from __future__ import annotations

import torch
from torch import nn


def _total(metric) -> int:
    return int(dict(metric.stats())["TotalNumber"])


def test_stats_carry_the_documented_tags(bridge) -> None:
    bridge(PT_HPU_LAZY_MODE="1")
    from habana_frameworks.torch.hpu.metrics import metric_global

    metric = metric_global("graph_compilation")
    assert {"TotalNumber", "TotalTime", "AvgTime"} <= set(dict(metric.stats()))


def test_a_lazy_shape_change_compiles_a_new_graph(bridge) -> None:
    core = bridge(PT_HPU_LAZY_MODE="1")
    from habana_frameworks.torch.hpu.metrics import metric_global, metric_localcontext

    metric = metric_global("graph_compilation")
    model = nn.Linear(4, 2).to("hpu")  # ops on the device make the lazy graph; host ones do not
    model(torch.ones(3, 4, device="hpu"))
    core.mark_step()
    first = _total(metric)
    model(torch.ones(3, 4, device="hpu"))
    core.mark_step()
    assert _total(metric) == first  # same shapes: the cached graph runs
    with metric_localcontext("graph_compilation") as local:
        model(torch.ones(5, 4, device="hpu"))
        core.mark_step()
    assert _total(metric) == first + 1 and _total(local) == 1
