"""The numerics verdict (hpubench.analysis.numerics) and its place in the record (hpubench.store.record)."""

from __future__ import annotations

import json
import math

import pytest

from hpubench.analysis import numerics
from hpubench.analysis.numerics import (
    DIVERGED,
    DRIFT,
    OK,
    PRECEDENCE,
    STEPS_COMPARED,
    TOLERANCES,
    UNCHECKED,
    Tolerances,
    deviation,
    judge,
    judge_facts,
    worst,
)
from hpubench.plan.cell import Cell
from hpubench.store.record import STATUS_OK, STATUS_SKIPPED, CellResult

REF = (6.9, 6.2, 5.6, 5.1, 4.7, 4.4, 4.2, 4.0, 3.9, 3.8)


def test_precedence_most_severe_first():
    assert PRECEDENCE == (DIVERGED, DRIFT, UNCHECKED, OK)
    assert worst([OK, UNCHECKED, DRIFT]) == DRIFT
    assert worst([OK, DIVERGED, None]) == DIVERGED
    assert worst([None, None]) is None


def test_identical_trajectory_is_ok_without_reasons():
    assert judge(REF, REF, "32-true", "eager") == (OK, ())


def test_finite_but_wrong_trajectory_is_drift_naming_step_losses_and_tolerance():
    wrong = [x * 1.5 for x in REF]
    verdict, reasons = judge(wrong, REF, "bf16-mixed", "eager")
    assert verdict == DRIFT and len(reasons) == 1
    tol, _ = TOLERANCES.allowed("bf16-mixed", "eager")
    line = reasons[0]
    assert "step 0" in line and "loss 10.35" in line and "reference 6.9" in line
    assert "relative deviation 0.5" in line and f"tolerance {tol:.3g}" in line
    assert f"{STEPS_COMPARED} of {STEPS_COMPARED} steps over" in line


@pytest.mark.parametrize(
    "precision,mode", [("32-true", "eager"), ("bf16-true", "compile"), ("16-mixed", "eager")]
)
def test_boundary_at_the_tolerance(precision, mode):
    tol, _ = TOLERANCES.allowed(precision, mode)
    ref = [4.0] * 4
    at = [4.0, 4.0 * (1 + tol), 4.0, 4.0]
    assert deviation(at, ref)[0] == pytest.approx(tol)
    assert judge([4.0, 4.0 * (1 + tol * 0.999), 4.0, 4.0], ref, precision, mode)[0] == OK
    assert judge([4.0, 4.0 * (1 + tol * 1.01), 4.0, 4.0], ref, precision, mode)[0] == DRIFT


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_loss_is_diverged_even_without_a_reference(bad):
    losses = [6.9, 6.2, bad, 5.0]
    for ref, why in ((REF, None), (None, None), (None, "several ranks")):
        verdict, reasons = judge(losses, ref, "bf16-true", "eager", why)
        assert verdict == DIVERGED
        assert reasons[0].startswith("step 2: loss") and "not finite" in reasons[0]


def test_no_reference_is_unchecked_with_the_reason():
    assert judge(REF, None, "bf16-mixed", "eager") == (
        UNCHECKED,
        ("no reference trajectory to compare with",),
    )
    assert judge(REF, REF, "bf16-mixed", "eager", "several ranks draw their own batches") == (
        UNCHECKED,
        ("several ranks draw their own batches",),
    )
    verdict, reasons = judge(REF, [6.9, math.nan], "32-true", "eager")
    assert verdict == UNCHECKED and "reference itself diverged at step 1" in reasons[0]
    assert judge([], REF, "32-true", "eager")[0] == UNCHECKED


def test_only_the_first_steps_are_compared():
    late = [*REF[:STEPS_COMPARED], 100.0, 100.0]
    assert judge(late, REF, "32-true", "eager")[0] == OK
    short = REF[:3]
    assert judge(short, REF, "32-true", "eager")[0] == OK  # fewer steps: compares those
    assert judge([x * 1.5 for x in short], REF, "32-true", "eager")[0] == DRIFT


def test_a_loss_trained_towards_zero_is_measured_against_the_trajectorys_scale():
    ref = [1.0, 0.1, 0.001, 0.0001]
    close = [1.0, 0.1, 0.0012, 0.00005]  # tiny absolute differences near zero
    assert deviation(close, ref)[0] == pytest.approx(0.0002 / (numerics.FLOOR_SHARE * 1.0))
    assert judge(close, ref, "bf16-true", "eager")[0] == OK


def test_tolerances_add_precision_and_mode_and_borrow_the_nearest_measured_kind():
    p, _ = TOLERANCES.for_precision("bf16-mixed")
    m, _ = TOLERANCES.for_mode("compile")
    assert TOLERANCES.allowed("bf16-mixed", "compile")[0] == pytest.approx(p + m)
    assert TOLERANCES.allowed("bf16-mixed", "eager")[0] == p
    fp8, label = TOLERANCES.allowed("fp8", "lazy")
    assert fp8 == pytest.approx(TOLERANCES.for_precision("bf16-true")[0] + m)
    assert label == "fp8 as bf16-true + lazy as compile"
    assert TOLERANCES.allowed("32-true", "eager", graphs=True)[0] == pytest.approx(
        TOLERANCES.for_precision("32-true")[0] + m
    )
    # a plugin's precision gets the loosest measured one
    loosest = max(t for _, t in TOLERANCES.precision)
    assert TOLERANCES.for_precision("my-int4")[0] == loosest
    custom = Tolerances(precision=(("32-true", 0.1),), mode=(("eager", 0.0),), nearest=())
    assert judge([1.05], [1.0], "32-true", "eager", tolerances=custom)[0] == OK


