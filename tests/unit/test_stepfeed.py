"""The step feed: what the child writes is what the parent reads, batched, and a torn end costs nothing."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from hpubench.analysis.peaks import peak_for
from hpubench.run.stepfeed import FeedHeader, FeedReader, StepFeed, feed_path


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _header(steps: int | None = 6, warmup: int = 3) -> FeedHeader:
    return FeedHeader(
        steps=steps,
        warmup_steps=warmup,
        samples_per_step=32,
        tokens_per_step=None,
        flops_per_step=10**9,
        world_size=1,
        peak=peak_for("hpu", "GAUDI2", "bf16-mixed"),
        runtime={"device_name": "test device", "batch_size": 32},
    )


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_feed_path_sits_beside_the_log_and_keeps_the_repeat_suffix() -> None:
    assert feed_path(Path("run/logs/a__b.log")) == Path("run/logs/a__b.steps.jsonl")
    assert feed_path(Path("run/logs/a__b.r2.log")) == Path("run/logs/a__b.r2.steps.jsonl")


def test_writes_are_batched_by_time_and_the_reader_gets_every_step_and_the_losses(tmp_path: Path) -> None:
    path = tmp_path / "f.steps.jsonl"
    clock = Clock()
    feed = StepFeed(path, _header(), flush_every_s=0.5, clock=clock)
    for i, (t, loss) in enumerate([(2.0, 9.0), (0.2, 8.0), (0.2, 7.0)]):
        clock.now += t
        feed.on_step_time("warmup", i, t, loss)
    for i in range(6):
        clock.now += 0.2
        feed.on_step_time("measured", i, 0.2 + i / 100, 6.0 - i)
    lines = _lines(path)
    assert "header" in lines[0]
    batches = [(x["phase"], x["first"], len(x["times"])) for x in lines[1:]]
    # the first warm-up step alone (its loss is the first loss), the rest of the warm-up at its end, then
    # measured steps once 0.5 s passed since the last write, and the last planned step at once
    assert batches == [("warmup", 0, 1), ("warmup", 1, 2), ("measured", 0, 3), ("measured", 3, 3)]

    reader = FeedReader(path)
    assert reader.poll()
    s = reader.state
    assert s.header == _header()
    assert s.warmup_s == (2.0, 0.2, 0.2)
    assert s.measured_s == pytest.approx(tuple(0.2 + i / 100 for i in range(6)))
    assert (s.loss_first, s.loss_last, s.finite) == (9.0, 1.0, True)
    assert not reader.poll()  # nothing new


def test_steps_since_the_last_write_wait_for_close(tmp_path: Path) -> None:
    path = tmp_path / "f.steps.jsonl"
    clock = Clock()
    feed = StepFeed(path, _header(steps=None, warmup=1), flush_every_s=10.0, clock=clock)
    feed.on_step_time("warmup", 0, 1.0, 3.0)
    for i in range(4):
        feed.on_step_time("measured", i, 0.1, 2.0)
    reader = FeedReader(path)
    reader.poll()
    assert reader.state.measured_s == ()
    feed.close()
    reader.poll()
    assert reader.state.measured_s == (0.1,) * 4 and reader.state.phase == "measured"


def test_the_reader_takes_only_complete_lines_and_continues_where_it_stopped(tmp_path: Path) -> None:
    path = tmp_path / "f.steps.jsonl"
    header = json.dumps({"header": _header().to_dict(), "t": 0})
    w0 = json.dumps({"phase": "warmup", "first": 0, "times": [1.0], "loss": 5.0})
    m0 = json.dumps({"phase": "measured", "first": 0, "times": [0.1, 0.2], "loss": 4.0})
    m1 = json.dumps({"phase": "measured", "first": 2, "times": [0.3], "loss": 3.0})
    path.write_text(f"{header}\n{w0}\n{m0}\n{m1[:10]}")  # a child killed mid-write
    reader = FeedReader(path)
    reader.poll()
    assert reader.state.measured_s == (0.1, 0.2)
    with open(path, "a") as f:
        f.write(m1[10:] + "\n")
    assert reader.poll()
    assert reader.state.measured_s == (0.1, 0.2, 0.3) and reader.state.loss_last == 3.0


def test_a_batch_that_does_not_continue_the_last_one_and_garbage_are_ignored(tmp_path: Path) -> None:
    path = tmp_path / "f.steps.jsonl"
    rows = [
        {"header": _header().to_dict()},
        {"phase": "warmup", "first": 0, "times": [1.0], "loss": 5.0},
        {"phase": "measured", "first": 0, "times": [0.1], "loss": 4.0},
        {"phase": "measured", "first": 5, "times": [0.7], "loss": 4.0},  # a gap: not these steps
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\nnot json\n")
    reader = FeedReader(path)
    reader.poll()
    assert reader.state.measured_s == (0.1,)


def test_a_non_finite_loss_is_remembered(tmp_path: Path) -> None:
    path = tmp_path / "f.steps.jsonl"
    feed = StepFeed(path, _header(steps=2, warmup=1), clock=Clock())
    feed.on_step_time("warmup", 0, 1.0, 3.0)
    feed.on_step_time("measured", 0, 0.1, 2.0)
    feed.on_step_time("measured", 1, 0.1, math.nan)
    reader = FeedReader(path)
    reader.poll()
    assert reader.state.finite is False and math.isnan(reader.state.loss_last or 0.0)


def test_an_unwritable_feed_costs_nothing_but_itself(tmp_path: Path) -> None:
    feed = StepFeed(tmp_path / "no" / "such" / "dir" / "f.jsonl", _header(), clock=Clock())
    feed.on_step_time("warmup", 0, 1.0, 3.0)
    feed.close()  # no exception: the cell goes on
    reader = FeedReader(tmp_path / "missing.jsonl")
    assert not reader.poll() and reader.state.header is None


def test_flush_writes_the_warm_up_steps_it_holds_so_the_window_starts_with_nothing_to_write(
    tmp_path: Path,
) -> None:
    """The worker flushes once the warm-up rule is done: the steps it added past the planned ones are
    written then, not from the first measured step's hook, inside the window."""
    path = tmp_path / "f.steps.jsonl"
    clock = Clock()
    feed = StepFeed(path, _header(warmup=2), flush_every_s=60.0, clock=clock)
    for i in range(5):  # 2 planned + 3 the rule added: the last 3 are held
        feed.on_step_time("warmup", i, 0.1, 1.0)
    held = len(_lines(path))
    feed.flush()
    lines = _lines(path)
    assert len(lines) == held + 1 and (lines[-1]["phase"], lines[-1]["first"], len(lines[-1]["times"])) == (
        "warmup",
        2,
        3,
    )
    feed.on_step_time("measured", 0, 0.1, 1.0)
    assert len(_lines(path)) == held + 1  # nothing written from inside the window
    feed.flush()
    feed.close()
    assert [(x["phase"], x["first"]) for x in _lines(path)[1:]][-1] == ("measured", 0)
