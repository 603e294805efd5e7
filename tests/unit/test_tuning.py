"""The condition dimension and the tuned-vs-plain summary (hpubench.analysis.tuning): which figure is which,
how the plain processes' heap modes are counted, and the tips' measured costs."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest
from reportdata import fake_result

from hpubench.analysis.frame import to_dataframe
from hpubench.analysis.tuning import (
    CHURN_FAULTS_PER_STEP,
    CHURNED,
    HEAP_SETTING,
    SETTLED,
    TRAINING,
    doctor_findings,
    summary_lines,
    tunings,
)
from hpubench.measure.doctor import OK, WARN
from hpubench.plan.cell import Cell
from hpubench.plan.dimensions import PLAIN, TUNED
from hpubench.run.executors.base import cell_signature
from hpubench.run.hostcondition import condition_env, needs_fresh_process
from hpubench.run.scheduler import Scheduler
from reports.frames import config_label


def record(step_s: float, *, plain: bool, faults_per_step: float, threads: int, seed: int = 0):
    steps = 12  # fake_result's measured steps
    r = fake_result(
        "mlp",
        "cpu",
        "cpu",
        precision="32-true",
        step_s=step_s,
        noise=0.001,
        seed=seed,
        facts={
            "page_faults_measured": {"minor": int(faults_per_step * steps), "major": 0},
            "threads": {"intra_op": threads},
        },
    )
    if plain:
        r = replace(r, cell=replace(r.cell, extra=(("condition", PLAIN),)))
    return r


def test_plain_is_a_key_part_and_tuned_is_not():
    tuned, plain = Cell("mlp"), Cell("mlp", extra=(("condition", PLAIN),))
    assert tuned.value("condition") == TUNED and "condition" not in tuned.key
    assert plain.key == tuned.key + "/condition=plain"


def test_plain_cells_start_fresh_with_glibc_heap_and_torch_threads():
    plain = Cell("mlp", extra=(("condition", PLAIN),))
    env = dict(cell_signature(plain))
    assert env["HPUBENCH_MALLOC"] == "system" and env["HPUBENCH_CPU_THREADS"] == "all"
    assert "HPUBENCH_MALLOC" not in dict(cell_signature(Cell("mlp")))
    assert condition_env(Cell("mlp")) == {}
    assert needs_fresh_process(plain) and not needs_fresh_process(Cell("mlp"))


def test_scheduler_sends_plain_cells_to_the_fresh_executor():
    local, dist, fresh = object(), object(), object()
    s = Scheduler(local, dist, fresh=fresh)  # type: ignore[arg-type]
    assert s.executor_for(Cell("mlp", extra=(("condition", PLAIN),))) is fresh
    assert s.executor_for(Cell("mlp")) is local
    assert s.executor_for(Cell("mlp", devices=2, extra=(("condition", PLAIN),))) is dist


def test_pairs_tuned_and_plain_and_counts_heap_modes():
    tuned = record(0.010, plain=False, faults_per_step=2, threads=1)
    plains = [
        record(0.012, plain=True, faults_per_step=CHURN_FAULTS_PER_STEP * 20, threads=2, seed=1),
        record(0.008, plain=True, faults_per_step=3, threads=2, seed=2),
        record(0.008, plain=True, faults_per_step=4, threads=2, seed=3),
    ]
    plains = [replace(p, repeat=i) for i, p in enumerate(plains)]
    (t,) = tunings([tuned, *plains])
    assert t.key == tuned.key
    assert [p.mode for p in t.plain] == [CHURNED, SETTLED, SETTLED]
    assert t.count(CHURNED) == 1 and t.count(SETTLED) == 2
    assert t.ratio == pytest.approx(t.plain_samples_per_s / t.tuned_samples_per_s)
    assert t.plain_samples_per_s > t.tuned_samples_per_s  # the median plain process is a settled one
    heap, threads = t.tips()
    # the heap's cost: churned vs settled plain processes (same threads), 1 - 0.008/0.012
    assert HEAP_SETTING in heap and "33%" in heap and "1 of 3" in heap
    assert "2 intra-op threads" in threads and "+25%" in threads
    lines = summary_lines([t])
    assert lines[0].startswith(tuned.key) and "1 of 3 heap regrown every step" in lines[0]


def test_no_tip_without_a_cost_and_no_pair_without_both_conditions():
    tuned = record(0.010, plain=False, faults_per_step=2, threads=1)
    same = record(0.010, plain=True, faults_per_step=2, threads=1)
    (t,) = tunings([tuned, same])
    assert t.tips() == ()  # same threads, settled heap: nothing to act on
    assert tunings([tuned]) == [] and tunings([same]) == []
    assert summary_lines([]) == []


def test_churned_against_tuned_when_no_plain_process_settled():
    tuned = record(0.010, plain=False, faults_per_step=2, threads=1)
    slow = record(0.020, plain=True, faults_per_step=CHURN_FAULTS_PER_STEP, threads=1)
    (t,) = tunings([tuned, slow])
    (tip,) = t.tips()
    assert "against tuned" in tip and "50%" in tip


def test_a_plain_figure_is_labelled_as_such_wherever_a_configuration_is_named():
    tuned = record(0.010, plain=False, faults_per_step=2, threads=1)
    plain = record(0.008, plain=True, faults_per_step=2, threads=2)
    df = to_dataframe([tuned, plain])
    assert list(df["condition"]) == [TUNED, PLAIN]
    labels = [config_label(row) for _, row in df.iterrows()]
    assert "plain host" not in labels[0] and labels[1] == labels[0] + " · plain host"
    assert config_label(pd.Series({"precision": "32-true", "mode": "eager", "graphs": False})) == (
        "32-true · eager · no graphs"
    )


def test_doctor_gives_the_measured_heap_tip_with_the_setting_as_its_fix():
    tuned = record(0.010, plain=False, faults_per_step=2, threads=1)
    churned = record(0.020, plain=True, faults_per_step=CHURN_FAULTS_PER_STEP, threads=1)
    heap, pair = doctor_findings(tunings([tuned, churned]), {}, "runs/a")
    assert heap.section == TRAINING and heap.level == WARN
    assert "50%" in heap.detail and tuned.key in heap.detail and HEAP_SETTING not in heap.detail
    assert heap.fix == f"export {HEAP_SETTING} in your training's environment"
    assert pair.level == OK and "plain/tuned 0.50" in pair.detail


def test_doctor_says_nothing_to_set_where_plain_costs_nothing():
    tuned = record(0.010, plain=False, faults_per_step=2, threads=1)
    same = record(0.010, plain=True, faults_per_step=2, threads=1)
    (pair,) = doctor_findings(tunings([tuned, same]), {}, "runs/a")
    assert pair.level == OK and "plain/tuned 1.00" in pair.detail


def test_doctor_without_pairs_says_how_to_measure_them():
    (none,) = doctor_findings([], {}, "runs/a")
    assert none.level == WARN and "runs/a" in none.detail and "--condition tuned,plain" in none.fix
    (unmeasured,) = doctor_findings(None, {}, None)
    assert unmeasured.level == OK and "moving heap thresholds" in unmeasured.detail
    assert "--condition tuned,plain" in unmeasured.detail and "doctor --from RUN" in unmeasured.detail
    held = {"MALLOC_MMAP_THRESHOLD_": "33554432", "MALLOC_TRIM_THRESHOLD_": "1073741824"}
    (set_here,) = doctor_findings(None, held, None)
    assert "holds glibc's heap thresholds" in set_here.detail
