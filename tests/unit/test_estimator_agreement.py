"""compare and gate on the same runs: one estimator, so the same ratio, direction and significance."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from gatedata import drifting_side, make_result, make_side

from hpubench.analysis.compare import compare
from hpubench.analysis.gate.decide import gate
from hpubench.analysis.gate.outcomes import (
    IMPROVEMENT,
    INSUFFICIENT,
    NO_CHANGE,
    NOISY,
    NOT_COMPARABLE,
    REGRESSION,
)
from hpubench.analysis.gate.rules import GateSettings
from hpubench.analysis.prices import Tables
from hpubench.analysis.stats.estimator import estimate_change
from hpubench.plan.cell import Cell

CELL = Cell("mlp")


def _one_slow_run(rng: np.random.Generator, runs: int) -> tuple[list, list]:
    """Unchanged, but one current run slowed as a whole by 30% (the host slowed the VM for its seconds)."""
    base = drifting_side(rng, CELL, runs, 0.02)
    cur = drifting_side(rng, CELL, runs, 0.02)
    cur[0] = replace(cur[0], step_times_s=tuple(t * 1.3 for t in cur[0].step_times_s))
    return base, cur


CASES = {
    "clear slowdown, 8 runs": lambda rng: (
        drifting_side(rng, CELL, 8, 0.03),
        drifting_side(rng, CELL, 8, 0.03, slowdown=0.25),
    ),
    "clear slowdown, 3 runs": lambda rng: (
        drifting_side(rng, CELL, 3, 0.01),
        drifting_side(rng, CELL, 3, 0.01, slowdown=0.25),
    ),
    "clear speed-up, 8 runs": lambda rng: (
        drifting_side(rng, CELL, 8, 0.03),
        drifting_side(rng, CELL, 8, 0.03, slowdown=-0.25),
    ),
    "no change, 8 runs": lambda rng: (drifting_side(rng, CELL, 8, 0.05), drifting_side(rng, CELL, 8, 0.05)),
    "no change, 3 runs": lambda rng: (drifting_side(rng, CELL, 3, 0.05), drifting_side(rng, CELL, 3, 0.05)),
    "one noisy run, 8 runs": lambda rng: _one_slow_run(rng, 8),
    "one noisy run, 3 runs": lambda rng: _one_slow_run(rng, 3),
}
# Not significant, as the gate words it: no change, or past the threshold but not significant (noisy).
NOT_SIGNIFICANT = (NO_CHANGE, NOISY)
EXPECTED = {  # what both must say
    "clear slowdown, 8 runs": ("slower", (REGRESSION,)),
    "clear slowdown, 3 runs": ("slower", (REGRESSION,)),
    "clear speed-up, 8 runs": ("faster", (IMPROVEMENT,)),
    "no change, 8 runs": ("no significant difference", NOT_SIGNIFICANT),
    "no change, 3 runs": ("no significant difference", NOT_SIGNIFICANT),
    "one noisy run, 8 runs": ("no significant difference", NOT_SIGNIFICANT),
    "one noisy run, 3 runs": ("no significant difference", NOT_SIGNIFICANT),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("statistic", ["min", "mean"])
def test_compare_and_gate_agree_on_the_same_runs(case: str, statistic: str) -> None:
    base, cur = CASES[case](np.random.default_rng(sorted(CASES).index(case)))
    c = compare(base, cur, Tables(), statistic=statistic).cells[0]
    g = gate(base, cur, GateSettings(statistic=statistic)).cells[0]
    # One estimator: the same ratio from the same runs, to the last bit.
    assert c.throughput_ratio.value == pytest.approx(1 + g.throughput.change, rel=1e-12)
    assert c.change.method == g.throughput.detail
    # The same direction and the same significance, as each of them words it.
    verdict, outcome = EXPECTED[case]
    assert c.verdict == verdict
    assert g.outcome in outcome


def test_with_their_own_defaults_each_names_its_statistic_and_they_still_agree_on_clear_cases() -> None:
    """compare summarises runs by their mean (what training delivers), the gate by their fastest step;
    on a slowdown of every step both statistics move alike."""
    rng = np.random.default_rng(7)
    base, cur = drifting_side(rng, CELL, 8, 0.03), drifting_side(rng, CELL, 8, 0.03, slowdown=0.25)
    comparison, result = compare(base, cur, Tables()), gate(base, cur)
    assert comparison.estimator.startswith("mean step time per run")
    assert result.settings.estimator.startswith("fastest step per run")
    assert comparison.cells[0].verdict == "slower" and result.cells[0].outcome == REGRESSION


def test_one_run_a_side_is_insufficient_for_both() -> None:
    rng = np.random.default_rng(8)
    base, cur = make_side(rng, [CELL], n=100), make_side(rng, [CELL], n=100, slowdown=0.3)
    c = compare(base, cur, Tables(), statistic="min").cells[0]
    g = gate(base, cur).cells[0]
    assert c.change.evidence == g.throughput.evidence == "insufficient"
    assert c.verdict == "slower (within-run only)"  # compare says the interval lacks run-to-run drift
    assert g.outcome == INSUFFICIENT and not g.fails  # the gate does not fail on it


def test_a_side_that_is_not_ok_is_never_called_faster_or_slower() -> None:
    rng = np.random.default_rng(9)
    base, cur = drifting_side(rng, CELL, 8, 0.03), drifting_side(rng, CELL, 8, 0.03, slowdown=0.25)
    noisy = [replace(r, quality="noisy", quality_reasons=("interval half-width 7% > 5%",)) for r in cur]
    c = compare(base, noisy, Tables()).cells[0]
    assert c.verdict == "not comparable: noisy" and c.candidate.quality == "noisy"
    # The gate tests noisy runs (their noise is in the run-to-run error) and shows the quality.
    g = gate(base, noisy).cells[0]
    assert g.outcome == REGRESSION and g.current_quality == "noisy" and g.baseline_quality is None


@pytest.mark.parametrize("bad", ["interfered", "recompiled", "partial"])
def test_the_gate_does_not_compare_interfered_recompiled_or_partial_runs(bad: str) -> None:
    rng = np.random.default_rng(10)
    base = drifting_side(rng, CELL, 3, 0.02)
    cur = [
        replace(r, quality=bad, quality_reasons=(f"{bad}: reason {i}",))
        for i, r in enumerate(drifting_side(rng, CELL, 3, 0.02, slowdown=0.5))
    ]
    res = gate(base, cur)
    (v,) = res.cells
    assert v.outcome == NOT_COMPARABLE and not v.fails and res.passed
    assert v.reason.startswith(f"not comparable: current {bad} (3 of 3 run(s)): {bad}: reason 0")
    assert res.counts() == {NOT_COMPARABLE: 1} and "1 not comparable" in res.summary()
    strict = gate(base, cur, GateSettings(strict_quality=True))
    assert not strict.passed and strict.cells[0].outcome == NOT_COMPARABLE
    # One bad run among several is left out and the rest are compared.
    mixed = [*cur[:1], *drifting_side(rng, CELL, 3, 0.02)]
    (w,) = gate(base, mixed).cells
    assert w.outcome == NO_CHANGE and w.current_runs == 3 and f"left out: current {bad} (1 of 4" in w.reason


def test_estimate_change_alone() -> None:
    rng = np.random.default_rng(11)
    base = [make_result(CELL, rng.lognormal(math.log(0.01), 0.02, 50)).step_times_s for _ in range(8)]
    cur = [tuple(t * 1.2 for t in r) for r in base]  # every run exactly 20% slower
    ch = estimate_change(base, cur, statistic="mean")
    assert ch.throughput_ratio == pytest.approx(1 / 1.2) and ch.evidence == "runs"
    assert ch.p_increase < 0.001 and "permutation test on 8 vs 8 runs" in ch.method
    with pytest.raises(ValueError, match="test must be one of"):
        estimate_change(base, cur, test="ks")
    with pytest.raises(ValueError, match="at least one run"):
        estimate_change([], cur)
