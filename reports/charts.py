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

from hpubench.analysis.compare import CellRuns
from hpubench.analysis.pareto import pareto_front
from reports import fmt
from reports.frames import config_label, measured, varying_columns

PALETTE = qualitative.Safe + qualitative.Vivid
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


def chart(chart_id: str, title: str, fig: go.Figure, height: int) -> Chart:
    """The figure laid out as every chart of a page is (title, legend, margins, scales stated)."""
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
    fig.update_xaxes(tickangle=0)  # never rotated: a label that cannot fit is a chart to redesign
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
MOST_TICKS = 6  # labels a log axis carries: side by side at a phone's width without rotating
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
    if len(vals) > MOST_TICKS:  # a wide range: decades only, then every other decade
        decades = [v for v in vals if math.isclose(10 ** round(math.log10(v)), v)]
        step = math.ceil(len(decades) / MOST_TICKS)
        vals = decades[::step] if len(decades) >= 2 else vals[:: math.ceil(len(vals) / MOST_TICKS)]
    return {"tickvals": vals, "ticktext": [compact(v) + suffix for v in vals]}


def compact(v: float) -> str:
    """A tick value short enough for five to sit side by side on a phone: 500, 20k, 1.5M, 0.25."""
    for size, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= size:
            return f"{v / size:.3g}{unit}"
    return f"{v:.3g}"


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


LABELLED_POINTS = 12  # a price/performance chart labels every point up to this many, then the frontier only
MAX_ROWS = 40  # configurations one chart labels, one row each; the rest are in the table (the title says)
ROW_PX = 24  # a row's height: a 12 px label with air above and below
LABEL_CHARS = 48  # a configuration label longer than this is cut (the hover holds it whole)


def _cut(label: str) -> str:
    return label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"


@dataclass(frozen=True)
class Measure:
    """What one configuration chart shows: a column, how to read it, and its axis words."""

    col: str
    lo: str | None  # interval columns, where it has one
    hi: str | None
    scale: float  # display unit per stored unit
    unit: str  # axis title and colour bar title
    what: str  # the chart title's tail
    higher_is_better: bool


THROUGHPUT = Measure(
    "samples_per_s", "samples_per_s_lo", "samples_per_s_hi", 1.0, "samples/s", "throughput", True
)
MEMORY = Measure(
    "memory_peak_allocated_bytes", None, None, 1 / 2**20, "peak memory, MiB", "peak memory", False
)


def _unique_configs(g: pd.DataFrame) -> pd.DataFrame:
    """Rows whose configuration label repeats on one machine (cells that differ in something the label
    leaves out, such as the strategy) labelled by their key instead, so no bar or heat-map cell hides
    another."""
    twice = g.duplicated(["series", "config"], keep=False)
    if not twice.any():
        return g
    return g.assign(config=[k if d else c for c, k, d in zip(g["config"], g["key"], twice, strict=True)])


def _top(g: pd.DataFrame, m: Measure) -> tuple[list[str], int]:
    """The configurations shown (best first, by their best machine; at most ``MAX_ROWS``), and how many
    there are."""
    best = g.groupby("config")[m.col].agg("max" if m.higher_is_better else "min")
    ordered = best.sort_values(ascending=not m.higher_is_better)
    return [str(c) for c in ordered.index[:MAX_ROWS]], len(ordered)


def _config_chart(chart_id: str, workload: str, g: pd.DataFrame, m: Measure, colors: dict[str, str]) -> Chart:
    """One workload's configurations: a horizontal bar each (the label beside it) on one machine, a heat
    map of configuration x machine with the value in each cell on several; the best ``MAX_ROWS`` of them."""
    g = _unique_configs(g)
    configs, total = _top(g, m)
    g = g[g["config"].isin(configs)]
    series = list(dict.fromkeys(g["series"]))
    shown = f"best {len(configs)} of {total} configurations" if total > len(configs) else "per configuration"
    title = f"{workload}: {m.what}, {shown}"
    labels = {c: t(_cut(c.replace(" · no graphs", ""))) for c in configs}
    if len(series) == 1:
        fig = _bars(g, configs, labels, m, colors[series[0]], series[0])
        height = 120 + ROW_PX * len(configs)
    else:
        fig = _heatmap(g, configs, labels, series, m)
        height = 200 + ROW_PX * len(configs)
    fig.update_yaxes(
        categoryorder="array",
        categoryarray=[labels[c] for c in configs],
        autorange="reversed",
        automargin=True,
    )
    return chart(chart_id, title, fig, height)


