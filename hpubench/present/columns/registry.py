"""Every column of the results, in table order: one entry each, read by the full and the 80-column
terminal tables, the report's table of every cell and the exports (``hpubench.present.columns``).

The getters and formatters the entries name live beside: ``terminal`` (from a cell's runs, for the
terminal tables) and ``pagecells`` (the report table's cells).
"""

from __future__ import annotations

from hpubench import numfmt
from hpubench.present.columns.cells import TableCell, integer, number, text
from hpubench.present.columns.model import Column, Html, Term
from hpubench.present.columns.pagecells import (
    MEASURED_HELP,
    NOT_APPLICABLE,
    dollars,
    mfu_cell,
    numerics_cell,
    peak_cell,
    price_cell,
    quality_cell,
    with_workload,
)
from hpubench.present.columns.phasecells import phase_cell, phase_split, phase_text
from hpubench.present.columns.terminal import (
    compact_figure,
    fixed_ms,
    label,
    note,
    numerics,
    numerics_style,
    peak,
    peak_of_any_run,
    percent,
    percent_sig,
    plus_minus,
    quality,
    quality_style,
    rate_with_interval,
    scaling,
    scaling_text,
    status,
    status_style,
    throughput,
    verdict,
    verdict_style,
)

# ---- the registry ------------------------------------------------------------------------------------------

