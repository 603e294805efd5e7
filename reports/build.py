"""Pages: the report and the comparison, rendered from the cell frame and charts with jinja2.

Autoescaping is on for every template, and nothing from a result is ever marked safe: host names,
workload names, env values and reasons all reach the page as text. The only unescaped content is ours:
the stylesheet, the small table script, plotly's bundle and chart JSON made script-safe in
:mod:`reports.charts`. A Content-Security-Policy forbids every network fetch, so the page provably works
offline (and a stray external reference fails loudly in the browser console instead of leaking).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import cache
from typing import Any

import jinja2
import pandas as pd

import hpubench
from hpubench.analysis.compare import Comparison
from hpubench.analysis.prices import Tables
from hpubench.analysis.stats import summary as stats
from hpubench.analysis.steadiness import unsteady_hint
from reports import assets, charts, comparecharts, fmt, observed
from reports.celltable import cell_table
from reports.decision import WorkloadDecision, decisions
from reports.frames import Headline, config_label, headlines, measured, scaling_frame, varying_columns
from reports.sources import ResultSet, is_test_double
from reports.tables import Column, HtmlTable, TableCell, TableRow, number, text
from reports.tuning import tuning_view


@cache
def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("reports", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(fmt.FILTERS)
    return env


def _render(template: str, **context: Any) -> str:
    return (
        _env()
        .get_template(template)
        .render(
            css=assets.static("report.css"),
            js=assets.static("report.js"),
            plotly_js=assets.plotly_js(),
            csp=assets.CSP,
            generated_at=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            hpubench_version=hpubench.__version__,
            **context,
        )
    )


# ---- provenance and method -------------------------------------------------------------------------------

_META_ORDER = (
    "hostname",
    "platform",
    "machine",
    "cpu_count",
    "python_version",
    "hpubench_version",
    "git",
    "command_line",
    "cwd",
    "started_at",
    "spec_name",
    "inventory",
    "record_schema",
    "meta_schema",
)


def _meta_value(key: str, value: Any) -> str:
    if key == "command_line" and isinstance(value, list):
        return shlex.join(str(v) for v in value)
    if key == "git" and isinstance(value, dict):
        dirty = {True: ", uncommitted changes", False: ", clean", None: ""}.get(value.get("dirty"), "")
        return f"{value.get('commit')} ({value.get('branch')}{dirty})"
    if key == "inventory" and isinstance(value, dict):
        return "; ".join(
            f"{acc}: {v.get('count')} × {v.get('device_name') or '-'}"
            for acc, v in value.items()
            if isinstance(v, dict)
        )
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


@dataclass(frozen=True)
class Provenance:
    label: str
    path: str
    hardware: str
    test_double: bool
    counts: dict[str, int]
    meta: list[tuple[str, str]]
    software: list[tuple[str, str]]
    env_flags: list[tuple[str, str]]


def _union(results: Sequence[Any], field_name: str) -> list[tuple[str, str]]:
    """Every key of a runtime dict across the records, with all the values it took."""
    seen: dict[str, set[str]] = {}
    for r in results:
        d = r.runtime.get(field_name)
        if isinstance(d, dict):
            for k, v in d.items():
                seen.setdefault(str(k), set()).add(str(v))
    return [(k, " | ".join(sorted(v))) for k, v in sorted(seen.items())]


def provenance(rs: ResultSet) -> Provenance:
    meta = rs.meta or {}
    keys = [k for k in _META_ORDER if k in meta] + sorted(k for k in meta if k not in _META_ORDER)
    counts: dict[str, int] = {}
    for r in rs.results:
        counts[r.status] = counts.get(r.status, 0) + 1
    return Provenance(
        label=rs.label,
        path=rs.path,
        hardware=rs.hardware,
        test_double=rs.test_double,
        counts=counts,
        meta=[(k, _meta_value(k, meta[k])) for k in keys] or [("meta.json", "none found beside the records")],
        software=_union(rs.results, "software"),
        env_flags=_union(rs.results, "env_flags"),
    )


def _distinct(values: Any) -> str:
    vals = sorted(
        {
            str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)
            for v in values
            if not fmt.missing(v)
        }
    )
    return " / ".join(vals) if vals else fmt.MISSING


@dataclass(frozen=True)
class Method:
    """The facts behind "how this was measured", read from the records rather than assumed."""

    warmup_steps: str
    measured_steps: str
    timing: list[str]
    memory_sources: list[str]
    confidence: str
    n_boot: int = stats.DEFAULT_N_BOOT
    seed: int = stats.DEFAULT_SEED


def method(sets: Sequence[ResultSet], df: pd.DataFrame) -> Method:
    ok = measured(df)
    timing = sorted({str(r.runtime.timing) for rs in sets for r in rs.results if r.runtime.timing})
    return Method(
        warmup_steps=_distinct(ok["measured_warmup_steps"]),
        measured_steps=_distinct(ok["measured_steps"]),
        timing=timing,
        memory_sources=sorted({str(s) for s in ok["memory_source"] if not fmt.missing(s)}),
        confidence=_distinct(ok["confidence"] * 100) + ("%" if len(ok) else ""),
    )


def _table_rows(entries: Sequence[Any], used: set[str]) -> list[dict[str, Any]]:
    """Table entries for the page, those a result was matched to first and marked as used."""
    return sorted(({"entry": e, "used": e.name in used} for e in entries), key=lambda d: not d["used"])


# ---- pages -----------------------------------------------------------------------------------------------


def _row_view(row: pd.Series | None) -> dict[str, Any] | None:
    """A headline row for the template, its verdict None / reasons "" where the record has none."""
    if row is None:
        return None
    d = row.to_dict()
    d["quality"] = None if fmt.missing(d["quality"]) else str(d["quality"])
    d["quality_reasons"] = "" if fmt.missing(d["quality_reasons"]) else str(d["quality_reasons"])
    d["numerics"] = None if fmt.missing(d["numerics"]) else str(d["numerics"])
    d["numerics_reasons"] = "" if fmt.missing(d["numerics_reasons"]) else str(d["numerics_reasons"])
    d["price_as_of"] = None if fmt.missing(d.get("price_as_of")) else d["price_as_of"]  # NaN reads "undated"
    return d


def _headline_view(h: Headline) -> dict[str, Any]:
    return {
        "workload": h.workload,
        "fastest": _row_view(h.fastest),
        "runner_up": _row_view(h.runner_up),
        "cheapest": _row_view(h.cheapest),
        "cheapest_runner_up": _row_view(h.cheapest_runner_up),
        "speed": h.speed,
        "cost": h.cost,
        "passed_over": [_row_view(r) for r in h.passed_over],
    }


def _decision_view(d: WorkloadDecision, varying: Sequence[str]) -> dict[str, Any]:
    return {
        "workload": d.workload,
        "machines": [
            {
                "series": mb.series,
                "fastest": _row_view(mb.fastest),
                "fastest_config": config_label(mb.fastest, varying),
                "speed_ratio": mb.speed_ratio,
                "cheapest": _row_view(mb.cheapest),
                "cheapest_config": None if mb.cheapest is None else config_label(mb.cheapest, varying),
                "cost_ratio": mb.cost_ratio,
            }
            for mb in d.machines
        ],
    }


def compare_command(sets: Sequence[ResultSet]) -> str | None:
    """With exactly two result sets, the command that compares them cell by cell."""
    if len(sets) != 2:
        return None
    return shlex.join(["hpubench", "compare", sets[0].path, sets[1].path, "-o", "compare.html"])


def measured_first(df: pd.DataFrame) -> pd.DataFrame:
    """The cells table's rows: the measured ones only, by workload and then fastest first; skipped and
    failed cells are counted under it by reason (:func:`problem_groups`), so at 300 cells of which 284
    were skipped the first screen is still figures."""
    ok = measured(df)
    return ok.sort_values(["workload", "samples_per_s"], ascending=[True, False], kind="stable")


def problem_groups(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Skipped and failed cells grouped by status and reason, failures first, the largest groups first."""
    rows = df[df["status"] != "ok"]
    groups = []
    for (status, reason), g in rows.groupby(
        ["status", rows["reason"].fillna("no reason recorded")], sort=False
    ):
        groups.append({"status": status, "reason": reason, "count": len(g), "rows": g.to_dict("records")})
    return sorted(groups, key=lambda x: (x["status"] != "failed", -x["count"], x["reason"]))


