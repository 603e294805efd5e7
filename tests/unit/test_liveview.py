"""The live display: plain lines in a log at most once per interval, nothing refreshing on its own."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from hpubench.present.liveview import LiveView
from hpubench.run.eta import RunEstimate, StepProgress
from hpubench.run.events import Event


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _progress(done: int, elapsed: float) -> StepProgress:
    return StepProgress("measured", done, 100, 50.0, (100 - done) * 0.1, elapsed)


def _run_cell(view: LiveView, clock: Clock, index: int, ticks: int) -> None:
    """One cell: started, a progress event every second, finished."""
    view.on_event(Event("started", index, 2, f"cell{index}"))
    t0 = clock.now
    for k in range(1, ticks + 1):
        clock.now = t0 + k
        view.on_event(Event("progress", index, 2, f"cell{index}", progress=_progress(k, float(k))))
    view.on_event(Event("finished", index, 2, f"cell{index}", "ok", float(ticks)))


def test_without_a_terminal_a_running_cell_gets_a_line_at_most_every_interval() -> None:
    out = io.StringIO()
    clock = Clock()
    view = LiveView(Console(file=out, width=200), total=2, to_run=2, plain_every_s=10.0, clock=clock)
    with view:
        # lines at 10 s and 20 s of the cell; run left: its rest + one more cell of its projected length
        _run_cell(view, clock, 1, ticks=25)
        _run_cell(view, clock, 2, ticks=9)  # shorter than the interval: no line
    lines = [x for x in out.getvalue().splitlines() if x.startswith("[")]
    assert lines == [
        "[1/2] cell1: step 10/100, 50.0 samples/s, cell ~9 s left, run ~28 s left (estimate)",
        "[1/2] cell1: step 20/100, 50.0 samples/s, cell ~8 s left, run ~36 s left (estimate)",
    ]


def test_on_a_terminal_the_bar_says_it_all_and_nothing_refreshes_by_itself() -> None:
    out = io.StringIO()
    clock = Clock()
    console = Console(file=out, width=200, force_terminal=True)
    view = LiveView(console, total=2, to_run=2, plain_every_s=1.0, clock=clock)
    assert view.progress.live.auto_refresh is False  # a refresh thread would wake the parent 10x/s
    with view:
        _run_cell(view, clock, 1, ticks=3)
        assert view.finished_wall_s == [3.0]
        assert view.run_left_s() == 3.0  # one cell left, at the mean of the finished one
    assert "[1/2]" not in out.getvalue()


def test_with_estimates_the_run_left_follows_them_not_the_mean_of_the_finished_cells() -> None:
    out = io.StringIO()
    clock = Clock()
    # cell 1 estimated 2 s, cell 2 estimated 50 s: after cell 1 took 3 s, the rest is 50 x 1.5
    view = LiveView(
        Console(file=out, width=200), total=2, to_run=2, clock=clock, estimate=RunEstimate([2.0, 50.0])
    )
    with view:
        _run_cell(view, clock, 1, ticks=3)
        assert view.run_left_s() == pytest.approx(75.0)
    assert "run ~1 min 15 s left (estimate)" in out.getvalue()
