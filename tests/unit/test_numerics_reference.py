"""The numerics capture in the worker (hpubench.run.cellrun.reference, .record): the first losses, the
reference cached once per run directory, and a non-finite loss recorded as ``diverged``."""

from __future__ import annotations

import json
import time

from hpubench.analysis.numerics import DIVERGED, STEPS_COMPARED, UNCHECKED
from hpubench.measure.steps import NonFiniteLoss
from hpubench.plan.cell import Cell
from hpubench.run.cellrun.record import record_stopped
from hpubench.run.cellrun.reference import (
    LossTap,
    Reference,
    cache_path,
    read_cached,
    runtime_numerics,
    write_cached,
)
from hpubench.run.cellrun.resolve import Start
from hpubench.store.layout import REFERENCES_DIR, references_dir_of
from hpubench.store.record import STATUS_FAILED

CELL = Cell("mlp", "tiny", "cpu", precision="bf16-true")


def test_the_tap_keeps_the_first_losses_and_passes_every_step_on():
    seen = []
    tap = LossTap(lambda *step: seen.append(step))
    for i in range(STEPS_COMPARED + 3):
        tap.on_step_time("warmup" if i < 2 else "measured", i, 0.01, 10.0 - i)
    assert tap.losses == [10.0 - i for i in range(STEPS_COMPARED)]
    assert len(seen) == STEPS_COMPARED + 3 and seen[0] == ("warmup", 0, 0.01, 10.0)
    LossTap().on_step_time("warmup", 0, 0.01, 1.0)  # no feed: nothing to pass on


def test_a_reference_is_written_whole_once_and_read_back_by_key(tmp_path):
    assert references_dir_of(tmp_path / "run" / "logs" / "x.steps.jsonl") == tmp_path / "run" / REFERENCES_DIR
    assert references_dir_of(tmp_path / "x.steps.jsonl") is None
    cache = tmp_path / "run" / REFERENCES_DIR
    ref = Reference("mlp/tiny/cpu/x", (6.9, 6.1), 0.42, "eager", "abc", "mlp/tiny/...")
    assert read_cached(cache, ref.key) is None
    write_cached(cache, ref)
    back = read_cached(cache, ref.key)
    assert back == ref and back.cached and not ref.cached
    assert [p.name for p in cache.iterdir()] == [cache_path(cache, ref.key).name]  # no temporary left
    assert read_cached(cache, "another key") is None
    cache_path(cache, ref.key).write_text("{not json")
    assert read_cached(cache, ref.key) is None  # a damaged file is recomputed, never a failure
    write_cached(None, ref)  # no run directory: nothing kept


def test_runtime_facts_say_what_the_verdict_came_from():
    ref = Reference("k", (6.9, 6.1, 5.5), 0.4, "eager", "abc", "mlp/tiny/cpu/1x1/32-true/...", cached=True)
    facts = runtime_numerics([6.9, float("nan")], ref, None)
    assert facts["losses"] == [6.9, "nan"] and facts["steps_compared"] == 2
    assert facts["reference"] == "cached" and facts["reference_s"] == 0.4 and facts["reference_key"] == "k"
    json.dumps(facts, allow_nan=False)  # plain JSON: no NaN literal in a record
    assert runtime_numerics([1.0], None, "several ranks")["unchecked"] == "several ranks"


def test_a_non_finite_loss_fails_the_cell_as_diverged_and_other_failures_are_unchecked():
    start = Start("2026-11-27T00:00:00", time.perf_counter())
    facts = (("numerics", runtime_numerics([6.9, 6.5], None, None)),)
    cause = NonFiniteLoss("loss became non-finite at measured step 3 (precision or learning-rate problem)")
    rec = record_stopped(CELL, cause, facts, start)
    assert rec.status == STATUS_FAILED and rec.numerics == DIVERGED
    assert rec.numerics_reasons == (f"NonFiniteLoss: {cause}",)
    assert rec.runtime["numerics"]["losses"] == [6.9, 6.5]
    other = record_stopped(CELL, RuntimeError("out of memory"), facts, start)
    assert other.numerics == UNCHECKED and "failed" in other.numerics_reasons[0]
