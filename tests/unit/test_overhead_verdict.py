"""The overhead benchmark's verdict on its hpubench/bare ratio (``benchmarks/overhead_report.ratio_verdict``).

It decides whether `make bench` calls the harness inside its 0.99-1.01 target, so it must not decide from
an interval that does not reach its confidence (too few rounds)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from hpubench.analysis.stats.medianci import median_interval

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "overhead_report.py"
_spec = importlib.util.spec_from_file_location("overhead_report", _PATH)
assert _spec is not None and _spec.loader is not None
overhead_report = importlib.util.module_from_spec(_spec)
sys.modules["overhead_report"] = overhead_report
_spec.loader.exec_module(overhead_report)


def _verdict(ratios: list[float]) -> str:
    return overhead_report.ratio_verdict(vars(median_interval(ratios)))


def test_too_few_rounds_decide_nothing() -> None:
    for n in range(1, 6):
        assert _verdict([1.04] * n).startswith("too few rounds to decide"), n


def test_enough_rounds_decide_inside_outside_or_not() -> None:
    assert _verdict([1.000, 1.002, 0.998, 1.001, 0.999, 1.003]).startswith("inside the target")
    assert _verdict([1.04, 1.05, 1.03, 1.04, 1.06, 1.05]).startswith("OUTSIDE the target")
    assert _verdict([0.985, 0.995, 0.99, 0.98, 1.0, 0.992]).startswith("not decided")


def test_no_ratio() -> None:
    assert overhead_report.ratio_verdict(None).startswith("no ratio")
