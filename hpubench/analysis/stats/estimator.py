"""The one estimator behind ``hpubench compare`` and ``hpubench gate``: a cell's change and its evidence.

Both commands call :func:`estimate_change` for every matched cell, so on the same runs, with the same
per-run statistic, they show the same ratio and the same p-values; they differ only in how strict they
are (``compare`` reads a 95% interval, the gate an alpha of 1% corrected over every cell plus a
threshold) and in the statistic each uses by default, which each output names:

- ``gate`` summarises each run by its fastest step (``min``): on a shared machine whole stretches of a
  run slow down, so a run's mean moves by 5-15% between identical runs while its fastest step moves by
  1-2%. A change that slows every step moves both alike.
- ``compare`` summarises each run by its mean step time (``mean``): what training delivers and what a
  price applies to, the figure a hardware comparison is about.

Why runs, not steps. Steps of one run share that run's conditions (the process, its allocator state,
the host's speed for those seconds), so the spread between steps says nothing about the spread between
runs. Measured on this project's 2-core VM the run-to-run CV is 3.7-3.9% (up to 7-11% for run means)
while one run's interval is often under 1%: judged on its steps alone, one run against one run fails an
unchanged cell most of the time. So significance comes from runs:

- both sides repeated (2 or more runs each): a permutation test of the fastest half of the runs where it
  can reach ``alpha_per_test``, else a Welch t test on the runs' log values (``evidence="runs"``);
- one side ran once: its value varies by the run-to-run spread, taken from the other side when that has
  at least :data:`MIN_SPREAD_RUNS` runs, or from a figure stored with the baseline
  (``hpubench baseline save`` keeps one per cell when it has repeats) (``evidence="modelled"``);
- otherwise the runs cannot show significance (``evidence="insufficient"``): the p-values are those of
  the within-run batch means, kept for display only, and every consumer must treat the cell as untested.

Every result carries the smallest slowdown it could detect (:attr:`Change.mde`, at ``alpha_per_test``
and 80% power), so a pass says how much it could have seen. Pure: no torch, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hpubench.analysis.stats.locations import LogLocation, combine_runs, run_location, run_value
from hpubench.analysis.stats.ratiotests import (
    LogRatioTest,
    fast_half_mean,
    permutation_shift_test,
    smallest_permutation_pvalue,
    welch_log_ratio,
)
from hpubench.analysis.stats.studentt import student_t_ppf, student_t_sf
from hpubench.analysis.stats.summary import DEFAULT_CONFIDENCE

EVIDENCE_RUNS = "runs"
EVIDENCE_MODELLED = "modelled"
EVIDENCE_INSUFFICIENT = "insufficient"
EVIDENCE: tuple[str, ...] = (EVIDENCE_RUNS, EVIDENCE_MODELLED, EVIDENCE_INSUFFICIENT)
TESTS: tuple[str, ...] = ("auto", "permutation", "welch")
# The fewest runs whose spread stands in for a side that ran once: 2 runs give one degree of freedom, a t
# quantile so wide that nothing is ever significant, while 3 keep a 20% slowdown detectable.
MIN_SPREAD_RUNS = 3
DEFAULT_POWER = 0.8
INSUFFICIENT_ADVICE = "run with --repeat 3 or more"

STATISTIC_WHY = {
    "min": "fastest step per run: steadiest on a shared machine; sees slowdowns of every step, not stalls",
    "mean": "mean step time per run: what training delivers and what prices apply to",
    "median": "median step time per run: ignores rare stalls",
}


@dataclass(frozen=True)
class RunSpread:
    """The run-to-run spread of one cell: the standard deviation of one run's log value (so 0.04 reads as
    about 4%), from ``runs`` runs (``df = runs - 1``), and where it came from."""

    sd: float
    runs: int
    source: str

    @property
    def df(self) -> float:
        return float(max(1, self.runs - 1))


@dataclass(frozen=True)
class Change:
    """Current against baseline for one cell, on log seconds per unit of work (larger: slower).

    ``p_increase`` / ``p_decrease`` are one-sided p-values against "not slower" / "not faster";
    ``interval`` is the two-sided interval of current / baseline *time* at the confidence asked for.
    """

    statistic: str
    base_value: float  # log seconds per unit of work, as shown for each side
    cur_value: float
    log_ratio: float  # current - baseline
    interval: tuple[float, float]  # of exp(log_ratio), time ratio
    p_increase: float
    p_decrease: float
    se: float  # standard error of log_ratio (for permutation tests: the bootstrap's spread)
    df: float
    evidence: str
    method: str  # one line: how the ratio and its significance were made
    base_runs: int
    cur_runs: int
    mde: float  # smallest detectable throughput drop (0.07: 7%); inf: none; a lower bound if insufficient
    alpha: float  # the one-sided level the mde is for
    power: float

    @property
    def throughput_ratio(self) -> float:
        """Current throughput over baseline throughput (> 1: current faster)."""
        return math.exp(-self.log_ratio)

    @property
    def throughput_interval(self) -> tuple[float, float]:
        lo, hi = self.interval
        return 1 / hi, 1 / lo

    @property
    def testable(self) -> bool:
        """Whether the runs can show significance at all (else p-values are within-run, display only)."""
        return self.evidence != EVIDENCE_INSUFFICIENT

    def mde_text(self) -> str:
        """The minimum detectable slowdown, one phrase."""
        what = f"{self.power:.0%} power, one-sided alpha {self.alpha:.2g}"
        if self.evidence == EVIDENCE_INSUFFICIENT:
            if math.isinf(self.mde):
                return "no slowdown is detectable: run-to-run spread unknown"
            return f"above {self.mde:.1%} even if runs never drifted ({what}; run-to-run spread unknown)"
        if math.isinf(self.mde):
            return f"none: too few runs to reach alpha {self.alpha:.2g}"
        return f"{self.mde:.1%} ({what})"


def estimator_name(statistic: str, test: str = "auto") -> str:
    """The estimator in one line, for every output's caption, Markdown and JUnit properties."""
    tests = {
        "auto": "permutation test on the fastest half of the runs where it can reach alpha, else Welch t "
        "on log run values",
        "permutation": "permutation test on the fastest half of the runs",
        "welch": "Welch t on log run values",
    }[test]
    return (
        f"{STATISTIC_WHY.get(statistic, statistic)}; {tests}; a side run once takes the run-to-run spread "
        f"of the other side's >= {MIN_SPREAD_RUNS} runs or the baseline's stored figure, else "
        "insufficient evidence"
    )