def _bars(
    g: pd.DataFrame, configs: list[str], labels: dict[str, str], m: Measure, color: str, series: str
) -> go.Figure:
    rows = g.set_index("config").loc[configs]
    values = rows[m.col] * m.scale
    fig = go.Figure()
    error = None
    if m.lo and m.hi:
        error = {
            "type": "data",
            "symmetric": False,
            "array": ((rows[m.hi] - rows[m.col]) * m.scale).tolist(),
            "arrayminus": ((rows[m.col] - rows[m.lo]) * m.scale).tolist(),
        }
    fig.add_bar(
        name=t(series),
        orientation="h",
        y=[labels[c] for c in configs],
        x=values.tolist(),
        error_x=error,
        marker={"color": color, "pattern": {"shape": "/" if rows["test_double"].any() else ""}},
        customdata=[
            [t(k), fmt.ci(lo * m.scale, hi * m.scale) if m.lo else "", t(c)]
            for c, k, lo, hi in zip(
                configs,
                rows["key"],
                rows[m.lo] if m.lo else values,
                rows[m.hi] if m.hi else values,
                strict=True,
            )
        ],
        hovertemplate="%{customdata[2]}<br>%{customdata[0]}<br>%{x:,.4g} "
        + m.unit
        + " %{customdata[1]}<extra></extra>",
    )
    fig.update_xaxes(
        title=f"{m.unit} ({'higher' if m.higher_is_better else 'lower'} is better)",
        **_value_axis(values.tolist()),
    )
    return fig


def _heatmap(
    g: pd.DataFrame, configs: list[str], labels: dict[str, str], series: list[str], m: Measure
) -> go.Figure:
    """Configuration x machine; the colour is the value on a log scale, the text the value itself."""
    table = g.pivot_table(index="config", columns="series", values=m.col, aggfunc="first").reindex(
        index=configs, columns=series
    )
    keys = g.pivot_table(index="config", columns="series", values="key", aggfunc="first").reindex(
        index=configs, columns=series
    )
    values = table * m.scale
    z = [[math.log10(v) if pd.notna(v) and v > 0 else None for v in row] for row in values.to_numpy()]
    text = [[compact(v) if pd.notna(v) else "" for v in row] for row in values.to_numpy()]
    # Machines are lettered on the axis (a name would not fit a column at a phone's width) and named in the
    # legend, one entry a letter; the hover names both.
    letters = [machine_letter(i) for i in range(len(series))]
    hover = [
        [
            f"{letters[j]}: {t(series[j])}<br>{t(k) if isinstance(k, str) else 'not run'}"
            for j, k in enumerate(row)
        ]
        for row in keys.to_numpy()
    ]
    finite = [v for row in z for v in row if v is not None]
    ticks = log_ticks(10 ** min(finite), 10 ** max(finite)) if finite else {}
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=letters,
            y=[labels[c] for c in configs],
            text=text,
            texttemplate="%{text}",
            textfont={"size": 10},
            customdata=hover,
            hovertemplate="%{y}<br>%{customdata}<br>%{text} " + m.unit + "<extra></extra>",
            colorscale="Viridis",
            reversescale=not m.higher_is_better,
            xgap=2,
            ygap=2,
            showscale=True,
            showlegend=False,
            # below the plot, across it: at a phone's width every pixel beside the plot is a column's
            colorbar={
                "title": {"text": f"{m.unit}, log scale", "side": "top"},
                "tickvals": [math.log10(v) for v in ticks.get("tickvals", [])],
                "ticktext": ticks.get("ticktext", []),
                "thickness": 10,
                "orientation": "h",
                "y": -0.02,
                "yanchor": "top",
                "yref": "paper",
                "len": 1,
            },
        )
    )
    for letter, name in zip(letters, series, strict=True):  # the legend: what each letter stands for
        fig.add_scatter(
            name=f"{letter}: {t(name)}",
            x=[None],
            y=[None],
            mode="markers",
            marker={"opacity": 0},
            hoverinfo="skip",
        )
    fig.update_xaxes(side="top", tickangle=0, title=None, automargin=True)
    return fig


def machine_letter(i: int) -> str:
    """A, B, ... Z, then M27, M28, ...: a machine's name on a heat map's axis."""
    return chr(ord("A") + i) if i < 26 else f"M{i + 1}"


def throughput_charts(df: pd.DataFrame, colors: dict[str, str]) -> list[Chart]:
    return [_config_chart(f"thr-{i}", w, g, THROUGHPUT, colors) for i, w, g in _by_workload(df)]


def memory_charts(df: pd.DataFrame, colors: dict[str, str]) -> list[Chart]:
    return [
        _config_chart(f"mem-{i}", w, g, MEMORY, colors)
        for i, w, g in _by_workload(df, "memory_peak_allocated_bytes")
    ]


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
        charts.append(chart(f"memtl-{i}", f"{workload}: memory over the steps", fig, 340))
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
        charts.append(chart(f"scale-{i}", f"{workload}: scaling efficiency", fig, 360))
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
                # Every point labelled while few; past LABELLED_POINTS only the frontier's (the rest in hover)
                text=[t(c) if len(g) <= LABELLED_POINTS or i in front else "" for i, c in s["label"].items()],
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
        charts.append(chart(f"pp-{i}", f"{workload}: price/performance", fig, 400))
    return charts
