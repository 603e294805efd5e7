"""Chart specs for the report and the comparison, made with plotly and drawn by plotly.js in the page.

Plotly renders a subset of HTML inside chart text (``<b>``, ``<br>``, links), so every string that comes
from results (host, workload, device names, keys) is entity-escaped before it enters a figure; plotly
shows the entities as the literal characters. The figure JSON is then made safe to sit inside a
``<script>`` element (``<``, ``>``, ``&`` as JSON unicode escapes), so no result can close the element.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.utils import PlotlyJSONEncoder

from hpubench.analysis.compare import CellRuns, Comparison
from hpubench.analysis.pareto import pareto_front
from reports import fmt
from reports.frames import config_label, measured, varying_columns

PALETTE = qualitative.Safe + qualitative.Vivid
VERDICT_COLORS = {"faster": "#1b7837", "slower": "#b2182b", "no significant difference": "#777777"}
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif"


@dataclass(frozen=True)
class Chart:
    id: str
    spec: str  # {"data": ..., "layout": ...} as JSON that is safe inside a <script> element
    height: int


def t(value: object) -> str:
    """Text for plotly: entity-escaped, so a result's "<b>" or "<script>" is shown, never interpreted."""
    return html.escape(str(value), quote=False)


def script_safe_json(obj: object) -> str:
    text = json.dumps(obj, cls=PlotlyJSONEncoder, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _state_scales(fig: go.Figure) -> None:
    """A chart with a log axis says the scale of each of its value axes, so a reader never takes a log
    axis for a linear one beside it (category axes, which carry no title, are left alone)."""
    axes = [fig.layout.xaxis, fig.layout.yaxis]
    if not any(a.type == "log" for a in axes):
        return
    for axis in axes:
        title = axis.title.text or ""
        scale = "log scale" if axis.type == "log" else "linear scale"
        if title and scale not in title:
            axis.title.text = f"{title}, {scale}"


def _chart(chart_id: str, title: str, fig: go.Figure, height: int) -> Chart:
    _state_scales(fig)
    # The legend, always shown (plotly hides a lone trace's, and then nothing says whose bars they are),
    # sits between the title and the plot, about two entries a row in a half-width chart: the top margin
    # grows with it so entries never run into the title.
    entries = sum(1 for tr in fig.data if tr.showlegend is not False)
    rows = math.ceil(entries / 2)
    height += 22 * max(rows - 1, 0)
    fig.update_layout(
        template="plotly_white",
        height=height,
        margin={"l": 70, "r": 20, "t": 56 + 22 * rows, "b": 60},
        font={"family": FONT, "size": 12},
        title={
            "text": t(title),
            "font": {"size": 14},
            "x": 0.01,
            "xanchor": "left",
            "y": 1,
            "yref": "container",
            "pad": {"t": 8},
            "yanchor": "top",
        },
        showlegend=True,
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.01, "xanchor": "left", "x": 0},
        hoverlabel={"namelength": -1},
    )
    return Chart(id=f"chart-{chart_id}", spec=script_safe_json(fig.to_plotly_json()), height=height)


def series_colors(df: pd.DataFrame) -> dict[str, str]:
    """One colour per series for every chart of a page, so a series reads the same everywhere."""
    return {s: PALETTE[i % len(PALETTE)] for i, s in enumerate(dict.fromkeys(df["series"]))}


def add_series(df: pd.DataFrame) -> pd.DataFrame:
    """The legend entry of a row: its hardware, prefixed with its result set when there are several."""
    several = df["result_set"].nunique() > 1
    series = [f"{r.result_set} · {r.hardware}" if several else str(r.hardware) for r in df.itertuples()]
    return df.assign(series=series)


def _with_config(g: pd.DataFrame, varying: Sequence[str]) -> pd.DataFrame:
    return g.assign(config=[config_label(r, varying) for _, r in g.iterrows()])


_NICE = (1.0, 2.0, 5.0)
_NEAR_ONE = (0.5, 0.67, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0)