def report_html(
    sets: Sequence[ResultSet],
    df: pd.DataFrame,
    tables: Tables,
    workload_samples: int | None,
    unpriced: Sequence[str],
) -> str:
    """The whole report page; ``df`` is :func:`reports.frames.cell_frame` of ``sets``."""
    df = charts.add_series(df)
    colors = charts.series_colors(df)
    sf = scaling_frame(df)  # keeps df's columns, its series labels included
    series_of = dict(zip(zip(df["result_set"], df["key"], strict=True), df["series"], strict=True))
    runs = [(series_of[(rs.label, r.cell.key)], r) for rs in sets for r in rs.runs]
    ok = measured(df)
    used_prices = set(ok["price_name"].dropna())
    used_peaks = set(ok["peak_name"].dropna())
    return _render(
        "report.html.j2",
        title="hpubench report",
        sets=[provenance(rs) for rs in sets],
        headlines=[_headline_view(h) for h in headlines(df)],
        decision=[_decision_view(d, varying_columns(ok)) for d in decisions(df)],
        compare_command=compare_command(sets),
        table=cell_table(measured_first(df), workload_samples),
        throughput=charts.throughput_charts(df, colors),
        scaling=charts.scaling_charts(sf, colors),
        scaling_rows=sf.to_dict("records"),
        memory=charts.memory_charts(df, colors),
        timeline=charts.memory_timeline_charts(runs, colors),
        profiles=observed.profile_views(sets),
        energy=observed.energy_table(sets),
        energy_absent=observed.absent_telemetry(sets),
        loader=observed.loader_table(sets),
        tuning=tuning_view(sets),
        price_perf=charts.price_performance_charts(df, colors),
        problems=problem_groups(df),
        tracebacks={
            (rs.label, r.key): r.traceback_tail for rs in sets for r in rs.results if r.traceback_tail
        },
        method=method(sets, df),
        prices=_table_rows(tables.prices, used_prices),
        peaks=_table_rows(tables.peaks, used_peaks),
        unpriced=unpriced,
        workload_samples=workload_samples,
        any_double=any(rs.test_double for rs in sets),
        memory_rss=any("RSS" in str(src) for src in ok["memory_source"].dropna()),
        any_estimate=bool(ok["price_estimate"].eq(True).any() or ok["peak_estimate"].eq(True).any()),
        unsteady=unsteady_hint([r.quality for rs in sets for r in rs.results if r.status == "ok"]),
        counts={s: int((df["status"] == s).sum()) for s in ("ok", "failed", "skipped")},
    )


