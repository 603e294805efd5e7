"""The host-steadiness check: the block timer counts calls per block of a clock, and the judgment warns
exactly when the blocks' 10th-90th percentile span passes twice the shift that makes a cell unstable."""

from __future__ import annotations

import pytest

from hpubench.analysis.quality import UNSTABLE_MIN_SHIFT
from hpubench.analysis.steadiness import span, steadiness_finding, unsteady_hint
from hpubench.measure.doctor import HOST, OK, WARN
from hpubench.measure.steadiness import CALLS_PER_CHECK, block_rates


class FakeClock:
    """A clock that each call of the work advances by a fixed cost."""

    def __init__(self, cost: float) -> None:
        self.now, self.cost = 0.0, cost

    def __call__(self) -> float:
        return self.now

    def work(self) -> None:
        self.now += self.cost


@pytest.mark.parametrize(("cost", "rate"), [(0.001, 1000.0), (0.002, 500.0), (0.004, 250.0)])
def test_each_block_counts_its_calls_over_its_own_time(cost: float, rate: float) -> None:
    clock = FakeClock(cost)
    assert block_rates(clock.work, blocks=3, block_s=0.1, clock=clock) == pytest.approx([rate] * 3)


def test_a_block_ends_after_whole_batches_and_is_timed_as_long_as_it_ran() -> None:
    clock = FakeClock(0.03)  # one batch of calls already outlasts the block
    assert CALLS_PER_CHECK * 0.03 >= 0.1
    assert block_rates(clock.work, blocks=2, block_s=0.1, clock=clock) == pytest.approx([1 / 0.03] * 2)
    assert clock.now == pytest.approx(2 * CALLS_PER_CHECK * 0.03)


def facts(rates: list[float]) -> dict[str, object]:
    return {"work": "a fixed multiply", "block_s": 0.2, "rates": rates}


def test_the_span_is_the_10th_to_90th_percentile_over_the_median() -> None:
    low, high = span([90.0] + [100.0] * 8 + [110.0])
    assert low == pytest.approx(0.99) and high == pytest.approx(1.01)  # inclusive deciles of 10 blocks


@pytest.mark.parametrize(
    ("spread", "level"),
    [
        (0.0, OK),
        (0.01, OK),
        (2 * UNSTABLE_MIN_SHIFT * 0.95, OK),
        (2 * UNSTABLE_MIN_SHIFT * 1.05, WARN),
        (0.4, WARN),
    ],
)
def test_a_host_warns_exactly_past_twice_the_unstable_shift(spread: float, level: str) -> None:
    rates = [100.0] * 12 + [100.0 * (1 + spread)] * 3  # the 10th percentile 100, the 90th 100 + spread
    low, high = span(rates)
    assert high / low - 1 == pytest.approx(spread)
    finding = steadiness_finding(facts(rates))
    assert finding.section == HOST and finding.check == "host speed"
    assert finding.level == level, finding
    assert f"{low:.0%}-{high:.0%} of its median speed" in finding.detail
    if level == WARN:
        assert f"twice the {UNSTABLE_MIN_SHIFT:.0%}" in finding.detail and finding.fix


@pytest.mark.parametrize("given", [None, {}, {"error": "RuntimeError: no BLAS"}, facts([1.0, 2.0])])
def test_without_enough_blocks_it_says_not_measured_and_never_ok(given) -> None:
    finding = steadiness_finding(given)
    assert finding.level == WARN and finding.detail.startswith("not measured")
    if given and "error" in given:
        assert "no BLAS" in finding.detail


@pytest.mark.parametrize(
    ("verdicts", "hinted"),
    [
        (["unstable", "unstable", "ok"], True),
        (["unstable", "unstable", "ok", "noisy"], True),  # exactly half
        (["unstable", "ok", "ok"], False),
        (["unstable"], False),  # one figure is not a pattern
        (["unstable", "unstable", "ok", "ok", "ok"], False),
        (["unstable", "unstable", None, None, None], True),  # records made before verdicts are not counted
    ],
)
def test_the_host_is_pointed_at_when_at_least_half_the_figures_are_unstable(verdicts, hinted: bool) -> None:
    hint = unsteady_hint(verdicts)
    assert (hint is not None) == hinted
    if hint:
        n = verdicts.count("unstable")
        assert hint.startswith(f"{n} of {sum(v is not None for v in verdicts)} figures are unstable")
        assert "hpubench doctor" in hint
