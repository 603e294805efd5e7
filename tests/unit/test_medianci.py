"""The median's distribution-free interval (hpubench.analysis.stats.medianci), checked against the binomial
counts worked by hand."""

from __future__ import annotations

import pytest

from hpubench.analysis.stats.medianci import median_interval


def test_five_values_allow_only_min_max_at_93_75_percent() -> None:
    got = median_interval([1.03, 0.97, 1.0, 0.99, 1.01])
    assert (got.median, got.low, got.high) == (1.0, 0.97, 1.03)
    assert got.coverage == pytest.approx(1 - 2 / 32)


def test_twelve_values_give_the_3rd_to_10th_order_statistics() -> None:
    # P(B <= 2) = 79 / 4096 for n = 12: coverage 0.9614 >= 0.95; k = 4 would give 0.854.
    got = median_interval([float(i) for i in range(12, 0, -1)])
    assert (got.low, got.high) == (3.0, 10.0)
    assert got.median == 6.5
    assert got.coverage == pytest.approx(1 - 2 * 79 / 4096)


def test_a_lower_confidence_narrows_the_interval() -> None:
    values = [float(i) for i in range(1, 21)]
    wide, narrow = median_interval(values, 0.99), median_interval(values, 0.8)
    assert wide.low < narrow.low and narrow.high < wide.high
    assert wide.coverage >= 0.99 and narrow.coverage >= 0.8


def test_bad_input_is_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="at least one value"):
        median_interval([])
    with pytest.raises(ValueError, match="between 0 and 1"):
        median_interval([1.0], 1.5)


def test_an_interval_is_within_a_band_it_touches_and_clear_only_when_wholly_past_it() -> None:
    inside = median_interval([0.99, 1.0, 1.01, 1.0, 0.995, 1.005])
    assert inside.within(0.99, 1.01) and not inside.clear_of(0.99, 1.01)
    straddling = median_interval([0.97, 0.98, 0.985, 0.99, 1.0, 1.01])
    assert not straddling.within(0.99, 1.01) and not straddling.clear_of(0.99, 1.01)
    below = median_interval([0.9, 0.92, 0.93, 0.94, 0.95, 0.96])
    assert below.clear_of(0.98, 1.02) and not below.within(0.98, 1.02)
    above = median_interval([1.05, 1.06, 1.07, 1.08, 1.1, 1.2])
    assert above.clear_of(0.98, 1.02)
