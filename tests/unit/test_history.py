"""History over saved baselines (hpubench.analysis.history): the order of the points and the gate's verdict
between each two consecutive ones, on synthetic step times with planted changes."""

from __future__ import annotations

import numpy as np
import pytest
from gatedata import make_side

from hpubench.analysis.gate.outcomes import IMPROVEMENT, NO_CHANGE, REGRESSION
from hpubench.analysis.gate.rules import GateSettings
from hpubench.analysis.history import Point, build, order_points, summary
from hpubench.errors import UsageError
from hpubench.plan.cell import Cell

A = Cell("mlp", "tiny", "cpu", precision="32-true", steps=60)
B = Cell("gpt", "tiny", "cpu", precision="32-true", steps=60)


def _point(name: str, seed: int, slow: dict[str, float] | None = None, **kw) -> Point:
    rng = np.random.default_rng(seed)
    records = []
    for cell in (A, B):
        change = (slow or {}).get(cell.workload, 0.0)
        records += make_side(rng, [cell], slowdown=change, repeats=8, cv=0.01)
    return Point(name, tuple(records), **kw)


def _bare(name: str, **kw) -> Point:
    return Point(name, (), **kw)


def test_commit_order_then_date_then_name() -> None:
    points = [
        _bare("c", commit="3", commit_time=300, started_at="2024-01-01T00:00:00+00:00"),
        _bare("a", commit="1", commit_time=100, started_at="2024-03-01T00:00:00+00:00"),
        _bare("x", commit="?", started_at="2024-01-02T00:00:00+00:00"),  # git does not know it
        _bare("b", commit="2", commit_time=100, started_at="2024-03-01T00:00:00+00:00"),  # tie: by name
    ]
    ordered, notes = order_points(points, "commit")
    assert [p.name for p in ordered] == ["a", "b", "c", "x"]
    assert notes == ["no commit time for x: placed after the others, by date"]


def test_date_order_uses_the_run_start_else_the_save_time() -> None:
    points = [
        _bare("new", started_at="2024-05-01T00:00:00+00:00"),
        _bare("saved-only", saved_at="2024-02-01T00:00:00+00:00"),
        _bare("old", started_at="2024-01-01T00:00:00+00:00", saved_at="2024-09-01T00:00:00+00:00"),
    ]
    assert [p.name for p in order_points(points, "date")[0]] == ["old", "saved-only", "new"]
    assert [p.name for p in order_points(points[::-1], "date")[0]] == ["old", "saved-only", "new"]
    assert [p.name for p in order_points(points, "given")[0]] == ["new", "saved-only", "old"]


def test_no_commit_known_orders_by_date_with_a_note() -> None:
    points = [_bare("b", started_at="2024-02-01"), _bare("a", started_at="2024-03-01")]
    ordered, notes = order_points(points, "commit")
    assert [p.name for p in ordered] == ["b", "a"] and "ordered by date" in notes[0]


def test_unknown_order_is_refused() -> None:
    with pytest.raises(UsageError, match="--order"):
        order_points([], "alphabetical")


def test_verdicts_between_consecutive_baselines() -> None:
    # mlp: unchanged, then 30% slower at v3, then back at v4; gpt: unchanged throughout.
    points = [
        _point("v1", 1, commit_time=1),
        _point("v2", 2, commit_time=2),
        _point("v3", 3, {"mlp": 0.3}, commit_time=3),
        _point("v4", 4, commit_time=4),
    ]
    h = build(points[::-1], GateSettings(), "commit")  # given newest first: commit order puts it right
    assert [p.name for p in h.points] == ["v1", "v2", "v3", "v4"]
    cells = {c.key: c for c in h.cells}
    mlp, gpt = cells[A.match_key], cells[B.match_key]
    assert [s.outcome for s in mlp.steps] == [NO_CHANGE, REGRESSION, IMPROVEMENT]  # type: ignore[union-attr]
    assert [s.outcome for s in gpt.steps] == [NO_CHANGE] * 3  # type: ignore[union-attr]
    assert mlp.steps[1].change == pytest.approx(1 / 1.3 - 1, abs=0.03)  # type: ignore[union-attr]
    slow, base = mlp.points[2], mlp.points[1]
    assert slow is not None and base is not None
    assert slow.value < base.value and slow.lo <= slow.value <= slow.hi and slow.runs == 8
    assert summary(h)["regressions"] == 1 and summary(h)["improvements"] == 1


def test_a_cell_absent_from_one_baseline_has_a_gap() -> None:
    full = _point("v1", 1, commit_time=1)
    only_gpt = Point("v2", tuple(r for r in full.records if r.cell.workload == "gpt"), commit_time=2)
    h = build([full, only_gpt, _point("v3", 3, commit_time=3)])
    mlp = next(c for c in h.cells if c.key == A.match_key)
    assert mlp.points[1] is None and mlp.statuses == ("ok", "absent", "ok")
    assert mlp.steps[0] is not None and mlp.steps[0].outcome == "missing"
    assert mlp.steps[1] is not None and mlp.steps[1].outcome == "new"


def test_a_history_needs_two_baselines() -> None:
    with pytest.raises(UsageError, match="at least 2"):
        build([_point("v1", 1)])


def _series(slow_from: int | None, n: int = 12) -> list[Point]:
    """``n`` baselines whose runs drift by 2% each; mlp 10% slower from index ``slow_from`` on."""
    points = []
    for i in range(n):
        rng = np.random.default_rng(100 + i)
        records = []
        for cell in (A, B):
            slow = 0.10 if slow_from is not None and i >= slow_from and cell is A else 0.0
            records += make_side(rng, [cell], slowdown=slow, repeats=3, cv=0.01, run_sd=0.02, n=30)
        points.append(Point(f"v{i:02d}", tuple(records), commit_time=i))
    return points


def test_the_history_marks_one_planted_step_in_its_cell_only() -> None:
    h = build(_series(slow_from=7), GateSettings())
    cells = {c.key: c for c in h.cells}
    (step,) = cells[A.match_key].changes.shown
    assert (h.points[step.since].name, h.points[step.at].name) == ("v06", "v07")
    assert step.interval[0] < step.change < step.interval[1] < 0
    assert not cells[B.match_key].changes.shown
    assert summary(h)["change_points"] == 1 and summary(h)["cells_with_change_points"] == 1


def test_an_aa_history_marks_no_step() -> None:
    h = build(_series(slow_from=None), GateSettings())
    assert summary(h)["change_points"] == 0
    assert not any(c.changes.shifts for c in h.cells)


def test_a_short_history_says_from_how_many_baselines_a_step_can_be_shown() -> None:
    h = build(_series(slow_from=2, n=4), GateSettings())
    assert any("can show a step at alpha 0.01 from 9" in n for n in h.notes)
    assert summary(h)["change_points"] == 0
