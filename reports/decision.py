"""The decision view: for each workload, every machine's best configuration by throughput and by price,
side by side, and how each machine compares with the best of them.

A machine is one hardware series of the report (a result set's hardware). Its best row is chosen by the
same rule as the headline (:func:`reports.frames.ranked`: ok numerics first), and the ratio to the best
machine is of those rows' figures, so a faster configuration whose loss drifted never sets the bar.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from reports.frames import measured, ranked, varying_columns

SPEED = ("samples_per_s", True, ("fastest", "faster"))
COST = ("usd_per_million_samples", False, ("cheapest", "cheaper"))


@dataclass(frozen=True)
class MachineBest:
    series: str
    fastest: pd.Series
    speed_ratio: float  # its samples/s over the best machine's (1.0 for the best)
    cheapest: pd.Series | None
    cost_ratio: float | None  # its $ per million samples over the cheapest machine's (1.0 for the cheapest)


@dataclass(frozen=True)
class WorkloadDecision:
    workload: str
    machines: list[MachineBest]


def decisions(df: pd.DataFrame) -> list[WorkloadDecision]:
    """One entry per workload with measured cells; its machines fastest first."""
    ok = measured(df)
    varying = varying_columns(ok) if len(ok) else []
    out = []
    for workload, g in ok.groupby("workload", sort=True):
        bests = []
        for series, s in g.groupby("series", sort=False):
            fastest = ranked(s.sort_values(SPEED[0], ascending=False), *SPEED, varying)[0]
            priced = s[s[COST[0]].notna()].sort_values(COST[0])
            cheapest = ranked(priced, *COST, varying)[0] if len(priced) else None
            bests.append((str(series), fastest, cheapest))
        top = max(float(f[SPEED[0]]) for _, f, _ in bests)
        costs = [float(c[COST[0]]) for _, _, c in bests if c is not None]
        low = min(costs) if costs else None
        machines = [
            MachineBest(
                series,
                f,
                float(f[SPEED[0]]) / top,
                c,
                None if c is None or not low else float(c[COST[0]]) / low,
            )
            for series, f, c in bests
        ]
        machines.sort(key=lambda mb: -mb.speed_ratio)
        out.append(WorkloadDecision(str(workload), machines))
    return out