def _z(p: float, df: float) -> float:
    return student_t_ppf(p, df if math.isfinite(df) and df > 0 else math.inf)


def minimum_detectable_drop(se: float, df: float, alpha: float, power: float = DEFAULT_POWER) -> float:
    """The throughput drop a one-sided t test of standard error ``se`` on the log scale detects with
    probability ``power`` at level ``alpha``: (t_{1-alpha} + t_{power}) * se, as a fraction of throughput."""
    if se <= 0:
        return 0.0
    d = (_z(1 - alpha, df) + _z(power, df)) * se
    return 1 - math.exp(-d) if math.isfinite(d) else math.inf


def _values(runs: Sequence[Sequence[float]], statistic: str, units: float) -> list[float]:
    return [run_value(r, statistic, units_per_step=units) for r in runs]


def _within(runs: Sequence[Sequence[float]], statistic: str, units: float) -> list[LogLocation]:
    """Each run's value with its within-run (batch means) error; the value is :func:`run_value`'s, so a
    run reads the same whatever the evidence."""
    out = []
    for r in runs:
        loc = run_location(r, statistic, units_per_step=units)
        out.append(LogLocation(run_value(r, statistic, units), loc.se, loc.df, 1, loc.spread, loc.method))
    return out


def _modelled(single: LogLocation, spread: RunSpread) -> LogLocation:
    sd = max(spread.sd, single.se)
    return LogLocation(
        single.value, sd, spread.df, 1, sd, f"{single.method}; run-to-run spread {spread.source}"
    )


def _welch_change(
    base: LogLocation, cur: LogLocation, how: str, common: dict, confidence: float, df: float | None = None
) -> Change:
    """Welch's t on two locations; ``df`` overrides Welch-Satterthwaite where both errors come from one
    variance estimate (a borrowed or stored spread): counting it twice would make the tails too thin."""
    t: LogRatioTest = welch_log_ratio(base, cur)
    if df is not None and t.se > 0:
        z = t.log_ratio / t.se
        t = LogRatioTest(t.log_ratio, t.se, df, student_t_sf(z, df), student_t_sf(-z, df))
    mde = minimum_detectable_drop(t.se, t.df, common["alpha"], common["power"])
    return Change(
        base_value=base.value,
        cur_value=cur.value,
        log_ratio=t.log_ratio,
        interval=t.interval(confidence),
        p_increase=t.p_increase,
        p_decrease=t.p_decrease,
        se=t.se,
        df=t.df,
        method=f"{how}, Welch t on log values, df {t.df:.1f}",
        mde=mde,
        **common,
    )