def log_ticks(lo: float, hi: float, suffix: str = "") -> dict[str, list]:
    """Readable ticks for a log axis: 1-2-5 steps per decade (plotly's default labels every digit), and
    finer steps around 1 where the whole range is narrow, as ratios often are."""
    lo, hi = min(lo, hi), max(lo, hi)
    vals = [
        m * 10.0**e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1) for m in _NICE
    ]
    vals = [v for v in vals if lo / 1.5 <= v <= hi * 1.5]
    if len(vals) < 3:
        vals = sorted({*vals, *(v for v in _NEAR_ONE if lo / 1.5 <= v <= hi * 1.5)})
    return {"tickvals": vals, "ticktext": [f"{v:,.6g}{suffix}" for v in vals]}


def _value_axis(values: Sequence[float]) -> dict:
    """Log scale where values span more than 20x (one slow configuration must not flatten the rest)."""
    v = [x for x in values if x > 0]
    if not v or max(v) / min(v) <= 20:
        return {"type": "linear"}
    return {"type": "log", **log_ticks(min(v), max(v))}


def _by_workload(df: pd.DataFrame, needs: str | None = None) -> Iterator[tuple[int, str, pd.DataFrame]]:
    """Measured rows of each workload (those with a value in ``needs``), labelled by what varies."""
    ok = measured(df)
    if needs is not None:
        ok = ok[ok[needs].notna()]
    varying = varying_columns(ok)
    for i, (workload, g) in enumerate(ok.groupby("workload", sort=True)):
        yield i, str(workload), _with_config(g, varying)


def throughput_charts(df: pd.DataFrame, colors: dict[str, str]) -> list[Chart]:
    charts = []
    for i, workload, g in _by_workload(df):
        fig = go.Figure()
        for series, s in g.groupby("series", sort=False):
            fig.add_bar(
                name=t(series),
                x=[t(c) for c in s["config"]],
                y=s["samples_per_s"].tolist(),
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": (s["samples_per_s_hi"] - s["samples_per_s"]).tolist(),
                    "arrayminus": (s["samples_per_s"] - s["samples_per_s_lo"]).tolist(),
                },
                marker={"color": colors[series], "pattern": {"shape": "/" if s["test_double"].any() else ""}},
                customdata=[
                    [fmt.ci(r.samples_per_s_lo, r.samples_per_s_hi), r.measured_steps, r.repeats, t(r.key)]
                    for r in s.itertuples()
                ],
                hovertemplate=(
                    "%{customdata[3]}<br>%{y:,.4g} samples/s, 95% CI %{customdata[0]}<br>"
                    "%{customdata[1]} measured steps × %{customdata[2]} repetition(s)"
                    "<extra>%{fullData.name}</extra>"
                ),
            )
        fig.update_layout(barmode="group", yaxis_title="samples/s (higher is better)")
        fig.update_yaxes(**_value_axis([*g["samples_per_s_lo"], *g["samples_per_s_hi"]]))
        charts.append(_chart(f"thr-{i}", f"{workload}: throughput by precision · mode · graphs", fig, 380))
    return charts


def memory_charts(df: pd.DataFrame, colors: dict[str, str]) -> list[Chart]:
    charts = []
    for i, workload, g in _by_workload(df, "memory_peak_allocated_bytes"):
        fig = go.Figure()
        for series, s in g.groupby("series", sort=False):
            fig.add_bar(
                name=t(series),
                x=[t(c) for c in s["config"]],
                y=(s["memory_peak_allocated_bytes"] / 2**20).tolist(),
                marker={"color": colors[series], "pattern": {"shape": "/" if s["test_double"].any() else ""}},
                customdata=[[t(r.memory_source), t(r.key)] for r in s.itertuples()],
                hovertemplate=(
                    "%{customdata[1]}<br>peak %{y:,.0f} MiB<br>source: %{customdata[0]}"
                    "<extra>%{fullData.name}</extra>"
                ),
            )
        fig.update_layout(barmode="group", yaxis_title="peak memory, MiB")
        charts.append(_chart(f"mem-{i}", f"{workload}: peak memory per cell", fig, 340))
    return charts


