"""Terminal tables of results: what ran, how fast, with its spread, and why anything did not run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

from hpubench import numfmt
from hpubench.analysis.compare import CellRuns, numerics_word
from hpubench.analysis.numerics import OK as NUMERICS_OK
from hpubench.analysis.quality import PRECEDENCE, assess_repeats
from hpubench.analysis.steadiness import unsteady_hint
from hpubench.present.columns import COLUMNS, Column, cell_runs, markup, wide_columns
from hpubench.store.record import CellResult

if TYPE_CHECKING:  # for annotations only
    from hpubench.analysis.compare import Comparison
    from hpubench.analysis.stats.summary import Estimate


def quality_notes(results: Sequence[CellResult]) -> list[str]:
    """One line per reason a figure is not ok, named by cell (repetitions together), for under a table."""
    groups: dict[str, list[CellResult]] = {}
    for r in results:
        groups.setdefault(r.key, []).append(r)
    lines = []
    for key, records in groups.items():
        q = assess_repeats(records) if len(records) > 1 else None
        reasons = q.reasons if q is not None else records[0].quality_reasons if len(records) == 1 else ()
        lines += [f"{key}: {reason}" for reason in reasons]
    return lines


def host_notes(results: Sequence[CellResult]) -> list[str]:
    """The line that points at the host when most figures are unstable (``unsteady_hint``), if it applies."""
    hint = unsteady_hint([r.quality for r in results if r.status == "ok"])
    return [hint] if hint else []


def numerics_notes(results: Sequence[CellResult], short: Mapping[str, str] | None = None) -> list[str]:
    """One line per reason a cell's numerics are not ok (repetitions together), named by its key or its
    short label, for under a table: the verdict's word alone does not say what was off."""
    groups: dict[str, list[CellResult]] = {}
    for r in results:
        groups.setdefault(r.key, []).append(r)
    lines = []
    for key, records in groups.items():
        runs = CellRuns(tuple(records))
        if runs.numerics in (None, NUMERICS_OK):
            continue
        name = (short or {}).get(key, key)
        lines += [
            f"{name}: numerics {runs.numerics}: {why}" for why in runs.numerics_reasons or ("no reason",)
        ]
    return lines


def numerics_line(results: Sequence[CellResult], short: Mapping[str, str] | None = None) -> str:
    """The numerics of every cell with a figure or a verdict, in one line for under the 80-column table
    (which has no room for the column): "ok" for all, or the cells per verdict, "not recorded" included."""
    groups: dict[str, list[CellResult]] = {}
    for r in results:
        groups.setdefault(r.key, []).append(r)
    by: dict[str, list[str]] = {}
    for key, records in groups.items():
        runs = CellRuns(tuple(records))
        if runs.numerics is None and not runs.measured:
            continue  # skipped, or failed before it had a loss: no figure to trust or distrust
        by.setdefault(numerics_word(runs.numerics), []).append((short or {}).get(key, key))
    head = "numerics (loss against the 32-true eager reference)"
    if list(by) == [NUMERICS_OK]:
        return f"{head}: ok in every measured cell"
    return f"{head}: " + "; ".join(
        f"{word} {len(keys)}" if word == NUMERICS_OK else f"{word}: {', '.join(keys)}"
        for word, keys in by.items()
    )


