"""When the warm-up ends: the minimum time of --steps auto, and the compiler done, within its bound (pure;
estimates: test_estimate)."""

from __future__ import annotations

import pytest

from hpubench.analysis.quality import RECOMPILED, assess
from hpubench.plan.autosteps import (
    COMPILE_WARMUP_MAX_S,
    COMPILE_WARMUP_MAX_STEPS,
    MAX_WARMUP_EXTENSION,
    STOP_BOUND,
    STOP_MIN_TIME,
    STOP_PLANNED,
    STOP_SETTLED,
    WarmupAsk,
    WarmupDecision,
    WarmupRule,
    compiled_warmup,
    decide_warmup,
    merge_asks,
    warmup_extension,
)
from hpubench.plan.budget import MIN_WARMUP, BudgetItem
from hpubench.plan.cell import Cell
from hpubench.plan.cost import Estimate, warmup_steps_expected


def test_a_short_warmup_is_extended_to_the_minimum_time_after_its_first_step() -> None:
    # first step 7 ms (left out), then two 1 ms steps: 2 ms done, 0.2 s asked -> 198 more 1 ms steps
    assert warmup_extension([0.007, 0.001, 0.001], 0.2) == 198
    # the steps after the first price the rest, not the slow first one
    assert warmup_extension([5.0, 0.01], 0.1) == 9
    # their median: one slow step among them does not price every added step
    assert warmup_extension([0.007, 0.001, 0.001, 0.005], 0.2) == 193


@pytest.mark.parametrize(
    ("times", "min_s"),
    [([0.5, 0.3, 0.3], 0.5), ([1.0, 0.2], 0.2), ([0.001], 0.0), ([], 1.0)],
)
def test_no_extension_when_the_warmup_already_lasted_or_nothing_is_asked(times, min_s) -> None:
    assert warmup_extension(times, min_s) == 0


def test_a_single_warmup_step_prices_the_rest_with_itself_and_runaways_are_bounded() -> None:
    assert warmup_extension([0.01], 0.1) == 10
    assert warmup_extension([0.0, 0.0], 1.0) == MAX_WARMUP_EXTENSION


# ---- the warm-up's end: the compiler done (decide_warmup, WarmupRule) ---------------------------------


def test_rising_compiles_extend_the_warmup_by_a_step() -> None:
    d = decide_warmup(WarmupAsk(compiled_last=3, extra_s=0.0, time_more=0), extra_steps=0)
    assert d == WarmupDecision(1, "")
    # with a minimum time still to reach, the larger of the two
    assert decide_warmup(WarmupAsk(2, 0.0, 40), extra_steps=0) == WarmupDecision(40, "")


def test_flat_compiles_stop_the_warmup_and_say_why() -> None:
    assert decide_warmup(WarmupAsk(0, 0.0, 0), extra_steps=0) == WarmupDecision(0, STOP_PLANNED)
    assert decide_warmup(WarmupAsk(0, 0.5, 0), extra_steps=2, rose_before=True) == WarmupDecision(
        0, STOP_SETTLED
    )
    assert decide_warmup(WarmupAsk(0, 2.0, 0), extra_steps=99) == WarmupDecision(0, STOP_MIN_TIME)
    assert decide_warmup(WarmupAsk(0, 0.1, 5), extra_steps=1) == WarmupDecision(5, "")  # time still wants


@pytest.mark.parametrize(
    ("extra_steps", "extra_s"),
    [(COMPILE_WARMUP_MAX_STEPS, 0.1), (3, COMPILE_WARMUP_MAX_S), (COMPILE_WARMUP_MAX_STEPS + 7, 0.0)],
)
def test_the_bound_stops_a_warmup_whose_compiles_still_rise(extra_steps, extra_s) -> None:
    d = decide_warmup(WarmupAsk(1, extra_s, 100), extra_steps=extra_steps, rose_before=True)
    assert d == WarmupDecision(0, STOP_BOUND)
    # below both bounds it goes on
    assert decide_warmup(WarmupAsk(1, 0.0, 0), extra_steps=COMPILE_WARMUP_MAX_STEPS - 1).more == 1


def test_ranks_agree_on_the_largest_of_each_report() -> None:
    merged = merge_asks([WarmupAsk(0, 0.2, 5), WarmupAsk(2, 0.1, 0)])
    assert merged == WarmupAsk(2, 0.2, 5)  # a compile on any rank keeps every rank warming up