_CELL = Column(
    "cell",
    "Cell",
    get_runs=label,
    # At 120 columns the key folds onto a second line rather than losing its tail (precision and mode).
    wide=Term(str, "cell", justify="left", overflow="fold"),
    narrow=Term(str, "cell", justify="left", overflow="fold"),
)
_IDENTITY = (
    Column(
        "result_set",
        "Result set",
        html=Html(lambda v, row: text(v, title=str(row["result_path"]))),
    ),
    Column(
        "hardware",
        "Hardware",
        "device name the worker recorded",
        html=Html(
            lambda v, row: text(v, badge="TEST DOUBLE" if row["test_double"] else "", badge_cls="double")
        ),
    ),
    Column("workload", "Workload", html=Html()),
    Column("size", "Size", html=Html()),
    Column("precision", "Precision", html=Html()),
    Column(
        "mode",
        "Mode",
        "execution mode in force (read back from the run)",
        html=Html(
            lambda v, row: text(
                v, title="" if numfmt.missing(row["mode_in_force"]) else f"in force: {row['mode_in_force']}"
            )
        ),
    ),
    Column(
        "graphs", "Graphs", "HPU graphs / CUDA graphs", html=Html(lambda v, _: text("on" if v else "off"))
    ),
    Column(
        "devices",
        "Dev × nodes",
        html=Html(
            lambda v, row: TableCell(f"{v}×{row['nodes']}", sort=repr(float(row["world_size"]))),
        ),
    ),
    Column("strategy", "Strategy", "single, ddp or fsdp: how the processes share the model", html=Html()),
    Column(
        "batch",
        "Batch",
        "per-device batch size that ran",
        get=lambda row: row["batch_size_resolved"],
        html=Html(lambda v, _: number(v, text=integer(v)), numeric=True),
    ),
)
_OUTCOME = (
    Column(
        "status",
        "Status",
        get_runs=status,
        wide=Term(str, "status", style=status_style, justify="left"),
        html=Html(lambda v, row: TableCell(str(v), sort=str(v), title=row["reason"] or "", badge_cls=str(v))),
    ),
    Column(
        "quality",
        "Quality",
        "can the figure be trusted: ok, noisy (wide interval), unstable (halves differ), interfered "
        "(other processes took the cores), recompiled (compiled while measured), partial (stopped "
        "early), unmeasured (conditions not measurable in the window); hover a value for the reasons; "
        "'–' = recorded before verdicts",
        get_runs=quality,
        wide=Term(
            lambda v: "-" if v is None else v, "quality", style=quality_style, justify="left", no_wrap=True
        ),
        html=Html(quality_cell),
    ),
    Column(
        "verdict",
        "Quality",
        "the quality verdict, or the status of a cell without a measured run",
        get_runs=verdict,
        narrow=Term(str, "quality", style=verdict_style, justify="left", overflow="fold", no_wrap=True),
    ),
    Column(
        "numerics",
        "Numerics",
        "does the cell still train: ok (loss within tolerance of the 32-true eager reference), drift "
        "(finite but off), diverged (not finite), unchecked (no comparable reference); worst over "
        "repetitions; hover a value for the reasons; '–' = recorded before numerics were checked",
        get_runs=numerics,
        wide=Term(
            lambda v: "-" if v is None else v, "numerics", style=numerics_style, justify="left", no_wrap=True
        ),
        # None in the 80-column table: a column there folds the cell keys to nothing (measured at 70 and 80
        # columns); that table says the numerics in a line under it (narrowtable.numerics_line).
        html=Html(numerics_cell),
    ),
)
_FIGURES = (
    Column(
        "samples_per_s",
        "Samples/s [95% CI]",
        f"total samples ÷ total time of the measured steps; {MEASURED_HELP}; interval: percentile "
        "bootstrap over step times",
        get_runs=throughput,
        figure=True,
        wide=Term(rate_with_interval, "samples/s [CI]"),
        narrow=compact_figure("samples/s", lambda s: numfmt.count(s.value)),
        html=Html(
            lambda v, row: number(
                v,
                sub=numfmt.ci(row["samples_per_s_lo"], row["samples_per_s_hi"]),
                title=f"{numfmt.num(row['measured_steps'])} measured steps; {MEASURED_HELP}",
            ),
            numeric=True,
        ),
    ),
    Column(
        "samples_per_s_spread",
        "±CI",
        "the 95% interval as ± its larger side; repeated cells: the range of the runs",
        get_runs=throughput,
        figure=True,
        narrow=compact_figure("±CI", plus_minus),
    ),
    Column(
        "samples_per_s_per_device", "Per device", "samples/s ÷ (devices × nodes)", html=Html(numeric=True)
    ),
    Column("tokens_per_s", "Tokens/s", "for token workloads (GPT, BERT)", html=Html(numeric=True)),
    Column(
        "step_time_p50_s",
        "p50 step ms",
        "median measured step time",
        get=lambda row: row["step_time_p50_s"] if row.ok else None,
        figure=True,
        wide=Term(fixed_ms, "p50 ms"),
        narrow=compact_figure("step p50", numfmt.seconds),
        html=Html(lambda v, _: number(v, text=numfmt.ms(v)), numeric=True),
    ),
    Column("step_time_p90_s", "p90 step ms", figure=True, wide=Term(fixed_ms, "p90 ms")),
    Column(
        "step_cv",
        "Step CV",
        "standard deviation ÷ mean of the measured step times",
        get=lambda row: row["step_time_std_s"] / row["step_time_mean_s"] if row.ok else None,
        html=Html(lambda v, _: number(v, text=numfmt.pct(v)), numeric=True),
    ),
    Column(
        "first_step_s",
        "1st step s",
        "first warm-up step: includes compile / graph capture; never part of the throughput",
        figure=True,
        wide=Term(lambda v: numfmt.fixed(v, ".3f"), "1st step s"),
        html=Html(numeric=True),
    ),
    Column(
        "memory_peak_allocated_bytes",
        "Peak MiB",
        "peak memory (several ranks: the highest, each rank's below); hover a value for its source",
        get_runs=peak,
        figure=True,
        wide=Term(lambda v: numfmt.mib(v, ".0f", numfmt.DASH), "peak MiB"),
        narrow=compact_figure("peak mem", numfmt.size, get=peak_of_any_run),
        html=Html(peak_cell, numeric=True),
    ),
    Column(
        "mfu",
        "MFU",
        "model FLOPs utilisation against the peak of the precision used; hover for the peak and its source",
        figure=True,
        wide=Term(percent, "MFU"),
        narrow=compact_figure("MFU", percent_sig),
        html=Html(mfu_cell, numeric=True),
    ),
    Column(
        "scaling_efficiency",
        "Scaling",
        "samples/s ÷ (N × the 1-device cell's)",
        get_runs=scaling,
        figure=True,
        wide=Term(scaling_text, "scaling"),
        narrow=compact_figure("scaling", scaling_text),
    ),
    Column(
        "phases",
        "Fwd/bwd/opt",
        "where the step's time goes: forward, backward and optimizer as shares of the measured mean step "
        "(medians of a few steps run after the measured ones, each phase between device syncs), then "
        "res, the residue the phases do not account for (negative: they took longer apart); data: the "
        "host loader's wait beside the step (--loader host); 'not split': one captured or lazy graph, "
        "hover for why",
        get_runs=phase_split,
        figure=True,
        wide=Term(phase_text, "fwd/bwd/opt"),
        html=Html(phase_cell),
    ),
)
_ECONOMICS = (
    Column(
        "price_usd_per_device_hour",
        "$/device-h",
        "price per device-hour; hover for its source and date",
        html=Html(price_cell, numeric=True),
    ),
    Column(
        "usd_per_million_samples",
        "$/M samples [CI]",
        "hourly cost ÷ samples per hour × 10⁶; interval from the throughput interval",
        html=Html(
            lambda v, row: number(
                v,
                text=dollars(v, row),
                sub=numfmt.ci(row["usd_per_million_samples_lo"], row["usd_per_million_samples_hi"]),
            ),
            numeric=True,
        ),
    ),
    Column(
        "usd_per_million_tokens",
        "$/M tokens",
        html=Html(lambda v, row: number(v, text=dollars(v, row)), numeric=True),
    ),
    Column(
        "samples_per_usd",
        "Samples/$",
        html=Html(
            lambda v, row: number(v, text=NOT_APPLICABLE if row.unpriced else numfmt.num(v)), numeric=True
        ),
    ),
    Column(
        "workload_time_s",
        "Time for {n}",
        "time to process {n} samples at this throughput",
        html=Html(lambda v, _: number(v, text=numfmt.duration(v)), numeric=True, shown=with_workload),
    ),
    Column(
        "workload_cost_usd",
        "Cost for {n}",
        "cost of processing {n} samples",
        html=Html(lambda v, row: number(v, text=dollars(v, row)), numeric=True, shown=with_workload),
    ),
)
_TAIL = (
    Column(
        "repeats",
        "Reps",
        "repetitions of the cell (--repeat); figures are over all",
        html=Html(lambda v, _: number(v, text=str(v)), numeric=True, shown=lambda page: page.repeated),
    ),
    Column("note", "Note", get_runs=note, wide=Term(str, "note", justify="left")),
    Column("key", "Cell key", html=Html()),
)

COLUMNS: tuple[Column, ...] = (_CELL, *_IDENTITY, *_OUTCOME, *_FIGURES, *_ECONOMICS, *_TAIL)
