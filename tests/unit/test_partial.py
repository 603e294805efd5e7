"""Partial records: a failed cell keeps its finished steps, figures built from them, and the reason."""

from __future__ import annotations

import math

import pytest

from hpubench.analysis.metrics import build_metrics
from hpubench.analysis.peaks import peak_for
from hpubench.plan.cell import Cell
from hpubench.run.partial import with_partial
from hpubench.run.stepfeed import FeedHeader, FeedState
from hpubench.store.record import STATUS_FAILED, STATUS_OK, CellResult

CELL = Cell("mlp", steps=50, warmup_steps=2)
STEPS = (0.10, 0.12, 0.11, 0.13, 0.10)
HEADER = FeedHeader(
    steps=50,
    warmup_steps=2,
    samples_per_step=64,
    tokens_per_step=64 * 16,
    flops_per_step=3 * 10**12,
    world_size=2,
    peak=peak_for("hpu", "GAUDI2", "bf16-mixed"),
    source="rank 0",
    runtime={
        "device_name": "from the child",
        "batch_size": 32,
        "precision": {"params": "float32", "autocast": "off"},
    },
)
FIGURES = build_metrics(
    warmup_s=(1.0,),
    measured_s=(0.1, 0.2),
    loss_first=1.0,
    loss_last=1.0,
    samples_per_step=1,
    tokens_per_step=None,
    flops_per_step=None,
    world_size=1,
    peak=None,
)
FEED = FeedState(HEADER, warmup_s=(1.5, 0.2), measured_s=STEPS, loss_first=4.0, loss_last=3.5)


def _failed(**kw) -> CellResult:
    return CellResult(CELL, STATUS_FAILED, reason="timed out after 4 s", wall_s=4.1, **kw)


def test_a_failure_keeps_its_steps_and_figures_built_as_a_whole_cells_are() -> None:
    r = with_partial(_failed(runtime={"device_name": "from the failure"}), FEED)
    assert r.status == STATUS_FAILED and r.reason == "timed out after 4 s" and r.wall_s == 4.1
    assert r.step_times_s == STEPS and r.warmup_times_s == (1.5, 0.2)
    expected = build_metrics(
        warmup_s=(1.5, 0.2),
        measured_s=STEPS,
        loss_first=4.0,
        loss_last=3.5,
        samples_per_step=64,
        tokens_per_step=64 * 16,
        flops_per_step=3 * 10**12,
        world_size=2,
        peak=HEADER.peak,
    )
    assert r.metrics == expected
    assert r.metrics is not None and r.metrics.samples_per_s == pytest.approx(64 * 5 / sum(STEPS))
    assert r.runtime["partial"] == {
        "steps_done": 5,
        "reason": "timed out after 4 s",
        "steps_planned": 50,
        "steps_from": "rank 0",
    }
    # the child's facts fill in; the failure's own win where both have one
    assert r.runtime["device_name"] == "from the failure" and r.runtime["batch_size"] == 32


@pytest.mark.parametrize(
    "result",
    [
        CellResult(CELL, STATUS_OK),
        CellResult(CELL, "skipped", reason="no device"),
        _failed(metrics=FIGURES),
    ],
    ids=["ok", "skipped", "failed-with-figures"],
)
def test_anything_but_a_failure_without_figures_is_left_alone(result: CellResult) -> None:
    assert with_partial(result, FEED) is result


def test_a_failure_before_the_first_measured_step_is_left_alone() -> None:
    failed = _failed()
    assert with_partial(failed, FeedState(HEADER, warmup_s=(1.0,), loss_first=2.0)) is failed
    assert with_partial(failed, FeedState()) is failed


def test_one_step_or_a_non_finite_loss_keeps_the_steps_but_makes_no_figures() -> None:
    one = with_partial(_failed(), FeedState(HEADER, (1.0,), (0.1,), 2.0, 2.0))
    assert one.metrics is None and one.step_times_s == (0.1,)
    assert one.runtime["partial"]["steps_done"] == 1
    assert "fewer than 2 measured steps" in one.runtime["partial"]["no_metrics"]

    broken = with_partial(_failed(), FeedState(HEADER, (1.0,), STEPS, 2.0, math.nan, finite=False))
    assert broken.metrics is None and broken.step_times_s == STEPS
    assert broken.runtime["partial"]["no_metrics"] == "a loss was not a finite number"


def test_the_partial_record_survives_the_store_round_trip() -> None:
    r = with_partial(_failed(), FEED)
    assert CellResult.from_dict(r.to_dict()) == r


def test_a_partial_record_is_judged_partial_with_its_reason() -> None:
    r = with_partial(_failed(), FEED)
    assert r.quality == "partial"
    assert any("5 of 50" in line and "timed out" in line for line in r.quality_reasons), r.quality_reasons