def _compare_columns(c: Comparison) -> list[Column]:
    """The matched-cells table's columns, their headers' tooltips saying how each figure was made."""
    return [
        Column("workload", "Workload"),
        Column("match_key", "Cell (key without hardware)"),
        Column("base", "Base samples/s [CI]", numeric=True),
        Column("candidate", "Candidate samples/s [CI]", numeric=True),
        Column(
            "ratio",
            f"Throughput ratio ({c.statistic} step) [95% CI]",
            f"candidate ÷ base; estimator (shared with hpubench gate): {c.estimator}",
            numeric=True,
        ),
        Column(
            "verdict",
            "Verdict",
            "faster / slower only where the interval excludes 1, the test agrees and both sides are ok; "
            "'within-run only': one run a side, run-to-run drift not in the interval",
        ),
        Column("quality", "Quality base / cand.", "each side's worst quality verdict over its runs"),
        Column(
            "numerics",
            "Numerics base / cand.",
            "each side's worst numerics verdict over its runs (loss against the 32-true eager reference); "
            "'-' = recorded before numerics were checked",
        ),
        Column("mem_base", "Base peak MiB", numeric=True),
        Column("mem_candidate", "Cand. peak MiB", numeric=True),
        Column(
            "mem_ratio",
            "Memory ratio",
            "candidate peak ÷ base peak (> 1: candidate needs more)",
            numeric=True,
        ),
        Column(
            "perf_usd",
            "Samples/$ ratio [CI]",
            "candidate samples per dollar ÷ base; needs a price on both sides",
            numeric=True,
        ),
    ]


