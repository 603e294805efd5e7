"""Where the step's time goes (issue 33, item 4): the phase split's arithmetic (shares of the measured step,
the residue), its refusals (captured graphs, lazy mode), the timing loop's order, the record's JSON round
trip and the column's text. Pure: no torch."""

from __future__ import annotations

import json

import numpy as np
import pytest
from gatedata import make_result

from hpubench.measure.phases import (
    SAMPLED_STEPS,
    PhasedStep,
    PhasePlan,
    PhaseSplit,
    not_separable,
    phase_notes,
    residue_of,
    split_from_samples,
    why_not_separable,
)
from hpubench.measure.phasetimer import WARM_STEPS, run_phase_pass, split_phases
from hpubench.plan.cell import Cell
from hpubench.plan.cost import PHASE_EXTRA_STEPS
from hpubench.present.columns.phasecells import NOT_SPLIT, phase_text, shares_text
from hpubench.store.record import CellResult


def test_shares_are_of_the_measured_mean_step_and_the_residue_is_what_they_leave() -> None:
    split = split_from_samples([0.3, 0.2, 0.9], [0.4, 0.4, 0.5], [0.2, 0.1, 0.2], step_mean_s=1.0)
    # medians: 0.3, 0.4, 0.2 (the 0.9 of a descheduled sample does not move them)
    assert split.forward_s == pytest.approx(0.3) and split.backward_s == pytest.approx(0.4)
    assert split.optimizer_s == pytest.approx(0.2) and split.phase_sum_s == pytest.approx(0.9)
    assert split.forward_share == pytest.approx(0.3) and split.optimizer_share == pytest.approx(0.2)
    assert split.residue == pytest.approx(0.1)
    total = split.forward_share + split.backward_share + split.optimizer_share + split.residue
    assert total == pytest.approx(1.0)
    assert split.steps == 3 and split.separable and split.data_s is None and split.data_share is None
    assert "phases sum to 90% of the measured step; residue 10%" in split.summary


def test_a_residue_is_negative_where_the_phases_took_longer_apart_than_the_step_together() -> None:
    assert residue_of(1.2, 1.0) == pytest.approx(-0.2)
    split = split_from_samples([0.6], [0.4], [0.2], step_mean_s=1.0)
    assert "residue -20%" in split.summary
    assert residue_of(1.0, 0.0) == 0.0  # no measured step: nothing to check against


def test_the_residue_against_the_median_step_tells_a_stretched_mean_from_missing_time() -> None:
    split = split_from_samples([0.3], [0.4], [0.2], step_mean_s=2.0, step_p50_s=0.9)
    assert split.residue == pytest.approx(0.55) and split.residue_p50 == pytest.approx(0.0)
    assert "against the median step 0%" in split.summary


def test_data_wait_is_beside_the_step_not_a_share_of_it() -> None:
    split = split_from_samples([0.3], [0.4], [0.2], step_mean_s=1.0, data_s=[0.5, 0.1, 0.2])
    assert split.data_s == pytest.approx(0.2) and split.data_share == pytest.approx(0.2)
    assert split.residue == pytest.approx(0.1)  # the data wait is not in the residue
    assert "data wait (host loader, beside the step) 20%" in split.summary


def test_unequal_or_empty_samples_are_refused() -> None:
    with pytest.raises(ValueError):
        split_from_samples([0.1, 0.2], [0.1], [0.1], 1.0)
    with pytest.raises(ValueError):
        split_from_samples([], [], [], 1.0)


def test_a_captured_or_lazy_step_is_not_separable_and_says_why_a_compiled_one_is() -> None:
    assert "captured graph (CUDA graphs)" in (why_not_separable("eager", True, "CUDA graphs") or "")
    assert "captured graph" in (why_not_separable("compile", True, "CUDA graphs") or "")
    assert "lazy mode" in (why_not_separable("lazy", False, "HPU graphs") or "")
    assert why_not_separable("compile", False, "CUDA graphs") is None
    assert why_not_separable("eager", False, "CUDA graphs") is None
    split = not_separable("lazy mode: ...", 0.01)
    assert not split.separable and split.forward_s is None and split.residue is None and split.steps == 0
    assert split.summary == "not separable: lazy mode: ..."


