"""C9, the fp8 half: fp8 is refused on first-generation Gaudi and goes through transformer_engine's
``fp8_autocast`` on Gaudi2+ (hpu-api.md, "Mixed precision": ``te.Linear``,
``te.fp8_autocast(enabled=True, fp8_recipe=...)``).

The planner's rule (``skip_reason``, what ``list cells`` and ``run`` print) and the worker's live check
must refuse the same cells for the same reason; on Gaudi2 and Gaudi3 the cell must really run its
linear layers inside an enabled ``fp8_autocast``, not merely end "ok"."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from contract_doubles import double_env, logged, run_worker

from hpubench import accelerators
from hpubench.accelerators.hpu.accelerator import HPUAccelerator
from hpubench.errors import CellSkipped
from hpubench.plan.cell import MODES, Cell
from hpubench.plan.inventory import DeviceInfo, Inventory
from hpubench.plan.matrix import expand, spec_from_options

STEPS = 3


@pytest.mark.parametrize("name", ["GAUDI", "GAUDI2", "GAUDI2B", "GAUDI2C", "GAUDI2D", "GAUDI3", ""])
@pytest.mark.parametrize("mode", MODES)
def test_the_rules_refuse_fp8_exactly_on_first_generation(name: str, mode: str) -> None:
    cell = Cell(workload="mlp", accelerator="hpu", precision="fp8", mode=mode)
    reason = HPUAccelerator.skip_reason(cell, name)
    if name == "GAUDI":
        assert reason is not None and "Gaudi2" in reason and "transformer_engine" in reason, reason
    else:  # Gaudi2+, or a name that says nothing (never refused on its grounds)
        assert reason is None, reason


def test_the_planned_matrix_skips_fp8_on_gaudi_with_the_rule_reason() -> None:
    spec = spec_from_options(workload=["mlp"], accelerator=["hpu"], precision=["fp8", "bf16-mixed"])
    for name, refused in (("GAUDI", True), ("GAUDI2", False), ("GAUDI3", False)):
        planned = expand(
            spec, Inventory((DeviceInfo("hpu", 8, name),)), {"mlp": ("tiny",)}, accelerators.kinds()
        )
        fp8 = [p for p in planned if p.cell.precision == "fp8" and not p.cell.graphs]
        assert fp8, planned
        for p in fp8:
            want = HPUAccelerator.skip_reason(p.cell, name)
            assert p.skip_reason == want and (want is not None) == refused, (name, p.skip_reason)


def _cell(mode: str) -> dict[str, object]:
    return {"workload": "mlp", "accelerator": "hpu", "mode": mode, "precision": "fp8", "steps": STEPS}


@pytest.mark.parametrize(("name", "mode"), [("GAUDI2", "eager"), ("GAUDI2C", "lazy"), ("GAUDI3", "eager")])
def test_gaudi2_and_newer_train_through_transformer_engine(tmp_path: Path, name: str, mode: str) -> None:
    log = tmp_path / "calls.log"
    env = double_env(
        HPUBENCH_FAKE_HPU_NAME=name,
        HPUBENCH_FAKE_HPU_CALL_LOG=str(log),
        PT_HPU_LAZY_MODE="1" if mode == "lazy" else "0",
    )
    rec = run_worker(_cell(mode), env)
    assert rec["status"] == "ok", rec.get("reason")
    assert logged(log, "te.Linear"), "no layer was swapped for transformer_engine's Linear"
    entered = logged(log, "te.fp8_autocast")
    assert len(entered) >= STEPS and all(e.startswith("enabled=True") for e in entered), entered
    assert all("recipe=DelayedScaling" in e for e in entered), entered
    forwards = logged(log, "te.Linear.forward")
    assert forwards and all(f == "fp8=True" for f in forwards), forwards  # every fp8 layer ran in fp8
    assert rec["runtime"]["precision"]["fp8"] == "transformer_engine", rec["runtime"]["precision"]


@pytest.mark.parametrize("precision", ["fp8", "16-mixed"])
def test_first_generation_skips_with_the_planners_reason_before_touching_transformer_engine(
    tmp_path: Path, precision: str
) -> None:
    """The worker (the live check, for a plan made without the device's name) and the planner say the
    same thing, and the worker refuses before any transformer_engine call."""
    log = tmp_path / "calls.log"
    env = double_env(
        HPUBENCH_FAKE_HPU_NAME="GAUDI", HPUBENCH_FAKE_HPU_CALL_LOG=str(log), PT_HPU_LAZY_MODE="0"
    )
    cell = {**_cell("eager"), "precision": precision}
    rec = run_worker(cell, env)
    assert rec["status"] == "skipped", rec
    assert rec["reason"] == HPUAccelerator.skip_reason(Cell.from_dict(cell), "GAUDI")
    assert not logged(log, "te.Linear") and not logged(log, "te.fp8_autocast")


@pytest.mark.parametrize("precision", ["fp8", "16-mixed"])
def test_the_live_checks_refuse_with_the_rule_reason(bridge, precision: str) -> None:
    """``check_precision`` and ``prepare_fp8`` guard a plan made without the device's name: one fact, one
    reason, whichever of the three places meets the cell first."""
    bridge(HPUBENCH_FAKE_HPU_NAME="GAUDI", PT_HPU_LAZY_MODE="0")
    acc = HPUAccelerator(0)
    want = HPUAccelerator.skip_reason(Cell(workload="mlp", accelerator="hpu", precision=precision), "GAUDI")
    with pytest.raises(CellSkipped) as live:
        acc.check_precision(precision)
    assert str(live.value) == want
    if precision == "fp8":
        with pytest.raises(CellSkipped) as prepared:
            acc.prepare_fp8(torch.nn.Sequential(torch.nn.Linear(16, 16)))
        assert str(prepared.value) == want
