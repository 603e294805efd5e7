"""Figures for people: three significant digits and a unit prefix, so 0.1 never hides 0.0987.

Pure string formatting, no I/O. A fixed number of decimals fails at both ends of hpubench's range: gpt
standard on CPU runs at 0.0987 samples/s (``.1f`` printed 0.1, its interval ``[0.1, 0.1]``) while mlp tiny
runs at 70,724.2 (six digits, five of them noise). Three significant digits carry what a measurement with
a 1-2% interval can say, and a prefix (k, M, G; ms, µs) keeps every figure four to six characters wide.
"""

from __future__ import annotations

import math

DIGITS = 3
_PREFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
_SUBSECOND = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))
_BYTES = ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"))


def sig(x: float, digits: int = DIGITS) -> str:
    """``x`` with ``digits`` significant digits, trailing zeros kept: 0.0987, 1.20, 893. Whole numbers keep
    every digit (9870 stays 9870, not 9.87e3): :func:`count` gives large ones a prefix instead."""
    if not math.isfinite(x):
        return str(x)
    if x == 0:
        return "0"
    exponent = math.floor(math.log10(abs(x)))
    decimals = max(0, digits - 1 - exponent)
    rounded = round(x, decimals)
    # rounding can carry into a new digit (9.996 -> 10.0): one decimal fewer then
    if rounded != 0 and math.floor(math.log10(abs(rounded))) > exponent and decimals > 0:
        decimals -= 1
    return f"{rounded:.{decimals}f}"


def count(x: float | None, digits: int = DIGITS) -> str:
    """A rate or count with a k/M/G/T prefix from 10,000 on: 893, 9,870 -> 9870, 70,724 -> 70.7k."""
    if x is None:
        return "-"
    if abs(x) >= 1e4:
        for scale, prefix in _PREFIXES:
            if abs(x) >= scale:
                return f"{sig(x / scale, digits)}{prefix}"
    return sig(x, digits)


def seconds(s: float | None, digits: int = DIGITS) -> str:
    """A duration in s, ms, µs or ns (870 µs, 9.07 ms, 2.10 s); minutes and hours beyond 100 s."""
    if s is None:
        return "-"
    if abs(s) >= 3600 * 1.5:
        return f"{sig(s / 3600, digits)} h"
    if abs(s) >= 100:
        return f"{sig(s / 60, digits)} min"
    for scale, unit in _SUBSECOND:
        if abs(s) >= scale:
            return f"{sig(s / scale, digits)} {unit}"
    return f"{sig(s / 1e-9, digits)} ns" if s else "0 s"


def size(n: float | None, digits: int = DIGITS) -> str:
    """Bytes in binary units (259 MiB, 1.20 GiB)."""
    if n is None:
        return "-"
    for scale, unit in _BYTES:
        if abs(n) >= scale:
            return f"{sig(n / scale, digits)} {unit}"
    return f"{int(n)} B"


def plus_minus(value: float, lo: float, hi: float) -> str:
    """An interval as its relative half-width, ``±1.5%``; the wider side where it is asymmetric."""
    if value <= 0 or not all(map(math.isfinite, (value, lo, hi))):
        return "-"
    half = max(value - lo, hi - value) / value
    return f"±{sig(half * 100, 2)}%"