def memory_timeline_charts(runs: Sequence[tuple[str, CellRuns]], colors: dict[str, str]) -> list[Chart]:
    """Memory in use after each sampled step, per cell, where the run recorded a timeline."""
    by_workload: dict[str, list[tuple[str, CellRuns]]] = {}
    for series, r in runs:
        if r.record.memory_timeline:
            by_workload.setdefault(r.cell.workload, []).append((series, r))
    charts = []
    for i, (workload, items) in enumerate(sorted(by_workload.items())):
        fig = go.Figure()
        names = [f"{series} · {r.cell.precision} · {r.cell.mode}" for series, r in items]
        for (series, r), name in zip(items, names, strict=True):
            samples = [s for s in r.record.memory_timeline if s.in_use_bytes is not None]
            fig.add_scatter(
                # Two cells alike in precision and mode (batch, graphs, devices differ): named by key.
                name=t(name if names.count(name) == 1 else f"{series} · {r.cell.key}"),
                x=[s.step for s in samples],
                y=[s.in_use_bytes / 2**20 for s in samples],  # type: ignore[operator]
                mode="lines+markers",
                line={"color": colors.get(series)},
                customdata=[[s.phase, t(r.cell.key)] for s in samples],
                hovertemplate=(
                    "%{customdata[1]}<br>after step %{x} (%{customdata[0]}): %{y:,.0f} MiB<extra></extra>"
                ),
            )
        fig.update_layout(xaxis_title="steps completed (warm-up first)", yaxis_title="memory in use, MiB")
        charts.append(_chart(f"memtl-{i}", f"{workload}: memory over the steps", fig, 340))
    return charts


def scaling_charts(sf: pd.DataFrame, colors: dict[str, str]) -> list[Chart]:
    charts: list[Chart] = []
    if sf.empty:
        return charts
    for i, (workload, g) in enumerate(sf.groupby("workload", sort=True)):
        fig = go.Figure()
        group_cols = ["series", "precision", "mode", "graphs", "batch_size", "options", "size"]
        varies = [c for c in group_cols[4:] if g[c].astype(str).nunique() > 1]
        for (series, precision, mode, graphs, *rest), s in g.groupby(group_cols, sort=False, dropna=False):
            s = s.sort_values("world_size")
            labels = zip(group_cols[4:], rest, strict=True)
            extra = "".join(f" · {c.replace('_', ' ')} {v}" for c, v in labels if c in varies)
            fig.add_scatter(
                name=t(f"{series} · {precision} · {mode}{' · graphs' if graphs else ''}{extra}"),
                x=s["world_size"].tolist(),
                y=(s["efficiency"] * 100).tolist(),
                mode="lines+markers",
                line={"color": colors.get(series)},
                customdata=[
                    [f"{r.devices}×{r.nodes}", fmt.num(r.samples_per_s), f"{r.speedup:.2f}"]
                    for r in s.itertuples()
                ],
                hovertemplate=(
                    "%{customdata[0]} (devices × nodes)<br>%{customdata[1]} samples/s, %{customdata[2]}× the "
                    "base<br>efficiency %{y:.1f}%<extra>%{fullData.name}</extra>"
                ),
            )
        fig.add_hline(y=100, line={"dash": "dot", "color": "#999"}, annotation_text="linear scaling")
        fig.update_layout(
            xaxis_title="devices in total (devices × nodes)", yaxis_title="scaling efficiency, %"
        )
        fig.update_xaxes(type="log", dtick=math.log10(2))
        charts.append(_chart(f"scale-{i}", f"{workload}: scaling efficiency", fig, 360))
    return charts


