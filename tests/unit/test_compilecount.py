"""The compile-count window: deltas, the headline count, unreadable sources; measure_steps' stop condition."""

from __future__ import annotations

import collections
import sys
import types

import torch

from hpubench.measure.compilecount import (
    CompileProgress,
    CompileWindow,
    DynamoCounter,
    EventCounter,
    Unavailable,
    window_delta,
)
from hpubench.measure.steps import measure_steps
from hpubench.plan.autosteps import LEAD_IN_STEPS


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
    assert counter.snapshot() == {"dynamo_graphs": 0, "dynamo_frames": 0}  # never imported: nothing compiled
    assert "torch._dynamo.utils" not in sys.modules
    counters: collections.defaultdict[str, collections.Counter[str]] = collections.defaultdict(
        collections.Counter
    )
    monkeypatch.setitem(sys.modules, "torch._dynamo.utils", types.SimpleNamespace(counters=counters))
    counters["frames"]["total"] += 1
    counters["frames"]["ok"] += 1
    counters["stats"]["unique_graphs"] += 2
    assert counter.snapshot() == {"dynamo_graphs": 2, "dynamo_frames": 1}
    assert next(iter(counter.snapshot())) == "dynamo_graphs"  # the headline: graphs compiled, not frames


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

    def more(warmup_s, compiled):
        asked.append(len(warmup_s))
        assert compiled == [0] * len(warmup_s)  # no counter given: nothing counted
        return 3 if len(asked) == 1 else 0

    out = measure_steps(step, batches, lambda: None, 2, 4, more_warmup=more)
    assert asked == [2, 5]  # after the planned warm-up, then after the steps it added, until it says 0
    assert len(out.warmup_s) == 5 + LEAD_IN_STEPS and len(out.measured_s) == 4  # then the lead-in
    n = 5 + LEAD_IN_STEPS + 4
    assert seen == [k % 4 for k in range(n)]  # the lead-in and the measured steps continue the batch cycle
    plain = measure_steps(step, batches, lambda: None, 2, 4)
    assert len(plain.warmup_s) == 2 + LEAD_IN_STEPS


def test_frames_dynamo_skips_without_compiling_are_not_compilations(monkeypatch) -> None:
    """The 2-rank DDP cause: logging frames first called in DDP's second step (its bucket rebuild) go
    through dynamo's frame callback and count in frames.total, but no graph is compiled."""
    counters: collections.defaultdict[str, collections.Counter[str]] = collections.defaultdict(
        collections.Counter
    )
    monkeypatch.setitem(sys.modules, "torch._dynamo.utils", types.SimpleNamespace(counters=counters))
    window = CompileWindow([DynamoCounter()])
    window.start()
    counters["frames"]["total"] += 6  # skipped at once: no tensor in the frame
    window.stop()
    result = window.result()
    assert result is not None
    assert result.compiles == 0 and result.detail == {"dynamo_graphs": 0, "dynamo_frames": 6}


def test_compile_progress_counts_events_since_its_last_call_and_skips_unreadable_sources() -> None:
    captures = EventCounter("captures", "captures")
    bridge = EventCounter("bridge", "bridge")
    progress = CompileProgress([captures, bridge, Unavailable("x", "not counted")])
    captures.add(5)  # before the warm-up: not the first step's
    assert progress() == 0
    captures.add(2)
    bridge.add(3)
    assert progress() == 3  # the largest source delta, as the window counts
    assert progress() == 0


def test_measure_steps_hands_the_warmup_rule_each_steps_compiles() -> None:
    """A step that compiles keeps the warm-up going; the measured steps start after a quiet one."""
    captures = EventCounter("captures", "captures")
    progress = CompileProgress([captures])
    calls = {"n": 0}

    def step(b):
        calls["n"] += 1
        if calls["n"] <= 4:  # the first four steps each compile something
            captures.add()
        return b[0].sum()

    seen: list[list[int]] = []

    def more(warmup_s, compiled):
        seen.append(list(compiled))
        return 1 if compiled[-1] else 0

    out = measure_steps(step, [(torch.ones(2),)], lambda: None, 2, 3, more_warmup=more, compiles=progress)
    assert out.warmup_compiles == (1, 1, 1, 1, 0) + (0,) * LEAD_IN_STEPS  # the rule's steps, the lead-in
    assert seen == [[1, 1], [1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1, 0]]
    assert len(out.warmup_s) == 5 + LEAD_IN_STEPS and len(out.measured_s) == 3
