"""Figures for people: three significant digits and a unit prefix, so 0.1 never hides 0.0987.

Pure string formatting, no I/O. A fixed number of decimals fails at both ends of hpubench's range: gpt
standard on CPU runs at 0.0987 samples/s (``.1f`` printed 0.1, its interval ``[0.1, 0.1]``) while mlp tiny
runs at 70,724.2 (six digits, five of them noise). Three significant digits carry what a measurement with
a 1-2% interval can say, and a prefix (k, M, G; ms, µs) keeps every figure four to six characters wide.

One family for every rendering of a figure (the plan's estimate, the terminal tables, the report's pages,
the column registry ``hpubench.present.columns``), kept at the bottom layer so that the plan prints its
figures the way the tables do: the compact terminal forms (:func:`sig`, :func:`count`, :func:`seconds`,
:func:`size`, :func:`plus_minus`), the full table's fixed decimals (:func:`fixed`) and the page forms
(:func:`num`, :func:`money`, :func:`pct`, :func:`ms`, :func:`duration`, ...). A value not measured prints
as a dash, never as 0: ``-`` (:data:`DASH`) in a terminal, ``–`` (:data:`MISSING`) on a page; the page
forms take a missing value as None or NaN (a frame's empty cell), :func:`fixed` and :func:`mib` say
which dash with ``blank``.
"""

from __future__ import annotations

import math
from typing import Any

DIGITS = 3
DASH = "-"  # a value not measured, in a terminal
MISSING = "–"  # a value not measured, on a page
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


def fixed(x: float | None, spec: str = ".1f", blank: str = DASH) -> str:
    """``x`` in a fixed format (the full terminal table's columns: ``.2f`` ms, ``,.1f`` samples/s)."""
    return blank if x is None else format(x, spec)


# ---- the report's pages: a missing value is None or NaN (an empty cell of a frame) ----------------------


def missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def num(x: Any) -> str:
    """Three significant figures at most for small values, whole numbers with separators for large."""
    if missing(x):
        return MISSING
    x = float(x)
    a = abs(x)
    if a >= 1000:
        return f"{x:,.0f}"
    if a >= 100:
        return f"{x:.1f}"
    if a >= 1:
        return f"{x:.2f}"
    if a == 0:
        return "0"
    return f"{x:.3g}"


def ci(lo: Any, hi: Any) -> str:
    return "" if missing(lo) or missing(hi) else f"[{num(lo)}, {num(hi)}]"


def money(x: Any) -> str:
    if missing(x):
        return MISSING
    return f"${x:,.2f}" if abs(float(x)) >= 0.1 else f"${num(x)}"


def pct(x: Any, digits: int = 1) -> str:
    return MISSING if missing(x) else f"{float(x) * 100:.{digits}f}%"


def ratio(x: Any) -> str:
    return MISSING if missing(x) else f"{float(x):.3g}×"


def mib(n: Any, spec: str = ",.0f", blank: str = MISSING) -> str:
    """Bytes as whole MiB (``20,480``; the full terminal table: ``.0f``, no separators)."""
    return blank if missing(n) else format(float(n) / 2**20, spec)


def rank_mib(peaks: Any) -> str:
    """Each rank's peak memory in MiB ("per rank: 120 / 118"), or "" for a one-process cell."""
    if not isinstance(peaks, (list, tuple)) or len(peaks) < 2:
        return ""
    return "per rank: " + " / ".join(mib(p) for p in peaks)


def ms(seconds: Any) -> str:
    return MISSING if missing(seconds) else num(float(seconds) * 1e3)


def duration(seconds: Any) -> str:
    """Human units for a time to process a workload: 41 s, 12.5 min, 3.2 h, 4.1 days."""
    if missing(seconds):
        return MISSING
    s = float(seconds)
    if s < 60:
        return f"{num(s)} s"
    if s < 3600:
        return f"{s / 60:.1f} min"
    if s < 86400 * 2:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.1f} days"
