"""The compile-count window: deltas, the headline count, unreadable sources; measure_steps' stop condition."""

from __future__ import annotations

import collections
import sys
import types

import torch

from hpubench.measure.compilecount import (
    CompileWindow,
    DynamoCounter,
    EventCounter,
    Unavailable,
    window_delta,
)
from hpubench.measure.steps import measure_steps


def test_window_delta_takes_the_largest_headline_delta() -> None:
    before = {"dynamo_frames": 2, "dynamo_graphs": 3, "hpu_graph_compilations": 10}
    after = {"dynamo_frames": 3, "dynamo_graphs": 5, "hpu_graph_compilations": 14}
    groups = [["dynamo_frames", "dynamo_graphs"], ["hpu_graph_compilations"]]
    count, detail = window_delta(before, after, groups)
    assert detail == {"dynamo_frames": 1, "dynamo_graphs": 2, "hpu_graph_compilations": 4}
    assert count == 4  # one event seen at two layers is not counted twice; graphs are detail only
    assert window_delta(after, after, groups)[0] == 0


def test_window_counts_events_between_start_and_stop_only() -> None:
    captures = EventCounter("captures", "captures")
    window = CompileWindow([captures])
    captures.add()  # during the warm-up
    window.start()
    captures.add(2)
    window.stop()
    captures.add()  # after the measured steps
    result = window.result()
    assert result is not None
    assert (result.compiles, result.detail, result.counter) == (2, {"captures": 2}, "captures")
    assert result.runtime_fields()["compiles_measured"] == 2


def test_an_unreadable_source_is_reported_not_fatal() -> None:
    captures = EventCounter("captures", "captures")
    window = CompileWindow([captures, Unavailable("bridge", "not counted: ImportError: no bridge")])
    window.start()
    captures.add()
    window.stop()
    result = window.result()
    assert result is not None
    assert result.compiles == 1 and result.counter == "captures"
    fields = result.runtime_fields()
    assert (
        fields["compile_counter_errors"] == ["bridge: RuntimeError: not counted: ImportError: no bridge"] * 2
    )


def test_a_window_that_never_closed_has_no_result() -> None:
    window = CompileWindow([EventCounter("captures", "captures")])
    window.start()
    assert window.result() is None


def test_dynamo_counter_reads_dynamos_counters_without_importing_it(monkeypatch) -> None:
    counter = DynamoCounter()
    monkeypatch.delitem(sys.modules, "torch._dynamo.utils", raising=False)
    assert counter.snapshot() == {"dynamo_frames": 0, "dynamo_graphs": 0}  # never imported: nothing compiled
    assert "torch._dynamo.utils" not in sys.modules
    counters: collections.defaultdict[str, collections.Counter[str]] = collections.defaultdict(
        collections.Counter
    )
    monkeypatch.setitem(sys.modules, "torch._dynamo.utils", types.SimpleNamespace(counters=counters))
    counters["frames"]["total"] += 1
    counters["frames"]["ok"] += 1
    counters["stats"]["unique_graphs"] += 2
    assert counter.snapshot() == {"dynamo_frames": 1, "dynamo_graphs": 2}


def test_measure_steps_asks_the_stop_condition_after_every_step() -> None:
    asked: list[tuple[int, float]] = []

    def stop(times, elapsed_s):
        asked.append((len(times), elapsed_s))
        return "enough" if len(times) == 7 else None

    out = measure_steps(lambda b: b[0].sum(), [(torch.ones(2),)], lambda: None, 2, stop)
    assert len(out.measured_s) == 7 and out.stop_reason == "enough"
    assert [n for n, _ in asked] == list(range(1, 8))
    assert all(e >= sum(out.measured_s[:n]) for n, e in asked)  # elapsed covers the steps measured so far
    fixed = measure_steps(lambda b: b[0].sum(), [(torch.ones(2),)], lambda: None, 1, 5)
    assert len(fixed.measured_s) == 5 and fixed.stop_reason == "fixed: 5 steps"


def test_measure_steps_runs_the_extra_warmup_it_is_told_and_keeps_the_batch_order() -> None:
    seen: list[int] = []
    asked: list[int] = []
    batches = [(torch.full((1,), float(k)),) for k in range(4)]

    def step(b):
        seen.append(int(b[0].item()))
        return b[0].sum()

    def more(warmup_s):
        asked.append(len(warmup_s))
        return 3 if len(asked) == 1 else 0

    out = measure_steps(step, batches, lambda: None, 2, 4, more_warmup=more)
    assert asked == [2, 5]  # after the planned warm-up, then after the steps it added, until it says 0
    assert len(out.warmup_s) == 5 and len(out.measured_s) == 4
    assert seen == [k % 4 for k in range(9)]  # the measured steps continue the batch cycle
    plain = measure_steps(step, batches, lambda: None, 2, 4)
    assert len(plain.warmup_s) == 2