def compare_table(c: Comparison) -> HtmlTable:
    table = HtmlTable("matched-table", _compare_columns(c))
    for x in c.cells:
        b, k = x.base_economics, x.candidate_economics
        mb = x.base.record.memory.peak_allocated_bytes if x.base.record.memory else None
        mc = x.candidate.record.memory.peak_allocated_bytes if x.candidate.record.memory else None
        r, pu = x.throughput_ratio, x.perf_per_usd_ratio
        mem_title = (
            f"memory sources differ: base {x.base.record.memory.source}, candidate "  # type: ignore[union-attr]
            f"{x.candidate.record.memory.source}; the ratio compares different quantities"  # type: ignore[union-attr]
            if x.memory_sources_differ
            else ""
        )
        cells = [
            text(x.workload),
            text(x.match_key),
            number(b.samples_per_s, sub=fmt.ci(*b.samples_per_s_ci)),
            number(k.samples_per_s, sub=fmt.ci(*k.samples_per_s_ci)),
            number(r.value, text=fmt.ratio(r.value), sub=fmt.ci(r.lo, r.hi)),
            TableCell(x.verdict, sort=x.verdict, badge_cls=f"verdict-{x.verdict.split()[0]}"),
            TableCell(
                f"{x.base.quality or '-'} / {x.candidate.quality or '-'}",
                sort=f"{x.base.quality}/{x.candidate.quality}",
                title="; ".join((*x.base.quality_reasons, *x.candidate.quality_reasons)),
            ),
            TableCell(
                f"{x.base.numerics or '-'} / {x.candidate.numerics or '-'}",
                sort=f"{x.base.numerics}/{x.candidate.numerics}",
                title="; ".join((*x.base.numerics_reasons, *x.candidate.numerics_reasons)),
            ),
            number(mb, text=fmt.mib(mb)),
            number(mc, text=fmt.mib(mc)),
            number(
                x.memory_ratio,
                text=fmt.ratio(x.memory_ratio),
                title=mem_title,
                badge="sources differ" if mem_title else "",
                badge_cls="est",
            ),
            number(
                None if pu is None else pu.value,
                text=fmt.ratio(None if pu is None else pu.value),
                sub="" if pu is None else fmt.ci(pu.lo, pu.hi),
                title="" if pu is not None else "no price for at least one side",
            ),
        ]
        table.rows.append(TableRow(x.match_key, cells, "double" if _double(x) else ""))
    return table


def _double(x: Any) -> bool:
    return is_test_double(x.base.record) or is_test_double(x.candidate.record)


def compare_html(c: Comparison, base: ResultSet, candidate: ResultSet, tables: Tables) -> str:
    used = {e.price.name for x in c.cells for e in (x.base_economics, x.candidate_economics) if e.price}
    return _render(
        "compare.html.j2",
        title=f"hpubench comparison: {c.candidate_label} vs {c.base_label}",
        c=c,
        base=provenance(base),
        candidate=provenance(candidate),
        table=compare_table(c),
        ratio_chart=comparecharts.ratio_chart(c),
        geomean_chart=comparecharts.geomean_chart(c),
        prices=_table_rows(tables.prices, used),
        any_double=base.test_double or candidate.test_double,
        n_boot=stats.DEFAULT_N_BOOT,
        seed=stats.DEFAULT_SEED,
    )