def results_table(
    results: Sequence[CellResult], title: str = "", columns: Sequence[Column] = COLUMNS
) -> Table:
    """Every cell with its figure and its quality verdict; the reasons for any verdict but ok follow the
    caption, one line each, so the table's own columns stay narrow. The columns are the registry's
    (``hpubench.present.columns``) that the full table shows."""
    caption = (
        "samples/s: mean over measured steps [95% bootstrap CI, within this run: processes differ more]; "
        "repeated cells (run --repeat): "
        "median of the runs [lowest, highest run], the other columns medians of the runs, peak the highest; "
        "warm-up excluded; each step timed alone (a host clock around a device sync, the device's own "
        "events where it has them, or host timestamps for a launch-bound step: the record's runtime.timing); "
        "several devices: global (all ranks, "
        "the slowest rank's steps); scaling: samples/s / (N x the 1-device cell's); quality: can the figure "
        f"be trusted ({', '.join(reversed(PRECEDENCE))}; '-' = recorded before verdicts); "
        "numerics: does it still train (ok, drift, diverged, unchecked against the 32-true eager reference; "
        "'-' = recorded before numerics were checked)"
    )
    notes = quality_notes(results) + numerics_notes(results) + host_notes(results)
    if notes:
        caption += "\nwhy not ok:\n" + "\n".join(notes)
    # Escaped: "[lowest, highest run]" and any bracket in a key or reason is text, not rich markup.
    table = Table(title=title, caption=escape(caption), caption_justify="left")
    shown = wide_columns(columns)
    for col, term in shown:
        table.add_column(
            term.title or col.title, justify=term.justify, overflow=term.overflow, no_wrap=term.no_wrap
        )
    for runs in cell_runs(results, lone_by_metrics=True):
        table.add_row(*(markup(*col.term_cell(runs, term)) for col, term in shown))
    return table


# ---- what was observed beside the figures (hpubench profile, --memory-every, telemetry, --loader) ----------

_SPARK = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float | None]) -> str:
    """A one-line shape of a series for the terminal ("?" where a value is missing)."""
    known = [v for v in values if v is not None]
    if not known:
        return ""
    lo, hi = min(known), max(known)
    span = hi - lo
    out = []
    for v in values:
        if v is None:
            out.append("?")
        else:
            out.append(_SPARK[0] if span == 0 else _SPARK[min(7, int((v - lo) / span * 8))])
    return "".join(out)


def telemetry_table(results: Sequence[CellResult]) -> Table | None:
    """Power and energy per cell; None when no cell measured any (absent reasons go to ``absent_notes``)."""
    rows = [r for r in results if r.telemetry is not None and r.telemetry.source is not None]
    if not rows:
        return None
    priced = any(r.telemetry.energy_price_per_kwh is not None for r in rows)  # type: ignore[union-attr]
    table = Table(
        title="power and energy over the measured steps",
        caption="energy from the source's counter where it has one (energy ±%: the error its steps and the "
        "polls allow), else the integral of power samples; '-' = not measured (never 0)",
    )
    cols = ["cell", "source", "mean W", "max W", "J/step", "energy ±%", "samples/kWh", "util %", "max °C"]
    if priced:
        cols += ["cost/1M samples", "cost/hour"]
    for c in cols:
        table.add_column(c, justify="left" if c in ("cell", "source") else "right")
    for r in rows:
        t = r.telemetry
        assert t is not None
        cells = [
            r.key,
            f"{t.source} ({t.device})" if t.device else str(t.source),
            numfmt.fixed(t.mean_power_w),
            numfmt.fixed(t.max_power_w),
            numfmt.fixed(t.energy_per_step_j, ".3g"),
            numfmt.fixed(t.energy_resolution_pct),
            numfmt.fixed(t.samples_per_kwh, ",.0f"),
            numfmt.fixed(t.mean_utilisation_pct),
            numfmt.fixed(t.max_temperature_c, ".0f"),
        ]
        if priced:
            cells += [
                numfmt.fixed(t.energy_cost_per_1m_samples, ".4g"),
                numfmt.fixed(t.energy_cost_per_hour, ".4g"),
            ]
        table.add_row(*cells)
    return table


def absent_telemetry_notes(results: Sequence[CellResult]) -> list[str]:
    """One line per distinct reason telemetry was absent, with how many cells it concerns."""
    reasons: dict[str, int] = {}
    for r in results:
        if r.telemetry is not None and r.telemetry.source is None:
            reason = r.telemetry.absent_reason or "no reason given"
            reasons[reason] = reasons.get(reason, 0) + 1
    return [f"telemetry absent for {n} cell(s): {reason}" for reason, n in reasons.items()]


