"""The report's view of what runs observed beside the figures: operator tables of profiled cells, power
and energy, and the host-loader split (the memory timeline is drawn in :mod:`reports.charts`).

Everything here comes straight from the records (``CellResult.profile``, ``.telemetry``, ``.loader``);
absent telemetry stays absent on the page with its reason, never a zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from reports import fmt
from reports.sources import ResultSet
from reports.tables import Column, HtmlTable, TableRow, number, text


@dataclass(frozen=True)
class ProfileView:
    id: str
    result_set: str
    key: str
    trace: str | None  # path of the Chrome/Perfetto trace, as reachable from where the results were read
    notes: list[str]
    table: HtmlTable


def _trace_location(rs: ResultSet, rel: str | None) -> str | None:
    if not rel:
        return None
    base = Path(rs.path)
    return str((base.parent if base.suffix == ".jsonl" else base) / rel)


def profile_views(sets: Sequence[ResultSet]) -> list[ProfileView]:
    """One operator table per profiled record, per step (self time, calls, % of the profiled steps)."""
    views: list[ProfileView] = []
    for rs in sets:
        for r in rs.results:
            p = r.profile
            if p is None:
                continue
            steps = max(1, p.active)
            device = any(row.self_device_s is not None for row in p.top_ops)
            cols = [
                Column("rank", "#", numeric=True),
                Column("op", "Operator", "aten ops, kernels (device rows) and record_function ranges"),
                Column("kind", "Kind"),
                Column("calls", "Calls/step", numeric=True),
                Column("self_cpu", "Self CPU ms/step", "host time in the op itself, children excluded", True),
            ]
            if device:
                cols.append(Column("self_device", "Self device ms/step", "device time of the op", True))
            cols.append(
                Column(
                    "pct", "% of step", f"sorted-by self time ({p.sort_by}) ÷ profiled step wall time", True
                )
            )
            table = HtmlTable(f"ops-{len(views)}", cols)
            for i, row in enumerate(p.top_ops, 1):
                kind = row.kind if row.device_type == "CPU" else f"{row.kind} ({row.device_type})"
                cells = [
                    number(i, text=str(i)),
                    text(row.name),
                    text(kind),
                    number(row.calls / steps, text=f"{row.calls / steps:g}"),
                    number(row.self_cpu_s / steps * 1e3),
                ]
                if device:
                    self_dev = None if row.self_device_s is None else row.self_device_s / steps * 1e3
                    cells.append(number(self_dev))
                cells.append(number(row.pct_of_step, text=f"{row.pct_of_step:.1f}%"))
                table.rows.append(TableRow(f"{r.key}|{i}", cells))
            notes = []
            if p.error:
                notes.append(f"profile pass failed: {p.error}")
            if p.step_time_mean_s is not None and r.metrics is not None:
                over = (
                    "" if p.overhead_vs_plain is None else f", profiler overhead {p.overhead_vs_plain:+.0%}"
                )
                notes.append(
                    f"{len(p.step_times_s)} profiled steps of {fmt.ms(p.step_time_mean_s)} ms mean against "
                    f"{fmt.ms(r.metrics.step_time_mean_s)} ms plain{over}; "
                    "the plain figures never include them"
                )
            notes.append(f"activities: {' + '.join(p.activities) or fmt.MISSING}; sorted by {p.sort_by}")
            if p.habana_profile is not None:
                notes.append(f"HABANA_PROFILE={p.habana_profile}")
            notes += list(p.notes)
            views.append(
                ProfileView(
                    id=f"profile-{len(views)}",
                    result_set=rs.label,
                    key=r.key,
                    trace=_trace_location(rs, p.trace_path),
                    notes=notes,
                    table=table,
                )
            )
    return views


def energy_table(sets: Sequence[ResultSet]) -> HtmlTable | None:
    """Power and energy per cell where a source measured them; None when none did."""
    rows = [(rs, r) for rs in sets for r in rs.results if r.telemetry is not None and r.telemetry.source]
    if not rows:
        return None
    cols = [
        Column("result_set", "Result set"),
        Column("key", "Cell key"),
        Column("source", "Source", "hlml (Gaudi), nvml (NVIDIA), rapl (CPU package: whole socket)"),
        Column("power", "Mean W", "energy ÷ time over the measured steps", numeric=True),
        Column("max_power", "Max W", numeric=True),
        Column("per_step", "J/step", numeric=True),
        Column(
            "resolution",
            "Energy ±%",
            "the error a counter's steps and the polls allow (counter only)",
            numeric=True,
        ),
        Column("per_kwh", "Samples/kWh", numeric=True),
        Column("util", "Util %", "mean device utilisation reported by the source", numeric=True),
        Column("temp", "Max °C", numeric=True),
        Column("cost", "Energy $/M samples", "only with --energy-price; electricity alone", numeric=True),
    ]
    table = HtmlTable("energy-table", cols)
    for rs, r in rows:
        t = r.telemetry
        assert t is not None
        cells = [
            text(rs.label),
            text(r.key),
            text(f"{t.source} ({t.device})" if t.device else t.source, title=t.scope or ""),
            number(t.mean_power_w, title=f"energy by {t.energy_method or 'nothing'}"),
            number(t.max_power_w),
            number(t.energy_per_step_j),
            number(t.energy_resolution_pct),
            number(t.samples_per_kwh),
            number(t.mean_utilisation_pct),
            number(t.max_temperature_c),
            number(t.energy_cost_per_1m_samples, text=fmt.money(t.energy_cost_per_1m_samples)),
        ]
        table.rows.append(TableRow(f"{rs.label}|{r.key}|{r.repeat}", cells))
    return table


def absent_telemetry(sets: Sequence[ResultSet]) -> list[str]:
    """Why cells have no power figures, once per distinct reason."""
    reasons: dict[str, int] = {}
    for rs in sets:
        for r in rs.results:
            if r.telemetry is not None and r.telemetry.source is None:
                why = r.telemetry.absent_reason or "no reason recorded"
                reasons[why] = reasons.get(why, 0) + 1
    return [f"{n} cell(s): {why}" for why, n in reasons.items()]


def loader_table(sets: Sequence[ResultSet]) -> HtmlTable | None:
    rows = [(rs, r) for rs in sets for r in rs.results if r.loader is not None]
    if not rows:
        return None
    cols = [
        Column("result_set", "Result set"),
        Column("key", "Cell key"),
        Column("wait", "Data wait ms", "next batch + copy to the device, synchronised", numeric=True),
        Column("compute", "Compute ms", "the training step, synchronised", numeric=True),
        Column("share", "Data share", "of the loader-fed step time", numeric=True),
        Column("with_loader", "Samples/s with loader", numeric=True),
        Column("plain", "Samples/s plain", "device-resident batches: the cell's figure", numeric=True),
    ]
    table = HtmlTable("loader-table", cols)
    for rs, r in rows:
        s = r.loader
        assert s is not None
        table.rows.append(
            TableRow(
                f"{rs.label}|{r.key}|{r.repeat}",
                [
                    text(rs.label),
                    text(r.key),
                    number(s.data_wait_mean_s * 1e3),
                    number(s.compute_mean_s * 1e3),
                    number(s.data_fraction, text=fmt.pct(s.data_fraction)),
                    number(s.samples_per_s),
                    number(r.metrics.samples_per_s if r.metrics else None),
                ],
            )
        )
    return table