def short_labels(configs: Sequence[str]) -> list[str]:
    """Configuration labels cut to the parts that differ between them (labels on points must be short);
    the full labels where they do not split alike, or where nothing differs."""
    split = [c.split(" · ") for c in configs]
    if len({len(p) for p in split}) != 1:
        return list(configs)
    keep = [i for i, parts in enumerate(zip(*split, strict=True)) if len(set(parts)) > 1]
    return [" · ".join(p[i] for i in keep) for p in split] if keep else list(configs)


def _label_sides(xs: pd.Series, all_xs: pd.Series, axis: dict) -> list[str]:
    """A point's label to its right, or to its left in the right half of the axis (never off the chart)."""
    scale = (lambda v: math.log10(v)) if axis.get("type") == "log" else (lambda v: v)
    mid = (scale(all_xs.min()) + scale(all_xs.max())) / 2
    return ["middle left" if scale(x) > mid else "middle right" for x in xs]


def price_performance_charts(df: pd.DataFrame, colors: dict[str, str]) -> list[Chart]:
    charts = []
    for i, workload, g in _by_workload(df, "usd_per_million_samples"):
        g = g.reset_index(drop=True).assign(label=short_labels(g["config"].tolist()))
        front = pareto_front(list(zip(g["usd_per_million_samples"], g["samples_per_s"], strict=True)))
        x_axis = _value_axis(g["usd_per_million_samples"].tolist())
        fig = go.Figure()
        for series, s in g.groupby("series", sort=False):
            on_front = [idx in front for idx in s.index]
            fig.add_scatter(
                name=t(series),
                x=s["usd_per_million_samples"].tolist(),
                y=s["samples_per_s"].tolist(),
                # Each point labelled with its configuration: several cells share one legend entry.
                mode="markers+text",
                text=[t(c) for c in s["label"]],
                textposition=_label_sides(s["usd_per_million_samples"], g["usd_per_million_samples"], x_axis),
                textfont={"size": 10, "color": "#444"},
                cliponaxis=False,
                marker={
                    "color": colors[series],
                    "size": [14 if f else 9 for f in on_front],
                    "line": {"width": [2 if f else 0 for f in on_front], "color": "#222"},
                    "symbol": "diamond" if s["test_double"].any() else "circle",
                },
                customdata=[
                    [
                        f"{t(r.config)}<br>{t(r.key)}",
                        fmt.money(r.usd_per_million_samples),
                        t(f"{r.price_name}: {fmt.money(r.price_usd_per_device_hour)}/{r.price_per}-hour"),
                        t(r.price_source),
                        t(r.price_as_of or "undated"),
                        " (ESTIMATE)" if r.price_estimate else "",
                        "on the Pareto frontier" if f else "dominated",
                    ]
                    for r, f in zip(s.itertuples(), on_front, strict=True)
                ],
                hovertemplate=(
                    "%{text}<br>%{customdata[0]}<br>"
                    "%{customdata[1]} per million samples, %{y:,.4g} samples/s<br>"
                    "price %{customdata[2]}, %{customdata[3]}, %{customdata[4]}%{customdata[5]}<br>"
                    "%{customdata[6]}"
                    "<extra>%{fullData.name}</extra>"
                ),
            )
        pf = g.loc[front]
        fig.add_scatter(
            name="Pareto frontier",
            x=pf["usd_per_million_samples"].tolist(),
            y=pf["samples_per_s"].tolist(),
            mode="lines",
            line={"dash": "dash", "color": "#222", "shape": "hv"},
            hoverinfo="skip",
        )
        fig.update_layout(
            xaxis_title="$ per million samples (lower is better)", yaxis_title="samples/s (higher is better)"
        )
        fig.update_xaxes(**x_axis)
        fig.update_yaxes(**_value_axis(g["samples_per_s"].tolist()))
        charts.append(_chart(f"pp-{i}", f"{workload}: price/performance", fig, 400))
    return charts


# ---- comparison ------------------------------------------------------------------------------------------


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
    return _chart("ratios", "Throughput ratio per matched cell", fig, 140 + 26 * len(cells))


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
    return _chart("geomeans", "Geometric-mean ratio per workload and overall", fig, 160 + 40 * len(groups))
