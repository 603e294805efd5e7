"""The budget planner (hpubench.plan.budget): within budget by construction, minimums first, then
water-filling."""

from __future__ import annotations

import random

import pytest

from hpubench.plan.budget import MIN_STEPS, MIN_WARMUP, BudgetItem, plan


def item(key: str, step: float, *, first: float | None = None, fixed: float = 1.0, w: int = 5, s: int = 50):
    return BudgetItem(key, w, s, fixed, step * 2 if first is None else first, step)


def test_a_generous_budget_keeps_every_cell_as_asked():
    items = [item("a", 0.01), item("b", 1.0), item("c", 3.0)]
    p = plan(items, 10_000)
    assert [(a.warmup_steps, a.steps) for a in p.allotments] == [(5, 50)] * 3
    assert all(a.runs and a.note.startswith("fits") for a in p.allotments)
    assert p.total_s == pytest.approx(sum(i.cost(5, 50) for i in items))


def test_cheap_cells_get_all_they_ask_and_expensive_ones_share_the_rest():
    items = [item("tiny", 0.01), item("big1", 50.0), item("big2", 60.0)]
    p = plan(items, 600)
    tiny, big1, big2 = p.allotments
    assert (tiny.warmup_steps, tiny.steps) == (5, 50)
    assert big1.steps < 50 and big2.steps < 50
    assert big1.steps >= MIN_STEPS and big1.warmup_steps >= MIN_WARMUP
    assert "reduced to" in big1.note and "asked 5 + 50" in big1.note
    assert p.total_s <= 600


def test_minimums_for_every_cell_come_before_extending_any():
    # Room for both minimums and a little more: neither may be extended past what the remainder allows,
    # and the cheap one must not take the expensive one's minimum.
    a, b = item("a", 1.0, fixed=0.0), item("b", 10.0, fixed=0.0)
    budget = a.cost(1, 2) + b.cost(1, 2) + 1.0
    p = plan([a, b], budget)
    assert all(x.runs for x in p.allotments)
    assert p.allotments[1].steps == MIN_STEPS and p.allotments[1].warmup_steps == MIN_WARMUP


def test_cells_that_cannot_fit_even_at_the_minimum_are_skipped_most_expensive_first_with_the_figures():
    items = [item("huge", 100.0), item("small", 1.0), item("mid", 10.0)]
    budget = items[1].cost(1, 2) + items[2].cost(1, 2) + 5
    p = plan(items, budget)
    huge, small, mid = p.allotments
    assert small.runs and mid.runs and not huge.runs
    assert huge.skip_reason is not None
    assert "needs ~" in huge.skip_reason and "minimum of 1 warm-up + 2 steps" in huge.skip_reason
    assert "budget left" in huge.skip_reason
    assert p.skipped == 1


def test_nothing_fits_in_no_time():
    p = plan([item("a", 1.0)], 0.5)
    assert not p.allotments[0].runs and p.total_s == 0


def test_a_cell_without_an_estimate_keeps_its_minimum_and_says_so():
    unknown = BudgetItem("u", 5, 50, None, None, None)
    p = plan([unknown, item("a", 1.0)], 1000)
    assert (p.allotments[0].warmup_steps, p.allotments[0].steps) == (1, 2)
    assert p.allotments[0].runs and "no time estimate" in p.allotments[0].note


@pytest.mark.parametrize("seed", range(30))
def test_random_plans_fit_honour_minimums_and_never_exceed_what_was_asked(seed):
    rng = random.Random(seed)
    items = [
        item(
            f"c{i}",
            rng.uniform(0.001, 80),
            fixed=rng.uniform(0, 10),
            w=rng.randint(1, 6),
            s=rng.randint(2, 60),
        )
        for i in range(rng.randint(1, 40))
    ]
    budget = rng.uniform(0, 1.2) * sum(i.cost(i.warmup_steps, i.steps) for i in items)
    p = plan(items, budget)
    assert p.total_s <= budget + 1e-6
    for it, a in zip(items, p.allotments, strict=True):
        assert MIN_WARMUP <= a.warmup_steps <= it.warmup_steps
        assert MIN_STEPS <= a.steps <= it.steps
        if a.runs:
            assert a.estimate_s == pytest.approx(it.cost(a.warmup_steps, a.steps))
    # Skips only when needed: a skipped cell's minimum really did not fit beside the granted minimums.
    granted_min = sum(it.cost(1, 2) for it, a in zip(items, p.allotments, strict=True) if a.runs)
    for it, a in zip(items, p.allotments, strict=True):
        if not a.runs:
            assert granted_min + it.cost(1, 2) > budget
