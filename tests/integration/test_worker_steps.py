"""The worker's three steps on CPU (resolve -> measure -> record): each returns the facts it learned, the
record merges them once, and a cell stopped part way keeps the facts learned before it stopped."""

from __future__ import annotations

import json
import time

import pytest
import torch

import workloads
from hpubench.accelerators.cpu import CPUAccelerator
from hpubench.plan import extrawork
from hpubench.plan.autosteps import LEAD_IN_STEPS, AutoSteps
from hpubench.plan.cell import Cell
from hpubench.plan.runoptions import RunOptions
from hpubench.run.cellrun.facts import Stopped, runtime_of
from hpubench.run.cellrun.measure import measure
from hpubench.run.cellrun.record import record
from hpubench.run.cellrun.resolve import Start, resolve
from hpubench.run.trainstep import build_step
from hpubench.run.worker import run_cell


def _start() -> Start:
    return Start("2025-01-01T00:00:00.000+00:00", time.perf_counter())


def test_the_three_steps_make_the_record_and_the_facts_are_merged_once() -> None:
    cell = Cell("mlp", steps=3, warmup_steps=1)
    resolved = resolve(cell, _start(), RunOptions(), {})
    names = [name for name, _ in resolved.facts]
    assert names[:9] == [
        "accelerator",
        "device_name",
        "device_index",
        "strategy",
        "world_size",
        "software",
        "threads",
        "heap",
        "condition",
    ]
    assert names[9:13] == ["batch_size", "precision", "mode_requested", "mode_in_force"]
    assert names[-1] == "setup_s" and len(resolved.batches) == 4
    measured = measure(resolved)
    assert len(measured.times.measured_s) == 3 and len(measured.times.warmup_s) == 1 + LEAD_IN_STEPS
    assert [name for name, _ in measured.facts][-2:] == ["timing", "env_flags"]
    r = record(cell, resolved, measured)
    assert r.status == "ok", r.reason
    assert r.runtime.to_dict() == runtime_of(resolved.facts, measured.facts)
    # The phase split ran after the measured steps and is on the record (issue 33, item 4).
    assert r.phases is not None and r.phases.separable and r.phases.steps > 0
    assert r.phases.step_mean_s == pytest.approx(sum(r.step_times_s) / len(r.step_times_s))


class _EagerOnly(CPUAccelerator):
    """A device that runs eager whatever was asked, as an HPU started without lazy mode does."""

    def mode_in_force(self, requested: str) -> str:
        return "eager"


def test_build_step_returns_its_facts_and_a_wrong_mode_stops_with_them() -> None:
    model = torch.nn.Linear(2, 2)
    batch = (torch.zeros(1, 2),)
    step, facts, _ = build_step(Cell("mlp", mode="compile"), model, lambda m: m, CPUAccelerator(0), batch)
    assert isinstance(step, torch.nn.Module)  # make_step got the compiled model
    assert facts == (
        ("mode_requested", "compile"),
        ("mode_in_force", "compile"),
        ("compile", {"backend": "inductor"}),
    )
    with pytest.raises(Stopped) as info:
        build_step(Cell("mlp", mode="compile"), model, lambda m: m, _EagerOnly(0), batch)
    assert "requested mode 'compile' but the device runs 'eager'" in str(info.value.cause)
    assert info.value.facts == (("mode_requested", "compile"), ("mode_in_force", "eager"))


def test_a_cell_failing_in_resolution_keeps_the_facts_learned_before_the_failure() -> None:
    r = run_cell(Cell("mlp", steps=3, warmup_steps=1, options=(("bogus", "1"),)))
    assert r.status == "failed"
    assert r.reason == "ValueError: unknown workload option(s) bogus; known: extra_work"
    assert r.traceback_tail.splitlines()[-1] == r.reason
    facts = r.runtime.to_dict()
    assert facts["mode_in_force"] == "eager" and facts["batch_size"] > 0 and facts["device_name"]
    assert "setup_s" not in facts and "flops_counted" not in facts


class _FailsAt:
    """The mlp workload whose loss raises at its ``at``-th call on a real device."""

    def __init__(self, inner: object, at: int) -> None:
        self.inner, self.at, self.calls = inner, at, 0

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def loss(self, model: torch.nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
        if batch[0].device.type != "meta":
            self.calls += 1
            if self.calls == self.at:
                raise RuntimeError("planted failure")
        return self.inner.loss(model, batch)


@pytest.mark.slow  # the extra work's calibration times real steps
def test_a_failure_in_the_measured_steps_keeps_what_the_step_learned_in_its_warmup(monkeypatch) -> None:
    real = workloads.get
    # 2 warm-up calls (calibration steps inside the 2nd) and the lead-in, then a measured step fails
    at = 4 + extrawork.CALIBRATION_PLAIN_STEPS
    monkeypatch.setattr(workloads, "get", lambda name, *a, **k: _FailsAt(real(name, *a, **k), at=at))
    r = run_cell(Cell("mlp", steps=5, warmup_steps=2, options=(("extra_work", "0.3"),)))
    assert r.status == "failed" and r.reason == "RuntimeError: planted failure"
    facts = r.runtime.to_dict()
    assert facts["extra_work"]["fraction"] == 0.3 and facts["setup_s"] > 0
    assert "steps_stop" not in facts and "timing" not in facts


@pytest.mark.serial
def test_the_worker_writes_the_rules_warm_up_before_its_lead_in_step(tmp_path) -> None:
    """A real cell whose warm-up the rule extends (--steps auto's minimum time): its feed's last warm-up line
    holds the lead-in step alone, so the rule's steps were written before it, not from inside the window."""
    path = tmp_path / "c.steps.jsonl"
    auto = AutoSteps(target_ci=0.5, min_steps=3, min_time_s=0.05, max_time_s=0.2)
    r = run_cell(Cell("mlp", warmup_steps=2, steps=None, auto_steps=auto), progress_path=str(path))
    assert r.status == "ok", r.reason
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    warm = [x for x in lines if x.get("phase") == "warmup"]
    assert sum(len(x["times"]) for x in warm) == len(r.warmup_times_s) > 2 + LEAD_IN_STEPS  # extended
    assert len(warm[-1]["times"]) == LEAD_IN_STEPS
