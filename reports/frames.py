"""The report's one table: a row per cell per result set, with price/performance derived in place.

The HTML table, every chart and the csv/parquet/json exports are all cut from this one DataFrame, so a
number in a chart is always the number in the table and in the export. A cell run several times
(``--repeat``) is one row: its throughput is taken over all repetitions (``repeats`` says how many).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from hpubench.analysis.frame import to_dataframe
from hpubench.analysis.prices import Tables
from hpubench.analysis.quality import assess_repeats
from hpubench.analysis.ranking import Contender, Decision, rank
from hpubench.analysis.scaling import scaling_efficiencies
from hpubench.plan.dimensions import PLAIN
from reports.sources import ResultSet, is_test_double

if TYPE_CHECKING:
    from hpubench.analysis.compare import CellRuns
    from hpubench.analysis.economics import CellEconomics

# Columns the report adds in front of the store's own, and the derived ones it appends.
ID_COLUMNS = ("result_set", "result_path", "hardware", "test_double", "repeats")
DERIVED_COLUMNS = (
    "samples_per_s_per_device",
    "peak_name",
    "peak_dtype",
    "peak_estimate",
    "peak_as_of",
    "price_name",
    "price_usd_per_device_hour",
    "price_per",
    "price_source",
    "price_as_of",
    "price_estimate",
    "price_origin",
    "usd_per_hour",
    "usd_per_million_samples",
    "usd_per_million_samples_lo",
    "usd_per_million_samples_hi",
    "usd_per_million_tokens",
    "samples_per_usd",
    "workload_samples",
    "workload_time_s",
    "workload_cost_usd",
)


def hardware_label(accelerator: str, device: str, test_double: bool) -> str:
    name = device or accelerator
    return f"{name} (test double)" if test_double else name


def cell_frame(
    sets: Sequence[ResultSet], tables: Tables, workload_samples: int | None = None
) -> pd.DataFrame:
    """One row per (result set, cell key); the store's columns, then the report's derived ones."""
    records, extra = [], []
    for rs in sets:
        scaling = _scaling(rs)
        for runs in rs.runs:
            records.append(runs.record)
            extra.append(_row(rs, runs, scaling, tables, workload_samples))
    df = to_dataframe(records).drop(columns=["repeat"], errors="ignore")
    # Rows of unmeasured cells lack the figures measured rows override: take every row's keys.
    add = pd.DataFrame(
        extra, columns=list(dict.fromkeys([*ID_COLUMNS, *DERIVED_COLUMNS, *(k for r in extra for k in r)]))
    )
    for col in add.columns:  # overrides keep the store's column order; new columns are appended
        df[col] = add[col].to_numpy()
    middle = [c for c in df.columns if c not in ID_COLUMNS and c not in DERIVED_COLUMNS]
    return df[[*ID_COLUMNS, *middle, *DERIVED_COLUMNS]]


def _row(
    rs: ResultSet,
    runs: CellRuns,
    scaling: dict[str, dict[str, Any]],
    tables: Tables,
    workload_samples: int | None,
) -> dict[str, Any]:
    """The report's columns of one cell: identity, then every derived column (None where it does not
    apply), scaling, and the figures over all repetitions; its key order is the frame's column order."""
    rec = runs.record
    econ = runs.economics(tables, workload_samples)
    row: dict[str, Any] = {
        "result_set": rs.label,
        "result_path": rs.path,
        "hardware": hardware_label(
            rec.cell.accelerator,
            # A cell skipped before it named its device: the device the run detected.
            rec.runtime.device_name or rs.inventory_device(rec.cell.accelerator),
            is_test_double(rec),
        ),
        "test_double": is_test_double(rec),
        "repeats": len(runs.records),
    }
    row.update(dict.fromkeys(DERIVED_COLUMNS))
    row.update(scaling.get(runs.cell.key, dict.fromkeys(SCALING_COLUMNS)))
    if len(runs.records) > 1:  # one row for all repetitions: the worst numerics of any, every reason
        row["numerics"] = runs.numerics
        row["numerics_reasons"] = "; ".join(runs.numerics_reasons) or None
    if econ is not None:
        row.update(_economics_columns(runs, econ))
    return row