def test_every_builtin_precision_and_mode_has_a_tolerance_at_most_the_loosest():
    from hpubench.plan.cell import MODES
    from hpubench.precision.spec import PRECISIONS

    for precision in PRECISIONS:
        for mode in MODES:
            tol, label = TOLERANCES.allowed(precision, mode)
            assert 0 < tol < 0.5, (precision, mode)  # a 1.5x loss is always caught
            assert label


def test_judge_facts_reads_what_the_record_keeps():
    facts = {"losses": [6.9, "nan"], "reference_losses": list(REF)}
    assert judge_facts(facts, "32-true", "eager")[0] == DIVERGED
    own = {"losses": list(REF), "reference_losses": list(REF), "note": "this cell is the reference"}
    assert judge_facts(own, "32-true", "eager") == (OK, ("this cell is the reference",))
    assert judge_facts({"losses": list(REF), "unchecked": "several ranks"}, "32-true", "eager") == (
        UNCHECKED,
        ("several ranks",),
    )
    assert judge_facts(None, "32-true", "eager")[0] == UNCHECKED


def test_record_keeps_the_verdict_and_old_records_read_unjudged():
    cell = Cell("mlp", "tiny", "cpu")
    rec = CellResult(cell, STATUS_OK, numerics=DRIFT, numerics_reasons=("step 0: ...",))
    back = CellResult.from_dict(json.loads(json.dumps(rec.to_dict())))
    assert back.numerics == DRIFT and back.numerics_reasons == ("step 0: ...",)
    old = rec.to_dict()
    del old["numerics"], old["numerics_reasons"]
    read = CellResult.from_dict(old)
    assert read.numerics is None and read.numerics_reasons == ()
    assert CellResult(cell, STATUS_SKIPPED, reason="no device").numerics is None


def test_record_check_names_a_wrong_numerics_field():
    from hpubench.store.recordcheck import RecordError

    d = CellResult(Cell("mlp", "tiny", "cpu"), STATUS_OK).to_dict()
    with pytest.raises(RecordError, match="numerics_reasons"):
        CellResult.from_dict({**d, "numerics_reasons": "drift"})
    with pytest.raises(RecordError, match="numerics"):
        CellResult.from_dict({**d, "numerics": 3})


def test_one_cell_per_reference_pays_for_it_in_the_plan():
    from hpubench.analysis.numerics import reference_steps_planned

    def cell(precision="bf16-mixed", mode="eager", devices=1, steps=20, workload="mlp"):
        return Cell(workload, "tiny", "cpu", devices=devices, precision=precision, mode=mode, steps=steps)

    cells = [cell(), cell("bf16-true"), cell(devices=2), cell(workload="gpt")]
    # two ranks have their own reference, each step on both ranks' batches
    assert reference_steps_planned(cells) == (STEPS_COMPARED, 0, 2 * STEPS_COMPARED, STEPS_COMPARED)
    assert reference_steps_planned([cell("32-true", devices=2), cell(devices=2)]) == (2 * STEPS_COMPARED, 0)
    # a 32-true eager cell of enough steps first is its own reference; one too short computes it
    assert reference_steps_planned([cell("32-true"), cell()]) == (0, 0)
    assert reference_steps_planned([cell("32-true", steps=2), cell()]) == (STEPS_COMPARED, 0)
    assert reference_steps_planned([cell("32-true", "compile"), cell()]) == (STEPS_COMPARED, 0)


def test_the_reference_cost_enters_the_estimate():
    from hpubench.plan.cost import Calibration, Estimate, ModelFacts, reference_s

    facts = ModelFacts(params=1_000_000, flops=10**9, ops=100, activation_bytes_fp32=0, batch_bytes_fp32=0)
    cal = Calibration({"fp32": 0.1}, 1e-5, "test")
    cost = reference_s(facts, cal, None, STEPS_COMPARED)
    assert cost > 0 and reference_s(facts, cal, None, 0) == 0 and reference_s(None, cal, None, 8) == 0
    est = Estimate(0.01, 0.02, 1.0, None, "t", "m")
    c = Cell("mlp", "tiny", "cpu", steps=10)
    with_ref = Estimate(0.01, 0.02, 1.0, None, "t", "m", reference_s=cost)
    assert with_ref.cell_time_s(c) == pytest.approx(est.cell_time_s(c) + cost)


def test_a_failure_the_launcher_wrote_is_unchecked_with_its_reason_and_nothing_else_changes():
    crashed = CellResult(Cell("mlp"), "failed", reason="killed by signal 9 (SIGKILL)")
    got = numerics.judged_failure(crashed)
    assert got.numerics == UNCHECKED
    assert got.numerics_reasons == (
        "the cell stopped before its losses were compared: killed by signal 9 (SIGKILL)",
    )
    diverged = CellResult(Cell("mlp"), "failed", reason="loss is nan", numerics=DIVERGED)
    assert numerics.judged_failure(diverged) is diverged  # the worker's own verdict stays
    skipped = CellResult(Cell("mlp"), "skipped", reason="lazy mode exists only on HPU")
    assert numerics.judged_failure(skipped).numerics is None
