"""The minimum warm-up time of --steps auto: how many steps it adds (pure; estimates: test_estimate)."""

from __future__ import annotations

import pytest

from hpubench.plan.autosteps import MAX_WARMUP_EXTENSION, warmup_extension


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
