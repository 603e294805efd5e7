"""A gate that cannot cry wolf: A/A false alarms at most 1 in 20 whatever the number of runs a side.

Simulated gates of one unchanged cell whose runs drift as a whole by 4-10% (a fresh drift size per gate,
the range measured on this project's VM) with autocorrelated step noise inside each run. Each setting
runs 400 gates from a fixed seed; the bound on false alarms is the count that a true rate of 5% exceeds
with probability under 0.1% (binomial), so a gate at or below 1 in 20 passes, and one that alarms more
often fails nearly always. Judged with the default settings and with a stressed gate (alpha 0.05, no
threshold: significance alone), whose rate must sit at its alpha, not above it.
"""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest
from gatedata import drifting_side

from hpubench.analysis.gate.decide import gate
from hpubench.analysis.gate.outcomes import INSUFFICIENT, REGRESSION
from hpubench.analysis.gate.rules import GateSettings
from hpubench.analysis.stats.estimator import RunSpread, run_to_run_spread
from hpubench.plan.cell import Cell

GATES = 400
RATE = 0.05  # at most 1 in 20
CELL = Cell("mlp")
STRESSED = GateSettings(alpha=0.05, throughput_threshold=0.0)


def binomial_upper(n: int, p: float, tail: float = 0.001) -> int:
    """The smallest k with P(X > k) <= tail for X ~ Binomial(n, p)."""
    cdf = 0.0
    for k in range(n + 1):
        cdf += math.comb(n, k) * p**k * (1 - p) ** (n - k)
        if 1 - cdf <= tail:
            return k
    return n


def binomial_lower(n: int, p: float, tail: float = 0.001) -> int:
    """The largest k with P(X < k) <= tail for X ~ Binomial(n, p)."""
    cdf = 0.0
    for k in range(n + 1):
        nxt = cdf + math.comb(n, k) * p**k * (1 - p) ** (n - k)
        if nxt > tail:
            return k
        cdf = nxt
    return n


def test_the_binomial_bounds() -> None:
    assert binomial_upper(400, 0.05) == 35  # mean 20, sd 4.4: P(X > 35) < 0.001 <= P(X > 34)
    assert binomial_lower(100, 0.8) == 67


def _a_a_gates(seed: int, runs: tuple[int, int], settings: GateSettings, stored: bool = False):
    rng = np.random.default_rng(seed)
    for _ in range(GATES):
        sd = rng.uniform(0.04, 0.10)
        spreads = None
        if stored:  # what `baseline save` keeps from an earlier run with --repeat 5
            earlier = drifting_side(rng, CELL, 5, sd)
            spread = run_to_run_spread([r.step_times_s for r in earlier], settings.statistic)
            spreads = {CELL.match_key: RunSpread(spread, 5, "stored with the baseline")}
        base, cur = drifting_side(rng, CELL, runs[0], sd), drifting_side(rng, CELL, runs[1], sd)
        yield gate(base, cur, settings, run_to_run=spreads)


@pytest.mark.parametrize(
    ("runs", "settings", "stored"),
    [
        ((1, 1), GateSettings(), False),
        ((3, 3), GateSettings(), False),
        ((8, 8), GateSettings(), False),
        ((3, 3), STRESSED, False),
        ((8, 8), STRESSED, False),
        ((1, 1), STRESSED, True),  # one run a side, spread stored with the baseline
        ((3, 1), STRESSED, False),  # one current run against three baseline runs
    ],
    ids=["1-run", "3-runs", "8-runs", "3-runs-stressed", "8-runs-stressed", "1-run-stored", "3-vs-1"],
)
def test_a_a_false_alarms_at_most_1_in_20(
    runs: tuple[int, int], settings: GateSettings, stored: bool
) -> None:
    results = list(_a_a_gates(40 + sum(runs), runs, settings, stored))
    false_alarms = sum(not r.passed for r in results)
    assert false_alarms <= binomial_upper(GATES, RATE), f"{false_alarms} of {GATES}"
    if runs == (1, 1) and not stored:
        # Nothing to estimate run-to-run drift from: never tested, never failed, always said.
        assert all(r.cells[0].outcome == INSUFFICIENT for r in results)
    else:
        assert not any(r.cells[0].outcome == INSUFFICIENT for r in results)
    # Every gate says how much it could have seen.
    assert all(r.cells[0].throughput.mde is not None and r.cells[0].throughput.mde > 0 for r in results)


def test_a_planted_20_percent_slowdown_is_caught_with_8_runs() -> None:
    rng = np.random.default_rng(50)
    gates = 100
    caught, mdes = 0, []
    for _ in range(gates):
        sd = rng.uniform(0.04, 0.10)
        res = gate(drifting_side(rng, CELL, 8, sd), drifting_side(rng, CELL, 8, sd, slowdown=0.20))
        caught += res.cells[0].outcome == REGRESSION
        mdes.append(res.cells[0].throughput.mde)
    # At least the 80% the minimum detectable slowdown is quoted for (the binomial's 0.1% tail below it).
    assert caught >= binomial_lower(gates, 0.8), f"{caught} of {gates}"
    # And the gate said beforehand that a drop of this size (1/1.2 - 1 = 16.7% of throughput) is in reach.
    assert statistics.median(mdes) < 1 - 1 / 1.2