def loader_table(results: Sequence[CellResult]) -> Table | None:
    rows = [r for r in results if r.loader is not None]
    if not rows:
        return None
    table = Table(
        title="host loader: data wait vs compute per step (separate pass after the measured steps)",
        caption="samples/s plain: device-resident batches (the cell's figure); with loader: fed from the "
        "host",
    )
    for c in ("cell", "data wait ms", "compute ms", "data %", "samples/s with loader", "samples/s plain"):
        table.add_column(c, justify="left" if c == "cell" else "right")
    for r in rows:
        s = r.loader
        assert s is not None
        table.add_row(
            r.key,
            numfmt.fixed(s.data_wait_mean_s * 1e3, ".3f"),
            numfmt.fixed(s.compute_mean_s * 1e3, ".3f"),
            f"{s.data_fraction:.1%}",
            numfmt.fixed(s.samples_per_s, ",.1f"),
            numfmt.fixed(r.metrics.samples_per_s if r.metrics else None, ",.1f"),
        )
    return table


def memory_timeline_table(results: Sequence[CellResult]) -> Table | None:
    rows = [r for r in results if r.memory_timeline]
    if not rows:
        return None
    table = Table(
        title="memory over the steps (in use)",
        caption="start: before the first warm-up step; growth: last minus first measured sample; "
        "peak: highest peak-since-reset sampled",
    )
    for c in (
        "cell",
        "points",
        "start MiB",
        "after warm-up MiB",
        "end MiB",
        "growth MiB",
        "peak MiB",
        "shape",
    ):
        table.add_column(c, justify="left" if c in ("cell", "shape") else "right")
    for r in rows:
        tl = r.memory_timeline
        warm = [s for s in tl if s.phase == "warmup"]
        measured = [s for s in tl if s.phase == "measured"]
        growth = None
        if (
            len(measured) >= 2
            and measured[0].in_use_bytes is not None
            and measured[-1].in_use_bytes is not None
        ):
            growth = measured[-1].in_use_bytes - measured[0].in_use_bytes
        peaks = [s.peak_allocated_bytes for s in tl if s.peak_allocated_bytes is not None]
        table.add_row(
            r.key,
            str(len(tl)),
            numfmt.mib(tl[0].in_use_bytes, ".0f", numfmt.DASH),
            numfmt.mib(warm[-1].in_use_bytes if warm else None, ".0f", numfmt.DASH),
            numfmt.mib(tl[-1].in_use_bytes, ".0f", numfmt.DASH),
            "-" if growth is None else f"{growth / 2**20:+.1f}",
            numfmt.mib(max(peaks) if peaks else None, ".0f", numfmt.DASH),
            sparkline([s.in_use_bytes for s in tl]),
        )
    return table


