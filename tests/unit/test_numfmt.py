"""Figures print with three significant digits and a unit prefix (issue 15: '0.1 [0.1,0.1]')."""

from __future__ import annotations

import math

import pytest

from hpubench import numfmt


@pytest.mark.parametrize(
    ("x", "want"),
    [
        (0.0987, "0.0987"),  # .1f printed 0.1
        (0.1, "0.100"),
        (1.2, "1.20"),
        (9.996, "10.0"),  # rounding carries into a new digit: still three digits
        (893.4, "893"),
        (9870, "9870"),
        (0.00012345, "0.000123"),
        (-2.345, "-2.35"),
        (0, "0"),
        (math.inf, "inf"),
    ],
)
def test_sig_keeps_three_significant_digits(x: float, want: str) -> None:
    assert numfmt.sig(x) == want


@pytest.mark.parametrize(
    ("x", "want"),
    [(893.4, "893"), (9870, "9870"), (70724.2, "70.7k"), (123456, "123k"), (1.2e6, "1.20M"), (None, "-")],
)
def test_count_prefixes_from_ten_thousand(x: float | None, want: str) -> None:
    assert numfmt.count(x) == want


@pytest.mark.parametrize(
    ("s", "want"),
    [
        (870e-6, "870 µs"),
        (9.07e-3, "9.07 ms"),
        (2.1, "2.10 s"),
        (150, "2.50 min"),
        (7200, "2.00 h"),
        (3e-8, "30.0 ns"),
        (None, "-"),
    ],
)
def test_seconds_picks_the_unit(s: float | None, want: str) -> None:
    assert numfmt.seconds(s) == want


def test_size_in_binary_units() -> None:
    assert numfmt.size(271478784) == "259 MiB"
    assert numfmt.size(1.2 * 2**30) == "1.20 GiB"
    assert numfmt.size(512) == "512 B"
    assert numfmt.size(None) == "-"


def test_plus_minus_is_the_wider_side() -> None:
    assert numfmt.plus_minus(100.0, 99.0, 102.0) == "±2.0%"
    assert numfmt.plus_minus(0.0987, 0.0985, 0.0990) == "±0.30%"
    assert numfmt.plus_minus(0.0, 0.0, 0.0) == "-"
