"""The report's table of every cell: one row per cell and result set, each figure with the tooltip that
says how it was made (the peak behind an MFU, the source and date of a price, what memory measured)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from hpubench.plan import dimensions, precisions
from hpubench.store.frame import added_dimension_columns
from reports import fmt
from reports.tables import Column, HtmlTable, TableCell, TableRow, integer, number, text


def _peak_title(r: pd.Series) -> str:
    if fmt.missing(r["peak_tflops"]):
        dtype = precisions.peak_dtype(str(r["precision"])) or "?"
        return f"no published {dtype} peak for this device in the peak table: no MFU rather than a guess"
    est = " (ESTIMATE: unconfirmed figure)" if r["peak_estimate"] else ""
    return (
        f"against {fmt.num(r['peak_tflops'])} TFLOP/s {r['peak_dtype']} per device{est}; "
        f"source: {r['peak_source']}, as of {r['peak_as_of'] or 'undated'}"
    )


NOT_APPLICABLE = "n/a"


def _dollars(x: Any, unpriced: bool) -> str:
    return NOT_APPLICABLE if unpriced else fmt.money(x)


def _price_title(r: pd.Series) -> str:
    if fmt.missing(r["price_usd_per_device_hour"]):
        return (
            f"price/performance not applicable: no price table entry matches {r['hardware']}; "
            "give one with --price-here DOLLARS (the machine the results ran on) or --prices FILE"
        )
    est = " (ESTIMATE)" if r["price_estimate"] else ""
    return (
        f"{r['price_name']}: ${r['price_usd_per_device_hour']} per {r['price_per']}-hour{est}; "
        f"source: {r['price_source']}, as of {r['price_as_of'] or 'undated'}; from {r['price_origin']}"
    )


MEASURED_HELP = "warm-up excluded; device synchronised around every measured step"


def cell_table(df: pd.DataFrame, workload_samples: int | None) -> HtmlTable:
    """Every cell of every result set, with the tooltip that says how each figure was made."""
    n = f"{workload_samples:,}" if workload_samples else ""
    cols = [
        Column("result_set", "Result set"),
        Column("hardware", "Hardware", "device name the worker recorded"),
        Column("workload", "Workload"),
        Column("size", "Size"),
        Column("precision", "Precision"),
        Column("mode", "Mode", "execution mode in force (read back from the run)"),
        Column("graphs", "Graphs", "HPU graphs / CUDA graphs"),
        Column("devices", "Dev × nodes"),
        Column("strategy", "Strategy", "single, ddp or fsdp: how the processes share the model"),
        Column("batch", "Batch", "per-device batch size that ran", numeric=True),
        Column("status", "Status"),
        Column(
            "quality",
            "Quality",
            "can the figure be trusted: ok, noisy (wide interval), unstable (halves differ), interfered "
            "(other processes took the cores), recompiled (compiled while measured), partial (stopped "
            "early); hover a value for the reasons; '–' = recorded before verdicts",
        ),
        Column(
            "samples_per_s",
            "Samples/s [95% CI]",
            f"total samples ÷ total time of the measured steps; {MEASURED_HELP}; interval: percentile "
            "bootstrap over step times",
            numeric=True,
        ),
        Column("samples_per_s_per_device", "Per device", "samples/s ÷ (devices × nodes)", numeric=True),
        Column("tokens_per_s", "Tokens/s", "for token workloads (GPT, BERT)", numeric=True),
        Column("step_time_p50_s", "p50 step ms", "median measured step time", numeric=True),
        Column("step_cv", "Step CV", "standard deviation ÷ mean of the measured step times", numeric=True),
        Column(
            "first_step_s",
            "1st step s",
            "first warm-up step: includes compile / graph capture; never part of the throughput",
            numeric=True,
        ),
        Column(
            "memory_peak_allocated_bytes",
            "Peak MiB",
            "peak memory (several ranks: the highest, each rank's below); hover a value for its source",
            numeric=True,
        ),
        Column(
            "mfu",
            "MFU",
            "model FLOPs utilisation against the peak of the precision used; hover for the "
            "peak and its source",
            numeric=True,
        ),
        Column(
            "price_usd_per_device_hour",
            "$/device-h",
            "price per device-hour; hover for its source and date",
            numeric=True,
        ),
        Column(
            "usd_per_million_samples",
            "$/M samples [CI]",
            "hourly cost ÷ samples per hour × 10⁶; interval from the throughput interval",
            numeric=True,
        ),
        Column("usd_per_million_tokens", "$/M tokens", numeric=True),
        Column("samples_per_usd", "Samples/$", numeric=True),
    ]
    if workload_samples:
        cols += [
            Column(
                "workload_time_s",
                f"Time for {n}",
                f"time to process {n} samples at this throughput",
                numeric=True,
            ),
            Column("workload_cost_usd", f"Cost for {n}", f"cost of processing {n} samples", numeric=True),
        ]
    added = added_dimension_columns(df.columns)  # dimensions a plugin added, after the built-in ones
    at = next(i for i, c in enumerate(cols) if c.id == "status")
    cols[at:at] = [Column(name, dimensions.header_of(name)) for name in added]
    if (df["repeats"] > 1).any():
        cols.append(
            Column(
                "repeats", "Reps", "repetitions of the cell (--repeat); figures are over all", numeric=True
            )
        )
    cols.append(Column("key", "Cell key"))
    table = HtmlTable("cell-table", cols)
    for _, r in df.iterrows():
        ok = r["status"] == "ok" and not fmt.missing(r["samples_per_s"])
        cv = r["step_time_std_s"] / r["step_time_mean_s"] if ok else None
        status_title = r["reason"] or ""
        mode_title = "" if fmt.missing(r["mode_in_force"]) else f"in force: {r['mode_in_force']}"
        no = "" if ok else fmt.MISSING
        # A measured cell on a device with no price: its dollar figures do not apply (not "not measured").
        unpriced = ok and fmt.missing(r["price_usd_per_device_hour"])

        cells = {
            "result_set": text(r["result_set"], title=str(r["result_path"])),
            "hardware": text(
                r["hardware"], badge="TEST DOUBLE" if r["test_double"] else "", badge_cls="double"
            ),
            "workload": text(r["workload"]),
            "size": text(r["size"]),
            "precision": text(r["precision"]),
            "mode": text(r["mode"], title=mode_title),
            "graphs": text("on" if r["graphs"] else "off"),
            "devices": TableCell(f"{r['devices']}×{r['nodes']}", sort=repr(float(r["world_size"]))),
            "strategy": text(r["strategy"]),
            "batch": number(r["batch_size_resolved"], text=integer(r["batch_size_resolved"])),
            **{name: text(fmt.MISSING if fmt.missing(r[name]) else str(r[name])) for name in added},
            "status": TableCell(
                str(r["status"]), sort=str(r["status"]), title=status_title, badge_cls=str(r["status"])
            ),
            "quality": TableCell(
                fmt.MISSING if fmt.missing(r["quality"]) else str(r["quality"]),
                sort="" if fmt.missing(r["quality"]) else str(r["quality"]),
                title="" if fmt.missing(r["quality_reasons"]) else str(r["quality_reasons"]),
                badge_cls="" if fmt.missing(r["quality"]) else f"q-{r['quality']}",
            ),
            "samples_per_s": number(
                r["samples_per_s"],
                sub=fmt.ci(r["samples_per_s_lo"], r["samples_per_s_hi"]),
                title=f"{fmt.num(r['measured_steps'])} measured steps; {MEASURED_HELP}",
            ),
            "samples_per_s_per_device": number(r["samples_per_s_per_device"]),
            "tokens_per_s": number(r["tokens_per_s"]),
            "step_time_p50_s": number(
                r["step_time_p50_s"] if ok else None, text=fmt.ms(r["step_time_p50_s"] if ok else None)
            ),
            "step_cv": number(cv, text=fmt.pct(cv)),
            "first_step_s": number(r["first_step_s"]),
            "memory_peak_allocated_bytes": number(
                r["memory_peak_allocated_bytes"],
                text=fmt.mib(r["memory_peak_allocated_bytes"]),
                sub=fmt.rank_mib(r["peak_memory_per_rank_bytes"]),
                title=f"source: {r['memory_source']}" if not fmt.missing(r["memory_source"]) else "",
            ),
            "mfu": number(
                r["mfu"],
                text=fmt.pct(r["mfu"], 2) if not fmt.missing(r["mfu"]) else (no or "no peak"),
                title=_peak_title(r) if ok else "",
                badge="est." if r["peak_estimate"] is True else "",
                badge_cls="est",
            ),
            "price_usd_per_device_hour": number(
                r["price_usd_per_device_hour"],
                text=_dollars(r["price_usd_per_device_hour"], unpriced) if ok else fmt.MISSING,
                title=_price_title(r) if ok else "",
                badge="est." if r["price_estimate"] is True else "",
                badge_cls="est",
            ),
            "usd_per_million_samples": number(
                r["usd_per_million_samples"],
                text=_dollars(r["usd_per_million_samples"], unpriced),
                sub=fmt.ci(r["usd_per_million_samples_lo"], r["usd_per_million_samples_hi"]),
            ),
            "usd_per_million_tokens": number(
                r["usd_per_million_tokens"], text=_dollars(r["usd_per_million_tokens"], unpriced)
            ),
            "samples_per_usd": number(
                r["samples_per_usd"], text=NOT_APPLICABLE if unpriced else fmt.num(r["samples_per_usd"])
            ),
            "workload_time_s": number(r["workload_time_s"], text=fmt.duration(r["workload_time_s"])),
            "workload_cost_usd": number(
                r["workload_cost_usd"], text=_dollars(r["workload_cost_usd"], unpriced)
            ),
            "repeats": number(r["repeats"], text=str(r["repeats"])),
            "key": text(r["key"]),
        }
        cls = " ".join(c for c, on in (("double", r["test_double"]), ("notok", not ok)) if on)
        table.rows.append(TableRow(f"{r['result_set']}|{r['key']}", [cells[c.id] for c in cols], cls))
    return table
