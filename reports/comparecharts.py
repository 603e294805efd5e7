"""The comparison page's charts: a forest plot of each matched cell's ratio, and the geometric means.

Every string from results is entity-escaped (:func:`reports.charts.t`), as on the report's charts.
"""

from __future__ import annotations

import plotly.graph_objects as go

from hpubench.analysis.compare import Comparison
from reports import fmt
from reports.charts import Chart, chart, log_ticks, t

VERDICT_COLORS = {"faster": "#1b7837", "slower": "#b2182b", "no significant difference": "#777777"}


def _verdict_group(verdict: str) -> str:
    """faster / slower (with or without "(within-run only)"), else "no significant difference" (which
    takes "not comparable" too: grey either way)."""
    word = verdict.split()[0]
    return word if word in ("faster", "slower") else "no significant difference"


def ratio_chart(c: Comparison) -> Chart:
    """Forest plot: one row per matched cell, its throughput ratio and interval, 1 marked."""
    cells = sorted(c.cells, key=lambda x: (x.workload, x.throughput_ratio.value))
    fig = go.Figure()
    for verdict, color in VERDICT_COLORS.items():
        group = [x for x in cells if _verdict_group(x.verdict) == verdict]
        if not group:
            continue
        fig.add_scatter(
            name=f"candidate {verdict}"
            if verdict in ("faster", "slower")
            else f"{verdict} or not comparable",
            x=[x.throughput_ratio.value for x in group],
            y=[t(x.match_key) for x in group],
            mode="markers",
            marker={"color": color, "size": 9},
            error_x={
                "type": "data",
                "symmetric": False,
                "array": [x.throughput_ratio.hi - x.throughput_ratio.value for x in group],
                "arrayminus": [x.throughput_ratio.value - x.throughput_ratio.lo for x in group],
            },
            customdata=[[fmt.ci(x.throughput_ratio.lo, x.throughput_ratio.hi)] for x in group],
            hovertemplate="%{y}<br>%{x:.3g}× 95% CI %{customdata[0]}<extra></extra>",
        )
    fig.add_vline(x=1, line={"dash": "dot", "color": "#555"})
    lo = min(1.0, *(x.throughput_ratio.lo for x in cells))
    hi = max(1.0, *(x.throughput_ratio.hi for x in cells))
    fig.update_xaxes(
        type="log",
        title="candidate samples/s ÷ base samples/s (log scale; > 1: candidate faster)",
        **log_ticks(lo, hi, "×"),
    )
    fig.update_yaxes(
        categoryorder="array",
        categoryarray=[t(x.match_key) for x in cells],
        autorange="reversed",
        automargin=True,
    )
    return chart("ratios", "Throughput ratio per matched cell", fig, 140 + 26 * len(cells))


def geomean_chart(c: Comparison) -> Chart:
    groups = [*c.per_workload, c.overall]
    fig = go.Figure()
    for what, color, pick in (
        ("throughput", "#2166ac", lambda g: g.throughput),
        ("samples per $", "#b35806", lambda g: g.perf_per_usd),
    ):
        rows = [(g, pick(g)) for g in groups if pick(g) is not None]
        if not rows:
            continue
        fig.add_scatter(
            name=what,
            x=[e.value for _, e in rows],
            y=[t(f"{g.name} ({g.cells} cell{'s' if g.cells != 1 else ''})") for g, _ in rows],
            mode="markers",
            marker={"color": color, "size": 11, "symbol": "diamond"},
            error_x={
                "type": "data",
                "symmetric": False,
                "array": [e.hi - e.value for _, e in rows],
                "arrayminus": [e.value - e.lo for _, e in rows],
            },
            customdata=[[fmt.ci(e.lo, e.hi)] for _, e in rows],
            hovertemplate="%{y}<br>geometric mean %{x:.3g}× 95% CI %{customdata[0]}<extra>"
            + what
            + "</extra>",
        )
    fig.add_vline(x=1, line={"dash": "dot", "color": "#555"})
    ests = [e for g in groups for e in (g.throughput, g.perf_per_usd) if e is not None]
    fig.update_xaxes(
        type="log",
        title="geometric-mean ratio, candidate over base (> 1: candidate better)",
        **log_ticks(min(1.0, *(e.lo for e in ests)), max(1.0, *(e.hi for e in ests)), "×"),
    )
    fig.update_yaxes(automargin=True, autorange="reversed")
    return chart("geomeans", "Geometric-mean ratio per workload and overall", fig, 160 + 40 * len(groups))
