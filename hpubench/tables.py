"""Terminal tables of results: what ran, how fast, with its spread, and why anything did not run."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from hpubench.record import CellResult


def _fmt(x: float | None, spec: str = ".1f") -> str:
    return "-" if x is None else format(x, spec)


def _mib(n: int | None) -> str:
    return "-" if n is None else f"{n / 2**20:.0f}"


def results_table(results: Sequence[CellResult], title: str = "") -> Table:
    table = Table(
        title=title,
        caption="samples/s: mean over measured steps [95% bootstrap CI]; warm-up excluded; "
        "device synchronised around each step",
    )
    for col, justify in (
        ("cell", "left"),
        ("status", "left"),
        ("samples/s [CI]", "right"),
        ("p50 ms", "right"),
        ("p90 ms", "right"),
        ("1st step s", "right"),
        ("peak MiB", "right"),
        ("MFU", "right"),
        ("note", "left"),
    ):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for r in results:
        m = r.metrics
        status = {"ok": "[green]ok[/]", "failed": "[red]failed[/]", "skipped": "[dim]skipped[/]"}[r.status]
        if m is None:
            table.add_row(r.key, status, "-", "-", "-", "-", "-", "-", r.reason or "")
            continue
        ci = f"{m.samples_per_s:,.1f} [{m.samples_per_s_ci[0]:,.1f}, {m.samples_per_s_ci[1]:,.1f}]"
        peak = r.memory.peak_allocated_bytes if r.memory else None
        mfu = f"{m.mfu:.1%}" if m.mfu is not None else "-"
        note = f"{m.measured_steps} steps, mode {r.runtime.get('mode_in_force', '?')}"
        table.add_row(
            r.key,
            status,
            ci,
            _fmt(m.step_time_p50_s * 1e3, ".2f"),
            _fmt(m.step_time_p90_s * 1e3, ".2f"),
            _fmt(m.first_step_s, ".3f"),
            _mib(peak),
            mfu,
            note,
        )
    return table