def _economics_columns(runs: CellRuns, econ: CellEconomics) -> dict[str, Any]:
    """A measured cell's figures over all repetitions (for one repetition: the record's own,
    unchanged), against the peak and price tables in force (user edits applied), not the run's."""
    rec = runs.record
    price, peak = econ.price, econ.peak
    scale = econ.samples_per_s / rec.metrics.samples_per_s  # type: ignore[union-attr]
    cols: dict[str, Any] = dict(
        samples_per_s=econ.samples_per_s,
        samples_per_s_lo=econ.samples_per_s_ci[0],
        samples_per_s_hi=econ.samples_per_s_ci[1],
        tokens_per_s=econ.tokens_per_s,
        achieved_tflops=econ.achieved_tflops,
        peak_tflops=peak.tflops if peak else None,
        peak_source=peak.source if peak else None,
        mfu=econ.mfu,
        samples_per_s_per_device=econ.samples_per_s_per_device,
        peak_name=peak.device if peak else None,
        peak_dtype=peak.dtype if peak else None,
        peak_estimate=peak.estimate if peak else None,
        peak_as_of=peak.as_of if peak else None,
        usd_per_hour=econ.usd_per_hour,
        usd_per_million_samples=econ.usd_per_million_samples,
        usd_per_million_tokens=econ.usd_per_million_tokens,
        samples_per_usd=econ.samples_per_usd,
        workload_samples=econ.workload_samples,
        workload_time_s=econ.workload_time_s,
        workload_cost_usd=econ.workload_cost_usd,
    )
    if rec.metrics and rec.metrics.tokens_per_s_ci is not None:
        cols["tokens_per_s_lo"] = rec.metrics.tokens_per_s_ci[0] * scale
        cols["tokens_per_s_hi"] = rec.metrics.tokens_per_s_ci[1] * scale
    if econ.usd_per_million_samples_ci is not None:
        cols["usd_per_million_samples_lo"], cols["usd_per_million_samples_hi"] = (
            econ.usd_per_million_samples_ci
        )
    if len(runs.records) > 1:
        # One row for all repetitions: every run's problems, noise judged on the row's interval.
        lo, hi = econ.samples_per_s_ci
        q = assess_repeats(runs.measured, (hi - lo) / 2 / econ.samples_per_s)
        cols["quality"] = None if q is None else q.verdict
        cols["quality_reasons"] = None if q is None else "; ".join(q.reasons) or None
    if price is not None:
        cols.update(
            price_name=price.name,
            price_usd_per_device_hour=price.usd_per_device_hour,
            price_per=price.per,
            price_source=price.source,
            price_as_of=price.as_of,
            price_estimate=price.estimate,
            price_origin=price.origin,
        )
    return cols


def config_label(row: pd.Series, varying: Sequence[str] = ()) -> str:
    """What distinguishes a cell within its workload: precision, mode, graphs, and what else varies."""
    parts = [str(row["precision"]), str(row["mode"]), "graphs" if row["graphs"] else "no graphs"]
    if "devices" in varying or "nodes" in varying:
        parts.append(f"{row['devices']}×{row['nodes']}")
    if "batch_size_resolved" in varying:
        parts.append(f"bs {int(row['batch_size_resolved'])}")
    if "size" in varying:
        parts.insert(0, str(row["size"]))
    if "options" in varying and row["options"]:
        parts.append(str(row["options"]))
    if row.get("condition") == PLAIN:  # always said: a plain figure is not the harness's tuned one
        parts.append("plain host")
    return " · ".join(parts)


def varying_columns(df: pd.DataFrame) -> list[str]:
    cols = ("size", "devices", "nodes", "batch_size_resolved", "options")
    return [c for c in cols if df[c].astype(str).nunique() > 1]


def measured(df: pd.DataFrame) -> pd.DataFrame:
    return df[(df["status"] == "ok") & df["samples_per_s"].notna()]


def _contender(row: pd.Series, col: str, varying: Sequence[str] = ()) -> Contender:
    q, n = row["quality"], row["numerics"]
    return Contender(
        float(row[col]),
        float(row[f"{col}_lo"]),
        float(row[f"{col}_hi"]),
        None if pd.isna(q) else str(q),
        int(row["repeats"]),
        numerics=None if pd.isna(n) else str(n),
        name=f"{row['hardware']} · {config_label(row, varying)}",
    )


