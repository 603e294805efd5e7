"""``hpubench compare`` at 80 columns: the ratio and the verdict per cell, the rest with ``--wide``.

The full comparison table (``tables.compare_table``) has eight columns and whole keys; under 160 columns
the CLI prints this one instead, with the same shortening of keys as the results table
(``hpubench.present.shortkeys``) and figures to three significant digits (``hpubench.numfmt``).
"""

from __future__ import annotations

from rich import box
from rich.console import RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from hpubench import numfmt
from hpubench.analysis.compare import Comparison, numerics_word
from hpubench.analysis.stats.summary import Estimate
from hpubench.present.narrowtable import WIDE_MIN_COLUMNS
from hpubench.present.shortkeys import shorten
from hpubench.present.tables import compare_table


def ratio(e: Estimate | None) -> str:
    """``1.23x ±4.0%``: the ratio and its interval's relative half-width."""
    if e is None:
        return "-"
    return f"{numfmt.sig(e.value)}x {numfmt.plus_minus(e.value, e.lo, e.hi)}"


def compact_compare_table(c: Comparison) -> list[RenderableType]:
    keys = shorten([x.match_key for x in c.cells])
    table = Table(
        title=escape(f"{c.candidate_label} vs {c.base_label}: {len(c.cells)} matched cells"),
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    for col, justify in (
        ("cell", "left"),
        ("base s/s", "right"),
        ("cand. s/s", "right"),
        ("ratio", "right"),
        ("verdict", "left"),
        ("quality", "left"),
    ):
        table.add_column(col, justify=justify, overflow="fold", no_wrap=col != "cell")  # type: ignore[arg-type]
    for x in c.cells:
        word = x.verdict.split()[0]
        shown = {"faster": f"[green]{escape(x.verdict)}[/]", "slower": f"[red]{escape(x.verdict)}[/]"}
        table.add_row(
            escape(keys.short[x.match_key]),
            numfmt.count(x.base_economics.samples_per_s),
            numfmt.count(x.candidate_economics.samples_per_s),
            ratio(x.throughput_ratio),
            shown.get(word, escape(x.verdict)),
            f"{x.base.quality or '-'}/{x.candidate.quality or '-'}",
        )
    means = [
        f"{g.name} {ratio(g.throughput)} ({g.cells} cell{'s' if g.cells != 1 else ''})"
        for g in c.per_workload
    ]
    overall = f"{c.overall.name} {ratio(c.overall.throughput)} ({c.overall.cells} cells)"
    under: list[RenderableType] = [Text(f"geometric mean of the ratios: {overall}; " + "; ".join(means))]
    if keys.common:
        under.append(Text(f"every cell: {keys.common} (* = the parts in the cell column)"))
    under.append(
        Text(
            f"ratio = candidate / base ({c.statistic} step), ± its 95% interval; estimator (the same as "
            f"hpubench gate's): {c.estimator}. Verdict only where the interval excludes 1 and both sides are "
            "ok; never a win for a side whose numerics are not ok. --wide: memory and samples/$ ratios."
        )
    )
    under.append(Text(_numerics_lines(c, keys.short)))
    return [table, *under]


def _numerics_lines(c: Comparison, short: dict[str, str]) -> str:
    """Each side's numerics where either is not ok, one line a cell (80 columns leave no room for a
    column): what the verdict's "not a win" stands on; a record from before numerics reads "not recorded"."""
    bad = [
        f"{short[x.match_key]}: base {numerics_word(x.base.numerics)}, candidate "
        f"{numerics_word(x.candidate.numerics)}"
        for x in c.numerics_not_ok
    ]
    if not bad:
        return "numerics (loss against the 32-true eager reference): ok on both sides of every cell"
    return "numerics not ok (loss against the 32-true eager reference):\n" + "\n".join(bad)


def compare_view(c: Comparison, width: int, wide: bool = False) -> list[RenderableType]:
    if wide or width >= WIDE_MIN_COLUMNS:
        return [compare_table(c)]
    return compact_compare_table(c)