def test_notes_say_what_the_phases_include_and_whose_they_are() -> None:
    assert phase_notes("eager", "single", 1, False) == ()
    ddp = phase_notes("compile", "ddp", 2, True)
    assert any("backward includes the gradient all-reduce" in n for n in ddp)
    assert any("rank 0's phases" in n for n in ddp)
    assert any("compiled graphs" in n for n in ddp)
    assert any("extra_work" in n for n in ddp)
    assert any("all-gathers" in n for n in phase_notes("eager", "fsdp", 2, False))


def test_the_pass_runs_each_phase_in_the_steps_order_and_times_the_sampled_steps() -> None:
    calls: list[str] = []

    def loss(batch: object) -> object:
        calls.append("forward")
        return "loss"

    phased = PhasedStep(
        forward=loss,  # type: ignore[arg-type]
        backward=lambda _loss: calls.append("backward"),
        optimizer=lambda: calls.append("optimizer"),
        zero_grad=lambda: calls.append("zero_grad"),
    )
    syncs: list[int] = []
    split = run_phase_pass(phased, lambda: (), lambda: syncs.append(1), step_mean_s=1.0, steps=3)
    assert calls[0] == "zero_grad"  # the measured step's last gradients are cleared first
    assert calls[1:] == ["forward", "backward", "optimizer"] * (WARM_STEPS + 3)
    assert len(syncs) == 4 * (WARM_STEPS + 3)  # before the step and after each phase
    assert split.steps == 3 and split.separable
    assert SAMPLED_STEPS + WARM_STEPS == PHASE_EXTRA_STEPS  # what the plan's estimate counts


def test_a_plan_without_a_phased_step_or_a_failing_pass_records_no_split() -> None:
    refused = split_phases(
        PhasePlan(None, "lazy mode: x", ("rank 0's phases",)), lambda: (), lambda: None, 1.0
    )
    assert (
        not refused.separable and refused.method == "lazy mode: x" and refused.notes == ("rank 0's phases",)
    )

    def boom(batch: object) -> object:
        raise RuntimeError("out of memory")

    failing = PhasePlan(PhasedStep(boom, print, print, lambda: None), None)  # type: ignore[arg-type]
    failed = split_phases(failing, lambda: (), lambda: None, 1.0)
    assert not failed.separable and "the phase pass failed: RuntimeError: out of memory" in failed.method


def test_the_record_keeps_the_split_through_json_and_older_records_read_none() -> None:
    split = split_from_samples([0.3], [0.4], [0.2], 1.0, notes=["DDP: x"], step_p50_s=0.95)
    r = make_result(Cell("mlp"), np.full(10, 0.01))
    with_split = CellResult.from_dict(json.loads(json.dumps({**r.to_dict(), "phases": split.to_dict()})))
    assert with_split.phases == split
    older = r.to_dict()
    older.pop("phases", None)
    assert CellResult.from_dict(json.loads(json.dumps(older))).phases is None
    assert PhaseSplit.from_dict(not_separable("x", 1.0).to_dict()) == not_separable("x", 1.0)


def test_the_column_text_gives_shares_and_residue_or_says_not_split() -> None:
    assert shares_text(0.381, 0.452, 0.14, 0.027) == "38/45/14% res 3%"
    assert shares_text(0.3, 0.4, 0.2, 0.1, 0.25) == "30/40/20% res 10% data 25%"
    assert shares_text(None, None, None, None, separable=False) == NOT_SPLIT
    assert phase_text(None) == "-"
    assert phase_text(split_from_samples([0.3], [0.4], [0.2], 1.0)) == "30/40/20% res 10%"
    assert phase_text(not_separable("x", 1.0)) == NOT_SPLIT