@dataclass(frozen=True)
class Headline:
    """The best configuration of one workload, by throughput and by price/performance, and whether the
    data may call it the best (:func:`hpubench.analysis.ranking.rank`: numerics ok, intervals apart and
    both verdicts ok). ``fastest`` / ``cheapest`` are the rows shown: the best with ok numerics, else the
    best figure; ``passed_over``: faster rows left out for their numerics."""

    workload: str
    fastest: pd.Series
    runner_up: pd.Series | None
    speed: Decision
    cheapest: pd.Series | None = None  # lowest $ per million samples; None where nothing is priced
    cheapest_runner_up: pd.Series | None = None
    cost: Decision | None = None
    passed_over: tuple[pd.Series, ...] = ()


def ranked(
    rows: pd.DataFrame, col: str, higher: bool, words: tuple[str, str], varying: Sequence[str]
) -> tuple[pd.Series, pd.Series | None, Decision, tuple[pd.Series, ...]]:
    """The row shown, its runner-up, the decision and the rows passed over, by one rule (``rank``)."""
    r = rank([_contender(rows.iloc[i], col, varying) for i in range(len(rows))], higher, words)
    runner = None if r.runner_up is None else rows.iloc[r.runner_up]
    return rows.iloc[r.best], runner, r.decision, tuple(rows.iloc[i] for i in r.passed_over)


def headlines(df: pd.DataFrame) -> list[Headline]:
    out = []
    ok = measured(df)
    varying = varying_columns(ok) if len(ok) else []
    for workload, g in ok.groupby("workload", sort=True):
        by_speed = g.sort_values("samples_per_s", ascending=False)
        fastest, runner, speed, passed = ranked(
            by_speed, "samples_per_s", True, ("fastest", "faster"), varying
        )
        priced = g[g["usd_per_million_samples"].notna()].sort_values("usd_per_million_samples")
        cost: tuple[Any, ...] = (None, None, None)
        if len(priced):
            col = "usd_per_million_samples"
            cost = ranked(priced, col, False, ("cheapest", "cheaper"), varying)[:3]
        out.append(Headline(str(workload), fastest, runner, speed, *cost, passed_over=passed))
    return out


SCALING_COLUMNS = (
    "scaling_efficiency",
    "scaling_speedup",
    "scaling_baseline_key",
    "scaling_baseline_samples_per_s",
)


def _scaling(rs: ResultSet) -> dict[str, dict[str, Any]]:
    """Scaling of each multi-device cell of one run, by :mod:`hpubench.analysis.scaling`'s definition and
    choice of 1-device baseline, taken from the same run and recomputed from the throughput over all
    repetitions (so it agrees with the samples/s the report shows)."""
    sps = {r.cell.key: r.samples_per_s.value for r in rs.runs if r.samples_per_s is not None}
    out: dict[str, dict[str, Any]] = {}
    for runs, s in zip(rs.runs, scaling_efficiencies([r.record for r in rs.runs]), strict=True):
        key = runs.cell.key
        if s is None or key not in sps or s.baseline_key not in sps:
            continue
        base = sps[s.baseline_key]
        out[key] = {
            "scaling_efficiency": sps[key] / base / runs.cell.world_size,
            "scaling_speedup": sps[key] / base,
            "scaling_baseline_key": s.baseline_key,
            "scaling_baseline_samples_per_s": base,
        }
    return out


def scaling_frame(df: pd.DataFrame) -> pd.DataFrame:
    """The multi-device cells with their 1-device baselines (efficiency 1 by definition), for the
    scaling chart and table; empty where no run measured a cell at more than one device count."""
    ok = measured(df)
    multi = ok[ok["scaling_efficiency"].notna()]
    if multi.empty:
        return pd.DataFrame()
    baselines = set(zip(multi["result_set"], multi["scaling_baseline_key"], strict=True))
    is_base = [(rs, k) in baselines for rs, k in zip(ok["result_set"], ok["key"], strict=True)]
    bases = ok[is_base].assign(scaling_efficiency=1.0, scaling_speedup=1.0)
    out = pd.concat([bases, multi]).rename(
        columns={"scaling_efficiency": "efficiency", "scaling_speedup": "speedup"}
    )
    return out.sort_values(["result_set", "workload", "precision", "mode", "world_size"], kind="stable")
