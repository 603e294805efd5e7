"""Run-to-run spreads stored with a baseline: computed from a repeated run, read back for one statistic.

``hpubench baseline save`` keeps, per cell with 3 or more comparable repetitions, the standard deviation of
the runs' log values for every statistic; ``hpubench gate`` hands the one for its statistic to
:func:`hpubench.analysis.gate.decide.gate`, so a later gate of single runs can model how much runs drift
instead of
calling the cell insufficient evidence. Pure: records and dicts in, dicts out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from hpubench.analysis.compare import UNCOMPARABLE_QUALITIES, group_runs
from hpubench.analysis.stats.estimator import MIN_SPREAD_RUNS, RunSpread, run_to_run_spread
from hpubench.analysis.stats.locations import LOCATIONS
from hpubench.store.record import CellResult


def run_to_run_figures(records: Sequence[CellResult]) -> dict[str, dict[str, float]]:
    """Per match key, each statistic's run-to-run spread (sd of the runs' log values) and the run count,
    for cells with at least MIN_SPREAD_RUNS comparable runs: what ``baseline save`` stores, so that a
    later gate of single runs can model how much runs drift instead of calling it insufficient."""
    out: dict[str, dict[str, float]] = {}
    for g in group_runs(records):
        runs = [r for r in g.measured if r.quality not in UNCOMPARABLE_QUALITIES]
        if len(runs) < MIN_SPREAD_RUNS:
            continue
        units = runs[0].metrics.samples_per_step  # type: ignore[union-attr]
        steps = [r.step_times_s for r in runs]
        out[g.cell.match_key] = {
            "runs": len(runs),
            **{st: run_to_run_spread(steps, st, units) for st in LOCATIONS},
        }
    return out


def stored_spreads(
    figures: Mapping[str, Mapping[str, float]], statistic: str, source: str
) -> dict[str, RunSpread]:
    """The figures :func:`run_to_run_figures` made, as the gate's ``run_to_run`` for one statistic;
    entries without that statistic or with fewer than MIN_SPREAD_RUNS runs are left out."""
    out = {}
    for key, f in figures.items():
        sd, runs = f.get(statistic), int(f.get("runs", 0))
        if isinstance(sd, (int, float)) and math.isfinite(sd) and sd >= 0 and runs >= MIN_SPREAD_RUNS:
            out[key] = RunSpread(float(sd), runs, f"stored with the baseline ({runs} runs, {source})")
    return out
