"""C16: in lazy mode ``hpu.synchronize()`` and ``Event.record()`` (on the current stream) run a step marker
(``bindings.cpp`` "synchronous step marker", ``HPUEvent.cpp`` "step marker due to HPUEvent::record"): a
sync or a timing event inside a training step cuts its graph there, into graphs a step without it never
compiles. hpubench's lazy steps sync only at step boundaries, after ``mark_step``."""

from __future__ import annotations

import pytest
import torch
from contract_doubles import double_env, logged, run_worker


@pytest.mark.parametrize("sync", ["synchronize", "event"])
def test_a_sync_inside_a_lazy_step_cuts_the_graph_and_compiles(bridge, sync: str) -> None:
    core = bridge(PT_HPU_LAZY_MODE="1")
    from habana_frameworks.torch import hpu
    from habana_frameworks.torch.hpu.metrics import metric_global

    model = torch.nn.Linear(4, 4).to("hpu")
    x = torch.ones(2, 4, device="hpu")
    compiles = metric_global("graph_compilation")

    def step(cut: bool) -> None:
        model(x).sum().backward()
        if cut:
            hpu.synchronize() if sync == "synchronize" else hpu.Event().record()
        core.mark_step()

    for _ in range(3):
        step(cut=False)
    steady = dict(compiles.stats())["TotalNumber"]
    step(cut=False)
    assert dict(compiles.stats())["TotalNumber"] == steady  # a repeated graph is cached
    step(cut=True)
    assert dict(compiles.stats())["TotalNumber"] == steady + 1  # the cut graph is new
    assert any(
        c == ("lazy.step_marker", "synchronize" if sync == "synchronize" else "Event.record")
        for c in core.CALLS
    )


def test_eager_mode_has_no_step_markers(bridge) -> None:
    core = bridge(PT_HPU_LAZY_MODE="0")
    from habana_frameworks.torch import hpu

    torch.nn.Linear(4, 4).to("hpu")(torch.ones(2, 4, device="hpu")).sum().backward()
    hpu.synchronize()
    assert not [c for c in core.CALLS if c[0] == "lazy.step_marker"]


def test_hpubench_lazy_steps_cut_graphs_only_at_mark_step(tmp_path) -> None:
    log = tmp_path / "calls.log"
    cell = {"workload": "mlp", "accelerator": "hpu", "mode": "lazy", "warmup_steps": 2, "steps": 3}
    rec = run_worker(cell, double_env(PT_HPU_LAZY_MODE="1", HPUBENCH_FAKE_HPU_CALL_LOG=str(log)))
    assert rec["status"] == "ok", rec["reason"]
    causes = logged(log, "lazy.step_marker")
    assert causes and set(causes) == {"mark_step"}, sorted(set(causes))