def estimate_change(
    baseline: Sequence[Sequence[float]],
    current: Sequence[Sequence[float]],
    *,
    units_per_step: float = 1.0,
    statistic: str = "min",
    test: str = "auto",
    alpha_per_test: float = 0.01,
    confidence: float = DEFAULT_CONFIDENCE,
    stored_spread: RunSpread | None = None,
    power: float = DEFAULT_POWER,
) -> Change:
    """Current against baseline for one cell, from each side's runs (step times in seconds).

    ``alpha_per_test`` is the strictest one-sided level a test must be able to reach (the gate: alpha
    over the cells tested; compare: half of 1 - confidence): a permutation test that cannot reach it is
    not chosen by ``test="auto"``, and the minimum detectable slowdown is given for it.
    """
    if test not in TESTS:
        raise ValueError(f"test must be one of {', '.join(TESTS)}, got {test!r}")
    nb, nc = len(baseline), len(current)
    if nb < 1 or nc < 1:
        raise ValueError("need at least one run on each side")
    common = {
        "statistic": statistic,
        "base_runs": nb,
        "cur_runs": nc,
        "alpha": alpha_per_test,
        "power": power,
        "evidence": EVIDENCE_RUNS,
    }
    runs = f"{statistic} step, {nb} vs {nc} run(s)"
    if nb >= 2 and nc >= 2:
        perm_ok = smallest_permutation_pvalue(nb, nc) <= alpha_per_test
        if test == "permutation" or (test == "auto" and perm_ok):
            bv, cv = _values(baseline, statistic, units_per_step), _values(current, statistic, units_per_step)
            p = permutation_shift_test(bv, cv)
            boot = np.asarray(p.boot)
            se = float(boot.std(ddof=1)) if boot.size > 1 else 0.0
            mde = minimum_detectable_drop(se, math.inf, alpha_per_test, power) if perm_ok else math.inf
            lo, hi = p.interval(confidence)
            return Change(
                base_value=fast_half_mean(bv),
                cur_value=fast_half_mean(cv),
                log_ratio=p.log_ratio,
                interval=(lo, hi),
                p_increase=p.p_increase,
                p_decrease=p.p_decrease,
                se=se,
                df=float(nb + nc - 2),
                method=f"{runs}; {p.describe()}",
                mde=mde,
                **common,
            )
        b = combine_runs(_within(baseline, statistic, units_per_step))
        c = combine_runs(_within(current, statistic, units_per_step))
        return _welch_change(b, c, f"{runs}; between-run spread", common, confidence)
    b_locs, c_locs = _within(baseline, statistic, units_per_step), _within(current, statistic, units_per_step)
    b, c = combine_runs(b_locs), combine_runs(c_locs)
    repeated = b if nb >= MIN_SPREAD_RUNS else c if nc >= MIN_SPREAD_RUNS else None
    spread = None
    if repeated is not None:
        side = "baseline" if repeated is b else "current"
        spread = RunSpread(repeated.spread, repeated.runs, f"from the {side}'s {repeated.runs} runs")
    elif stored_spread is not None:
        spread = stored_spread
    if spread is not None:
        common["evidence"] = EVIDENCE_MODELLED
        b2 = _modelled(b, spread) if nb == 1 else b
        c2 = _modelled(c, spread) if nc == 1 else c
        # Both errors rest on the one spread unless the other side brought its own (2 runs + stored).
        shared = repeated is not None or (nb == 1 and nc == 1)
        how = f"{runs}; run-to-run spread {spread.source}"
        return _welch_change(b2, c2, how, common, confidence, spread.df if shared else None)
    common["evidence"] = EVIDENCE_INSUFFICIENT
    out = _welch_change(b, c, f"{runs}; within-run batch means only", common, confidence)
    return out


def run_to_run_spread(runs: Sequence[Sequence[float]], statistic: str, units_per_step: float = 1.0) -> float:
    """The standard deviation of the runs' log values (ddof 1): what ``baseline save`` stores per cell."""
    if len(runs) < 2:
        raise ValueError("a run-to-run spread needs at least 2 runs")
    return float(np.std(_values(runs, statistic, units_per_step), ddof=1))


@dataclass(frozen=True)
class Geomean:
    """The geometric mean of several cells' throughput ratios, with a t interval from their errors."""

    ratio: float
    lo: float
    hi: float
    cells: int
    insufficient: int  # cells whose error is within-run only: the interval is too narrow by their drift


def geomean_change(changes: Sequence[Change], confidence: float = DEFAULT_CONFIDENCE) -> Geomean:
    """exp(-mean of the cells' log ratios); cells are independent, so the errors add in quadrature and the
    degrees of freedom follow Welch-Satterthwaite."""
    if not changes:
        raise ValueError("need at least one cell")
    k = len(changes)
    d = sum(c.log_ratio for c in changes) / k
    var = sum(c.se**2 for c in changes) / k**2
    insufficient = sum(not c.testable for c in changes)
    if var == 0:
        r = math.exp(-d)
        return Geomean(r, r, r, k, insufficient)
    terms = sum((c.se**2 / k**2) ** 2 / c.df for c in changes if c.se > 0 and c.df > 0)
    df = var**2 / terms if terms > 0 else math.inf
    half = _z(0.5 + confidence / 2, df) * math.sqrt(var)
    return Geomean(math.exp(-d), math.exp(-(d + half)), math.exp(-(d - half)), k, insufficient)
