"""C19: recompilations cost time. Dynamic shapes are off by default
(``PT_HPU_ENABLE_REFINE_DYNAMIC_SHAPES`` false, ``env_flags.yaml``), so a new input shape compiles a new
graph, whose ``synGraphCompile`` time the global ``graph_compilation`` metric reports in microseconds
(``graph.cpp``); the global metrics count from the import of ``habana_frameworks.torch.hpu``
(``metrics.py`` starts them at module level). The double gives each compilation a cost, so a compilation
inside a measured window slows it as on a Gaudi, and hpubench flags such a cell."""

from __future__ import annotations

import time

import pytest
import torch
from contract_doubles import double_env, run_worker


def test_a_compilation_costs_time_and_reports_it_in_microseconds(bridge, monkeypatch) -> None:
    monkeypatch.setenv("HPUBENCH_FAKE_HPU_COMPILE_MS", "50")
    core = bridge(PT_HPU_LAZY_MODE="1")
    from habana_frameworks.torch.hpu.metrics import metric_global

    model = torch.nn.Linear(4, 4).to("hpu")
    t0 = time.perf_counter()
    model(torch.ones(2, 4, device="hpu")).sum().backward()
    core.mark_step()
    assert time.perf_counter() - t0 >= 0.05
    stats = dict(metric_global("graph_compilation").stats())
    assert stats["TotalNumber"] == 1 and stats["TotalTime"] >= 50_000
    model(torch.ones(3, 4, device="hpu")).sum().backward()  # a short last batch: a new shape
    core.mark_step()
    assert dict(metric_global("graph_compilation").stats())["TotalNumber"] == 2


def test_the_global_metric_counts_from_the_import_of_hpu(bridge) -> None:
    core = bridge(PT_HPU_LAZY_MODE="1")
    torch.nn.Linear(4, 4).to("hpu")(torch.ones(2, 4, device="hpu")).sum().backward()
    core.mark_step()  # compiled before anything imported hpu.metrics by name
    from habana_frameworks.torch.hpu.metrics import metric_global

    assert dict(metric_global("graph_compilation").stats())["TotalNumber"] == 1


@pytest.mark.serial
def test_hpubench_keeps_the_compilations_in_its_warm_up(tmp_path) -> None:
    """With each compilation costing 300 ms, the warm-up pays them and no measured step does."""
    cell = {"workload": "mlp", "accelerator": "hpu", "mode": "lazy", "warmup_steps": 1, "steps": 3}
    rec = run_worker(cell, double_env(PT_HPU_LAZY_MODE="1", HPUBENCH_FAKE_HPU_COMPILE_MS="300"))
    assert rec["status"] == "ok", rec["reason"]
    assert rec["warmup_times_s"][0] >= 0.3 and max(rec["step_times_s"]) < 0.3, rec["step_times_s"]
    assert rec["runtime"]["compiles_measured"] == 0
