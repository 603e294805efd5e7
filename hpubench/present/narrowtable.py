"""Results at 80 columns: the figures that decide, keys cut to what differs, everything else below.

The full results table (``tables.results_table``, eleven columns and whole keys) needs about 160
columns; at 80 or 120 rich folded every key over eight lines and cut the figures to ``70,…``. Under that
width the CLI prints this compact table instead (``--wide`` asks for the full one): the parts of the key
every row shares are said once above the table, figures carry three significant digits and a unit, the
interval is a relative ``±``, and the notes and reasons follow the table as lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median

from rich import box
from rich.console import RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from hpubench.analysis.quality import OK, PARTIAL, assess_repeats
from hpubench.analysis.scaling import scaling_efficiencies
from hpubench.measure.ranks import rank_peaks
from hpubench.present import numfmt
from hpubench.present.shortkeys import shorten
from hpubench.present.tables import results_table
from hpubench.store.record import CellResult

WIDE_MIN_COLUMNS = 160  # below this the full table folds its keys; measured with an 8-dimension key


@dataclass(frozen=True)
class Row:
    """One line of the compact table: a cell, or every repetition of a cell together."""

    cell: str
    verdict: str  # the quality verdict, or the status when there is no figure (failed, skipped)
    rate: str
    spread: str
    step: str
    peak: str
    mfu: str
    scaling: str


def _verdict_style(word: str) -> str:
    if word == OK:
        return "green"
    if word in (PARTIAL, "failed"):
        return "red"
    return "dim" if word in ("skipped", "-") else "yellow"


def _row(label: str, records: list[CellResult], effs: list[float | None], world: list[int]) -> Row:
    ok = [i for i, r in enumerate(records) if r.status == "ok" and r.metrics]
    if len(records) > 1:
        q = assess_repeats(records)
        verdict = q.verdict if q is not None else "-"
    else:
        verdict = records[0].quality or "-"
    if not ok:
        return Row(label, records[-1].status, "-", "-", "-", "-", "-", "-")
    mets = [records[i].metrics for i in ok]
    rates = [m.samples_per_s for m in mets if m]
    if len(records) > 1:
        rate = median(rates)
        spread = numfmt.plus_minus(rate, min(rates), max(rates)) if len(rates) > 1 else "-"
    else:
        m = mets[0]
        assert m is not None
        rate = m.samples_per_s
        spread = numfmt.plus_minus(rate, *m.samples_per_s_ci)
    peaks = [r.memory.peak_allocated_bytes for r in records if r.memory and r.memory.peak_allocated_bytes]
    mfus = [m.mfu for m in mets if m and m.mfu is not None]
    eff = [(e, w) for e, w in zip(effs, world, strict=True) if e is not None]
    return Row(
        cell=label,
        verdict=verdict if records[0].status == "ok" or len(records) > 1 else records[0].status,
        rate=numfmt.count(rate),
        spread=spread,
        step=numfmt.seconds(median(m.step_time_p50_s for m in mets if m)),
        peak=numfmt.size(max(peaks)) if peaks else "-",
        mfu=f"{numfmt.sig(median(mfus) * 100, 2)}%" if mfus else "-",
        scaling=f"{median(e for e, _ in eff):.0%} of x{eff[0][1]}" if eff else "-",
    )


def compact_rows(results: Sequence[CellResult]) -> tuple[str, list[Row], dict[str, str]]:
    """The shared key parts, one row per cell (repetitions together), and each key's short label."""
    keys = shorten([r.key for r in results])
    scaling = scaling_efficiencies(list(results))
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(results):
        groups.setdefault(r.key, []).append(i)
    rows = []
    for key, idx in groups.items():
        effs = [scaling[i].efficiency if scaling[i] else None for i in idx]  # type: ignore[union-attr]
        world = [scaling[i].world_size if scaling[i] else 0 for i in idx]  # type: ignore[union-attr]
        rows.append(_row(keys.short[key], [results[i] for i in idx], effs, world))
    return keys.common, rows, keys.short


def _notes(results: Sequence[CellResult], short: dict[str, str]) -> list[str]:
    """Why a figure is not ok, and why a cell has none, one line each, by short key."""
    lines: list[str] = []
    seen: set[str] = set()
    for r in results:
        if r.key in seen:
            continue
        seen.add(r.key)
        mine = [x for x in results if x.key == r.key]
        if all(x.status != "ok" for x in mine) and r.reason:
            lines.append(f"{short[r.key]}: {r.status}: {r.reason}")
            continue
        q = assess_repeats(mine) if len(mine) > 1 else None
        reasons = q.reasons if q is not None else r.quality_reasons if len(mine) == 1 else ()
        lines += [f"{short[r.key]}: {reason}" for reason in reasons]
    return lines


def rank_peak_lines(results: Sequence[CellResult], short: dict[str, str] | None = None) -> list[str]:
    """Each rank's own peak memory, one line per cell of several ranks (its first record that has them):
    the table's peak is the highest rank's, so what sharding (fsdp) saves per rank shows here."""
    lines: dict[str, str] = {}
    for r in results:
        peaks = rank_peaks(r.runtime) if r.status == "ok" else None
        if peaks and len(peaks) > 1 and r.key not in lines:
            shown = ", ".join(numfmt.size(p) for p in peaks)
            lines[r.key] = f"{(short or {}).get(r.key, r.key)}: {shown} ({r.runtime.strategy or '?'})"
    return ["peak memory per rank (rank 0, 1, ...):\n" + "\n".join(lines.values())] if lines else []


def compact_results_table(results: Sequence[CellResult], title: str = "") -> list[RenderableType]:
    """The table and the lines under it, to print in order."""
    common, rows, short = compact_rows(results)
    table = Table(title=escape(title), box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for col, justify in (
        ("cell", "left"),
        ("quality", "left"),
        ("samples/s", "right"),
        ("±CI", "right"),
        ("step p50", "right"),
        ("peak mem", "right"),
        ("MFU", "right"),
        ("scaling", "right"),
    ):
        table.add_column(col, justify=justify, overflow="fold", no_wrap=col != "cell")  # type: ignore[arg-type]
    for row in rows:
        table.add_row(
            escape(row.cell),
            f"[{_verdict_style(row.verdict)}]{row.verdict}[/]",
            row.rate,
            row.spread,
            row.step,
            row.peak,
            row.mfu,
            row.scaling,
        )
    under: list[RenderableType] = []
    if common:
        under.append(Text(f"every cell: {common} (* = the parts in the cell column)"))
    under.append(
        Text(
            "samples/s: mean over the measured steps, ±CI its 95% interval; repeated cells: the median run, "
            "± the range of the runs. Warm-up excluded, device synchronised per step. --wide: every column."
        )
    )
    under += [Text(line) for line in rank_peak_lines(results, short)]
    notes = _notes(results, short)
    if notes:
        under.append(Text("why not ok:\n" + "\n".join(notes)))
    return [table, *under]


def results_view(
    results: Sequence[CellResult], title: str, width: int, wide: bool = False
) -> list[RenderableType]:
    """What to print for these results on a console ``width`` columns wide: full or compact."""
    if wide or width >= WIDE_MIN_COLUMNS:
        return [results_table(results, title=title), *(Text(line) for line in rank_peak_lines(results))]
    return compact_results_table(results, title)