def run_rule(rule: WarmupRule, compiles_per_step: list[int], step_s: float = 0.01) -> tuple[int, list[int]]:
    """Drive the rule as measure_steps does: ask after the planned steps, then after each batch added."""
    times: list[float] = []
    compiled: list[int] = []
    planned, i = rule.planned, 0
    while i < planned:
        times.append(step_s)
        compiled.append(compiles_per_step[i] if i < len(compiles_per_step) else compiles_per_step[-1])
        i += 1
        if i == planned:
            planned += rule(times, compiled)
    return len(times), compiled


def test_rule_runs_until_a_step_compiles_nothing_and_records_why() -> None:
    rule = WarmupRule(planned=1)
    n, compiled = run_rule(rule, [5, 2, 0])  # first step compiles, the second recompiles, the third quiet
    assert n == 3
    facts = dict(rule.facts([0.01] * n, compiled))
    assert facts["warmup_stop"].startswith(f"{STOP_SETTLED}: 3 steps (1 planned + 2 more)")
    assert facts["warmup_extended"] == "1 warm-up steps + 2 more while compiles rose"
    assert facts["warmup_compiles"]["last_compiling_step"] == 1
    assert facts["warmup_compiles"]["compiles"] == 7


def test_rule_stops_at_the_bound_for_a_step_that_recompiles_every_time() -> None:
    rule = WarmupRule(planned=3)
    n, compiled = run_rule(rule, [1])  # every step compiles
    assert n == 3 + COMPILE_WARMUP_MAX_STEPS
    stop = dict(rule.facts([0.01] * n, compiled))["warmup_stop"]
    assert stop.startswith(f"{STOP_BOUND}: compiles still rose after {COMPILE_WARMUP_MAX_STEPS} more steps")


def test_rule_leaves_a_settled_planned_warmup_alone() -> None:
    rule = WarmupRule(planned=3)
    n, compiled = run_rule(rule, [4, 0, 0])
    assert n == 3
    facts = dict(rule.facts([0.01] * n, compiled))
    assert facts["warmup_stop"].startswith(f"{STOP_PLANNED}:")
    assert "warmup_extended" not in facts


def test_rule_asks_the_ranks_to_agree() -> None:
    asked: list[WarmupAsk] = []

    def agree(ask: WarmupAsk) -> WarmupAsk:
        asked.append(ask)
        return merge_asks([ask, WarmupAsk(1 if len(asked) == 1 else 0, 0.0, 0)])  # another rank compiled once

    rule = WarmupRule(planned=2, agree=agree)
    n, _ = run_rule(rule, [3, 0])
    assert n == 3 and len(asked) == 2  # this rank was quiet after step 1; the other rank's compile added one


def test_compiling_cells_are_estimated_with_a_quiet_warmup_step() -> None:
    assert compiled_warmup(1, compiles=True) == 2
    assert compiled_warmup(3, compiles=True) == 3
    assert compiled_warmup(1, compiles=False) == 1


def test_a_cell_measured_after_the_bound_is_recompiled_with_the_bound_in_its_reason() -> None:
    steps = [0.010, 0.0101, 0.0099, 0.0100] * 10
    stop = (
        f"{STOP_BOUND}: compiles still rose after 50 more steps, 1.2 s (at most 50 steps or 120 s are added)"
    )
    q = assess(steps, {"compiles_measured": 40, "compile_counter": "dynamo", "warmup_stop": stop})
    assert q.verdict == RECOMPILED
    assert "; warm-up stopped at its bound: compiles still rose after 50 more steps, 1.2 s" in q.reasons[0]
    settled = assess(steps, {"compiles_measured": 1, "warmup_stop": f"{STOP_SETTLED}: 3 steps"})
    assert settled.verdict == RECOMPILED and "bound" not in settled.reasons[0]  # a later shape change


def test_the_estimate_and_the_budget_count_a_compiling_cells_quiet_warmup_step() -> None:
    est = Estimate(0.1, 2.0, 1.0, None, "test", "test")
    eager = Cell("mlp", steps=10, warmup_steps=1)
    compiled = Cell("mlp", steps=10, warmup_steps=1, mode="compile")
    assert est.cell_time_s(compiled) == pytest.approx(est.cell_time_s(eager) + 0.1)  # one more steady step
    assert est.cell_time_s(Cell("mlp", steps=10, warmup_steps=3, mode="compile")) == est.cell_s(3, 10)
    item = BudgetItem("k", 1, 10, 1.0, 2.0, 0.1, warmup_floor=warmup_steps_expected(compiled, MIN_WARMUP))
    assert item.cost(1, 2) == pytest.approx(BudgetItem("k", 1, 10, 1.0, 2.0, 0.1).cost(2, 2))