def operator_table(result: CellResult, run_dir: str | None = None) -> Table | None:
    """The top-N operator table of one profiled cell, per step, with where its trace file is."""
    p = result.profile
    if p is None:
        return None
    steps = max(1, p.active)
    caption = []
    if p.error:
        caption.append(f"profile pass failed: {p.error}")
    if p.step_time_mean_s is not None:
        line = f"profiled steps: {len(p.step_times_s)} x {p.step_time_mean_s * 1e3:.2f} ms"
        if result.metrics is not None:
            line += f" (plain {result.metrics.step_time_mean_s * 1e3:.2f} ms"
            if p.overhead_vs_plain is not None:
                line += f", profiler overhead {p.overhead_vs_plain:+.0%}"
            line += ")"
        caption.append(line)
    if p.trace_path:
        caption.append(f"trace: {p.trace_path if run_dir is None else f'{run_dir}/{p.trace_path}'}")
    caption.append(
        f"activities {'+'.join(p.activities) or '-'}; sorted by {p.sort_by.replace('_', ' ')} time"
    )
    caption += list(p.notes)
    table = Table(title=f"top operators: {result.key}", caption="\n".join(caption))
    device = any(row.self_device_s is not None for row in p.top_ops)
    cols = ["#", "operator", "kind", "calls/step", "self CPU ms/step"]
    if device:
        cols.append("self device ms/step")
    cols.append("% of step")
    for c in cols:
        table.add_column(c, justify="left" if c in ("operator", "kind") else "right")
    for i, row in enumerate(p.top_ops, 1):
        kind = row.kind if row.device_type == "CPU" else f"{row.kind} ({row.device_type})"  # kernel (CUDA)
        cells = [str(i), row.name, kind, f"{row.calls / steps:g}", f"{row.self_cpu_s / steps * 1e3:.3f}"]
        if device:
            cells.append(
                numfmt.fixed(None if row.self_device_s is None else row.self_device_s / steps * 1e3, ".3f")
            )
        cells.append(f"{row.pct_of_step:.1f}")
        table.add_row(*cells)
    return table


def observation_tables(results: Sequence[CellResult], run_dir: str | None = None) -> list[Table]:
    """Every table of what was observed beside the figures, in reading order; empty when nothing was."""
    tables = [telemetry_table(results), loader_table(results), memory_timeline_table(results)]
    tables += [operator_table(r, run_dir) for r in results]
    return [t for t in tables if t is not None]


# ---- base vs candidate (hpubench compare) ----------------------------------------------------------------


def _ratio(e: Estimate | None) -> str:
    return "-" if e is None else f"{e.value:.3g}x [{e.lo:.3g}, {e.hi:.3g}]"


def compare_table(c: Comparison) -> Table:
    """Matched cells with their ratios; the geometric means per workload and overall close the table."""
    table = Table(
        title=f"{c.candidate_label} vs {c.base_label}: {len(c.cells)} matched cells",
        caption="ratio = candidate / base, 95% interval; samples/s: mean over every step (what training "
        f"delivers, priced). Estimator (the same as hpubench gate's): {c.estimator}. Verdict only where the "
        "interval excludes 1 and both sides' quality is ok, never a win for a side whose numerics are not "
        "ok; memory > 1: candidate needs more",
    )
    for col, justify in (
        ("cell (key without hardware)", "left"),
        ("base samples/s", "right"),
        ("candidate samples/s", "right"),
        (f"throughput ratio ({c.statistic} step) [CI]", "right"),
        ("verdict", "left"),
        ("quality base/cand", "left"),
        ("numerics base/cand", "left"),
        ("memory ratio", "right"),
        ("samples/$ ratio [CI]", "right"),
    ):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for x in c.cells:
        word = x.verdict.split()[0]
        shown = {"faster": f"[green]{x.verdict}[/]", "slower": f"[red]{x.verdict}[/]"}.get(word, x.verdict)
        table.add_row(
            x.match_key,
            f"{x.base_economics.samples_per_s:,.1f}",
            f"{x.candidate_economics.samples_per_s:,.1f}",
            _ratio(x.throughput_ratio),
            shown,
            f"{x.base.quality or '-'}/{x.candidate.quality or '-'}",
            f"{x.base.numerics or '-'}/{x.candidate.numerics or '-'}",
            "-" if x.memory_ratio is None else f"{x.memory_ratio:.3g}x",
            _ratio(x.perf_per_usd_ratio),
        )
    table.add_section()
    for g in (*c.per_workload, c.overall):
        table.add_row(
            f"[bold]geometric mean: {g.name}[/] ({g.cells} cell{'s' if g.cells != 1 else ''})",
            "",
            "",
            _ratio(g.throughput),
            "",
            "",
            "",
            "",
            _ratio(g.perf_per_usd),
        )
    return table
