"""The history page (``hpubench history``): one chart per cell, its throughput over the ordered baselines
with intervals, each point coloured by the gate's verdict from the baseline before, and a table of every
verdict. A self-contained page like the report's: the report's stylesheet and table script, plotly.js
inline, a Content-Security-Policy that forbids every fetch, and every string from the results escaped
(autoescaping in the template, entity-escaping in chart text: ``reports.charts``).

Kept apart from ``reports.build``: its own template (``history.html.j2``) and environment, so the
report's layout can change without this page and the other way round.
"""

from __future__ import annotations

from datetime import datetime, timezone
from functools import cache
from typing import Any

import jinja2
import plotly.graph_objects as go

import hpubench
from hpubench.analysis.changepoints import method_text
from hpubench.analysis.gate import outcomes as gateoutcomes
from hpubench.analysis.history import CellHistory, History
from reports import assets
from reports.charts import FONT, Chart, script_safe_json, t

COLORS = {
    gateoutcomes.REGRESSION: "#b2182b",
    gateoutcomes.IMPROVEMENT: "#1b7837",
    gateoutcomes.FAILED: "#6a1b9a",
    gateoutcomes.NOISY: "#e0a43a",
}
NEUTRAL = "#5b6475"
STEP_COLOR = "#d6604d"
CHART_HEIGHT = 300


@cache
def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("reports", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _fmt(x: float) -> str:
    return f"{x:,.1f}" if x >= 10 else f"{x:.3g}"


def cell_chart(index: int, cell: CellHistory, labels: list[str]) -> Chart:
    """One cell's series: mean samples/s with its interval at each baseline, coloured by the verdict."""
    xs, ys, up, down, colors, hover = [], [], [], [], [], []
    for i, (p, status) in enumerate(zip(cell.points, cell.statuses, strict=True)):
        step = cell.steps[i - 1] if i > 0 else None
        xs.append(t(labels[i]))
        verdict = f"<br>{t(step.outcome)}: {t(step.reason)}" if step is not None else ""
        if p is None:
            ys.append(None)
            up.append(None)
            down.append(None)
            hover.append(f"{t(labels[i])}<br>{t(status)}{verdict}")
        else:
            ys.append(p.value)
            up.append(p.hi - p.value)
            down.append(p.value - p.lo)
            hover.append(
                f"{t(labels[i])}<br>{_fmt(p.value)} samples/s [{_fmt(p.lo)}, {_fmt(p.hi)}], "
                f"{p.runs} run(s){verdict}"
            )
        colors.append(COLORS.get(step.outcome, NEUTRAL) if step is not None else NEUTRAL)
    fig = go.Figure(
        go.Scatter(
            x=xs,
            y=ys,
            mode="lines+markers",
            connectgaps=False,
            line={"color": "#9aa3b2", "width": 1.5},
            marker={"color": colors, "size": 11, "line": {"color": "#fff", "width": 1}},
            error_y={"type": "data", "array": up, "arrayminus": down, "color": "#9aa3b2", "thickness": 1.2},
            hovertext=hover,
            hoverinfo="text",
            showlegend=False,
        )
    )
    for sh in cell.changes.shown:  # a dashed line between the two baselines a step lies between
        x = (sh.since + sh.at) / 2  # category axes place category i at i
        fig.add_vline(x=x, line={"color": STEP_COLOR, "dash": "dash", "width": 1.5})
        fig.add_annotation(
            x=x,
            y=1,
            yref="paper",
            text=f"step {sh.change:+.1%}",
            showarrow=False,
            yanchor="bottom",
            font={"color": STEP_COLOR, "size": 11},
        )
    fig.update_layout(
        template="plotly_white",
        height=CHART_HEIGHT,
        margin={"l": 70, "r": 20, "t": 40, "b": 70},
        font={"family": FONT, "size": 12},
        title={"text": t(cell.key), "font": {"size": 13}, "x": 0.01, "xanchor": "left"},
        xaxis={"type": "category", "title": None},
        yaxis={"title": {"text": "samples/s"}, "rangemode": "tozero"},
    )
    return Chart(id=f"history-{index}", spec=script_safe_json(fig.to_plotly_json()), height=CHART_HEIGHT)


def _rows(h: History) -> list[dict[str, Any]]:
    rows = []
    for cell in h.cells:
        for i, step in enumerate(cell.steps):
            if step is None:
                continue
            rows.append(
                {
                    "key": cell.key,
                    "older": h.points[i].label,
                    "newer": h.points[i + 1].label,
                    "outcome": step.outcome,
                    "cls": "bad"
                    if step.fails or step.outcome == gateoutcomes.REGRESSION
                    else ("good" if step.outcome == gateoutcomes.IMPROVEMENT else ""),
                    "change": "" if step.change is None else f"{step.change * 100:+.1f}%",
                    "change_v": "" if step.change is None else f"{step.change:.6g}",
                    "reason": step.reason,
                }
            )
    return rows


def _change_rows(h: History) -> list[dict[str, Any]]:
    rows = []
    for cell in h.cells:
        for sh in cell.changes.shown:
            lo, hi = sh.interval
            rows.append(
                {
                    "key": cell.key,
                    "older": h.points[sh.since].label,
                    "newer": h.points[sh.at].label,
                    "change": f"{sh.change:+.1%}",
                    "change_v": f"{sh.change:.6g}",
                    "interval": f"[{lo:+.1%}, {hi:+.1%}]",
                    "p": f"{sh.p_value:.4f}",
                    "sides": f"{sh.before} | {sh.after}",
                    "cls": "bad" if sh.change < 0 else "good",
                }
            )
    return rows


def history_html(h: History) -> str:
    labels = [p.label for p in h.points]
    charts = [cell_chart(i, c, labels) for i, c in enumerate(h.cells)]
    s = h.settings
    return (
        _env()
        .get_template("history.html.j2")
        .render(
            title=f"hpubench history: {len(h.points)} baselines, {len(h.cells)} cells",
            points=h.points,
            charts=charts,
            rows=_rows(h),
            change_rows=_change_rows(h),
            change_method="Steps in level: "
            + method_text(s.alpha, s.throughput_threshold, s.confidence)
            + ".",
            notes=h.notes,
            settings=(
                f"gate settings: statistic {s.statistic}, max regression {s.throughput_threshold:.0%}, "
                f"alpha {s.alpha:g} ({s.correction}), test {s.test}"
            ),
            colors=[
                ("regression", COLORS[gateoutcomes.REGRESSION]),
                ("improvement", COLORS[gateoutcomes.IMPROVEMENT]),
                ("failed", COLORS[gateoutcomes.FAILED]),
                ("noisy", COLORS[gateoutcomes.NOISY]),
                ("other", NEUTRAL),
            ],
            css=assets.static("report.css"),
            js=assets.static("report.js"),
            plotly_js=assets.plotly_js(),
            csp=assets.CSP,
            generated_at=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            hpubench_version=hpubench.__version__,
        )
    )
